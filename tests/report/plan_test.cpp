#include "report/plan.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

using test::cpu_fixture;
using test::gpu_fixture;

const Workload kCnn{"toy", "f32", "", false, std::nullopt, 0, 0};

PlanLoad load_of(double qps, double max_latency_s) {
  PlanLoad load;
  load.base_per_s = qps;
  load.max_latency_s = max_latency_s;
  return load;
}

// The GPU runs a pass of `batch` in 5 ms + 0.1 ms x batch; a CPU in 30 ms + 20 ms x batch.
Prediction toy_cnn(const Profile&, const Device& d, std::int64_t batch) {
  Prediction p;
  const double n = static_cast<double>(batch);
  p.latency_s = d.kind == "gpu" ? 5e-3 + 0.1e-3 * n : 30e-3 + 20e-3 * n;
  return p;
}

const PlanRow* row_of(const Plan& plan, const std::string& device) {
  for (const auto& r : plan.rows)
    if (r.device == device) return &r;
  return nullptr;
}

TEST(Plan, CapacityIsTheLargerOfHeadroomAndGrownPeak) {
  auto load = load_of(2000, 0.05);
  EXPECT_DOUBLE_EQ(load.required_per_s(), 2400);  // the peak defaults to the base
  load.peak_per_s = 2500;
  load.growth = 1.5;
  EXPECT_DOUBLE_EQ(load.required_per_s(), 3750);
  load.headroom = 1.0;
  EXPECT_DOUBLE_EQ(load.required_per_s(), 4000);
}

TEST(Plan, BadLoadsAreRefused) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double qps : {0.0, -1.0, nan, inf}) EXPECT_THROW(check_load(load_of(qps, 0.05)), InputError);
  for (double latency : {0.0, -1.0, nan, inf})
    EXPECT_THROW(check_load(load_of(100, latency)), InputError);
  auto load = load_of(100, 0.05);
  EXPECT_NO_THROW(check_load(load));
  for (double headroom : {-0.1, nan, inf}) {
    auto l = load;
    l.headroom = headroom;
    EXPECT_THROW(check_load(l), InputError);
  }
  for (double growth : {0.0, -2.0, nan, inf}) {
    auto l = load;
    l.growth = growth;
    EXPECT_THROW(check_load(l), InputError);
  }
  for (double peak : {50.0, nan, inf}) {
    auto l = load;
    l.peak_per_s = peak;
    EXPECT_THROW(check_load(l), InputError);
  }
  try {
    auto l = load;
    l.peak_per_s = 50;
    check_load(l);
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "--peak-qps 50: below the base load (--qps 100); the peak is the highest load, "
                 "at least the base");
  }
  // A capacity past the largest double.
  auto huge = load_of(1e308, 0.05);
  huge.headroom = 10;
  EXPECT_THROW(check_load(huge), InputError);
}

TEST(Plan, InstancesAndCostFromTheEstimatorsFigures) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  // 50.55 ms: the GPU's batch 455 takes 50.5 ms; a CPU's batch 1 takes 50 ms.
  const auto plan = make_plan(profiles, {}, {}, kCnn, load_of(2000, 50.55e-3), toy_cnn);
  ASSERT_EQ(plan.rows.size(), 3u);
  const auto* gpu = row_of(plan, "fixture-gpu-box/cuda:0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->batch, 455);
  EXPECT_NEAR(gpu->per_instance_per_s, 455 / 50.5e-3, 1e-6);
  EXPECT_EQ(gpu->instances, 1);  // 2400 / 9010
  ASSERT_TRUE(gpu->usd_per_hour);
  EXPECT_DOUBLE_EQ(*gpu->usd_per_hour, 4.50);
  EXPECT_DOUBLE_EQ(*gpu->usd_per_million, 4.50 / (2000 * 3600.0) * 1e6);

  const auto* cpu = row_of(plan, "fixture-cpu-box/cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->batch, 1);
  EXPECT_DOUBLE_EQ(cpu->per_instance_per_s, 20);
  EXPECT_EQ(cpu->instances, 120);  // 2400 / 20
  EXPECT_DOUBLE_EQ(*cpu->usd_per_hour, 120 * 0.40);

  // Sorted by cost per hour: the GPU (4.50) before the CPU box (48) and the GPU box's CPU (540).
  EXPECT_EQ(plan.rows[0].device, "fixture-gpu-box/cuda:0");
  EXPECT_TRUE(plan.rows[0].cheapest);
  EXPECT_FALSE(plan.rows[1].cheapest);

  const auto text = plan_to_text(plan);
  EXPECT_NE(text.find("Capacity: max(2000 x (1 + 0.2), 2000 x 1) = 2400 requests/s."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<- cheapest"), std::string::npos);
  const auto json = plan_to_json(plan);
  EXPECT_EQ(json["rows"][0]["instances"], 1);
  EXPECT_EQ(json["rows"][1]["instances"], 120);
  EXPECT_DOUBLE_EQ(json["load"]["required_per_s"].get<double>(), 2400);
  EXPECT_NE(plan_to_markdown(plan).find("| device |"), std::string::npos);
}

TEST(Plan, AWholeQuotientIsNotRoundedUp) {
  const std::vector<Profile> profiles = {cpu_fixture()};
  // 800 per second at any batch: 2400 / 800 is 3 instances, not 4.
  const auto plan = make_plan(profiles, {}, {}, kCnn, load_of(2000, 10.5e-3),
                              [](const Profile&, const Device&, std::int64_t batch) {
                                Prediction p;
                                p.latency_s = static_cast<double>(batch) / 800;
                                return p;
                              });
  EXPECT_EQ(plan.rows[0].batch, 8);
  EXPECT_EQ(plan.rows[0].instances, 3);
}

TEST(Plan, AMachineThatCannotMeetTheTargetSaysSo) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  // 20 ms: a CPU's batch 1 takes 50 ms.
  const auto plan = make_plan(profiles, {}, {}, kCnn, load_of(100, 20e-3), toy_cnn);
  const auto* cpu = row_of(plan, "fixture-cpu-box/cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->error, "cannot meet 20 ms per request: batch 1 takes 50 ms");
  EXPECT_EQ(plan.rows.back().device.find("cuda"), std::string::npos);  // errors last
  EXPECT_NE(plan_to_text(plan).find("cannot meet 20 ms per request: batch 1 takes 50 ms"),
            std::string::npos);
  EXPECT_EQ(plan_to_json(plan)["rows"][2]["error"],
            "cannot meet 20 ms per request: batch 1 takes 50 ms");
  // Only the GPU meets it: one cost, nothing to compare it with.
  for (const auto& r : plan.rows) EXPECT_FALSE(r.cheapest);
}

TEST(Plan, PricesFromTheCommandLineAndTheirAbsence) {
  std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  for (auto& p : profiles) p.machine.price_per_hour_usd.reset();
  const auto unpriced = make_plan(profiles, {}, {}, kCnn, load_of(2000, 50.55e-3), toy_cnn);
  for (const auto& r : unpriced.rows) {
    EXPECT_FALSE(r.usd_per_hour);
    EXPECT_FALSE(r.cheapest);
  }
  EXPECT_NE(plan_to_text(unpriced).find("- (no price)"), std::string::npos);
  const auto priced = make_plan(profiles, {}, {{"fixture-cpu-box", 0.1}}, kCnn,
                                load_of(2000, 50.55e-3), toy_cnn);
  EXPECT_DOUBLE_EQ(*row_of(priced, "fixture-cpu-box/cpu")->usd_per_hour, 12);
  EXPECT_THROW(make_plan(profiles, {}, {{"nobody", 1.0}}, kCnn, load_of(2000, 0.05), toy_cnn),
               InputError);
}

TEST(Plan, DecoderLoadInOutputTokens) {
  const std::vector<Profile> profiles = {gpu_fixture()};
  const Workload llm{"toy-llm", "bf16", "", true, 1024, 1056, 64};
  auto load = load_of(10000, 30.5e-3);
  load.tokens = true;
  // Prefill 50 ms x batch; a decode step 10 ms + 1 ms x batch: batch 20 meets 30.5 ms a token.
  const auto plan = make_plan(profiles, {}, {}, llm, load,
                              [](const Profile&, const Device&, std::int64_t batch) {
                                Prediction p;
                                const double n = static_cast<double>(batch);
                                p.latency_s = 50e-3 * n;
                                p.decode_s = 10e-3 + 1e-3 * n;
                                return p;
                              });
  const auto* gpu = row_of(plan, "fixture-gpu-box/cuda:0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->batch, 20);
  // 20 requests of 64 tokens in a prefill of 1 s and 63 steps of 30 ms.
  const double per_instance = 20 * 64 / (1.0 + 63 * 30e-3);
  EXPECT_NEAR(gpu->per_instance_per_s, per_instance, 1e-9);
  EXPECT_EQ(gpu->instances, std::ceil(12000 / per_instance));
  EXPECT_DOUBLE_EQ(*gpu->usd_per_million, gpu->instances * 4.50 / (10000 * 3600.0) * 1e6);
  const auto text = plan_to_text(plan);
  EXPECT_NE(text.find("output tokens/s per instance"), std::string::npos) << text;
  EXPECT_NE(text.find("USD per 1M output tokens"), std::string::npos) << text;

  auto tokens = load_of(100, 0.05);
  tokens.tokens = true;
  EXPECT_THROW(make_plan(profiles, {}, {}, kCnn, tokens, toy_cnn), InputError);
}

}  // namespace
}  // namespace truepeak::report
