// estimate --runtime: a runtime record (tests/data/runtimes/torch_jit_record.json) as Options and
// as the device the runtime sees, on the CPU fixture profile.
#include "estimate/runtime_apply.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <set>
#include <string>

#include "core/error.hpp"
#include "helpers.hpp"

namespace truepeak::estimate {
namespace {

using testing::batch;
using testing::fixture;
using testing::linear_stack;

RuntimeRecord record_fixture() {
  std::ifstream in(std::string(TRUEPEAK_TEST_DATA_DIR) + "/runtimes/torch_jit_record.json");
  std::stringstream text;
  text << in.rdbuf();
  return runtime_record_from_json(nlohmann::json::parse(text.str()), "torch_jit_record.json");
}

std::optional<double> rate_of(const OwnRates& rates, const std::string& kind) {
  for (const auto& [k, v] : rates)
    if (k == kind) return v;
  return std::nullopt;
}

TEST(RuntimeApply, RecordSetsEveryRuntimeOption) {
  Options o = batch(1, DType::f32);
  const auto notes = apply_runtime(record_fixture(), "torch-jit", o);
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(o.op_overhead_s, 9.4e-6);
  // kind_op_s of f32 and of every dtype; bf16's is left out.
  EXPECT_EQ(o.kind_overheads.size(), 2u);
  EXPECT_EQ(rate_of(o.kind_overheads, "elementwise:relu"), 3.0e-6);
  EXPECT_EQ(rate_of(o.kind_overheads, "linear"), 2.0e-5);
  // Own kernels of f32 only.
  ASSERT_EQ(o.own_rates.size(), 1u);
  EXPECT_EQ(rate_of(o.own_rates, "pool:max"), 1.1e9);
  ASSERT_TRUE(o.blocked_layout.has_value());
  EXPECT_EQ(o.blocked_layout->ops, (std::vector<std::string>{"elementwise:relu", "pool:max"}));
  EXPECT_EQ(o.blocked_layout->to_plain_copies, 1);
  EXPECT_EQ(o.blocked_layout->to_blocked_copies, 2);
  EXPECT_TRUE(o.blocked_layout->expand_broadcast);
  EXPECT_EQ(o.blocked_layout->group_reorder_widths, (std::vector<std::int64_t>{2, 4, 8}));
  EXPECT_EQ(o.conv_layout, "blocked");
  EXPECT_TRUE(o.linears_as_convolutions);
  EXPECT_EQ(o.in_place_ops, (std::vector<std::string>{"elementwise:relu", "elementwise:add"}));
}

TEST(RuntimeApply, AnotherDtypeTakesItsOwnFiguresAndSaysWhatIsMissing) {
  Options o = batch(1, DType::bf16);
  const auto notes = apply_runtime(record_fixture(), "torch-jit", o);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(
      notes[0],
      "--runtime torch-jit: calibrated for f32, not bf16: only its figures for every dtype apply");
  EXPECT_EQ(rate_of(o.kind_overheads, "linear"), 3.0e-5);
  EXPECT_EQ(rate_of(o.own_rates, "elementwise:gelu"), 2.0e8);
  EXPECT_EQ(rate_of(o.own_rates, "pool:max"), std::nullopt);
}

TEST(RuntimeApply, ADtypesOwnKindCostWinsOverEveryDtypes) {
  RuntimeRecord r = record_fixture();
  r.kind_op_s = {{"matmul", DType::f32, 7e-6, std::nullopt}, {"matmul", std::nullopt, 5e-6, std::nullopt}};
  Options o = batch(1);
  apply_runtime(r, "torch-jit", o);
  ASSERT_EQ(o.kind_overheads.size(), 1u);
  EXPECT_EQ(rate_of(o.kind_overheads, "matmul"), 7e-6);
}

TEST(RuntimeApply, ColdCostsFollowTheKindCostsPrecedence) {
  RuntimeRecord r = record_fixture();
  Options o = batch(1);
  apply_runtime(r, "torch-jit", o);
  EXPECT_FALSE(o.cold_calls.has_value());  // none measured
  r.cold_op_s = 25e-6;
  r.kind_op_s = {{"matmul", DType::f32, 7e-6, 40e-6},
                 {"matmul", std::nullopt, 5e-6, 30e-6},
                 {"linear", DType::bf16, 9e-6, 60e-6},
                 {"conv2d", std::nullopt, 9e-6, std::nullopt}};
  apply_runtime(r, "torch-jit", o);
  ASSERT_TRUE(o.cold_calls.has_value());
  EXPECT_EQ(o.cold_calls->op_s, 25e-6);
  ASSERT_EQ(o.cold_calls->kinds.size(), 1u);  // bf16's and the unmeasured kind's left out
  EXPECT_EQ(rate_of(o.cold_calls->kinds, "matmul"), 40e-6);
  r.cold_op_s.reset();
  r.kind_op_s.clear();
  apply_runtime(r, "torch-jit", o);
  EXPECT_FALSE(o.cold_calls.has_value());  // a record without them clears the last one's
}

TEST(RuntimeApply, PlainRuntimeClearsTheLayout) {
  RuntimeRecord r = record_fixture();
  r.layout.reset();
  r.conv_layout.clear();
  Options o = batch(1);
  o.blocked_layout = BlockedLayout{};
  apply_runtime(r, "torch-jit", o);
  EXPECT_FALSE(o.blocked_layout.has_value());
  EXPECT_EQ(o.conv_layout, "");
}

TEST(RuntimeApply, FusionRulesComeFromTheRecordOrAreCleared) {
  RuntimeRecord r = record_fixture();
  Options o = batch(1);
  o.fusion = FusionRules{true, true, true, 1e-3};
  apply_runtime(r, "torch-jit", o);
  EXPECT_FALSE(o.fusion.has_value());
  r.fusion = RuntimeFusion{true, false, true, 1.5e-5};
  apply_runtime(r, "torch-compile", o);
  ASSERT_TRUE(o.fusion.has_value());
  EXPECT_TRUE(o.fusion->pointwise);
  EXPECT_FALSE(o.fusion->into_reductions);
  EXPECT_TRUE(o.fusion->into_products);
  EXPECT_EQ(o.fusion->graph_s, 1.5e-5);
}

TEST(RuntimeApply, DeviceTakesTheRuntimesLevelsAndPoints) {
  const Profile profile = fixture("fixture_cpu.json");
  const Device& cpu = profile.devices.at(0);
  const RuntimeRecord r = record_fixture();
  const Device view = runtime_device(cpu, r);
  // DRAM at the runtime's bandwidth, L2 as measured.
  ASSERT_EQ(view.memory_levels.size(), 2u);
  EXPECT_EQ(view.memory_levels[0].name, "L2");
  EXPECT_EQ(view.memory_levels[0].Bps, 2.0e11);
  EXPECT_EQ(view.memory_levels[1].Bps, 4.1e10);
  // f32 GEMM points are the runtime's; its best is the f32 peak.
  ASSERT_EQ(view.gemm.size(), 1u);
  EXPECT_EQ(view.gemm[0].impl, "mlas");
  EXPECT_EQ(view.peaks.flops_per_s.at("f32"), r.gemm[0].flops_per_s);
  ASSERT_EQ(view.conv.size(), 1u);
  EXPECT_EQ(view.conv[0].layout, "blocked");
  // The rest of the device is unchanged.
  EXPECT_EQ(view.overhead_op_s, cpu.overhead_op_s);
  EXPECT_EQ(view.datasheet.flops_per_s, cpu.datasheet.flops_per_s);
}

TEST(RuntimeApply, PointsOfOtherDtypesStay) {
  Profile profile = fixture("fixture_cpu.json");
  Device cpu = profile.devices.at(0);
  GemmPoint bf16 = cpu.gemm[0];
  bf16.shape.dtype = DType::bf16;
  cpu.gemm.push_back(bf16);
  RuntimeRecord r = record_fixture();
  r.conv.clear();
  const Device view = runtime_device(cpu, r);
  ASSERT_EQ(view.gemm.size(), 2u);
  EXPECT_EQ(view.gemm[0].shape.dtype, DType::bf16);
  EXPECT_EQ(view.gemm[1].impl, "mlas");
  EXPECT_EQ(view.conv.size(), cpu.conv.size());
}

TEST(RuntimeApply, ConvPointsReplaceTheLibrarysOfTheirClassOnly) {
  Profile profile = fixture("fixture_cpu.json");
  Device cpu = profile.devices.at(0);
  cpu.conv.clear();
  ConvPoint dense;
  dense.shape.c = dense.shape.k = 64;
  dense.shape.h = dense.shape.w = 28;
  dense.shape.r = dense.shape.s = 3;
  dense.flops_per_s = 1e11;
  dense.impl = "library";
  ConvPoint grouped = dense, depthwise = dense, cold = dense;
  grouped.shape.groups = 16;
  depthwise.shape.groups = 64;
  cold.cold_weights = true;
  cpu.conv = {dense, grouped, depthwise, cold};
  RuntimeRecord r = record_fixture();
  ConvPoint own = dense;
  own.impl = "runtime";
  own.shape.h = own.shape.w = 14;
  r.conv = {own};
  // The runtime's warm dense point replaces the library's warm dense one; grouped, depthwise
  // and the cold dense one stay.
  const auto sets = [](const Device& d) {
    std::multiset<std::string> out;
    for (const auto& c : d.conv)
      out.insert(c.impl + "/" + std::to_string(c.shape.groups) + (c.cold_weights ? " cold" : ""));
    return out;
  };
  EXPECT_EQ(sets(runtime_device(cpu, r)),
            (std::multiset<std::string>{"library/1 cold", "library/16", "library/64", "runtime/1"}));
  // A runtime that times every class, warm and cold, replaces them all.
  ConvPoint own_depthwise = depthwise, own_grouped = grouped, own_cold = cold;
  own_depthwise.impl = own_grouped.impl = own_cold.impl = "runtime";
  r.conv = {own, own_grouped, own_depthwise, own_cold};
  EXPECT_EQ(sets(runtime_device(cpu, r)),
            (std::multiset<std::string>{"runtime/1", "runtime/1 cold", "runtime/16", "runtime/64"}));
}

TEST(RuntimeApply, EstimateWithTheRecordCostsItsDispatch) {
  const Profile profile = fixture("fixture_cpu.json");
  const Device& cpu = profile.devices.at(0);
  RuntimeRecord r = record_fixture();
  r.linears_as_convolutions = false;
  const Model model = linear_stack(4, 64);
  const Estimate library = estimate(model, cpu, batch(1));
  Options o = batch(1);
  apply_runtime(r, "torch-jit", o);
  const Estimate runtime = estimate(model, runtime_device(cpu, r), o);
  ASSERT_EQ(runtime.ops.size(), 4u);
  for (const auto& row : runtime.ops) EXPECT_DOUBLE_EQ(row.overhead_s, 2.0e-5) << row.name;
  EXPECT_GT(runtime.latency_s, library.latency_s);
}

TEST(RuntimeApply, FlagsOverrideSingleFigures) {
  OwnRates base{{"linear", 2e-5}, {"elementwise:relu", 3e-6}};
  override_rates(base, {{"linear", 1e-5}, {"matmul", 4e-5}});
  EXPECT_EQ(base, (OwnRates{{"linear", 1e-5}, {"elementwise:relu", 3e-6}, {"matmul", 4e-5}}));
}

TEST(RuntimeApply, MissingKeyNamesWhatThereIsAndTheCommand) {
  Profile profile = fixture("fixture_cpu.json");
  Device& cpu = profile.devices.at(0);
  try {
    find_runtime(cpu, "torch-eager", "p.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--runtime torch-eager: not in p.json (it has none); add it with 'truepeak calibrate "
              "--runtime "
              "torch-eager --add-to p.json'");
  }
  cpu.runtimes["torch-jit"] = record_fixture();
  cpu.runtimes["onnxruntime"] = record_fixture();
  EXPECT_EQ(&find_runtime(cpu, "torch-jit", "p.json"), &cpu.runtimes.at("torch-jit"));
  try {
    find_runtime(cpu, "torch-jit:v2", "p.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--runtime torch-jit:v2: not in p.json (it has: onnxruntime, torch-jit); add it with "
              "'truepeak "
              "calibrate --runtime torch-jit:v2 --add-to p.json'");
  }
}

}  // namespace
}  // namespace truepeak::estimate
