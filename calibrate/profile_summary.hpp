// The summary of a profile that `calibrate` prints at the end and `show` prints: every headline
// figure measured, its datasheet value and the ratio.
#pragma once

#include <string>

#include "core/profile.hpp"

namespace truepeak {

std::string profile_summary(const Profile& profile);

}  // namespace truepeak
