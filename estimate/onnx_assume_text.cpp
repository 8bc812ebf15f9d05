// The import's lines for sizes assumed from data: the copies of an unrolled loop body's node
// merged into one assumption, alike assumptions grouped into one warning.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "estimate/onnx_assume.hpp"

namespace truepeak::estimate::onnx_detail {
namespace {

// The copies of a loop body's node differ only in their iteration: "L/iter7/N" -> "L/iter*/N".
std::string any_iteration(const std::string& name) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const auto found = name.find("/iter", pos);
    if (found == std::string::npos) break;
    auto end = found + 5;
    while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
    const bool numbered = end > found + 5 && end < name.size() && name[end] == '/';
    out += name.substr(pos, found - pos) + (numbered ? "/iter*" : name.substr(found, end - found));
    pos = end;
  }
  return out + name.substr(pos);
}

// The line for an assumption made at `where` ("NonZero '/NonZero'", or several nodes at once).
std::string describe_assumption(const OnnxAssumption& a, const std::string& where) {
  const std::string bound = a.at_most ? fmt::format(" (at most {})", *a.at_most) : std::string();
  const std::string copies =
      a.copies > 1 ? fmt::format(", in each of its {} copies", a.copies) : std::string();
  if (a.what == "branch")
    return fmt::format(
        "{}: its condition depends on the data; assumed the {} branch (the larger){}", where,
        a.assumed ? "then" : "else", copies);
  if (a.what == "trip count")
    return fmt::format(
        "{}: its trip count depends on the data; assumed {} iterations (--data-dependent-size){}",
        where, a.assumed, copies);
  if (a.what == "inputs reconciled")
    return fmt::format(
        "{}: its inputs, sized from the data, disagree outside the concatenation axis; the larger "
        "size ({}) is taken{}",
        where, a.assumed, copies);
  if (a.what == "output size")
    return fmt::format(
        "{}: its output size is computed from the data; assumed {} for each dimension it sets "
        "(--data-dependent-size){}",
        where, a.assumed, copies);
  return fmt::format(
      "{}: the number of {} depends on the data{}; assumed {} (--data-dependent-size){}", where,
      a.what, bound, a.assumed, copies);
}

}  // namespace

std::vector<OnnxAssumption> summarize_assumptions(std::vector<OnnxAssumption> assumptions) {
  std::vector<OnnxAssumption> merged;
  std::map<std::string, std::size_t> index;
  for (auto& a : assumptions) {
    a.node = any_iteration(a.node);
    const std::string key = fmt::format("{}\n{}\n{}\n{}", a.node, a.op_type, a.what, a.assumed);
    const auto it = index.find(key);
    if (it != index.end()) {
      auto& m = merged[it->second];
      m.copies += a.copies;
      if (a.at_most && (!m.at_most || *a.at_most > *m.at_most)) m.at_most = a.at_most;
      continue;
    }
    index.emplace(key, merged.size());
    merged.push_back(std::move(a));
  }
  for (auto& a : merged) a.text = describe_assumption(a, fmt::format("{} '{}'", a.op_type, a.node));
  return merged;
}

std::vector<std::string> assumption_warnings(const std::vector<OnnxAssumption>& assumptions) {
  // A detector's postprocessing repeats one step per class (SSD: a NonZero for each of 90): one
  // line for each kind of assumption, naming the first nodes, rather than 90 alike.
  constexpr std::size_t kNamed = 3;
  std::map<std::string, std::vector<const OnnxAssumption*>> groups;
  std::vector<std::string> order;
  for (const auto& a : assumptions) {
    const std::string key =
        fmt::format("{}\n{}\n{}\n{}\n{}", a.op_type, a.what, a.assumed,
                    a.at_most ? std::to_string(*a.at_most) : std::string(), a.copies);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&a);
  }
  std::vector<std::string> lines;
  for (const auto& key : order) {
    const auto& group = groups.at(key);
    if (group.size() < kNamed) {
      for (const auto* a : group) lines.push_back(a->text);
      continue;
    }
    std::string names;
    for (std::size_t k = 0; k < std::min(group.size(), kNamed); ++k)
      names += fmt::format("{}'{}'", k ? ", " : "", group[k]->node);
    if (group.size() > kNamed) names += ", ...";
    lines.push_back(describe_assumption(
        *group.front(), fmt::format("{} x{} ({})", group.front()->op_type, group.size(), names)));
  }
  return lines;
}

}  // namespace truepeak::estimate::onnx_detail
