// How fast the estimator is: a 7B decoder (Llama-2-7B, prefill + decode step, ~1,300 ops) swept
// over 100 batch sizes must take well under a second. Runs on a profile fixture so it needs no
// calibration.
#include <benchmark/benchmark.h>

#include <numeric>

#include "core/profile.hpp"
#include "estimate/estimator.hpp"
#include "truepeak/version.hpp"

namespace {

using namespace truepeak;

const Profile& fixture_profile() {
  static const Profile profile =
      read_profile(std::string(TRUEPEAK_SOURCE_DIR) + "/tests/estimate/data/fixture_cpu.json");
  return profile;
}

void BM_sweep_llama2_7b_100_batches(benchmark::State& state) {
  const auto model = estimate::load_model("llama2_7b");
  const auto& device = fixture_profile().devices.at(0);
  std::vector<std::int64_t> batches(100);
  std::iota(batches.begin(), batches.end(), 1);
  estimate::Options options;
  options.memory_bytes = 16'000'000'000;
  for (auto _ : state) {
    auto sweep = estimate::sweep_batch(model, device, options, batches, std::nullopt);
    benchmark::DoNotOptimize(sweep);
  }
  state.SetItemsProcessed(state.iterations() * 100);
}
BENCHMARK(BM_sweep_llama2_7b_100_batches)->Unit(benchmark::kMillisecond);

void BM_estimate_llama2_7b_per_op_rows(benchmark::State& state) {
  const auto model = estimate::load_model("llama2_7b");
  const auto& device = fixture_profile().devices.at(0);
  estimate::Options options;
  options.batch = 8;
  for (auto _ : state) benchmark::DoNotOptimize(estimate::estimate(model, device, options));
}
BENCHMARK(BM_estimate_llama2_7b_per_op_rows)->Unit(benchmark::kMillisecond);

void BM_load_llama2_7b(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(estimate::load_model("llama2_7b"));
}
BENCHMARK(BM_load_llama2_7b)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
