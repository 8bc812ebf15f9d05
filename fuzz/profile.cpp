// The profile reader, then what reads a profile: the summary `show` prints and an estimate on
// each of its devices. A profile's figures are not yet checked against the schema's ranges, so an
// estimate from absurd figures may fail as an internal error (exit 1); it must not crash or trip
// a sanitizer.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "calibrate/profile_summary.hpp"
#include "estimate/estimator.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace truepeak;
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const auto model = estimate::load_model("resnet18");
  fuzz::expect_input_errors_only([&] {
    const auto doc = nlohmann::json::parse(text, nullptr, false);
    if (doc.is_discarded()) return;
    const auto profile = profile_from_json(doc, "fuzz.json");
    (void)profile_summary(profile);
    (void)to_json(profile).dump();
    for (const auto& device : profile.devices) {
      try {
        estimate::estimate(model, device, {});
      } catch (const InputError&) {
      } catch (const Error&) {
        // An internal error from out-of-range figures: refused, not crashed.
      }
    }
  });
  return 0;
}
