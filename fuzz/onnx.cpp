// The ONNX importer, then the estimate of what it read (inference and a training step): a file
// may be refused, never crash, hang or pass a non-finite figure.
#include <cstddef>
#include <cstdint>
#include <string>

#include "estimate/estimator.hpp"
#include "estimate/onnx_import.hpp"
#include "fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace truepeak;
  const auto& device = fuzz::fixture_device();
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  fuzz::expect_input_errors_only([&] {
    estimate::OnnxOptions o;
    o.batch = 2;
    o.seq = 5;
    o.context = 3;
    const auto imported = estimate::onnx_from_bytes(bytes, "fuzz.onnx", o);
    estimate::Options options;
    estimate::estimate(imported.model, device, options);
    options.mode = estimate::Mode::training;
    estimate::estimate(imported.model, device, options);
  });
  return 0;
}
