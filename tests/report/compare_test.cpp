#include "report/compare.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "report/serving.hpp"
#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

using test::cpu_fixture;
using test::gpu_fixture;

const CompareRow* find_row(const Comparison& c, const std::string& group, const std::string& name) {
  for (const auto& r : c.rows) {
    if (r.group == group && r.name == name) return &r;
  }
  return nullptr;
}

TEST(Compare, ColumnsAreEveryDeviceOfEveryProfile) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  const auto c = compare_profiles(profiles, {});
  ASSERT_EQ(c.columns.size(), 3u);
  EXPECT_EQ(c.columns[0].label, "fixture-cpu-box/cpu");
  EXPECT_EQ(c.columns[1].label, "fixture-gpu-box/cpu");
  EXPECT_EQ(c.columns[2].label, "fixture-gpu-box/cuda:0");
  EXPECT_EQ(c.columns[2].device_kind, "gpu");
  ASSERT_TRUE(c.columns[0].price_per_hour_usd);
  EXPECT_DOUBLE_EQ(*c.columns[0].price_per_hour_usd, 0.40);
}

TEST(Compare, ARuntimesOwnProductsAreItsBestWarmPointsPerDtype) {
  std::vector<Profile> profiles = {cpu_fixture(), cpu_fixture()};
  auto gemm = [](DType dt, double rate, bool cold) {
    GemmPoint p;
    p.shape.dtype = dt;
    p.flops_per_s = rate;
    p.cold_weights = cold;
    return p;
  };
  auto conv = [](double rate) {
    ConvPoint p;
    p.flops_per_s = rate;
    return p;
  };
  RuntimeRecord first;
  first.op_s = 5e-6;
  first.gemm = {gemm(DType::f32, 100e9, false), gemm(DType::f32, 150e9, false), gemm(DType::f32, 900e9, true),
                gemm(DType::bf16, 300e9, false)};
  first.conv = {conv(80e9), conv(120e9)};
  profiles[0].devices.at(0).runtimes["torch-eager"] = first;
  RuntimeRecord second;  // no products of its own: the op cost only
  second.op_s = 4e-6;
  profiles[1].devices.at(0).runtimes["torch-eager"] = second;
  const auto c = compare_profiles(profiles, {});

  const auto* op = find_row(c, "runtime", "torch-eager op");
  ASSERT_NE(op, nullptr);
  EXPECT_DOUBLE_EQ(*op->ratio_to_first(1), 0.8);
  const auto* f32 = find_row(c, "runtime", "torch-eager gemm f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_DOUBLE_EQ(*f32->cells[0].value, 150e9);  // the cold point is left out
  EXPECT_FALSE(f32->cells[1].value);
  const auto* bf16 = find_row(c, "runtime", "torch-eager gemm bf16");
  ASSERT_NE(bf16, nullptr);
  EXPECT_DOUBLE_EQ(*bf16->cells[0].value, 300e9);
  EXPECT_EQ(find_row(c, "runtime", "torch-eager conv bf16 (best layer)"), nullptr);  // nobody has one
  const auto* conv_f32 = find_row(c, "runtime", "torch-eager conv f32 (best layer)");
  ASSERT_NE(conv_f32, nullptr);
  EXPECT_DOUBLE_EQ(*conv_f32->cells[0].value, 120e9);

  // Both measured: the ratio is the second's best over the first's.
  profiles[1].devices.at(0).runtimes["torch-eager"].gemm = {gemm(DType::f32, 120e9, false)};
  const auto again = compare_profiles(profiles, {});
  EXPECT_DOUBLE_EQ(*find_row(again, "runtime", "torch-eager gemm f32")->ratio_to_first(1), 0.8);
}

TEST(Compare, RatiosComeFromTheProfilesFigures) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  const auto c = compare_profiles(profiles, {});
  const auto* bf16 = find_row(c, "gemm", "bf16");
  ASSERT_NE(bf16, nullptr);
  const double first = profiles[0].devices[0].peaks.flops_per_s.at("bf16");
  const double gpu = profiles[1].devices[1].peaks.flops_per_s.at("bf16");
  const double gpu_ds = profiles[1].devices[1].datasheet.flops_per_s.at("bf16");
  ASSERT_TRUE(bf16->ratio_to_first(2));
  EXPECT_DOUBLE_EQ(*bf16->ratio_to_first(2), gpu / first);
  EXPECT_DOUBLE_EQ(*bf16->ratio_to_first(0), 1.0);
  ASSERT_TRUE(bf16->of_datasheet(2));
  EXPECT_DOUBLE_EQ(*bf16->of_datasheet(2), gpu / gpu_ds);

  // f16 exists only on the GPU: the CPU cells are empty and so is the ratio to the first column.
  const auto* f16 = find_row(c, "gemm", "f16");
  ASSERT_NE(f16, nullptr);
  EXPECT_FALSE(f16->cells[0].value);
  EXPECT_TRUE(f16->cells[2].value);
  EXPECT_FALSE(f16->ratio_to_first(2));

  // The best convolution layer of each dtype: f32 on both CPUs, bf16 on the GPU only.
  const auto* conv_f32 = find_row(c, "conv", "f32 (best layer)");
  ASSERT_NE(conv_f32, nullptr);
  EXPECT_DOUBLE_EQ(*conv_f32->cells[0].value, 840e9);
  EXPECT_DOUBLE_EQ(*conv_f32->cells[1].value, 2800e9);
  EXPECT_FALSE(conv_f32->cells[2].value);
  const auto* conv_bf16 = find_row(c, "conv", "bf16 (best layer)");
  ASSERT_NE(conv_bf16, nullptr);
  EXPECT_DOUBLE_EQ(*conv_bf16->cells[2].value, 593400e9);

  // CPU DRAM and GPU HBM share the main-memory row.
  const auto* main = find_row(c, "memory", "main (DRAM/HBM)");
  ASSERT_NE(main, nullptr);
  for (const auto& cell : main->cells) EXPECT_TRUE(cell.value);
  const auto* h2d = find_row(c, "transfer", "h2d_pinned");
  ASSERT_NE(h2d, nullptr);
  EXPECT_FALSE(h2d->cells[0].value);
  EXPECT_DOUBLE_EQ(*h2d->cells[2].value, 55e9);
  const auto* overhead = find_row(c, "overhead", "graph op");
  ASSERT_NE(overhead, nullptr);
  EXPECT_FALSE(overhead->cells[0].value);
  // A row nobody measured is left out.
  for (const auto& r : c.rows) {
    bool any = false;
    for (const auto& cell : r.cells) any = any || cell.value.has_value();
    EXPECT_TRUE(any) << r.group << " " << r.name;
  }
}

TEST(Compare, PriceOverridesAndErrors) {
  const std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  const auto c = compare_profiles(profiles, {{"fixture-gpu-box", 2.0}});
  EXPECT_DOUBLE_EQ(*c.columns[1].price_per_hour_usd, 2.0);
  EXPECT_DOUBLE_EQ(*c.columns[2].price_per_hour_usd, 2.0);
  EXPECT_THROW(compare_profiles(profiles, {{"no-such-box", 1.0}}), InputError);

  EXPECT_EQ(parse_price("a=b=1.5").first, "a=b");
  EXPECT_DOUBLE_EQ(parse_price("box=1.5").second, 1.5);
  EXPECT_THROW(parse_price("box"), InputError);
  EXPECT_THROW(parse_price("box="), InputError);
  EXPECT_THROW(parse_price("=3"), InputError);
  EXPECT_THROW(parse_price("box=cheap"), InputError);
  EXPECT_THROW(parse_price("box=-1"), InputError);
  EXPECT_THROW(parse_price("box=nan"), InputError);
  EXPECT_THROW(parse_price("box=inf"), InputError);
}

TEST(Compare, ProfilesThatShareALabelAreToldApartByTheirFiles) {
  const std::vector<Profile> profiles = {cpu_fixture(), cpu_fixture(), gpu_fixture()};
  const auto c = compare_profiles(profiles, {}, {"a/p.json", "b/p.json", "c/p.json"});
  ASSERT_EQ(c.columns.size(), 4u);
  EXPECT_EQ(c.columns[0].label, "fixture-cpu-box/cpu [a/p.json]");
  EXPECT_EQ(c.columns[1].label, "fixture-cpu-box/cpu [b/p.json]");
  EXPECT_EQ(c.columns[2].label, "fixture-gpu-box/cpu");
  EXPECT_EQ(compare_profiles(profiles, {}).columns[1].label, "fixture-cpu-box/cpu");
}

TEST(Compare, CostIsSortedAndTheCheapestMarked) {
  std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  auto c = compare_profiles(profiles, {});
  // Latency by device id, so the expected cost is known: 0.40 $/h x 10 ms / 8 vs 4.50 $/h x 1 ms
  // / 8.
  Workload toy{"toy", "f32", "", false, std::nullopt, 0, 0};
  add_cost(c, profiles, toy, 8, [](const Profile& p, const Device& d, std::int64_t) {
    Prediction out;
    if (p.machine.label == "fixture-gpu-box" && d.id == "cpu") {
      out.error = "no f32 figure";
    } else {
      out.latency_s = d.id == "cpu" ? 10e-3 : 1e-3;
      out.naive_latency_s = out.latency_s / 2;
    }
    return out;
  });
  ASSERT_TRUE(c.cost);
  const auto& rows = c.cost->rows;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(comparison_to_text(c).find("Model toy: one inference = one sample, batch 8, f32."),
            std::string::npos);
  // The slower CPU box is cheaper per inference: 0.40 x 10 ms < 4.50 x 1 ms.
  EXPECT_EQ(c.columns[rows[0].column].label, "fixture-cpu-box/cpu");
  EXPECT_NEAR(*rows[0].usd_per_million, 0.40 / 3600 * 10e-3 / 8 * 1e6, 1e-12);
  EXPECT_TRUE(rows[0].cheapest);
  EXPECT_DOUBLE_EQ(rows[0].inferences_per_s, 800);
  EXPECT_EQ(c.columns[rows[1].column].label, "fixture-gpu-box/cuda:0");
  EXPECT_NEAR(*rows[1].usd_per_million, 4.50 / 3600 * 1e-3 / 8 * 1e6, 1e-12);
  EXPECT_FALSE(rows[1].cheapest);
  EXPECT_DOUBLE_EQ(rows[1].inferences_per_s, 8000);
  EXPECT_EQ(rows[2].error, "no f32 figure");

  const auto text = comparison_to_text(c);
  EXPECT_NE(text.find("<- cheapest"), std::string::npos);
  EXPECT_NE(text.find("cannot estimate: no f32 figure"), std::string::npos);
  const auto md = comparison_to_markdown(c);
  EXPECT_NE(md.find("| figure |"), std::string::npos);
  const auto json = comparison_to_json(c);
  EXPECT_EQ(json["columns"].size(), 3u);
  EXPECT_EQ(json["cost"]["rows"][0]["cheapest"], true);
  for (const auto& row : json["rows"]) EXPECT_EQ(row["values"].size(), 3u);
}

TEST(Compare, ModelThatFitsNowhereMarksNothingCheapest) {
  std::vector<Profile> profiles = {cpu_fixture()};
  auto c = compare_profiles(profiles, {});
  Workload huge{"huge", "f32", "", false, std::nullopt, 0, 0};
  add_cost(c, profiles, huge, 1, [](const Profile&, const Device&, std::int64_t) {
    Prediction out;
    out.latency_s = 1;
    out.fits = false;
    return out;
  });
  EXPECT_FALSE(c.cost->rows[0].cheapest);
  EXPECT_NE(comparison_to_text(c).find("does not fit in memory"), std::string::npos);
}

TEST(Compare, OnePriceMarksNothingCheapest) {
  std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  // Only the CPU box has a price: its cost compares with nothing.
  profiles[1].machine.price_per_hour_usd.reset();
  auto c = compare_profiles(profiles, {});
  Workload toy{"toy", "f32", "", false, std::nullopt, 0, 0};
  add_cost(c, profiles, toy, 1, [](const Profile&, const Device&, std::int64_t) {
    Prediction out;
    out.latency_s = 1e-3;
    return out;
  });
  for (const auto& r : c.cost->rows) EXPECT_FALSE(r.cheapest);
  EXPECT_EQ(comparison_to_text(c).find("cheapest"), std::string::npos);
  EXPECT_FALSE(comparison_to_json(c)["cost"]["rows"][0]["cheapest"].get<bool>());
}

// A decoder whose prefill takes 100 ms x batch and whose decode step takes 10 ms + 1 ms x batch
// on the GPU, twenty times both on a CPU.
Prediction toy_decoder(const Profile&, const Device& d, std::int64_t batch) {
  Prediction out;
  const double slow = d.kind == "gpu" ? 1 : 20;
  const double n = static_cast<double>(batch);
  out.latency_s = slow * 0.1 * n;
  out.decode_s = slow * (10e-3 + 1e-3 * n);
  out.naive_latency_s = *out.decode_s / 2;
  out.naive_decode_s = *out.decode_s / 2;
  out.fits = batch <= 16;
  return out;
}

const Workload kDecoder{"toy-llm", "bf16", "", true, 2048, 2112, 128};

TEST(Compare, DecoderServingFigures) {
  std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  auto c = compare_profiles(profiles, {});
  add_cost(c, profiles, kDecoder, 4, toy_decoder);
  ASSERT_TRUE(c.cost);
  const CostRow* gpu = nullptr;
  for (const auto& r : c.cost->rows)
    if (c.columns[r.column].device_id == "cuda:0") gpu = &r;
  ASSERT_NE(gpu, nullptr);
  EXPECT_DOUBLE_EQ(gpu->latency_s, 0.4);
  ASSERT_TRUE(gpu->decode_s);
  EXPECT_DOUBLE_EQ(*gpu->decode_s, 14e-3);
  // A batch of 4 requests: the prefill, then 127 decode steps.
  EXPECT_DOUBLE_EQ(gpu->inferences_per_s, 4 / (0.4 + 127 * 14e-3));
  EXPECT_DOUBLE_EQ(*gpu->tokens_per_s, 4 / 14e-3);
  // 4.50 USD/h: input tokens at the prefill, output tokens at a decode step each.
  EXPECT_NEAR(*gpu->usd_per_million_input, 4.50 / 3600 * 0.4 / (4 * 2048) * 1e6, 1e-12);
  EXPECT_NEAR(*gpu->usd_per_million, 4.50 / 3600 * 14e-3 / 4 * 1e6, 1e-12);
  // The GPU (4.50 USD/h, 14 ms a step) is cheaper per token than the CPU box (0.40 USD/h,
  // 280 ms a step).
  EXPECT_EQ(c.columns[c.cost->rows[0].column].device_id, "cuda:0");
  EXPECT_TRUE(c.cost->rows[0].cheapest);

  const auto text = comparison_to_text(c);
  EXPECT_NE(text.find("one request = 2048-token prompt + 128 output tokens (decode step timed at "
                      "context 2112), batch 4, bf16"),
            std::string::npos)
      << text;
  for (const char* column : {"first token", "per output token", "USD/1M in", "USD/1M out"})
    EXPECT_NE(text.find(column), std::string::npos) << column;
  const auto json = comparison_to_json(c);
  const auto& row = json["cost"]["rows"][0];
  EXPECT_DOUBLE_EQ(row["time_per_output_token_s"].get<double>(), 14e-3);
  EXPECT_DOUBLE_EQ(row["time_to_first_token_s"].get<double>(), 0.4);
  EXPECT_TRUE(row.contains("usd_per_million_output_tokens"));
  EXPECT_EQ(json["cost"]["workload"]["output_tokens"], 128);
}

TEST(Compare, LargestBatchWithinTheLatencyTarget) {
  std::vector<Profile> profiles = {cpu_fixture(), gpu_fixture()};
  auto c = compare_profiles(profiles, {});
  // 20.5 ms a token: the GPU's step is 10 + batch ms, so batch 10; its memory holds 16.
  add_cost_within(c, profiles, kDecoder, 20.5e-3, toy_decoder);
  ASSERT_TRUE(c.cost_within);
  const auto& rows = c.cost_within->rows;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(c.columns[rows[0].column].device_id, "cuda:0");
  EXPECT_EQ(rows[0].batch, 10);
  EXPECT_DOUBLE_EQ(*rows[0].decode_s, 20e-3);
  EXPECT_EQ(rows[0].limit, BatchLimit::latency);
  // The CPUs' step is 220 ms at batch 1.
  EXPECT_EQ(rows[1].unmet, "cannot meet 20.5 ms per output token: batch 1 takes 220 ms");
  EXPECT_FALSE(rows[1].cheapest);

  // 40.5 ms: the GPU would run batch 30, but its memory holds 16.
  auto wide = compare_profiles(profiles, {});
  add_cost_within(wide, profiles, kDecoder, 40.5e-3, toy_decoder);
  EXPECT_EQ(wide.cost_within->rows[0].batch, 16);
  EXPECT_EQ(wide.cost_within->rows[0].limit, BatchLimit::memory);
  EXPECT_EQ(comparison_to_json(wide)["cost_within_latency"]["rows"][0]["batch_limited_by"],
            "memory");
  const auto text = comparison_to_text(wide);
  EXPECT_NE(text.find("largest batch whose time per output token is at most 40.5 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("batch 17 does not fit in memory"), std::string::npos);
}

}  // namespace
}  // namespace truepeak::report
