// Facts about the host machine recorded in every profile.
#pragma once

#include <string>

#include "core/profile.hpp"

namespace truepeak {

Machine read_machine(const std::string& label);
// The current time in UTC, as YYYY-MM-DDTHH:MM:SSZ.
std::string utc_now_iso8601();

}  // namespace truepeak
