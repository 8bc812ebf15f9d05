// Which devices a calibration covers, and the backend for each.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.hpp"

namespace truepeak {

struct DeviceSelection {
  std::vector<std::string> ids;    // "cpu", "cuda:0", ...
  std::vector<std::string> notes;  // e.g. "no GPU found: <reason>" for --device all
};

// `spec` is "cpu", "cuda:N" (or "cuda" = "cuda:0"), or "all". Throws InputError for an unknown
// spec or a GPU that is not there (with the runtime's reason).
DeviceSelection select_devices(const std::string& spec);

// `threads` applies to the CPU backend (0 = all cores).
std::unique_ptr<Backend> make_backend(const std::string& id, int threads);

}  // namespace truepeak
