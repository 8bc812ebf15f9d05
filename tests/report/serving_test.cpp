#include "report/serving.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "core/error.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

// A pass of `batch` takes 5 ms + 1 ms x batch; the memory holds `fits` samples.
std::function<Prediction(std::int64_t)> linear(std::int64_t fits, int* calls = nullptr) {
  return [fits, calls](std::int64_t batch) {
    if (calls) ++*calls;
    Prediction p;
    p.latency_s = 5e-3 + 1e-3 * static_cast<double>(batch);
    p.fits = batch <= fits;
    return p;
  };
}

TEST(Serving, LargestBatchWithinTheTarget) {
  int calls = 0;
  // 50.5 ms: batch 45 takes 50 ms, batch 46 51 ms.
  const auto s = largest_batch_within(50.5e-3, linear(1000, &calls));
  EXPECT_EQ(s.batch, 45);
  EXPECT_DOUBLE_EQ(s.prediction.latency_s, 50e-3);
  EXPECT_EQ(s.limit, BatchLimit::latency);
  EXPECT_EQ(limit_note(s.batch, s.limit), "");
  // Doubling to 64, then bisection between 32 and 64: a handful of estimates, not 64.
  EXPECT_LE(calls, 14);

  const auto memory = largest_batch_within(50.5e-3, linear(20));
  EXPECT_EQ(memory.batch, 20);
  EXPECT_EQ(memory.limit, BatchLimit::memory);
  EXPECT_EQ(limit_note(memory.batch, memory.limit), "batch 21 does not fit in memory");

  const auto capped = largest_batch_within(10.0, linear(1 << 30), 100);
  EXPECT_EQ(capped.batch, 100);
  EXPECT_EQ(to_string(capped.limit), "search_end");
  EXPECT_EQ(limit_note(capped.batch, capped.limit), "the search stops at batch 100");
}

TEST(Serving, NoBatchMeetsTheTarget) {
  const Workload w{"toy", "f32", "", false, std::nullopt, 0, 0};
  const auto s = largest_batch_within(5e-3, linear(1000));
  EXPECT_EQ(s.batch, 0);
  EXPECT_DOUBLE_EQ(s.prediction.latency_s, 6e-3);
  EXPECT_EQ(no_batch_reason(w, 5e-3, s), "cannot meet 5 ms per request: batch 1 takes 6 ms");

  const auto none = largest_batch_within(1.0, linear(0));
  EXPECT_EQ(no_batch_reason(w, 1.0, none), "does not fit in memory at batch 1");

  const auto error = largest_batch_within(1.0, [](std::int64_t) {
    Prediction p;
    p.error = "no bf16 figure";
    return p;
  });
  EXPECT_EQ(error.batch, 0);
  EXPECT_EQ(no_batch_reason(w, 1.0, error), "cannot estimate: no bf16 figure");
}

TEST(Serving, DecoderTimesAndRates) {
  const Workload w{"toy-llm", "bf16", "", true, 512, 544, 64};
  Prediction p;
  p.latency_s = 0.2;
  p.decode_s = 0.01;
  EXPECT_DOUBLE_EQ(target_latency_s(p), 0.01);
  // The prefill yields the first token; 63 decode steps the others.
  EXPECT_DOUBLE_EQ(batch_time_s(w, p), 0.2 + 63 * 0.01);
  EXPECT_DOUBLE_EQ(requests_per_s(w, p, 8), 8 / 0.83);
  EXPECT_DOUBLE_EQ(output_tokens_per_s(w, p, 8), 8 * 64 / 0.83);
  EXPECT_EQ(describe_workload(w, 8),
            "one request = 512-token prompt + 64 output tokens (decode step timed at context "
            "544), batch 8, bf16");

  const Workload cnn{"toy", "f32", "torch-jit", false, std::nullopt, 0, 0};
  Prediction q;
  q.latency_s = 0.04;
  EXPECT_DOUBLE_EQ(target_latency_s(q), 0.04);
  EXPECT_DOUBLE_EQ(requests_per_s(cnn, q, 8), 200);
  EXPECT_EQ(describe_workload(cnn, std::nullopt),
            "one inference = one sample, batch as chosen per device, f32, runtime torch-jit");
  EXPECT_DOUBLE_EQ(usd_per_million(3.6, 2, 1000), 2.0);
}

struct PricedRow {
  std::optional<double> cost;
  bool cheapest = false;
};

TEST(Serving, CheapestNeedsTwoCosts) {
  const auto cost = [](const PricedRow& r) { return r.cost; };
  std::vector<PricedRow> one{{2.0}, {std::nullopt}};
  mark_cheapest(one, cost);
  EXPECT_FALSE(one[0].cheapest);
  std::vector<PricedRow> two{{2.0}, {std::nullopt}, {1.5}};
  mark_cheapest(two, cost);
  EXPECT_FALSE(two[0].cheapest);
  EXPECT_TRUE(two[2].cheapest);
}

TEST(Serving, PlainFigures) {
  EXPECT_EQ(format_plain(12345.6), "12346");
  EXPECT_EQ(format_plain(922.14), "922.1");
  EXPECT_EQ(format_plain(12.5), "12.5");
  EXPECT_EQ(format_plain(0.00002345), "0.00002345");
  EXPECT_EQ(format_plain(0), "0");
  EXPECT_EQ(join_notes({"", "a", "", "b"}), "a; b");
}

TEST(Serving, PricesByLabel) {
  const std::vector<Profile> profiles = {test::cpu_fixture(), test::gpu_fixture()};
  EXPECT_NO_THROW(check_price_labels(profiles, {{"fixture-gpu-box", 1.0}}));
  EXPECT_THROW(check_price_labels(profiles, {{"nobody", 1.0}}), InputError);
  EXPECT_DOUBLE_EQ(*price_of(profiles[0], {}), 0.40);
  EXPECT_DOUBLE_EQ(*price_of(profiles[0], {{"fixture-cpu-box", 0.1}}), 0.1);
}

}  // namespace
}  // namespace truepeak::report
