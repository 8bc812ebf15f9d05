// The driver on a fake backend: what it records, skips and marks incomplete.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <regex>

#include <gtest/gtest.h>

#include "calibrate/driver.hpp"
#include "calibrate/profile_summary.hpp"
#include "core/error.hpp"

namespace truepeak {
namespace {

// A kernel with a fixed time and work; optionally wrong output or a hook run per sample.
class FakeKernel : public Kernel {
 public:
  FakeKernel(std::string name, double time_s, double flops, double bytes, bool wrong = false,
             std::function<void()> on_run = {})
      : name_(std::move(name)), time_s_(time_s), flops_(flops), bytes_(bytes), wrong_(wrong), on_run_(std::move(on_run)) {}
  std::string name() const override { return name_; }
  double flops() const override { return flops_; }
  double bytes() const override { return bytes_; }
  void check() override {
    if (wrong_) throw CheckFailed("element 3: 1.0 != 2.0");
  }
  double run_s() override {
    if (on_run_) on_run_();
    return time_fn ? time_fn() : time_s_;
  }
  std::function<double()> time_fn;  // when set, the time of each run
  std::string layout_ = "nhwc";     // the layout the kernel reports
  std::string impl() const override { return "fake_impl"; }
  std::string layout() const override { return layout_; }

 private:
  std::string name_;
  double time_s_, flops_, bytes_;
  bool wrong_;
  std::function<void()> on_run_;
};

class FakeBackend : public Backend {
 public:
  FakeBackend() {
    desc_.id = "fake";
    desc_.kind = "cpu";
    desc_.name = "fake device";
    desc_.levels = {{"L1", 1 << 16}, {"DRAM", std::int64_t(1) << 34}};
  }
  const DeviceDescription& describe() const override { return desc_; }
  void set_levels(std::vector<MemoryLevel> levels) { desc_.levels = std::move(levels); }
  std::unique_ptr<Kernel> gemm(const GemmShape& s) override {
    if (s.dtype == DType::int8) throw Unsupported("gemm " + s.str() + ": no int8 here");
    const int made = gemms_made[s.str()]++;
    ++gemm_calls;
    // 1 TFLOP/s for f32 unless gemm_rate says otherwise, wrong output for bf16.
    const double rate = gemm_rate ? gemm_rate(s, made) : 1e12;
    return std::make_unique<FakeKernel>(s.str(), s.flops() / rate, s.flops(), s.bytes(), s.dtype == DType::bf16, on_run);
  }
  std::unique_ptr<Kernel> conv(const ConvShape& s, ConvLayout layout) override {
    if (s.c == 3) throw Unsupported("no kernel for 3 channels");
    const int made = convs_made[s.str()]++;
    conv_layouts.push_back(layout);
    // 0.5 TFLOP/s unless conv_layout_rate or conv_rate says otherwise.
    const double rate = conv_layout_rate ? conv_layout_rate(s, layout, made)
                        : conv_rate      ? conv_rate(s, made)
                                         : 5e11;
    auto kernel = std::make_unique<FakeKernel>(s.str(), s.flops() / rate, s.flops(), s.bytes());
    if (layout != ConvLayout::any) kernel->layout_ = std::string(to_string(layout));
    if (layout == ConvLayout::any && any_runs_blocked) kernel->layout_ = "blocked";
    return kernel;
  }
  // Cold weights: half the warm rate. A conv of 3 channels has no kernel at all.
  std::unique_ptr<Kernel> conv_cold_weights(const ConvShape& s, ConvLayout layout) override {
    if (s.c == 3) throw Unsupported("no kernel for 3 channels");
    conv_layouts.push_back(layout);
    return std::make_unique<FakeKernel>(s.str(), s.flops() / 2.5e11, s.flops(), s.bytes());
  }
  std::unique_ptr<Kernel> stream(StreamOp op, std::int64_t bytes) override {
    ++streams_made[std::string(to_string(op)) + " " + std::to_string(bytes)];
    const double rate = stream_rate ? stream_rate(op, bytes) : bytes <= (1 << 15) ? 400e9 : 20e9;
    auto kernel = std::make_unique<FakeKernel>(std::string(to_string(op)), double(bytes) / rate, 0, double(bytes));
    if (bytes == memory_probe_bytes) kernel->time_fn = memory_probe_time;
    return kernel;
  }
  std::unique_ptr<Kernel> fma(DType) override { return std::make_unique<FakeKernel>("fma", 1e-3, 2e9, 0); }
  std::unique_ptr<Kernel> vector_op(const VectorOpShape& shape) override {
    if (shape.op == "exp") throw Unsupported("no exp here");
    const int made = vector_ops_made[shape.str()]++;
    // 1e-4 s a run unless vector_op_time says otherwise.
    const double time_s = vector_op_time ? vector_op_time(made) : 1e-4;
    return std::make_unique<FakeKernel>("vector_op", time_s, 0, 8 * shape.elements());
  }
  std::function<double(int)> vector_op_time;  // a vector op kernel's time by kernels made before
  std::map<std::string, int> vector_ops_made;
  std::unique_ptr<Kernel> tiny_op() override { return std::make_unique<FakeKernel>("tiny", 3e-6, 1, 8); }
  std::unique_ptr<Kernel> sentinel() override {
    auto kernel = std::make_unique<FakeKernel>("sentinel", 1e-4, 1e6, 0);
    kernel->time_fn = sentinel_time;
    return kernel;
  }
  std::function<double()> sentinel_time;  // when set, the sentinel's time per run
  std::map<std::string, int> streams_made;  // by "op bytes"
  std::function<double(StreamOp, std::int64_t)> stream_rate;  // bytes/s, when set
  // When set, the time per run of the stream kernel of memory_probe_bytes (the memory probe).
  std::function<double()> memory_probe_time;
  std::int64_t memory_probe_bytes = -1;
  std::function<double(const ConvShape&, int)> conv_rate;
  // Rate of a convolution kernel by shape, layout and kernels of that shape made before (either layout).
  std::function<double(const ConvShape&, ConvLayout, int)> conv_layout_rate;
  bool any_runs_blocked = false;  // oneDNN's own choice of layout comes out blocked
  std::map<std::string, int> convs_made;
  std::vector<ConvLayout> conv_layouts;
  std::function<void()> on_run;
  // Rate of a GEMM kernel by shape and by how many kernels of that shape were made before.
  std::function<double(const GemmShape&, int)> gemm_rate;
  std::map<std::string, int> gemms_made;
  int gemm_calls = 0;

 private:
  DeviceDescription desc_;
};

// The count of the last progress line with one, "done" and "total" (empty when none): where the
// progress ends against where it said it would.
std::pair<std::string, std::string> last_count(const std::vector<std::string>& lines) {
  const std::regex counted(R"(^\[\S* *(\d+)/(\d+) )");
  std::smatch last;
  for (const auto& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, counted)) last = m;
  }
  if (last.empty()) return {};
  return {last[1].str(), last[2].str()};
}

// Calibrates `backend` with `plan`, its progress lines into `lines`.
Device calibrate_counted(FakeBackend& backend, const Plan& plan, std::vector<std::string>& lines) {
  CalibrateOptions options;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Device device;
  EXPECT_TRUE(calibrate_device(backend, plan, options, device));
  return device;
}

Plan small_plan() {
  Plan p;
  p.gemm = {{DType::f32, 64, 64, 64, 1}, {DType::f32, 128, 128, 128, 1}, {DType::bf16, 64, 64, 64, 1},
            {DType::int8, 64, 64, 64, 1}, {DType::int8, 128, 128, 128, 1}};
  p.conv = {{ConvShape::parse("f32_mb1ic16ih8oc16kh3ph1"), ConvLayout::nhwc}};
  p.stream_ops = {StreamOp::triad};
  p.stream_bytes = {1 << 14, std::int64_t(1) << 36};
  p.fma_dtypes = {DType::f32};
  p.transfer_bytes = {4096, 1 << 20};
  StopRule quick;
  quick.min_samples = 3;
  quick.warmup_runs = 1;
  quick.warmup_s = 0;
  p.gemm_rule = p.conv_rule = p.stream_rule = p.fma_rule = p.overhead_rule = p.transfer_rule = p.sentinel_rule = quick;
  return p;
}

TEST(Driver, RecordsPointsPeaksAndLevels) {
  FakeBackend backend;
  Device device;
  CalibrateOptions options;
  ASSERT_TRUE(calibrate_device(backend, small_plan(), options, device));
  ASSERT_EQ(device.gemm.size(), 2u);  // the two f32 shapes
  EXPECT_NEAR(device.gemm[1].flops_per_s, 1e12, 1);
  EXPECT_EQ(device.gemm[1].impl, "fake_impl");
  // Both f32 GEMMs are confirmed at the end, and every sample counts: 3 measured, 3 confirmed.
  EXPECT_EQ(device.gemm[1].timing.samples, 6);
  EXPECT_NEAR(device.peaks.flops_per_s.at("f32"), 1e12, 1);
  EXPECT_FALSE(device.peaks.flops_per_s.count("bf16"));
  ASSERT_EQ(device.conv.size(), 1u);
  EXPECT_EQ(device.conv[0].layout, "nhwc");
  EXPECT_NEAR(device.peaks.vector_flops_per_s.at("f32"), 2e12, 1);
  EXPECT_NEAR(*device.overhead_op_s, 3e-6, 1e-12);
  ASSERT_EQ(device.memory_levels.size(), 2u);
  EXPECT_NEAR(device.memory_levels[0].Bps, 400e9, 1);
  EXPECT_NEAR(*device.peaks.memory_Bps, 20e9, 1);
  EXPECT_TRUE(device.transfers.empty());  // the fake backend has no transfers
}

TEST(Driver, VectorOpsRecordTheirElementRate) {
  FakeBackend backend;
  Device device;
  Plan plan = small_plan();
  plan.vector_ops = {{"gelu", DType::bf16, 256, 1024}, {"exp", DType::f32, 256, 1024}};
  plan.vector_op_rule = plan.fma_rule;
  ASSERT_TRUE(calibrate_device(backend, plan, CalibrateOptions{}, device));
  ASSERT_EQ(device.vector_ops.size(), 1u);
  const auto& v = device.vector_ops[0];
  EXPECT_EQ(v.op, "gelu");
  EXPECT_EQ(v.dtype, DType::bf16);
  EXPECT_EQ(v.rows * v.cols, 262144);
  EXPECT_NEAR(v.elements_per_s, 262144 / 1e-4, 1);
  EXPECT_EQ(v.impl, "fake_impl");
  // The op the backend cannot run is a skipped entry with its reason.
  bool skipped = false;
  for (const auto& s : device.skipped) skipped |= s.reason.find("no exp here") != std::string::npos;
  EXPECT_TRUE(skipped);
}

TEST(Driver, SecondLookKeepsTheFasterOfTwoLooks) {
  for (const bool faster : {true, false}) {
    FakeBackend backend;
    // First kernel of each shape at one rate, the second look's at twice (or half) that.
    backend.gemm_rate = [faster](const GemmShape&, int made) { return made == 0 ? 5e11 : (faster ? 1e12 : 2.5e11); };
    backend.conv_rate = [faster](const ConvShape&, int made) { return made == 0 ? 2e11 : (faster ? 4e11 : 1e11); };
    Plan plan = small_plan();
    plan.confirm_peaks = false;  // no peak-watch candidates: every point gets its second look
    plan.revisit_max_s = 1.0;
    plan.revisit_rule = plan.gemm_rule;
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, CalibrateOptions{}, device));
    ASSERT_EQ(device.gemm.size(), 2u);
    ASSERT_EQ(device.conv.size(), 1u);
    EXPECT_EQ(backend.gemms_made.at(device.gemm[0].shape.str()), 2);
    if (faster) {
      EXPECT_NEAR(device.gemm[0].flops_per_s, 1e12, 1);
      EXPECT_NEAR(device.peaks.flops_per_s.at("f32"), 1e12, 1);
      EXPECT_NEAR(device.conv[0].flops_per_s, 4e11, 1);
      EXPECT_EQ(device.gemm[0].timing.samples, 6);  // both looks' samples
    } else {
      EXPECT_NEAR(device.gemm[0].flops_per_s, 5e11, 1);
      EXPECT_NEAR(device.conv[0].flops_per_s, 2e11, 1);
      EXPECT_EQ(device.gemm[0].timing.samples, 3);  // the first look's figures stay
    }
    // Each look runs at one rate: the quieter look's median is its time.
    EXPECT_DOUBLE_EQ(device.gemm[0].timing.typical_s, device.gemm[0].timing.time_s);
    EXPECT_DOUBLE_EQ(device.conv[0].timing.typical_s, device.conv[0].timing.time_s);
  }
  // Vector ops get their second look too; one that cannot run has none.
  {
    FakeBackend backend;
    backend.vector_op_time = [](int made) { return made == 0 ? 2e-4 : 1e-4; };
    Plan plan = small_plan();
    plan.confirm_peaks = false;
    plan.vector_ops = {{"gelu", DType::bf16, 256, 1024}, {"exp", DType::f32, 256, 1024}};
    plan.vector_op_rule = plan.gemm_rule;
    plan.revisit_max_s = 1.0;
    plan.revisit_rule = plan.gemm_rule;
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, CalibrateOptions{}, device));
    ASSERT_EQ(device.vector_ops.size(), 1u);
    EXPECT_EQ(backend.vector_ops_made.at("gelu_bf16_256x1024"), 2);
    EXPECT_NEAR(device.vector_ops[0].elements_per_s, 256 * 1024 / 1e-4, 1);
    EXPECT_EQ(device.vector_ops[0].timing.samples, 6);
    EXPECT_DOUBLE_EQ(device.vector_ops[0].timing.typical_s, 1e-4);
  }
  // Points longer than revisit_max_s get no second look.
  FakeBackend backend;
  Plan plan = small_plan();
  plan.confirm_peaks = false;
  plan.revisit_max_s = 1e-9;
  plan.revisit_rule = plan.gemm_rule;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, CalibrateOptions{}, device));
  for (const auto& [shape, made] : backend.gemms_made) EXPECT_EQ(made, 1) << shape;
}

TEST(Driver, SecondLookTellsALayoutAskedForFromTheLayoutThatRan) {
  // One shape asked for in "any" and in "nhwc": both run nhwc (the fake kernel's layout). The
  // first, faster, is the only peak-watch candidate; the second is a point of its own and gets
  // its second look.
  FakeBackend backend;
  backend.conv_rate = [](const ConvShape&, int made) { return made == 0 ? 5e11 : 2.5e11; };
  Plan plan = small_plan();
  const auto shape = ConvShape::parse("f32_mb1ic16ih8oc16kh3ph1");
  plan.conv = {{shape, ConvLayout::any}, {shape, ConvLayout::nhwc}};
  plan.watch_pool = 1;
  plan.confirm_gemms = 1;
  plan.revisit_max_s = 1.0;
  plan.revisit_rule = plan.gemm_rule;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, CalibrateOptions{}, device));
  ASSERT_EQ(device.conv.size(), 2u);
  // First looks (any, nhwc), the second look of the nhwc point, the candidate's confirmation.
  const std::vector<ConvLayout> made = {ConvLayout::any, ConvLayout::nhwc, ConvLayout::nhwc, ConvLayout::any};
  EXPECT_EQ(backend.conv_layouts, made);
}

TEST(Driver, OtherMainMemoryStreamsAreConfirmedOnlyWhenThePlanSaysSo) {
  for (const bool others : {true, false}) {
    FakeBackend backend;
    Plan plan = small_plan();
    plan.stream_ops = {StreamOp::copy, StreamOp::triad};
    plan.confirm_other_streams = others;
    std::vector<std::string> lines;
    CalibrateOptions options;
    options.progress = [&](const std::string& line) { lines.push_back(line); };
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, options, device));
    const std::string dram = std::to_string(std::int64_t(1) << 36);
    EXPECT_EQ(backend.streams_made.at("copy " + dram), others ? 2 : 1);
    EXPECT_EQ(backend.streams_made.at("triad " + dram), 2);  // the headline triad, always
    EXPECT_EQ(backend.streams_made.at("copy 16384"), 1);     // in-cache points never
    // The progress count still ends where it said it would.
    const auto [done, total] = last_count(lines);
    ASSERT_FALSE(done.empty());
    EXPECT_EQ(done, total);
  }
}

TEST(Driver, TheLastCachesTriadsAreConfirmedWhereThePlanSaysSo) {
  std::map<bool, int> first_total;
  for (const bool confirm : {true, false}) {
    FakeBackend backend;
    backend.set_levels({{"L1", 1 << 16}, {"L2", 1 << 20}, {"DRAM", std::int64_t(1) << 34}});
    // Every triad in the caches runs at 400 GB/s in its first look and 600 in the next.
    std::map<std::int64_t, int> looks;
    backend.stream_rate = [&](StreamOp op, std::int64_t bytes) {
      if (bytes > (1 << 22)) return 20e9;
      return op == StreamOp::triad && looks[bytes]++ > 0 ? 600e9 : 400e9;
    };
    Plan plan = small_plan();
    plan.stream_ops = {StreamOp::copy, StreamOp::triad};
    // In L1; past L1 inside L2 (the last cache); past L2 but short of main memory (4x L2).
    plan.stream_bytes = {1 << 14, 1 << 19, 1 << 21, std::int64_t(1) << 36};
    plan.confirm_last_cache_triads = confirm;
    std::vector<std::string> lines;
    const Device device = calibrate_counted(backend, plan, lines);
    EXPECT_EQ(backend.streams_made.at("triad 524288"), confirm ? 2 : 1);
    EXPECT_EQ(backend.streams_made.at("copy 524288"), 1);
    EXPECT_EQ(backend.streams_made.at("triad 16384"), 1);
    EXPECT_EQ(backend.streams_made.at("triad 2097152"), 1);
    // The faster look is kept, and the last cache's bandwidth follows it.
    ASSERT_EQ(device.memory_levels.size(), 3u);
    EXPECT_NEAR(device.memory_levels[0].Bps, 400e9, 1);
    EXPECT_NEAR(device.memory_levels[1].Bps, confirm ? 600e9 : 400e9, 1);
    // The count ends where it said it would, and counted the one more point from the start.
    const std::regex counted(R"(^\[\S* *(\d+)/(\d+) )");
    std::smatch first;
    for (const auto& line : lines)
      if (std::regex_search(line, first, counted)) break;
    ASSERT_FALSE(first.empty());
    first_total[confirm] = std::stoi(first[2].str());
    const auto [done, total] = last_count(lines);
    EXPECT_EQ(done, total);
  }
  EXPECT_EQ(first_total[true], first_total[false] + 1);
}

TEST(Driver, TriadOnlySizesAddMainMemoryPointsOfTheTriadAlone) {
  for (const bool confirm : {true, false}) {
    FakeBackend backend;
    const std::int64_t second = std::int64_t(1) << 37;
    // The second main-memory size runs faster: the headline bandwidth is its.
    backend.stream_rate = [&](StreamOp, std::int64_t bytes) {
      return bytes == second ? 25e9 : bytes <= (1 << 15) ? 400e9 : 20e9;
    };
    Plan plan = small_plan();
    plan.stream_ops = {StreamOp::copy, StreamOp::triad};
    plan.triad_only_bytes = {second};
    plan.transfer_bytes.clear();  // skipped points print no count: the last line would not show it
    plan.confirm_peaks = confirm;
    std::vector<std::string> lines;
    CalibrateOptions options;
    options.progress = [&](const std::string& line) { lines.push_back(line); };
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, options, device));
    const std::string big = std::to_string(second);
    EXPECT_EQ(backend.streams_made.count("copy " + big), 0u);
    EXPECT_EQ(backend.streams_made.at("triad " + big), confirm ? 2 : 1);
    // Listed by working set, the triad alone at the second size last.
    ASSERT_EQ(device.memory_sweep.size(), 5u);
    EXPECT_EQ(device.memory_sweep.back().kernel, "triad");
    EXPECT_EQ(device.memory_sweep.back().bytes, second);
    EXPECT_EQ(device.memory_sweep.front().bytes, 1 << 14);
    // Measured main memory first, before the GEMMs, and the points in cache after them.
    const auto first = [&](const std::string& what) {
      return std::find_if(lines.begin(), lines.end(),
                          [&](const std::string& l) { return l.find(what) != std::string::npos; }) - lines.begin();
    };
    EXPECT_LT(first("stream triad 128 GiB"), first("] gemm "));
    EXPECT_LT(first("] gemm "), first("stream triad 16 KiB"));
    EXPECT_LT(first("stream triad 16 KiB"), static_cast<std::ptrdiff_t>(lines.size()));
    ASSERT_TRUE(device.peaks.memory_Bps.has_value());
    EXPECT_NEAR(*device.peaks.memory_Bps, 25e9, 1e6);
    const auto [done, total] = last_count(lines);
    ASSERT_FALSE(done.empty());
    EXPECT_EQ(done, total);
  }
}

TEST(Summary, VectorOpsLineListsEachOpPerDtype) {
  Profile profile;
  Device d;
  d.id = d.kind = "cpu";
  d.vector_ops = {{"softmax", DType::f32, 256, 1024, {}, 3.0e9, ""},
                  {"gelu", DType::bf16, 256, 1024, {}, 2.09e9, ""},
                  {"gelu", DType::f32, 256, 1024, {}, 2.38e9, ""}};
  profile.devices.push_back(d);
  const auto text = profile_summary(profile);
  EXPECT_NE(text.find("vector ops, G elements/s (f32 / bf16): gelu 2.38 / 2.09, softmax 3.00 / -\n"),
            std::string::npos)
      << text;
}

TEST(Summary, ABestLayerAboveTheDatasheetSaysWhichShareOfItsTapsIsReal) {
  Profile profile;
  Device d;
  d.id = d.kind = "cpu";
  d.datasheet.flops_per_s["f32"] = 500e9;
  ConvPoint padded;
  padded.shape = ConvShape::parse("f32_mb1ic512ih7oc512kh3ph1");
  padded.flops_per_s = 550e9;
  d.conv.push_back(padded);
  profile.devices.push_back(d);
  const auto text = profile_summary(profile);
  EXPECT_NE(text.find("conv f32 (best layer) " + padded.shape.str() + ": FLOPs counted over the whole padded window"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("82% of its taps fall on the input"), std::string::npos) << text;
  EXPECT_NE(text.find("it ran an unrecorded implementation\n"), std::string::npos) << text;
  // What ran: the implementation up to its first ';' (the candidates' search stays out).
  profile.devices[0].conv[0].impl = "cudnn algo=7 math=3 workspace=57 MiB; timed 8 graph + 6 legacy";
  EXPECT_NE(profile_summary(profile).find("it ran cudnn algo=7 math=3 workspace=57 MiB\n"),
            std::string::npos)
      << profile_summary(profile);
  // Below the datasheet, or without padding, no note.
  profile.devices[0].conv[0].flops_per_s = 450e9;
  EXPECT_EQ(profile_summary(profile).find("padded window"), std::string::npos);
  profile.devices[0].conv[0].flops_per_s = 550e9;
  profile.devices[0].conv[0].shape = ConvShape::parse("f32_mb1ic512ih7oc512kh1");
  EXPECT_EQ(profile_summary(profile).find("padded window"), std::string::npos);
}

TEST(Summary, RunLineSaysWhatGaveWayToTheTimeGoal) {
  Profile profile;
  Device d;
  d.id = d.kind = "cpu";
  d.conditions["elapsed_s"] = 171.4;
  profile.devices.push_back(d);
  EXPECT_NE(profile_summary(profile).find("run: 171 s\n"), std::string::npos) << profile_summary(profile);
  profile.devices[0].conditions["deadline_s"] = 170.0;
  profile.devices[0].conditions["left_out_for_deadline"] = {
      {"remeasures", 0}, {"second_looks", 12}, {"last_looks", 3}, {"quiet_wait_s", 4.3}};
  const auto text = profile_summary(profile);
  EXPECT_NE(text.find("run: 171 s (goal 170 s), left out for the goal: 12 second looks, 3 last looks, 4.3 s of "
                      "the wait for a quiet machine\n"),
            std::string::npos)
      << text;
}

TEST(Driver, WrongOutputAndUnsupportedDtypeAreSkippedWithReasons) {
  FakeBackend backend;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, small_plan(), {}, device));
  bool saw_check = false, saw_int8 = false, saw_transfer = false;
  for (const auto& s : device.skipped) {
    if (s.reason.find("output check failed") != std::string::npos) saw_check = true;
    if (s.reason == "no int8 here") {
      saw_int8 = true;
      EXPECT_EQ(s.what, "gemm int8 (2 problems)");
    }
    if (s.what.rfind("transfer", 0) == 0) saw_transfer = true;
  }
  EXPECT_TRUE(saw_check);
  EXPECT_TRUE(saw_int8);
  EXPECT_TRUE(saw_transfer);
}

TEST(Driver, ConfirmationPassMeasuresTheFewFastestGemmsAgain) {
  // 128^3 runs at 1 TFLOP/s, 64^3 at 0.5 the first time and 2 the second (the interference was
  // gone): with two points confirmed per dtype the peak is 2 TFLOP/s, with one it stays at 1.
  for (const int confirmed : {2, 1}) {
    FakeBackend backend;
    backend.gemm_rate = [](const GemmShape& s, int made) {
      return s.m == 128 ? 1e12 : (made == 0 ? 0.5e12 : 2e12);
    };
    Plan plan = small_plan();
    plan.confirm_gemms = confirmed;
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
    EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, 64, 64, 64, 1}.str()), confirmed == 2 ? 2 : 1);
    EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, 128, 128, 128, 1}.str()), 2);
    EXPECT_NEAR(device.peaks.flops_per_s.at("f32"), confirmed == 2 ? 2e12 : 1e12, 1) << confirmed;
    EXPECT_NEAR(device.gemm[0].flops_per_s, confirmed == 2 ? 2e12 : 0.5e12, 1) << confirmed;
  }
}

TEST(Driver, PeakWatchTimesTheHeadlineCandidatesBetweenPointsWithTheirKeptKernels) {
  FakeBackend backend;
  Plan plan = small_plan();
  plan.watch_share = 0.5;
  plan.watch_keeps_kernels = true;
  plan.burst_rule = plan.gemm_rule;
  plan.burst_rule.warmup_runs = 0;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  const auto& watch = device.conditions["peak_watch"];
  EXPECT_GT(watch["bursts"].get<int>(), 0);
  // The FMA, the two f32 GEMMs, the conv and the main-memory triad are candidates; bf16 and int8
  // never measured.
  EXPECT_EQ(watch["candidates"].size(), 5u);
  // Kernels kept: the confirmation made none again.
  EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, 64, 64, 64, 1}.str()), 1);
  EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, 128, 128, 128, 1}.str()), 1);
  // Measured, burst at least once, confirmed: more samples than the two runs alone.
  int bursts_of_first = 0;
  for (const auto& c : watch["candidates"])
    if (c["what"] == "gemm " + GemmShape{DType::f32, 64, 64, 64, 1}.str()) bursts_of_first = c["bursts"];
  EXPECT_EQ(device.gemm[0].timing.samples, 6 + 3 * bursts_of_first);
  EXPECT_NEAR(device.peaks.flops_per_s.at("f32"), 1e12, 1);
  // Without a share, no bursts and nothing reported.
  FakeBackend quiet;
  Device plain;
  ASSERT_TRUE(calibrate_device(quiet, small_plan(), {}, plain));
  EXPECT_FALSE(plain.conditions.contains("peak_watch"));
}

TEST(Driver, TheTimeBeforeTheGoalGoesToBurstsOfTheUnsettledPeaks) {
  struct Run {
    Device device;
    std::vector<std::string> lines;
  };
  const auto run = [](bool noisy_memory, double min_claim = 2) {
    FakeBackend backend;
    backend.stream_rate = [](StreamOp, std::int64_t bytes) { return bytes <= (1 << 15) ? 400e9 : 1e12; };
    int runs = 0;
    if (noisy_memory) {
      // The main-memory triad: its first look is its best, every later sample 20% slower (other
      // tenants on the memory bus), so its bursts never come near it.
      backend.memory_probe_bytes = std::int64_t(1) << 36;
      backend.memory_probe_time = [&runs] { return ++runs <= 4 ? 0.0687 : 0.0824; };
    }
    Plan plan = small_plan();
    plan.watch_share = 0.1;
    plan.watch_keeps_kernels = true;
    plan.burst_rule = plan.gemm_rule;
    plan.burst_rule.warmup_runs = 0;
    plan.burst_rule.max_samples = 3;
    plan.deadline_s = 5;
    plan.closing_watch = true;
    plan.closing_watch_min_claim = min_claim;
    Run r;
    CalibrateOptions options;
    options.progress = [&r](const std::string& line) { r.lines.push_back(line); };
    EXPECT_TRUE(calibrate_device(backend, plan, options, r.device));
    return r;
  };
  const auto memory_bursts = [](const Device& device) {
    for (const auto& c : device.conditions["peak_watch"]["categories"])
      if (c["category"] == "stream triad main memory") return c["bursts"].get<int>();
    return -1;
  };
  // 0.85 x (5 s less the run and its expected confirmation, about 0.8 s) - 2 s: about 1.5 s of
  // bursts, all of them main memory's, with a progress line.
  Run noisy = run(true);
  const double closing = noisy.device.conditions["closing_watch_s"].get<double>();
  EXPECT_GT(closing, 1.0);
  EXPECT_LT(closing, 2.0);
  Run settled = run(false);
  EXPECT_LT(settled.device.conditions["closing_watch_s"].get<double>(), 0.2);
  EXPECT_GT(memory_bursts(noisy.device), 10 * memory_bursts(settled.device));
  // The settled categories (the FMA is the first) get none of the closing bursts.
  EXPECT_GT(memory_bursts(noisy.device),
            20 * noisy.device.conditions["peak_watch"]["categories"][0]["bursts"].get<int>());
  bool said = false;
  for (const auto& line : noisy.lines) said = said || line.find("more bursts of the headline points") != std::string::npos;
  EXPECT_TRUE(said);
  // Main memory's figure is still its first, fastest look.
  EXPECT_NEAR(noisy.device.peaks.memory_Bps.value(), double(std::int64_t(1) << 36) / 0.0687, 1e6);
  // With every category in (no minimum claim) the settled ones get bursts too, though fewer than
  // the unsettled main memory; the run still takes the room before its goal.
  Run all = run(true, 0);
  EXPECT_GT(all.device.conditions["closing_watch_s"].get<double>(), 1.0);
  const int fma_bursts = all.device.conditions["peak_watch"]["categories"][0]["bursts"].get<int>();
  EXPECT_GT(fma_bursts, 10 * noisy.device.conditions["peak_watch"]["categories"][0]["bursts"].get<int>());
  EXPECT_GT(memory_bursts(all.device), fma_bursts);
}

TEST(Driver, SentinelReMeasuresInABusySpellButNotForeverOnASlowerHost) {
  // 60 GEMM points. The sentinel runs at 0.1 ms, and from its 20th run on at 0.2 ms for good:
  // the points measured right after the change are measured again; once the recent probes are
  // all slow the host is taken as found, and the rest are not.
  FakeBackend backend;
  int sentinel_runs = 0;
  backend.sentinel_time = [&] { return ++sentinel_runs < 20 ? 1e-4 : 2e-4; };
  Plan plan = small_plan();
  plan.gemm.clear();
  for (int i = 1; i <= 60; ++i) plan.gemm.push_back({DType::f32, 8 * i, 64, 64, 1});
  plan.confirm_peaks = false;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  const int remeasured = device.conditions["sentinel"]["points_remeasured"];
  EXPECT_GT(remeasured, 0);
  EXPECT_LE(remeasured, 20);  // about one window of probes, not every remaining point twice
  // A sentinel that never changes triggers nothing.
  FakeBackend quiet;
  Device calm;
  ASSERT_TRUE(calibrate_device(quiet, plan, {}, calm));
  EXPECT_EQ(calm.conditions["sentinel"]["points_remeasured"], 0);
}

TEST(Driver, MemoryProbeCatchesWhatTheComputeSentinelMisses) {
  // The compute sentinel never changes; the memory probe (a 1 MiB triad) doubles from its 20th
  // run on: points measured after that are measured again, and both probes are reported.
  FakeBackend backend;
  int probe_runs = 0;
  backend.memory_probe_bytes = 1 << 20;
  backend.memory_probe_time = [&] { return ++probe_runs < 20 ? 1e-4 : 2e-4; };
  Plan plan = small_plan();
  plan.gemm.clear();
  for (int i = 1; i <= 60; ++i) plan.gemm.push_back({DType::f32, 8 * i, 64, 64, 1});
  plan.confirm_peaks = false;
  plan.memory_sentinel_bytes = 1 << 20;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  const auto& sentinel = device.conditions["sentinel"];
  EXPECT_GT(sentinel["points_remeasured"].get<int>(), 0);
  ASSERT_EQ(sentinel["kernels"].size(), 2u);
  EXPECT_EQ(sentinel["kernels"][0]["slow_probes"], 0);
  EXPECT_GT(sentinel["kernels"][1]["slow_probes"].get<int>(), 0);
  EXPECT_EQ(sentinel["slow_probes"], sentinel["kernels"][1]["slow_probes"]);
  // Without a memory probe the same host looks calm.
  FakeBackend calm_backend;
  calm_backend.memory_probe_bytes = 1 << 20;
  probe_runs = 0;
  calm_backend.memory_probe_time = backend.memory_probe_time;
  plan.memory_sentinel_bytes = 0;
  Device calm;
  ASSERT_TRUE(calibrate_device(calm_backend, plan, {}, calm));
  EXPECT_EQ(calm.conditions["sentinel"]["points_remeasured"], 0);
  EXPECT_FALSE(calm.conditions["sentinel"].contains("kernels"));
}

TEST(Driver, TheBestLayersGetALastLookAfterTheConfirmation) {
  // Six layers: three at 0.5 TFLOP/s (the confirmed three), one more at 0.5, one whose first two
  // looks ran at 0.42 (within 20% of the best) and whose third runs at 0.6, one at 0.3 throughout.
  // The last look goes to the two within the margin that are not confirmed, and the slow-looked
  // layer becomes the best.
  FakeBackend backend;
  backend.conv_rate = [](const ConvShape& s, int made) {
    if (s.c == 40) return made < 2 ? 4.2e11 : 6e11;
    return s.c == 48 ? 3e11 : 5e11;
  };
  Plan plan = small_plan();
  plan.conv.clear();
  for (const char* shape : {"f32_mb1ic16ih8oc16kh3ph1", "f32_mb1ic24ih8oc16kh3ph1", "f32_mb1ic32ih8oc16kh3ph1",
                            "f32_mb1ic36ih8oc16kh3ph1", "f32_mb1ic40ih8oc16kh3ph1", "f32_mb1ic48ih8oc16kh3ph1"})
    plan.conv.push_back({ConvShape::parse(shape), ConvLayout::blocked});
  plan.revisit_max_s = 1.0;
  plan.revisit_rule = plan.conv_rule;
  plan.final_look_within = 0.2;
  plan.final_looks = 20;
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  EXPECT_EQ(device.conditions["last_looks"], 2);
  EXPECT_EQ(backend.convs_made.at(ConvShape::parse("f32_mb1ic40ih8oc16kh3ph1").str()), 3);
  EXPECT_EQ(backend.convs_made.at(ConvShape::parse("f32_mb1ic48ih8oc16kh3ph1").str()), 2);
  double best = 0;
  for (const auto& c : device.conv)
    if (c.shape.c == 40) best = c.flops_per_s;
  EXPECT_NEAR(best, 6e11, 1);
  // With one last look a dtype, only the fastest of the two gets it.
  FakeBackend again;
  again.conv_rate = backend.conv_rate;
  plan.final_looks = 1;
  Device one;
  ASSERT_TRUE(calibrate_device(again, plan, {}, one));
  EXPECT_EQ(one.conditions["last_looks"], 1);
  EXPECT_EQ(again.convs_made.at(ConvShape::parse("f32_mb1ic40ih8oc16kh3ph1").str()), 2);
}

TEST(Driver, ProductsOfFewRowsGetALastLook) {
  // Three large products at 1 TFLOP/s (the confirmed three) and three of few rows: one of 8 rows
  // whose first two looks ran at 0.2 TFLOP/s and whose third runs at 0.4, one of 16 at 0.3
  // throughout, one of 32 at 0.3. With last looks up to 16 rows, the two smaller ones get a third
  // draw and the 8-row point takes the faster figure; the 32-row one keeps its two looks.
  for (const std::int64_t rows : {16, 0}) {
    FakeBackend backend;
    backend.gemm_rate = [](const GemmShape& s, int made) {
      if (s.m >= 256) return 1e12;
      return s.m == 8 && made >= 2 ? 4e11 : s.m == 8 ? 2e11 : 3e11;
    };
    Plan plan = small_plan();
    plan.gemm.clear();
    for (const std::int64_t m : {8, 16, 32, 256, 512, 1024}) plan.gemm.push_back({DType::f32, m, 64, 64, 1});
    plan.revisit_max_s = 1.0;
    plan.revisit_rule = plan.gemm_rule;
    plan.last_look_gemm_rows = rows;
    std::vector<std::string> lines;
    const Device device = calibrate_counted(backend, plan, lines);
    EXPECT_EQ(device.conditions["last_looks"], rows > 0 ? 2 : 0);
    const auto made = [&](std::int64_t m) { return backend.gemms_made.at(GemmShape{DType::f32, m, 64, 64, 1}.str()); };
    EXPECT_EQ(made(8), rows > 0 ? 3 : 2);
    EXPECT_EQ(made(16), rows > 0 ? 3 : 2);
    EXPECT_EQ(made(32), 2);
    for (const auto& g : device.gemm) {
      if (g.shape.m == 8) {
        EXPECT_NEAR(g.flops_per_s, rows > 0 ? 4e11 : 2e11, 1);
      }
    }
    const auto [done, total] = last_count(lines);
    ASSERT_FALSE(done.empty());
    EXPECT_EQ(done, total);
  }
  // With every row count let in, the three confirmed products (the peak watch's, with no second
  // look) still get none: made for their first look and their confirmation only.
  FakeBackend backend;
  backend.gemm_rate = [](const GemmShape& s, int) { return s.m >= 256 ? 1e12 : 3e11; };
  Plan plan = small_plan();
  plan.gemm.clear();
  for (const std::int64_t m : {8, 16, 256, 512, 1024}) plan.gemm.push_back({DType::f32, m, 64, 64, 1});
  plan.revisit_max_s = 1.0;
  plan.revisit_rule = plan.gemm_rule;
  plan.last_look_gemm_rows = 4096;
  std::vector<std::string> lines;
  const Device device = calibrate_counted(backend, plan, lines);
  EXPECT_EQ(device.conditions["last_looks"], 2);
  for (const std::int64_t m : {256, 512, 1024})
    EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, m, 64, 64, 1}.str()), 2) << m;
  const auto [done, total] = last_count(lines);
  EXPECT_EQ(done, total);
}

// An 8-row product and three large ones (the confirmed three), the small one with a last look
// after a wait of up to `wait_s` for the sentinel within 6% of its fastest.
Plan last_look_plan(double wait_s) {
  Plan plan = small_plan();
  plan.gemm.clear();
  for (const std::int64_t m : {8, 256, 512, 1024}) plan.gemm.push_back({DType::f32, m, 64, 64, 1});
  plan.revisit_max_s = 1.0;
  plan.revisit_rule = plan.gemm_rule;
  plan.last_look_gemm_rows = 16;
  plan.gemm_last_look_wait_s = wait_s;
  plan.gemm_last_look_within = 0.06;
  return plan;
}

TEST(Driver, TheGemmsLastLooksWaitForTheSentinelAtItsFastest) {
  // The host turns slow for half a second when the 8-row product's second look is made: the
  // sentinel then runs 10% slower and the product at half its rate. With the wait, the
  // last look waits for the sentinel and draws the product's full rate; without it, the last look
  // comes at once and draws the slow figure again.
  for (const double wait_s : {5.0, 0.0}) {
    using SteadyClock = std::chrono::steady_clock;
    FakeBackend backend;
    SteadyClock::time_point slow_until{};
    const auto slow = [&] { return SteadyClock::now() < slow_until; };
    backend.sentinel_time = [&] { return slow() ? 1.1e-4 : 1e-4; };
    backend.gemm_rate = [&](const GemmShape& s, int made) {
      if (s.m >= 256) return 1e12;
      if (made == 1) slow_until = SteadyClock::now() + std::chrono::milliseconds(500);
      return made == 0 || slow() ? 2e11 : 4e11;
    };
    const Plan plan = last_look_plan(wait_s);
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
    EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, 8, 64, 64, 1}.str()), 3);
    for (const auto& g : device.gemm) {
      if (g.shape.m == 8) {
        EXPECT_NEAR(g.flops_per_s, wait_s > 0 ? 4e11 : 2e11, 1);
      }
    }
    if (wait_s > 0) {
      EXPECT_GT(device.conditions["gemm_last_look_wait_s"].get<double>(), 0.2);
      EXPECT_LT(device.conditions["gemm_last_look_wait_s"].get<double>(), wait_s);
    } else {
      EXPECT_FALSE(device.conditions.contains("gemm_last_look_wait_s"));
    }
  }
}

TEST(Driver, TheGemmsLastLookWaitLeavesTheLookItsTime) {
  // The sentinel turns slow for good when the 8-row product's second look is made, with 2 s to the
  // goal and 15 s of wait allowed: the wait ends while the look still fits, and the look is taken.
  FakeBackend backend;
  bool slow = false;
  backend.sentinel_time = [&] { return slow ? 2e-4 : 1e-4; };
  backend.gemm_rate = [&](const GemmShape& s, int made) {
    if (s.m >= 256) return 1e12;
    if (made == 1) slow = true;
    return 3e11;
  };
  Plan plan = last_look_plan(15);
  plan.deadline_s = 2;
  // Short budgets and no main-memory triad, so that the points still to come and the
  // confirmation leave the second looks their time.
  plan.stream_bytes = {1 << 14};
  for (StopRule* rule : {&plan.gemm_rule, &plan.conv_rule, &plan.stream_rule, &plan.fma_rule, &plan.overhead_rule,
                         &plan.transfer_rule, &plan.sentinel_rule, &plan.revisit_rule, &plan.vector_op_rule})
    rule->budget_s = 1e-3;
  Device device;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(device.conditions["last_looks"], 1) << device.conditions.dump();
  EXPECT_EQ(device.conditions["left_out_for_deadline"]["last_looks"], 0);
  EXPECT_EQ(backend.gemms_made.at(GemmShape{DType::f32, 8, 64, 64, 1}.str()), 3);
  EXPECT_GT(device.conditions["gemm_last_look_wait_s"].get<double>(), 0.5);
  EXPECT_LT(took, 2.0);
}

TEST(Driver, APointSlowedPastTheSecondLooksLimitStillGetsALastLook) {
  // Layer 40's blocked point runs at 0.3 TFLOP/s on its first look (2.5 us, past the second
  // looks' 2 us) and 0.5 after, as its twin and the other layer do throughout: with
  // last_look_max_s it is a last-look candidate, behind its twin, and its last look finds 0.5.
  for (const double last_look_max_s : {1.0, 0.0}) {
    FakeBackend backend;
    backend.conv_layout_rate = [](const ConvShape& s, ConvLayout layout, int made) {
      return s.c == 40 && layout == ConvLayout::blocked && made == 0 ? 3e11 : 5e11;
    };
    Plan plan = small_plan();
    plan.conv.clear();
    for (const char* shape : {"f32_mb1ic16ih8oc16kh3ph1", "f32_mb1ic40ih8oc16kh3ph1"})
      for (const auto layout : {ConvLayout::blocked, ConvLayout::any})
        plan.conv.push_back({ConvShape::parse(shape), layout});
    plan.revisit_max_s = 2e-6;
    plan.revisit_rule = plan.conv_rule;
    plan.twin_look_gap = 0.15;
    plan.final_looks = 5;
    plan.last_look_max_s = last_look_max_s;
    std::vector<std::string> lines;
    const Device device = calibrate_counted(backend, plan, lines);
    EXPECT_EQ(device.conditions["last_looks"], last_look_max_s > 0 ? 1 : 0);
    const auto [done, total] = last_count(lines);
    ASSERT_FALSE(done.empty());
    EXPECT_EQ(done, total);
    bool seen = false;
    for (const auto& c : device.conv) {
      if (c.shape.c == 40 && c.layout == "blocked") {
        seen = true;
        EXPECT_NEAR(c.flops_per_s, last_look_max_s > 0 ? 5e11 : 3e11, 1);
      }
    }
    EXPECT_TRUE(seen);
  }
}

TEST(Driver, APointFarBehindItsTwinInAnotherLayoutGetsALastLook) {
  // Three layers, each blocked and in oneDNN's own layout (nhwc here), all at 0.5 TFLOP/s but
  // for two: layer 40's blocked point runs at 0.3 on its first two looks (40% behind its twin)
  // and 0.5 on its third; layer 44's nhwc point at 0.45 throughout (10% behind: within the gap).
  // Only the first gets a last look, which finds its usual rate.
  FakeBackend backend;
  backend.conv_layout_rate = [](const ConvShape& s, ConvLayout layout, int made) {
    if (s.c == 40 && layout == ConvLayout::blocked) return made < 3 ? 3e11 : 5e11;
    if (s.c == 44 && layout == ConvLayout::any) return 4.5e11;
    return 5e11;
  };
  Plan plan = small_plan();
  plan.conv.clear();
  for (const char* shape : {"f32_mb1ic16ih8oc16kh3ph1", "f32_mb1ic40ih8oc16kh3ph1", "f32_mb1ic44ih8oc16kh3ph1"})
    for (const auto layout : {ConvLayout::blocked, ConvLayout::any})
      plan.conv.push_back({ConvShape::parse(shape), layout});
  plan.revisit_max_s = 1.0;
  plan.revisit_rule = plan.conv_rule;
  plan.twin_look_gap = 0.15;
  plan.final_looks = 5;
  std::vector<std::string> lines;
  CalibrateOptions options;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, options, device));
  EXPECT_EQ(device.conditions["last_looks"], 1);
  // The progress count still ends where it said it would.
  const auto [done, total] = last_count(lines);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done, total);
  for (const auto& c : device.conv) {
    if (c.shape.c == 40 && c.layout == "blocked") {
      EXPECT_NEAR(c.flops_per_s, 5e11, 1);
    }
  }
  // Without the rule (and with no margin of the best), nothing gets one.
  FakeBackend again;
  again.conv_layout_rate = backend.conv_layout_rate;
  plan.twin_look_gap = 0;
  Device none;
  ASSERT_TRUE(calibrate_device(again, plan, {}, none));
  EXPECT_EQ(none.conditions["last_looks"], 0);
  for (const auto& c : none.conv) {
    if (c.shape.c == 40 && c.layout == "blocked") {
      EXPECT_NEAR(c.flops_per_s, 3e11, 1);
    }
  }
  // Where oneDNN's own choice runs blocked too, the two points of a layer are still twins.
  FakeBackend blocked;
  blocked.conv_layout_rate = backend.conv_layout_rate;
  blocked.any_runs_blocked = true;
  plan.twin_look_gap = 0.15;
  Device both;
  ASSERT_TRUE(calibrate_device(blocked, plan, {}, both));
  EXPECT_EQ(both.conditions["last_looks"], 1);
}

TEST(Driver, ConfirmationPassMeasuresTheFastestConvolutionsAgainInTheirLayout) {
  // The one conv point runs at 0.25 TFLOP/s the first time and 1 the second: the confirmation
  // keeps the faster, asked for in the layout of the first measurement.
  FakeBackend backend;
  backend.conv_rate = [](const ConvShape&, int made) { return made == 0 ? 2.5e11 : 1e12; };
  Plan plan = small_plan();
  plan.conv = {{ConvShape::parse("f32_mb1ic16ih8oc16kh3ph1"), ConvLayout::blocked}};
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  ASSERT_EQ(device.conv.size(), 1u);
  EXPECT_NEAR(device.conv[0].flops_per_s, 1e12, 1);
  ASSERT_EQ(backend.conv_layouts.size(), 2u);
  EXPECT_EQ(backend.conv_layouts[1], ConvLayout::blocked);
}

TEST(Driver, ColdWeightConvPointsAreRecordedApartAndNeverConfirmed) {
  // Three conv layers, the first of which has no kernel; the two others measured warm and cold
  // (blocked), then the warm ones confirmed in the layout each was asked for.
  FakeBackend backend;
  backend.conv_rate = [](const ConvShape& s, int made) {
    return s.k == 32 && made == 0 ? 1e11 : 5e11;  // the 32-filter layer: slow the first time
  };
  Plan plan = small_plan();
  const ConvShape none = ConvShape::parse("f32_mb1ic3ih8oc16kh3ph1");
  const ConvShape a = ConvShape::parse("f32_mb1ic16ih8oc16kh3ph1");
  const ConvShape b = ConvShape::parse("f32_mb1ic16ih8oc32kh3ph1");
  plan.conv = {{none, ConvLayout::blocked}, {a, ConvLayout::nchw}, {b, ConvLayout::blocked}};
  plan.conv_cold = {{none, ConvLayout::blocked}, {a, ConvLayout::blocked}, {b, ConvLayout::blocked}};
  Device device;
  ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
  ASSERT_EQ(device.conv.size(), 4u);  // a, b warm; a, b cold
  EXPECT_FALSE(device.conv[0].cold_weights);
  EXPECT_FALSE(device.conv[1].cold_weights);
  EXPECT_TRUE(device.conv[2].cold_weights);
  EXPECT_TRUE(device.conv[3].cold_weights);
  EXPECT_NEAR(device.conv[2].flops_per_s, 2.5e11, 1);
  // Confirmed: b (now 5e11 instead of 1e11) and a, each in its own layout; cold ones untouched.
  EXPECT_NEAR(device.conv[1].flops_per_s, 5e11, 1);
  const std::vector<ConvLayout> asked(backend.conv_layouts.end() - 2, backend.conv_layouts.end());
  EXPECT_EQ(std::count(asked.begin(), asked.end(), ConvLayout::nchw), 1);
  EXPECT_EQ(std::count(asked.begin(), asked.end(), ConvLayout::blocked), 1);
  EXPECT_EQ(backend.convs_made.at(a.str()), 2);
  EXPECT_EQ(backend.convs_made.at(b.str()), 2);
  EXPECT_TRUE(std::any_of(device.skipped.begin(), device.skipped.end(), [](const Skipped& s) {
    return s.reason.find("no kernel for 3 channels") != std::string::npos;
  }));
}

TEST(Driver, WaitsForAQuietMachineBeforeConfirmingWithinItsBudget) {
  Plan plan = small_plan();
  plan.quiet_wait_s = 0.8;
  // Never busy: no wait.
  {
    FakeBackend backend;
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
    EXPECT_EQ(device.conditions["quiet_wait_s"], 0.0);
  }
  // Busy from the 20th sentinel run on, for good: the wait ends at its budget.
  {
    FakeBackend backend;
    int runs = 0;
    backend.sentinel_time = [&] { return ++runs < 20 ? 1e-4 : 2e-4; };
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
    const double waited = device.conditions["quiet_wait_s"];
    EXPECT_GE(waited, 0.8);
    EXPECT_LT(waited, 5.0);
  }
  // Busy from the 20th run until 0.3 s after the start: the wait ends when it is quiet again.
  {
    FakeBackend backend;
    int runs = 0;
    const auto quiet_at = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    backend.sentinel_time = [&] {
      return ++runs < 20 || std::chrono::steady_clock::now() > quiet_at ? 1e-4 : 2e-4;
    };
    plan.quiet_wait_s = 30;
    Device device;
    ASSERT_TRUE(calibrate_device(backend, plan, {}, device));
    const double waited = device.conditions["quiet_wait_s"];
    EXPECT_GT(waited, 0.0);
    EXPECT_LT(waited, 10.0);  // far below the 30 s budget
  }
}

TEST(Driver, OptionalWorkGivesWayToTheDeadline) {
  // Re-measures (the host busy from the 20th sentinel run on, for good), second looks at two
  // vector ops, a last look at the convolution the confirmation leaves out, a wait for a quiet
  // machine: all optional.
  Plan plan = small_plan();
  plan.vector_ops = {{"gelu", DType::f32, 256, 1024}, {"add", DType::f32, 256, 1024}};
  plan.vector_op_rule = plan.gemm_rule;
  plan.conv.push_back({ConvShape::parse("f32_mb1ic32ih8oc32kh3ph1"), ConvLayout::nhwc});
  plan.confirm_gemms = 1;
  plan.revisit_max_s = 1.0;
  plan.revisit_rule = plan.gemm_rule;
  plan.final_look_within = 0.5;
  plan.final_looks = 2;
  plan.quiet_wait_s = 0.3;
  struct Run {
    Device device;
    std::map<std::string, int> vector_ops_made;
    std::vector<std::string> lines;
  };
  const auto run = [&](double deadline_s) {
    FakeBackend backend;
    int runs = 0;
    backend.sentinel_time = [&runs] { return ++runs < 20 ? 1e-4 : 2e-4; };
    Plan p = plan;
    p.deadline_s = deadline_s;
    Run r;
    CalibrateOptions options;
    options.progress = [&r](const std::string& line) { r.lines.push_back(line); };
    EXPECT_TRUE(calibrate_device(backend, p, options, r.device));
    r.vector_ops_made = backend.vector_ops_made;
    return r;
  };
  // No deadline: everything runs.
  Run free = run(0);
  EXPECT_FALSE(free.device.conditions.contains("deadline_s"));
  EXPECT_GT(free.device.conditions["sentinel"]["points_remeasured"].get<int>(), 0);
  for (const auto& [op, made] : free.vector_ops_made) EXPECT_EQ(made, 2) << op;
  EXPECT_EQ(free.device.conditions["last_looks"], 1);
  EXPECT_GE(free.device.conditions["quiet_wait_s"].get<double>(), 0.3);
  // A deadline already past: every point and the confirmation, nothing optional.
  Run tight = run(1e-6);
  const auto& left = tight.device.conditions["left_out_for_deadline"];
  EXPECT_EQ(tight.device.conditions["deadline_s"], 1e-6);
  EXPECT_EQ(tight.device.conditions["sentinel"]["points_remeasured"], 0);
  EXPECT_GT(left["remeasures"].get<int>(), 0);
  for (const auto& [op, made] : tight.vector_ops_made) EXPECT_EQ(made, 1) << op;
  EXPECT_EQ(left["second_looks"], 4) << "two vector ops, the unconfirmed GEMM and convolution";
  EXPECT_EQ(left["last_looks"], 1);
  EXPECT_EQ(tight.device.conditions["last_looks"], 0);
  EXPECT_DOUBLE_EQ(left["quiet_wait_s"].get<double>(), 0.3);
  EXPECT_EQ(tight.device.conditions["quiet_wait_s"], 0.0);
  EXPECT_EQ(tight.device.gemm.size(), free.device.gemm.size());
  EXPECT_EQ(tight.device.conv.size(), free.device.conv.size());
  Profile profile;
  profile.devices.push_back(tight.device);
  EXPECT_NE(profile_summary(profile).find("(goal 0 s), left out for the goal: 4 second looks, 1 last look, "),
            std::string::npos)
      << profile_summary(profile);
  const auto [done, total] = last_count(tight.lines);
  ASSERT_FALSE(done.empty());
  EXPECT_EQ(done, total);
  // A deadline far off: as without one, nothing left out.
  Run roomy = run(1e6);
  for (const auto& [op, made] : roomy.vector_ops_made) EXPECT_EQ(made, 2) << op;
  EXPECT_EQ(roomy.device.conditions["left_out_for_deadline"]["second_looks"], 0);
  EXPECT_EQ(roomy.device.conditions["left_out_for_deadline"]["remeasures"], 0);
  EXPECT_EQ(roomy.device.conditions["last_looks"], 1);
}

TEST(Driver, ReMeasuresLeaveTheirTimeToThePointsStillToCome) {
  // Ten GEMMs, then ten convolutions whose rule's budget (100 s) says, until three of them are
  // measured, that each may take 50 s: with a 300 s goal the GEMMs, measured while 500 s of
  // convolutions are still to come, get no re-measure on a host busy from the start; the
  // convolutions, once their own times (microseconds) stand in, do.
  Plan plan = small_plan();
  plan.gemm.clear();
  for (int i = 1; i <= 10; ++i) plan.gemm.push_back({DType::f32, 64 * i, 64, 64, 1});
  plan.conv.clear();
  for (int i = 1; i <= 10; ++i)
    plan.conv.push_back({ConvShape::parse("f32_mb" + std::to_string(i) + "ic16ih8oc16kh3ph1"), ConvLayout::nhwc});
  plan.conv_rule.budget_s = 100;
  plan.transfer_bytes.clear();
  const auto run = [&](double deadline_s, int& gemm_runs) {
    FakeBackend backend;
    int sentinel_runs = 0;
    backend.sentinel_time = [&] { return ++sentinel_runs < 20 ? 1e-4 : 2e-4; };
    backend.on_run = [&] { ++gemm_runs; };  // GEMM kernels only
    Plan p = plan;
    p.deadline_s = deadline_s;
    Device device;
    EXPECT_TRUE(calibrate_device(backend, p, {}, device));
    return device;
  };
  int free_runs = 0, bare_runs = 0, goal_runs = 0;
  const Device free = run(0, free_runs);    // no goal: every re-measure
  const Device bare = run(1e-6, bare_runs);  // a goal already past: none
  const Device goal = run(300, goal_runs);
  EXPECT_GT(free_runs, bare_runs);
  EXPECT_EQ(goal_runs, bare_runs) << "no GEMM re-measured";
  EXPECT_GT(goal.conditions["sentinel"]["points_remeasured"].get<int>(), 0) << "convolutions re-measured";
  EXPECT_GT(goal.conditions["left_out_for_deadline"]["remeasures"].get<int>(), 0);
  // Behind its goal, a first measurement's time budget gives way too (the GEMMs').
  EXPECT_GE(goal.conditions["left_out_for_deadline"]["budgets_cut"].get<int>(), 10);
  EXPECT_FALSE(free.conditions.contains("left_out_for_deadline"));
  EXPECT_EQ(goal.gemm.size(), free.gemm.size());
  EXPECT_EQ(goal.conv.size(), free.conv.size());
}

TEST(Driver, StopFlagEndsEarlyAndKeepsWhatWasMeasured) {
  FakeBackend backend;
  std::atomic<bool> stop{false};
  int runs = 0;
  // Raise the flag part-way through the GEMM section, as Ctrl-C would.
  backend.on_run = [&] {
    if (++runs == 6) stop = true;
  };
  Device device;
  CalibrateOptions options;
  options.stop = &stop;
  EXPECT_FALSE(calibrate_device(backend, small_plan(), options, device));
  EXPECT_FALSE(device.peaks.vector_flops_per_s.empty());  // measured before the stop
  EXPECT_FALSE(device.memory_sweep.empty());  // so was memory
  EXPECT_LE(device.gemm.size(), 2u);
  EXPECT_TRUE(device.conv.empty());
  EXPECT_EQ(device.conditions["interrupted"], true);
}

}  // namespace
}  // namespace truepeak
