# ONNX's schema, compiled by the project's protoc: onnx/onnx.proto from Debian's libonnx-dev (1.12,
# scripts/setup.sh installs it). Only the .proto is used -- nothing of ONNX is linked or needed at run
# time. The file says `optimize_for = LITE_RUNTIME`, so the generated classes are MessageLite (serialise
# only, which is all the exporter does). Generated as <build>/onnx_schema/onnx/onnx.pb.h, included as
# "onnx/onnx.pb.h" (the package's own /usr/include/onnx has no onnx.pb.h, only onnx-ml.pb.h).
find_path(FASTNN_ONNX_PROTO_DIR onnx/onnx.proto PATHS /usr/include /usr/local/include)
if(NOT FASTNN_ONNX_PROTO_DIR)
  message(FATAL_ERROR "fastnn: onnx/onnx.proto not found: install Debian's libonnx-dev (scripts/setup.sh) "
                      "or set FASTNN_ONNX_PROTO_DIR to the folder holding onnx/onnx.proto")
endif()
set(FASTNN_ONNX_GEN ${CMAKE_BINARY_DIR}/onnx_schema)
file(MAKE_DIRECTORY ${FASTNN_ONNX_GEN})
add_custom_command(
  OUTPUT ${FASTNN_ONNX_GEN}/onnx/onnx.pb.h ${FASTNN_ONNX_GEN}/onnx/onnx.pb.cc
  COMMAND protobuf::protoc --cpp_out=${FASTNN_ONNX_GEN} -I ${FASTNN_ONNX_PROTO_DIR}
          ${FASTNN_ONNX_PROTO_DIR}/onnx/onnx.proto
  DEPENDS ${FASTNN_ONNX_PROTO_DIR}/onnx/onnx.proto protobuf::protoc
  COMMENT "protoc onnx/onnx.proto (libonnx-dev)")
add_library(fastnn_onnx_schema STATIC ${FASTNN_ONNX_GEN}/onnx/onnx.pb.cc ${FASTNN_ONNX_GEN}/onnx/onnx.pb.h)
target_link_libraries(fastnn_onnx_schema PUBLIC protobuf::libprotobuf)
target_include_directories(fastnn_onnx_schema PUBLIC ${FASTNN_ONNX_GEN})
