// The synthetic profiles the report tests read follow the profile schema, so the printers are
// tested on what the calibrate command really writes.
#include <gtest/gtest.h>

#include "core/schema_check.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

TEST(ReportFixtures, ValidateAgainstTheProfileSchema) {
  for (const char* name : {"profile_cpu.json", "profile_gpu.json"}) {
    const auto errors = validate_profile_json(test::read_json(test::data_path(name)));
    EXPECT_TRUE(errors.empty()) << name << ": " << errors.front();
  }
}

}  // namespace
}  // namespace truepeak::report
