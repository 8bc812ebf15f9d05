// The model-JSON reader (graphs and the transformer shorthand), then estimates of what it read:
// inference at two batch sizes, a training step and the largest batch that fits.
#include <cstddef>
#include <cstdint>
#include <string>

#include "estimate/estimator.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace truepeak;
  const auto& device = fuzz::fixture_device();
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::expect_input_errors_only([&] {
    const auto model = estimate::model_from_json_text(text, "fuzz.json");
    estimate::Options options;
    estimate::estimate(model, device, options);
    options.batch = 3;
    options.seq = 7;
    estimate::estimate(model, device, options);
    options.mode = estimate::Mode::training;
    estimate::estimate(model, device, options);
    estimate::max_batch(model, options, 1e10);
  });
  return 0;
}
