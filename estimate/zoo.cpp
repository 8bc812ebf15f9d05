// Model loading: zoo names resolve to the embedded models/*.json, anything else is a file.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.hpp"
#include "core/read_file.hpp"
#include "estimate/cost.hpp"
#include "estimate/estimator.hpp"
#include "estimate/zoo_data.hpp"

namespace truepeak::estimate {
namespace {

// "ResNet-50", "resnet_50" and "resnet50" name the same model.
std::string normalize(std::string_view name) {
  std::string out;
  for (char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<std::string_view> zoo_text(const std::string& name) {
  const std::string key = normalize(name);
  for (const auto& [zoo_name, text] : zoo_files())
    if (normalize(zoo_name) == key) return text;
  return std::nullopt;
}

}  // namespace

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : zoo_files()) names.emplace_back(name);
  return names;
}

Model load_model(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool looks_like_path =
      name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  if (!looks_like_path) {
    if (auto text = zoo_text(name_or_path)) {
      Model m = model_from_json_text(std::string(*text), "models/" + name_or_path + ".json");
      m.source = "zoo:" + m.name;
      return m;
    }
  }
  if (!fs::is_regular_file(name_or_path, ec)) {
    std::string names;
    for (const auto& n : zoo_names()) names += (names.empty() ? "" : ", ") + n;
    throw InputError(
        fmt::format("model '{}': no such file, and not a zoo model ({})", name_or_path, names));
  }
  return model_from_json_text(read_input_file(name_or_path, kMaxModelBytes, "model"), name_or_path);
}

std::vector<ZooEntry> list_zoo() {
  std::vector<ZooEntry> entries;
  for (const auto& [name, text] : zoo_files()) {
    const Model m = model_from_json_text(std::string(text), fmt::format("models/{}.json", name));
    ZooEntry e;
    e.name = std::string(name);
    e.kind = m.kind;
    e.description = m.description;
    const Bindings b = [&] {
      Bindings bb = m.defaults;
      bb.emplace_back("N", 1);
      bb.emplace_back("T", 1);
      return bb;
    }();
    e.params = count_params(m.forward, b);
    for (const auto& [symbol, value] : m.defaults)
      if (symbol == "S") e.seq = value;
    for (const auto& op : m.forward.ops)
      for (const auto& w : forward_work(op, b, 4)) e.forward_flops += w.flops;
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace truepeak::estimate
