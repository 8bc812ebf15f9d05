// The zoo's model files and the default profile, embedded at build time (generated .cpp files
// in the build tree), so the executable needs no files beside it.
#pragma once

#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace truepeak::estimate {

// (name, JSON text) of every models/*.json, sorted by name.
const std::vector<std::pair<std::string_view, std::string_view>>& zoo_files();

// results/zen5-epyc/dev-cpu.json as it was at configure time; nullopt when there was none.
std::optional<std::string_view> default_profile_text();
// Where the default profile came from ("results/zen5-epyc/dev-cpu.json"), for messages.
std::string_view default_profile_path();

}  // namespace truepeak::estimate
