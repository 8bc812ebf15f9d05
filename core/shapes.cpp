#include "core/shapes.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string>

#include <fmt/format.h>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace truepeak {
namespace {

struct ParsedName {
  DType dtype;
  std::map<std::string, std::int64_t> fields;
};

// Splits "bf16_b1m64n4096k4096" into the dtype and {b:1, m:64, n:4096, k:4096}.
ParsedName parse_name(const std::string& text, const char* what) {
  const auto underscore = text.find('_');
  if (underscore == std::string::npos) {
    throw InputError(fmt::format("'{}' is not a {} name: expected <dtype>_<fields>, e.g. {}", text, what,
                                 what == std::string("gemm") ? "f32_b1m64n64k64" : "f32_g1mb1ic64ih56iw56oc64kh3kw3sh1ph1dh1"));
  }
  const auto dtype = parse_dtype(text.substr(0, underscore));
  if (!dtype) throw InputError(fmt::format("'{}': unknown data type '{}'", text, text.substr(0, underscore)));
  ParsedName parsed{*dtype, {}};
  std::size_t i = underscore + 1;
  while (i < text.size()) {
    std::size_t key_end = i;
    while (key_end < text.size() && std::isalpha(static_cast<unsigned char>(text[key_end]))) ++key_end;
    std::size_t num_end = key_end;
    while (num_end < text.size() && std::isdigit(static_cast<unsigned char>(text[num_end]))) ++num_end;
    if (key_end == i || num_end == key_end) {
      throw InputError(fmt::format("'{}' is not a {} name: cannot read a field at '{}'", text, what, text.substr(i)));
    }
    const auto key = text.substr(i, key_end - i);
    if (parsed.fields.count(key)) throw InputError(fmt::format("'{}': field '{}' given twice", text, key));
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data() + key_end, text.data() + num_end, value);
    if (ec != std::errc() || end != text.data() + num_end)
      throw InputError(fmt::format("'{}': field '{}' does not fit 64 bits", text, key));
    parsed.fields[key] = value;
    i = num_end;
  }
  return parsed;
}

std::int64_t take(ParsedName& parsed, const std::string& text, const std::string& key,
                  std::optional<std::int64_t> fallback) {
  auto it = parsed.fields.find(key);
  if (it == parsed.fields.end()) {
    if (fallback) return *fallback;
    throw InputError(fmt::format("'{}': field '{}' is missing", text, key));
  }
  const auto value = it->second;
  parsed.fields.erase(it);
  return value;
}

void reject_leftovers(const ParsedName& parsed, const std::string& text) {
  if (!parsed.fields.empty()) {
    throw InputError(fmt::format("'{}': unknown field '{}'", text, parsed.fields.begin()->first));
  }
}

// Output positions of a window over `in`; 0 where the window does not fit, or where the
// attributes are no window at all (a stride of 0 from a malformed profile): every caller of
// ConvShape gets an answer, and ConvShape::parse refuses a shape without output.
std::int64_t conv_out(std::int64_t in, std::int64_t filter, std::int64_t stride, std::int64_t pad,
                      std::int64_t dilation) {
  if (stride < 1 || dilation < 1 || filter < 1 || pad < 0 || in < 0) return 0;
  const auto pads = checked_mul(2, pad);
  const auto padded = pads ? checked_add(in, *pads) : std::nullopt;
  const auto window = checked_mul(dilation, filter - 1);
  if (!padded || !window || *window >= *padded) return 0;
  return (*padded - *window - 1) / stride + 1;
}

// Input channels a group reads; 0 for a malformed group count (no group, no work).
std::int64_t per_group(std::int64_t channels, std::int64_t groups) { return groups >= 1 ? channels / groups : 0; }

// a / b rounded down and up (b > 0), in 128 bits: the window arithmetic of any 64-bit shape fits.
__int128 floor_div(__int128 a, __int128 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
__int128 ceil_div(__int128 a, __int128 b) { return -floor_div(-a, b); }

}  // namespace

double GemmShape::flops() const { return 2.0 * double(batch) * double(m) * double(n) * double(k); }

double GemmShape::bytes() const {
  const double in = dtype_bytes(dtype);
  const double out = dtype == DType::int8 ? 4.0 : in;
  return double(batch) * double(m) * (double(k) * in + double(n) * out) + weight_bytes();
}

double GemmShape::weight_bytes() const {
  return double(batch) * double(k) * double(n) * dtype_bytes(dtype);
}

std::string GemmShape::str() const {
  return fmt::format("{}_b{}m{}n{}k{}", to_string(dtype), batch, m, n, k);
}

GemmShape GemmShape::parse(const std::string& text) {
  auto parsed = parse_name(text, "gemm");
  GemmShape s;
  s.dtype = parsed.dtype;
  s.batch = take(parsed, text, "b", 1);
  s.m = take(parsed, text, "m", std::nullopt);
  s.n = take(parsed, text, "n", std::nullopt);
  s.k = take(parsed, text, "k", std::nullopt);
  reject_leftovers(parsed, text);
  if (s.batch < 1 || s.m < 1 || s.n < 1 || s.k < 1) {
    throw InputError(fmt::format("'{}': every dimension must be at least 1", text));
  }
  return s;
}

std::int64_t ConvShape::out_h() const { return conv_out(h, r, stride, pad, dilation); }
std::int64_t ConvShape::out_w() const { return conv_out(w, s, stride, pad, dilation); }

double ConvShape::flops() const {
  return 2.0 * double(n) * double(k) * double(out_h()) * double(out_w()) * double(per_group(c, groups)) * double(r) *
         double(s);
}

double ConvShape::inside_tap_share() const {
  // Per spatial dimension: taps on the input over all taps, summed over the output positions.
  // Tap t of output o reads x = o * stride - pad + t * dilation; the outputs whose tap t falls on
  // the input, 0 <= x < in, are one interval of o.
  const auto share = [this](std::int64_t in, std::int64_t out, std::int64_t taps) {
    // A window of millions of taps is no measured convolution: its share is left at 1.
    if (out <= 0 || taps <= 0 || taps > (1 << 20) || stride < 1 || dilation < 1) return 1.0;
    __int128 inside = 0;
    for (std::int64_t t = 0; t < taps; ++t) {
      const __int128 offset = static_cast<__int128>(t) * dilation - pad;
      const __int128 first = std::max<__int128>(0, ceil_div(-offset, stride));
      const __int128 last = std::min<__int128>(out - 1, floor_div(in - 1 - offset, stride));
      if (last >= first) inside += last - first + 1;
    }
    return double(inside) / (double(out) * double(taps));
  };
  return share(h, out_h(), r) * share(w, out_w(), s);
}

double ConvShape::bytes() const {
  const double e = dtype_bytes(dtype);
  const double input = double(n) * double(c) * double(h) * double(w);
  const double output = double(n) * double(k) * double(out_h()) * double(out_w());
  return (input + output) * e + weight_bytes();
}

double ConvShape::weight_bytes() const {
  return double(k) * double(per_group(c, groups)) * double(r) * double(s) * dtype_bytes(dtype);
}

std::string ConvShape::str() const {
  return fmt::format("{}_g{}mb{}ic{}ih{}iw{}oc{}kh{}kw{}sh{}ph{}dh{}", to_string(dtype), groups, n, c, h, w, k, r, s,
                     stride, pad, dilation);
}

double VectorOpShape::bytes() const {
  const double tensors = op == "add" || op == "add_padded" ? 3.0 : 2.0;
  return tensors * elements() * static_cast<double>(dtype_bytes(dtype));
}

std::string VectorOpShape::str() const {
  return fmt::format("{}_{}_{}x{}", op, to_string(dtype), rows, cols);
}

const std::vector<std::string>& vector_op_names() {
  static const std::vector<std::string> names = {"relu", "relu6",   "gelu",      "gelu_tanh",
                                                 "tanh", "sigmoid", "silu",      "exp",
                                                 "add",  "add_padded", "softmax", "layernorm",
                                                 "reorder_blocked", "reorder_plain"};
  return names;
}

std::int64_t onednn_channel_block(std::string_view onednn_isa) {
  return onednn_isa.rfind("avx512", 0) == 0 ? 16 : 8;
}

VectorOpShape calibration_shape(const std::string& op, DType dtype, std::int64_t channel_block) {
  if (op == "add_padded") return {op, dtype, channel_block + channel_block / 2, 10240};
  return {op, dtype, 256, 1024};
}

ConvShape ConvShape::parse(const std::string& text) {
  auto parsed = parse_name(text, "conv");
  ConvShape s;
  s.dtype = parsed.dtype;
  s.groups = take(parsed, text, "g", 1);
  s.n = take(parsed, text, "mb", 1);
  s.c = take(parsed, text, "ic", std::nullopt);
  s.h = take(parsed, text, "ih", std::nullopt);
  s.w = take(parsed, text, "iw", s.h);
  s.k = take(parsed, text, "oc", std::nullopt);
  s.r = take(parsed, text, "kh", std::nullopt);
  s.s = take(parsed, text, "kw", s.r);
  s.stride = take(parsed, text, "sh", 1);
  s.pad = take(parsed, text, "ph", 0);
  s.dilation = take(parsed, text, "dh", 1);
  reject_leftovers(parsed, text);
  if (s.groups < 1 || s.n < 1 || s.c < 1 || s.h < 1 || s.w < 1 || s.k < 1 || s.r < 1 || s.s < 1 || s.stride < 1 ||
      s.pad < 0 || s.dilation < 1) {
    throw InputError(fmt::format("'{}': dimensions must be positive (padding non-negative)", text));
  }
  if (s.c % s.groups != 0 || s.k % s.groups != 0) {
    throw InputError(fmt::format("'{}': channels ({} in, {} out) must divide by groups ({})", text, s.c, s.k, s.groups));
  }
  if (s.out_h() < 1 || s.out_w() < 1) throw InputError(fmt::format("'{}': the output would be empty", text));
  return s;
}

std::string_view to_string(StreamOp op) {
  switch (op) {
    case StreamOp::copy: return "copy";
    case StreamOp::scale: return "scale";
    case StreamOp::add: return "add";
    case StreamOp::triad: return "triad";
    case StreamOp::update: return "update";
  }
  return "?";
}

int stream_arrays(StreamOp op) {
  if (op == StreamOp::update) return 1;
  return (op == StreamOp::copy || op == StreamOp::scale) ? 2 : 3;
}

int stream_passes(StreamOp op) { return op == StreamOp::update ? 2 : 1; }

std::string_view to_string(TransferDir dir) { return dir == TransferDir::h2d ? "h2d" : "d2h"; }

}  // namespace truepeak
