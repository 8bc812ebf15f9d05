// Facts about the host machine recorded in every profile.
#pragma once

#include <string>

#include "core/profile.hpp"

namespace truepeak {

Machine read_machine(const std::string& label);
// "2026-11-30T10:00:00Z"
std::string utc_now_iso8601();

}  // namespace truepeak
