# The libFuzzer side build (FASTNN_FUZZ_ONLY) compiles only the core and converters sources its fuzz
# targets link, not the whole libraries: instrumented clang builds cost three to four times g++'s, and
# the rest (shard checks, reports, planners, writers) was 371 of its 837 compile-seconds.
# The list is what `-Wl,--trace` shows the twelve targets pulling from libfastnn_core.a and
# libfastnn_converters.a. A parser that comes to need another file fails to link in build/fuzz with
# "undefined reference"; add the file that defines the symbol here.
set(FASTNN_FUZZ_LINKED_SOURCES
  # core
  base64 bundle_reader check compression crc32c crc32c_x86 dtype example_builder example_parser image_format
  image_jpeg image_png input_file logging manifest mapped_file name_escape named_array progress
  safetensors_reader safetensors_writer slices_reader table tensor_slices tf_dtype tf_tensor tfrecord_reader
  # converters
  base64_tsv cifar file_io foreign_record idx image_example known_classes mnist rank_group resize source)

# Keeps, of the source list in `var`, the .cpp files named above (and every non-.cpp entry).
function(fastnn_keep_fuzz_linked_sources var)
  set(kept)
  foreach(src ${${var}})
    get_filename_component(base ${src} NAME_WE)
    get_filename_component(ext ${src} LAST_EXT)
    if(NOT ext STREQUAL ".cpp" OR base IN_LIST FASTNN_FUZZ_LINKED_SOURCES)
      list(APPEND kept ${src})
    endif()
  endforeach()
  set(${var} ${kept} PARENT_SCOPE)
endfunction()
