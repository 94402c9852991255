#include "trainer/export/onnx_builder.h"

#include <cstring>

#include "core/check.h"
#include "core/half.h"

namespace fastnn::onnx_export {

OnnxBuilder::OnnxBuilder(onnx::GraphProto* graph, int32_t elem) : graph_(graph), elem_(elem) {
  FASTNN_CHECK(elem == onnx::TensorProto::FLOAT || elem == onnx::TensorProto::FLOAT16, "OnnxBuilder: elem ", elem);
}

std::string OnnxBuilder::fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; names_.count(name); ++k) name = str(base, "_", k);
  names_.insert(name);
  return name;
}

void OnnxBuilder::reserve(const std::string& name) {
  if (!names_.insert(name).second) throw Error(str("onnx export: tensor name '", name, "' used twice"));
}

std::string OnnxBuilder::initializer(const std::string& name, const std::vector<int64_t>& shape,
                                     std::span<const float> values) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  FASTNN_CHECK(n == static_cast<int64_t>(values.size()), "onnx initializer ", name, ": ", values.size(), " values");
  const std::string taken = fresh(name);
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(taken);
  t->set_data_type(elem_);
  for (int64_t d : shape) t->add_dims(d);
  std::string* raw = t->mutable_raw_data();
  if (elem_ == onnx::TensorProto::FLOAT) {
    raw->resize(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(raw->data(), values.data(), raw->size());
  } else {
    raw->resize(values.size() * sizeof(uint16_t));
    for (size_t i = 0; i < values.size(); ++i) {
      const uint16_t h = f32_to_f16_bits(values[i]);
      std::memcpy(raw->data() + 2 * i, &h, 2);
    }
  }
  init_bytes_ += raw->size();
  return taken;
}

std::string OnnxBuilder::scalar(const std::string& name, float v) { return initializer(name, {}, {&v, 1}); }

std::string OnnxBuilder::int64s(const std::string& name, const std::vector<int64_t>& values) {
  const std::string taken = fresh(name);
  onnx::TensorProto* t = graph_->add_initializer();
  t->set_name(taken);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  std::string* raw = t->mutable_raw_data();
  raw->resize(values.size() * sizeof(int64_t));
  if (!values.empty()) std::memcpy(raw->data(), values.data(), raw->size());
  init_bytes_ += raw->size();
  return taken;
}

onnx::NodeProto& OnnxBuilder::node(const std::string& op, const std::vector<std::string>& inputs,
                                   const std::vector<std::string>& outputs, const std::string& name) {
  onnx::NodeProto* n = graph_->add_node();
  n->set_op_type(op);
  std::string unique = name;
  for (int k = 1; node_names_.count(unique); ++k) unique = str(name, "_", k);
  node_names_.insert(unique);
  n->set_name(unique);
  for (const std::string& s : inputs) n->add_input(s);
  for (const std::string& s : outputs) n->add_output(s);
  return *n;
}

void OnnxBuilder::attr(onnx::NodeProto& n, const std::string& key, int64_t v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void OnnxBuilder::attr(onnx::NodeProto& n, const std::string& key, float v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void OnnxBuilder::attr(onnx::NodeProto& n, const std::string& key, const std::vector<int64_t>& v) {
  onnx::AttributeProto* a = n.add_attribute();
  a->set_name(key);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_batched_type(onnx::ValueInfoProto* info, const std::string& name, int32_t elem,
                      const std::vector<int64_t>& dims) {
  info->set_name(name);
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  onnx::TensorShapeProto* s = t->mutable_shape();
  s->add_dim()->set_dim_param("batch");
  for (int64_t d : dims) s->add_dim()->set_dim_value(d);
}

}  // namespace fastnn::onnx_export
