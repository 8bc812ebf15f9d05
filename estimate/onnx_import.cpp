// Entry points of the ONNX importer: file reading, --input-shape parsing, and the two steps
// (parse + shape inference in onnx_parse.cpp, op mapping in onnx_map.cpp).
#include "estimate/onnx_import.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/read_file.hpp"
#include "core/text.hpp"
#include "estimate/onnx_assume.hpp"
#include "estimate/onnx_graph.hpp"

namespace truepeak::estimate {

bool is_onnx_path(const std::string& path) {
  return ascii_lower(std::filesystem::path(path).extension().string()) == ".onnx";
}

std::string count_list(const std::map<std::string, int>& counts) {
  std::string list;
  for (const auto& [what, count] : counts) list += fmt::format("{}{} x{}", list.empty() ? "" : ", ", what, count);
  return list;
}

InputShape parse_input_shape(const std::string& text) {
  const auto eq = text.find_first_of("=:");
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size()) {
    throw InputError(fmt::format("--input-shape '{}': expected NAME=DIMS, e.g. input=1x3x224x224", text));
  }
  InputShape shape;
  shape.name = text.substr(0, eq);
  const std::string dims = text.substr(eq + 1);
  std::size_t pos = 0;
  while (pos <= dims.size()) {
    const auto sep = dims.find_first_of("x,", pos);
    const std::string item = dims.substr(pos, sep == std::string::npos ? std::string::npos : sep - pos);
    if (item.empty() || item.size() > 12 ||
        !std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c); })) {
      throw InputError(fmt::format("--input-shape '{}': '{}' is not a positive whole number", text, item));
    }
    const auto value = std::stoll(item);
    if (value <= 0) throw InputError(fmt::format("--input-shape '{}': dimensions must be positive", text));
    shape.dims.push_back(value);
    if (sep == std::string::npos) break;
    pos = sep + 1;
  }
  return shape;
}

OnnxImport onnx_from_bytes(const std::string& bytes, const std::string& where, const OnnxOptions& options) {
  auto parsed = onnx_detail::parse_onnx(bytes, where, options);
  OnnxImport result;
  try {
    result = onnx_detail::map_onnx(std::move(parsed), options);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // A graph that parses but breaks the operators' own rules (a Conv without a weight, a node
    // without outputs): still the file's fault.
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw InputError(fmt::format("{}: malformed graph ({})", where, what));
  }
  result.model.source = where;
  result.model.name = std::filesystem::path(where).stem().string();
  return result;
}

OnnxImport load_onnx(const std::string& path, const OnnxOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{}: no such ONNX file", path));
  return onnx_from_bytes(read_input_file(path, kMaxOnnxBytes, "ONNX model"), path, options);
}

std::vector<std::string> assumption_lines(const std::vector<OnnxAssumption>& assumptions) {
  return onnx_detail::assumption_warnings(assumptions);
}

}  // namespace truepeak::estimate
