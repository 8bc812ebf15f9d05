// What the fuzz targets share: the profile they estimate on, and the rule for exceptions. Bad
// input may end in an InputError (exit 2 at the command line); anything else it raises is a bug
// the fuzzer should report, so it aborts.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "core/error.hpp"
#include "core/profile.hpp"
#include "core/read_file.hpp"

namespace truepeak::fuzz {

// The CPU fixture profile of the estimator's tests (its path is compiled in).
inline const Device& fixture_device() {
  static const Profile profile = profile_from_json(
      read_json_file(TRUEPEAK_FUZZ_PROFILE, kMaxProfileBytes, "profile"), TRUEPEAK_FUZZ_PROFILE);
  return profile.devices.front();
}

// Runs `body`; an InputError passes, any other exception aborts with its message.
template <typename Body>
void expect_input_errors_only(Body&& body) {
  try {
    body();
  } catch (const InputError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not an input error: %s\n", e.what());
    std::abort();
  }
}

}  // namespace truepeak::fuzz
