#include "trainer/ops/window2d.h"

#include <algorithm>
#include <variant>

#include "core/check.h"
#include "trainer/ops/cpu_kernel.h"

namespace fastnn::ops {

std::string Window2d::to_string() const {
  return str("k", r, "x", s, " s", stride_h, "x", stride_w, " d", dil_h, "x", dil_w, " pad[", pad_top, ",",
             pad_bottom, ",", pad_left, ",", pad_right, "] out ", p, "x", q);
}

Window2d parse_window2d(std::string_view op, const Attrs& a, int64_t h, int64_t w, bool with_dilation,
                        bool stride_defaults_to_kernel) {
  Window2d g;
  if (!a.has("kernel")) throw ConfigError(str(op, ": missing attribute 'kernel'"));
  const Ints k = a.get_ints_n(op, "kernel", 2, 1);
  g.r = k[0];
  g.s = k[1];
  const Ints st = a.get_ints_n(op, "stride", 2, 1);
  g.stride_h = a.has("stride") || !stride_defaults_to_kernel ? st[0] : g.r;
  g.stride_w = a.has("stride") || !stride_defaults_to_kernel ? st[1] : g.s;
  if (with_dilation) {
    const Ints d = a.get_ints_n(op, "dilation", 2, 1);
    g.dil_h = d[0];
    g.dil_w = d[1];
  }
  if (g.r < 1 || g.s < 1 || g.stride_h < 1 || g.stride_w < 1 || g.dil_h < 1 || g.dil_w < 1 || g.r > 4096 ||
      g.s > 4096 || g.dil_h > 4096 || g.dil_w > 4096 || g.stride_h > 4096 || g.stride_w > 4096)
    throw ConfigError(str(op, ": kernel, stride and dilation must be in [1, 4096]: ", g.to_string()));

  const int64_t eff_h = (g.r - 1) * g.dil_h + 1, eff_w = (g.s - 1) * g.dil_w + 1;
  const AttrValue* pad = a.find("padding");
  if (pad && std::holds_alternative<std::string>(*pad)) {
    const std::string& mode = std::get<std::string>(*pad);
    if (mode == "same") {
      const int64_t ph = std::max<int64_t>(((h + g.stride_h - 1) / g.stride_h - 1) * g.stride_h + eff_h - h, 0);
      const int64_t pw = std::max<int64_t>(((w + g.stride_w - 1) / g.stride_w - 1) * g.stride_w + eff_w - w, 0);
      g.pad_top = ph / 2;
      g.pad_bottom = ph - ph / 2;
      g.pad_left = pw / 2;
      g.pad_right = pw - pw / 2;
    } else if (mode != "valid") {
      throw ConfigError(str(op, ": padding must be \"valid\", \"same\" or ints, got \"", mode, "\""));
    }
  } else if (pad) {
    const Ints p = a.get_ints(op, "padding", {});
    if (p.size() == 1) {
      g.pad_top = g.pad_bottom = g.pad_left = g.pad_right = p[0];
    } else if (p.size() == 2) {
      g.pad_top = g.pad_bottom = p[0];
      g.pad_left = g.pad_right = p[1];
    } else if (p.size() == 4) {
      g.pad_top = p[0];
      g.pad_bottom = p[1];
      g.pad_left = p[2];
      g.pad_right = p[3];
    } else {
      throw ConfigError(str(op, ": padding needs 1, 2 or 4 ints, got ", p.size()));
    }
  }
  for (int64_t v : {g.pad_top, g.pad_bottom, g.pad_left, g.pad_right})
    if (v < 0 || v > 4096) throw ConfigError(str(op, ": padding out of [0, 4096]: ", g.to_string()));
  if (!with_dilation && (g.pad_top >= g.r || g.pad_bottom >= g.r || g.pad_left >= g.s || g.pad_right >= g.s))
    throw ConfigError(str(op, ": padding must be smaller than the window: ", g.to_string()));

  const int64_t span_h = h + g.pad_top + g.pad_bottom - eff_h, span_w = w + g.pad_left + g.pad_right - eff_w;
  if (span_h < 0 || span_w < 0)
    throw ConfigError(str(op, ": window larger than the padded ", h, "x", w, " input: ", g.to_string()));
  g.p = span_h / g.stride_h + 1;
  g.q = span_w / g.stride_w + 1;
  return g;
}

Pool2dParams pool2d_params(std::string_view op, const Attrs& a, std::span<const TensorSpec> inputs, bool is_avg) {
  if (is_avg) a.check_known(op, {"kernel", "stride", "padding", "count_include_pad"});
  else a.check_known(op, {"kernel", "stride", "padding"});
  expect_inputs(op, inputs, 1);
  expect_rank(op, inputs, 0, {4});
  Pool2dParams p;
  const Shape& s = inputs[0].shape;
  p.n = s[0], p.c = s[1], p.h = s[2], p.w = s[3];
  p.win = parse_window2d(op, a, p.h, p.w, /*with_dilation=*/false, /*stride_defaults_to_kernel=*/true);
  p.count_include_pad = is_avg && a.get_bool(op, "count_include_pad", false);
  return p;
}

OpSignature pool2d_signature(const Pool2dParams& p, DType dt) {
  OpSignature sig;
  sig.inputs = {TensorSpec{.name = "x", .shape = {p.n, p.c, p.h, p.w}, .dtype = dt}};
  sig.input_has_grad = {true};
  sig.outputs = {TensorSpec{.name = "y", .shape = {p.n, p.c, p.win.p, p.win.q}, .dtype = dt}};
  return sig;
}

}  // namespace fastnn::ops
