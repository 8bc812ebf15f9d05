// The peak watch: which points stay candidates, when bursts run, and how every sample counts.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "calibrate/peak_watch.hpp"
#include "core/error.hpp"

namespace truepeak {
namespace {

// Runs take the times of `times_s` in turn (the last one for good), optionally sleeping `sleep_s`
// per run so that wall time passes. Counts its checks and notes its destruction.
class ScriptedKernel : public Kernel {
 public:
  ScriptedKernel(std::vector<double> times_s, std::string impl = "impl", double sleep_s = 0)
      : times_s_(std::move(times_s)), impl_(std::move(impl)), sleep_s_(sleep_s) {}
  ~ScriptedKernel() override {
    if (destroyed) *destroyed = true;
  }
  std::string name() const override { return "scripted"; }
  double flops() const override { return 1e9; }
  double bytes() const override { return 0; }
  void check() override { ++*checks; }
  double run_s() override {
    if (sleep_s_ > 0) std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s_));
    const double t = times_s_[std::min(runs_, times_s_.size() - 1)];
    ++runs_;
    return t;
  }
  std::string impl() const override { return impl_; }
  std::string layout() const override { return "nhwc"; }

  bool* destroyed = nullptr;
  std::shared_ptr<int> checks = std::make_shared<int>(0);

 private:
  std::vector<double> times_s_;
  std::string impl_;
  double sleep_s_;
  std::size_t runs_ = 0;
};

StopRule burst_rule() {
  StopRule r;
  r.min_samples = 3;
  r.max_samples = 3;
  r.budget_s = 0.02;
  r.stable_window = 0;
  r.warmup_runs = 0;
  r.warmup_s = 0;
  return r;
}

StopRule confirm_rule() {
  StopRule r = burst_rule();
  r.min_samples = r.max_samples = 5;
  r.budget_s = 1;
  return r;
}

// What the last apply wrote for a point.
struct Applied {
  Summary summary;
  std::string impl;
  int calls = 0;
};

PeakWatch::Apply record(Applied& a) {
  return [&a](const Summary& s, const std::string& impl, const std::string&) {
    a.summary = s;
    a.impl = impl;
    ++a.calls;
  };
}

PeakWatch::Make no_make() {
  return []() -> std::unique_ptr<Kernel> { throw Error("not made again in this test"); };
}

// Offers a candidate first measured at `offered_s` whose kernel then times `time_s` every run and
// takes `wall_s` of wall time per run.
void offer_scripted(PeakWatch& watch, const std::string& category, const std::string& what,
                    double work, double offered_s, double time_s, double wall_s, Applied& applied) {
  watch.offer(category, what, work, no_make(),
              std::make_unique<ScriptedKernel>(std::vector<double>{time_s}, "impl", wall_s),
              {offered_s}, record(applied));
}

TEST(PeakWatch, KeepsTheFastestFewOfEachCategory) {
  // The flags outlive the watch: its kernels set them when they are destroyed.
  bool a_gone = false, b_gone = false, c_gone = false, d_gone = false, other_gone = false;
  PeakWatch watch({2, 2, 0.0, true, burst_rule()});
  Applied unused;
  auto offer = [&](const std::string& category, double time_s, bool& gone) {
    auto k = std::make_unique<ScriptedKernel>(std::vector<double>{time_s});
    k->destroyed = &gone;
    watch.offer(category, "point", 1e9, no_make(), std::move(k), {time_s, 2 * time_s}, record(unused));
  };
  offer("gemm f32", 1e-3, a_gone);   // 1 TFLOP/s
  offer("gemm f32", 2e-3, b_gone);   // 0.5
  offer("gemm f32", 0.5e-3, c_gone); // 2: takes the place of the slowest (b)
  offer("gemm f32", 4e-3, d_gone);   // 0.25: not kept
  EXPECT_FALSE(a_gone);
  EXPECT_TRUE(b_gone);
  EXPECT_FALSE(c_gone);
  EXPECT_TRUE(d_gone);
  offer("conv f32", 9e-3, other_gone);  // another category has places of its own
  EXPECT_FALSE(other_gone);
  EXPECT_EQ(watch.candidates(), 3u);
}

TEST(PeakWatch, PointsNearTheBestJoinBeyondThePoolUpToTheMost) {
  PeakWatch::Options options{2, 2, 0.0, true, burst_rule()};
  options.admit_within = 0.15;
  options.most = 3;
  PeakWatch watch(options);
  Applied unused;
  auto offer = [&](const std::string& what, double time_s) {
    watch.offer("conv f32", what, 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{time_s}),
                {time_s}, record(unused));
  };
  offer("best", 1.0e-3);
  offer("second", 1.01e-3);
  offer("far", 1.25e-3);    // 80% of the best: not kept, the pool being full
  EXPECT_FALSE(watch.holds("far"));
  offer("near", 1.15e-3);   // 87%: joins beyond the pool
  EXPECT_TRUE(watch.holds("near"));
  EXPECT_EQ(watch.candidates(), 3u);
  offer("nearer", 1.1e-3);  // 91%, but the category is at its most: takes the slowest's place
  EXPECT_TRUE(watch.holds("nearer"));
  EXPECT_FALSE(watch.holds("near"));
  EXPECT_EQ(watch.candidates(), 3u);
  // The confirmation still measures only the `confirmed` fastest.
  EXPECT_EQ(watch.to_confirm(), 2u);
}

TEST(PeakWatch, WithoutAMarginThePoolIsTheMost) {
  PeakWatch::Options options{2, 2, 0.0, true, burst_rule()};
  options.most = 3;
  PeakWatch watch(options);
  Applied unused;
  for (const double t : {1.0e-3, 1.01e-3, 0.99e-3}) {
    watch.offer("conv f32", "p", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{t}), {t},
                record(unused));
  }
  EXPECT_EQ(watch.candidates(), 2u);
}

TEST(PeakWatch, BurstsRunOnlyWithinTheirShareOfTheElapsedTime) {
  // Each run sleeps 5 ms: a burst of 3 samples takes 15 ms of wall time or more.
  StopRule three = burst_rule();
  three.budget_s = 10;  // always the 3 samples, however loaded the machine
  PeakWatch watch({3, 3, 0.1, true, three});
  Applied first, second;
  offer_scripted(watch, "gemm f32", "first", 1e9, 1e-3, 1e-3, 0.005, first);
  offer_scripted(watch, "gemm f32", "second", 1e9, 1e-3, 1e-3, 0.005, second);
  watch.tick(0.0, nullptr);  // no time has passed: no share to spend
  EXPECT_EQ(watch.bursts(), 0);
  watch.tick(0.1, nullptr);  // 10 ms to spend: one burst, then the share is spent
  EXPECT_EQ(watch.bursts(), 1);
  EXPECT_EQ(first.calls, 1);
  EXPECT_EQ(second.calls, 0);
  watch.tick(10.0, nullptr);  // plenty: 8 bursts per candidate at most, the one without any first
  EXPECT_EQ(watch.bursts(), 1 + 16);
  EXPECT_GE(second.calls, 4);
  EXPECT_EQ(first.calls + second.calls, 17);
  EXPECT_EQ(first.summary.samples, 1 + 3 * first.calls);  // offered with one sample, bursts of three
  // A watch without a share never bursts.
  PeakWatch idle({3, 3, 0.0, true, burst_rule()});
  idle.offer("gemm f32", "point", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}),
             {1e-3}, record(first));
  idle.tick(1000.0, nullptr);
  EXPECT_EQ(idle.bursts(), 0);
}

TEST(PeakWatch, BurstTimeIsSharedEvenlyNotByCount) {
  // A 1 ms kernel and a 10 ms one (wall time), each as fast in every burst as it ever was (equally
  // settled): over many bursts each gets about the same burst time, so the short one gets several
  // times more bursts.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied shorter, longer;
  offer_scripted(watch, "gemm f32", "short", 1e9, 1e-3, 1e-3, 0.001, shorter);
  offer_scripted(watch, "conv f32", "long", 1e9, 1e-2, 1e-2, 0.01, longer);
  for (int i = 0; i < 2; ++i) watch.tick(1000.0, nullptr);
  EXPECT_EQ(shorter.calls + longer.calls, 32);
  EXPECT_GT(shorter.calls, 2 * longer.calls);
  EXPECT_GE(longer.calls, 2);
}

TEST(PeakWatch, ACategoryWhoseBurstsMissItsBestGetsMoreOfTheTime) {
  // Same wall time per burst. "steady" runs at its best every time; "noisy" was offered with one
  // fast sample and its bursts never come near it (other tenants on the memory bus): it claims
  // up to four times the steady one's burst time, to catch the next fast spell.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied steady, noisy;
  offer_scripted(watch, "fma f32", "steady", 1e9, 1e-3, 1e-3, 0.001, steady);
  offer_scripted(watch, "memory", "noisy", 1e9, 1e-3, 1.5e-3, 0.001, noisy);
  for (int i = 0; i < 4; ++i) watch.tick(1000.0, nullptr);
  EXPECT_EQ(steady.calls + noisy.calls, 64);
  EXPECT_GT(noisy.calls, 2 * steady.calls);
  EXPECT_LT(noisy.calls, 6 * steady.calls);
  EXPECT_GE(steady.calls, 8);
  const auto report = watch.report();
  ASSERT_EQ(report["categories"].size(), 2u);
  EXPECT_EQ(report["categories"][0]["near_best"], steady.calls);
  EXPECT_EQ(report["categories"][1]["near_best"], 0);
}

TEST(PeakWatch, ExtendTimesOnlyTheUnsettledCategoriesForItsTime) {
  // After a few ticks "steady" is settled (claim 1) and "noisy" is not (its bursts never come near
  // its best: claim 4). Extending by 0.1 s runs bursts of "noisy" alone, for about that long.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied steady, noisy;
  offer_scripted(watch, "fma f32", "steady", 1e9, 1e-3, 1e-3, 0.001, steady);
  offer_scripted(watch, "memory", "noisy", 1e9, 1e-3, 1.5e-3, 0.001, noisy);
  for (int i = 0; i < 2; ++i) watch.tick(1000.0, nullptr);
  const int steady_before = steady.calls, noisy_before = noisy.calls;
  const double spent = watch.extend(0.1, 2.0, nullptr);
  EXPECT_GE(spent, 0.1);
  EXPECT_LT(spent, 0.5);
  EXPECT_EQ(steady.calls, steady_before);
  // Each burst: three runs of 1 ms of wall time.
  EXPECT_GE(noisy.calls - noisy_before, 10);
  EXPECT_GE(watch.report()["extended_s"].get<double>(), 0.1);
}

TEST(PeakWatch, ExtendEndsAtOnceWhenEveryCategoryIsSettledOrTheWatchIsClosed) {
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied steady;
  offer_scripted(watch, "fma f32", "steady", 1e9, 1e-3, 1e-3, 0.001, steady);
  for (int i = 0; i < 2; ++i) watch.tick(1000.0, nullptr);
  const int before = steady.calls;
  EXPECT_LT(watch.extend(5.0, 2.0, nullptr), 0.1);
  EXPECT_EQ(steady.calls, before);

  watch.confirm([](const std::string&) { return confirm_rule(); }, nullptr, {});
  EXPECT_EQ(watch.extend(5.0, 0.0, nullptr), 0.0);
}

// Bursts as in the other tests, a share of all the time, and spells of up to 10 s (100 s in all)
// in the category "memory".
PeakWatch::Options spell_options() {
  PeakWatch::Options options{3, 3, 1.0, true, burst_rule()};
  options.spell_s = 10;
  options.spell_budget_s = 100;
  options.spell_categories = {"memory"};
  return options;
}

TEST(PeakWatch, ABurstThatFindsAFastSpellStaysOnItWhileItLasts) {
  // Typical time 1 ms; the kernel then runs nine samples at 0.5 ms (a fast spell: main memory
  // while the other tenants rest), then at 1 ms again. One burst finds the spell; the watch stays
  // on it, three samples a burst, until a burst comes back at the typical time.
  const auto spell = [] {
    std::vector<double> times(9, 0.5e-3);
    times.push_back(1e-3);
    return times;
  };
  PeakWatch::Options options = spell_options();
  PeakWatch watch(options);
  Applied a;
  watch.offer("memory", "triad", 1e9, no_make(), std::make_unique<ScriptedKernel>(spell()), {1e-3, 1e-3, 1e-3},
              record(a));
  watch.tick(1e-9, nullptr);  // time for one burst
  EXPECT_EQ(watch.bursts(), 1);
  EXPECT_EQ(a.summary.samples, 3 + 9 + 3);
  EXPECT_DOUBLE_EQ(a.summary.min_s, 0.5e-3);
  const auto report = watch.report();
  EXPECT_EQ(report["categories"][0]["spells"], 1);
  EXPECT_GT(report["categories"][0]["spell_time_s"].get<double>(), 0.0);

  // Without spell time the burst is its three samples.
  PeakWatch plain({3, 3, 1.0, true, burst_rule()});
  Applied b;
  plain.offer("memory", "triad", 1e9, no_make(), std::make_unique<ScriptedKernel>(spell()), {1e-3, 1e-3, 1e-3},
              record(b));
  plain.tick(1e-9, nullptr);
  EXPECT_EQ(b.summary.samples, 3 + 3);
  EXPECT_EQ(plain.report()["categories"][0]["spells"], 0);

  // Nor in a category not named for spells.
  PeakWatch other(options);
  Applied c;
  other.offer("fma f32", "fma", 1e9, no_make(), std::make_unique<ScriptedKernel>(spell()), {1e-3, 1e-3, 1e-3},
              record(c));
  other.tick(1e-9, nullptr);
  EXPECT_EQ(c.summary.samples, 3 + 3);
}

TEST(PeakWatch, CompanionsAreTimedAfterEachSpellOfTheirCategoryOnly) {
  PeakWatch::Options options = spell_options();
  std::vector<double> spell(9, 0.5e-3);
  spell.push_back(1e-3);
  PeakWatch watch(options);
  Applied triad, copy, other;
  watch.offer("memory", "triad", 1e9, no_make(), std::make_unique<ScriptedKernel>(spell), {1e-3, 1e-3, 1e-3},
              record(triad));
  // A copy first timed at 2 ms, 1.5 ms in the spell; a companion of a category without spells is not taken.
  watch.accompany("memory", "copy", 1e9, std::make_unique<ScriptedKernel>(std::vector<double>{1.5e-3}), {2e-3},
                  record(copy));
  watch.accompany("gemm f32", "other", 1e9, std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}), {2e-3},
                  record(other));
  watch.tick(1e-9, nullptr);  // one burst, which finds the spell
  EXPECT_EQ(copy.calls, 1);
  EXPECT_EQ(copy.summary.samples, 1 + 3);
  EXPECT_DOUBLE_EQ(copy.summary.min_s, 1.5e-3);
  EXPECT_EQ(other.calls, 0);
  // Another burst finds no spell (1 ms, the typical time): the companion waits.
  watch.tick(1e-9 + 1.0, nullptr);
  EXPECT_GE(triad.calls, 5);
  EXPECT_EQ(copy.calls, 1);
  const auto report = watch.report();
  int companions = 0;
  for (const auto& c : report["candidates"]) companions += c.value("companion", false);
  EXPECT_EQ(companions, 1);
  // The confirmation lets the companions go.
  watch.confirm([](const std::string&) { return confirm_rule(); }, nullptr, {});
  companions = 0;
  const auto confirmed = watch.report();  // the loop reads it: it must outlive the loop
  for (const auto& c : confirmed["candidates"]) companions += c.value("companion", false);
  EXPECT_EQ(companions, 0);

  // Without kept kernels there are no companions.
  options.keep_kernels = false;
  PeakWatch unkept(options);
  Applied d;
  unkept.accompany("memory", "copy", 1e9, std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}), {2e-3},
                   record(d));
  EXPECT_EQ(unkept.report()["candidates"].size(), 0u);
}

TEST(PeakWatch, ABurstNearItsBestTimesTheCompanionsAtMostOnceInTheirInterval) {
  // The triad's first look fell in a fast spell (typical time 0.5 ms): later bursts at 0.5 ms are
  // near its best but no spell. The first of them times the companions; the next ones within
  // companion_every_s do not; bursts at twice the time are not near its best.
  struct Counts {
    int companion_calls, rounds, bursts;
  };
  const auto run = [](double every_s, std::vector<double> triad_times) {
    PeakWatch::Options options = spell_options();
    options.companion_every_s = every_s;
    PeakWatch watch(options);
    Applied triad, copy;
    watch.offer("memory", "triad", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::move(triad_times)),
                {0.5e-3, 0.5e-3, 0.5e-3}, record(triad));
    watch.accompany("memory", "copy", 1e9, std::make_unique<ScriptedKernel>(std::vector<double>{1.5e-3}), {2e-3},
                    record(copy));
    watch.tick(1.0, nullptr);  // many bursts
    const auto category = watch.report()["categories"][0];
    EXPECT_EQ(category["spells"], 0);
    return Counts{copy.calls, category["companion_rounds"].get<int>(), category["bursts"].get<int>()};
  };
  const auto once = run(1000, {0.5e-3});
  EXPECT_GT(once.bursts, 2);
  EXPECT_EQ(once.rounds, 1);
  EXPECT_EQ(once.companion_calls, 1);
  const auto off = run(0, {0.5e-3});
  EXPECT_EQ(off.rounds, 0);
  EXPECT_EQ(off.companion_calls, 0);
  const auto slow = run(1000, {1e-3});
  EXPECT_GT(slow.bursts, 2);
  EXPECT_EQ(slow.companion_calls, 0);
  const auto every = run(1e-9, {0.5e-3});
  EXPECT_EQ(every.rounds, every.bursts);
  EXPECT_EQ(every.companion_calls, every.rounds);
}

TEST(PeakWatch, OrdinaryJitterIsNoSpellAndASpellEndsAtItsTime) {
  PeakWatch::Options options = spell_options();
  // 9% faster than the typical time: jitter, not a spell.
  PeakWatch watch(options);
  Applied a;
  offer_scripted(watch, "memory", "jitter", 1e9, 1e-3, 0.92e-3, 0.0, a);
  watch.tick(1e-9, nullptr);
  EXPECT_EQ(a.summary.samples, 1 + 3);
  EXPECT_EQ(watch.report()["categories"][0]["spells"], 0);

  // Faster than the typical time but well short of the best seen: no spell either.
  PeakWatch short_of_best(options);
  Applied d;
  short_of_best.offer("memory", "triad", 1e9, no_make(),
                      std::make_unique<ScriptedKernel>(std::vector<double>{0.75e-3}), {0.5e-3, 1e-3, 1e-3},
                      record(d));
  short_of_best.tick(1e-9, nullptr);
  EXPECT_EQ(d.summary.samples, 3 + 3);

  // A spell that never ends takes the spell time and no more; 1 ms of wall time a sample.
  options.spell_s = 0.05;
  PeakWatch timed(options);
  Applied b;
  offer_scripted(timed, "memory", "triad", 1e9, 1e-3, 0.5e-3, 0.001, b);
  const auto start = std::chrono::steady_clock::now();
  timed.tick(1e-9, nullptr);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 0.05);
  EXPECT_LT(took, 1.0);
  EXPECT_GE(b.summary.samples, 1 + 3 + 3 * 4);
  const auto report = timed.report();
  EXPECT_EQ(report["categories"][0]["spells"], 1);
  EXPECT_GE(report["categories"][0]["spell_time_s"].get<double>(), 0.05);
  // The spell counts to the watch's share, not to its category's claim.
  EXPECT_GE(report["burst_time_s"].get<double>(), took * 0.9);
  EXPECT_LT(report["categories"][0]["burst_time_s"].get<double>(),
            report["categories"][0]["spell_time_s"].get<double>());

  // Spells end when the category's budget is spent: 0.05 s in all, whatever each may take.
  options.spell_s = 10;
  options.spell_budget_s = 0.05;
  PeakWatch budgeted(options);
  Applied e;
  offer_scripted(budgeted, "memory", "triad", 1e9, 1e-3, 0.5e-3, 0.001, e);
  budgeted.tick(1000.0, nullptr);  // eight bursts, each as fast as the first
  EXPECT_EQ(budgeted.bursts(), 8);
  const auto spent_report = budgeted.report();
  const double in_spells = spent_report["categories"][0]["spell_time_s"].get<double>();
  EXPECT_GE(in_spells, 0.05);
  EXPECT_LT(in_spells, 0.5);
  EXPECT_EQ(spent_report["categories"][0]["spells"], 1);

  // extend() ends a spell at the end of its own time.
  options.spell_budget_s = 100;
  PeakWatch extended(options);
  Applied c;
  offer_scripted(extended, "memory", "triad", 1e9, 1e-3, 0.5e-3, 0.001, c);
  const double spent = extended.extend(0.05, 0.0, nullptr);
  EXPECT_GE(spent, 0.05);
  EXPECT_LT(spent, 1.0);
}

TEST(PeakWatch, CandidatesOfDifferentRatesAreSettledWhenEachRepeatsItsOwnBest) {
  // "gemm f32" holds two shapes, one at 90% of the other's rate, each as fast in every burst as
  // it ever was: as settled as the single FMA candidate, so the two categories share evenly.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied fma, big, small;
  offer_scripted(watch, "fma f32", "fma", 1e9, 1e-3, 1e-3, 0.001, fma);
  offer_scripted(watch, "gemm f32", "big", 1e9, 1e-3, 1e-3, 0.001, big);
  offer_scripted(watch, "gemm f32", "small", 0.9e9, 1e-3, 1e-3, 0.001, small);
  for (int i = 0; i < 2; ++i) watch.tick(1000.0, nullptr);
  const int gemm = big.calls + small.calls;
  EXPECT_EQ(fma.calls + gemm, 48);
  EXPECT_LT(gemm, 2 * fma.calls);
  EXPECT_LT(fma.calls, 2 * gemm);
  const auto report = watch.report();
  EXPECT_EQ(report["categories"][1]["near_best"], report["categories"][1]["bursts"]);
}

TEST(PeakWatch, CandidatesNearTheTopGetMostOfTheirCategorysTime) {
  // Same wall time per burst; one candidate at half the other's rate claims a sixteenth of its time.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied fast, slow;
  offer_scripted(watch, "gemm int8", "fast", 1e9, 1e-3, 1e-3, 0.001, fast);
  offer_scripted(watch, "gemm int8", "slow", 1e9, 2e-3, 2e-3, 0.001, slow);
  for (int i = 0; i < 2; ++i) watch.tick(1000.0, nullptr);
  EXPECT_EQ(fast.calls + slow.calls, 32);
  EXPECT_GE(slow.calls, 1);
  EXPECT_GE(fast.calls, 24);
}

TEST(PeakWatch, BurstsCanLiftAPointIntoTheConfirmedFew) {
  // Three candidates, one confirmed. The slowest first figure (measured in a slow spell) runs 8x
  // faster in its bursts: it is the one confirmed, and the others leave the pool.
  PeakWatch watch({3, 1, 1.0, true, burst_rule()});
  Applied a, b, c;
  watch.offer("conv f32", "a", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}),
              {1e-3}, record(a));
  watch.offer("conv f32", "b", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{2e-3}),
              {2e-3}, record(b));
  watch.offer("conv f32", "c", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{0.5e-3}),
              {4e-3}, record(c));
  watch.tick(1000.0, nullptr);
  EXPECT_DOUBLE_EQ(c.summary.min_s, 0.5e-3);
  std::vector<std::string> confirmed;
  watch.confirm([](const std::string&) { return confirm_rule(); }, nullptr,
                [&](const std::string& what, double) { confirmed.push_back(what); });
  EXPECT_EQ((std::vector<std::string>{"c"}), confirmed);
  const auto report = watch.report();
  int confirmed_in_report = 0;
  for (const auto& e : report["candidates"]) confirmed_in_report += e.value("confirmed", false) ? 1 : 0;
  EXPECT_EQ(confirmed_in_report, 1);
  // Confirmed: the others have left the pool, and bursts are over.
  EXPECT_EQ(watch.candidates(), 1u);
  const int calls = c.calls;
  watch.tick(1000.0, nullptr);
  EXPECT_EQ(c.calls, calls);
}

TEST(PeakWatch, EverySampleCountsAndTheFastestNamesTheImplementation) {
  // Measured at 2 ms; a later burst runs at 1 ms, then 3 ms: the point's figure is the fastest of
  // all its samples, the median is over all of them.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied a;
  watch.offer("conv f32", "conv x nhwc", 1e9, no_make(),
              std::make_unique<ScriptedKernel>(std::vector<double>{1e-3, 3e-3, 3e-3}, "fast_impl"), {2e-3, 2e-3},
              record(a));
  watch.tick(1e-9, nullptr);  // time for one burst
  ASSERT_EQ(a.calls, 1);
  EXPECT_DOUBLE_EQ(a.summary.min_s, 1e-3);
  EXPECT_EQ(a.summary.samples, 5);
  EXPECT_DOUBLE_EQ(a.summary.median_s, 2e-3);
  EXPECT_EQ(a.impl, "fast_impl");
}

TEST(PeakWatch, TheTypicalTimeIsTheLowestMedianOfTheLooksNotOfTheBursts) {
  // First look: median 2 ms. A burst at 1 ms does not make a look; the confirmation's five
  // samples (median 1.5 ms) do.
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied a;
  watch.offer("conv f32", "c", 1e9, no_make(),
              std::make_unique<ScriptedKernel>(
                  std::vector<double>{1e-3, 1e-3, 1e-3, 1.5e-3, 1.5e-3, 1.5e-3, 1.4e-3, 1.6e-3}),
              {1.8e-3, 2e-3, 2.2e-3}, record(a));
  watch.tick(1e-9, nullptr);
  ASSERT_EQ(a.calls, 1);
  EXPECT_DOUBLE_EQ(a.summary.min_s, 1e-3);
  EXPECT_DOUBLE_EQ(a.summary.typical_s, 2e-3);
  watch.confirm([](const std::string&) { return confirm_rule(); }, nullptr, nullptr, nullptr);
  ASSERT_EQ(a.calls, 2);
  EXPECT_DOUBLE_EQ(a.summary.typical_s, 1.5e-3);
  EXPECT_DOUBLE_EQ(a.summary.min_s, 1e-3);
  // A typical time given with the offer (a first look measured twice) stands for the samples'.
  PeakWatch other({3, 3, 0.0, true, burst_rule()});
  Applied b;
  other.offer("conv f32", "d", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{4e-3}),
              {1e-3, 3e-3, 3e-3}, record(b), 2.5e-3);
  other.confirm([](const std::string&) { return confirm_rule(); }, nullptr, nullptr, nullptr);
  EXPECT_DOUBLE_EQ(b.summary.typical_s, 2.5e-3);  // the confirmation's 4 ms is no quieter
}

TEST(PeakWatch, ConfirmMakesAndChecksKernelsAgainWhenNotKept) {
  PeakWatch watch({3, 3, 0.0, false, burst_rule()});
  int made = 0;
  auto checks = std::make_shared<int>(0);
  auto make = [&]() -> std::unique_ptr<Kernel> {
    ++made;
    auto k = std::make_unique<ScriptedKernel>(std::vector<double>{0.5e-3}, "again");
    k->checks = checks;
    return k;
  };
  Applied slow, fast, broken;
  watch.offer("gemm bf16", "slow", 1e9, make, std::make_unique<ScriptedKernel>(std::vector<double>{4e-3}),
              {4e-3}, record(slow));
  watch.offer("gemm bf16", "fast", 1e9, make, std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}),
              {1e-3}, record(fast));
  watch.offer("fma f32", "broken", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}),
              {1e-3}, record(broken));
  std::vector<std::string> confirmed, failures;
  std::vector<std::string> rules_asked;
  watch.confirm(
      [&](const std::string& category) {
        rules_asked.push_back(category);
        return confirm_rule();
      },
      nullptr, [&](const std::string& what, double) { confirmed.push_back(what); },
      [&](const std::string& category, const std::string& what, const std::string& reason) {
        failures.push_back(category + ": " + what + ": " + reason);
      });
  EXPECT_EQ(made, 2);
  EXPECT_EQ(*checks, 2);
  EXPECT_EQ((std::vector<std::string>{"fast", "slow"}), confirmed);  // fastest first
  EXPECT_EQ((std::vector<std::string>{"fma f32: broken: not made again in this test"}), failures);
  EXPECT_EQ((std::vector<std::string>{"gemm bf16", "fma f32"}), rules_asked);
  EXPECT_DOUBLE_EQ(fast.summary.min_s, 0.5e-3);
  EXPECT_EQ(fast.summary.samples, 1 + 5);
  EXPECT_EQ(fast.impl, "again");
  EXPECT_EQ(broken.calls, 0);
  ASSERT_TRUE(watch.report()["candidates"][2].contains("failed"));
  EXPECT_EQ(watch.report()["candidates"][2]["failed"], "not made again in this test");
}

TEST(PeakWatch, ConfirmTimeCountsTheCandidatesItWouldMeasureAtTheirTypicalTime) {
  // Pool of 3, 2 confirmed per category.
  PeakWatch watch({3, 2, 0.0, true, burst_rule()});
  Applied unused;
  const auto offer = [&](const std::string& category, double typical_s) {
    watch.offer(category, "point", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{typical_s}),
                {typical_s, 3 * typical_s}, record(unused), typical_s);
  };
  offer("gemm f32", 1e-3);
  offer("gemm f32", 2e-3);
  offer("gemm f32", 4e-3);  // third: not confirmed
  offer("fma f32", 5e-3);
  StopRule gemm = confirm_rule();  // 5 samples, no warm-up
  StopRule fma = confirm_rule();
  fma.warmup_runs = 2;
  const auto rule_for = [&](const std::string& category) { return category == "fma f32" ? fma : gemm; };
  EXPECT_NEAR(watch.confirm_time_s(rule_for), 5 * 1e-3 + 5 * 2e-3 + 7 * 5e-3, 1e-12);
  watch.confirm(rule_for, nullptr, {});
  EXPECT_EQ(watch.confirm_time_s(rule_for), 0.0);
}

TEST(PeakWatch, StopFlagEndsTheConfirmation) {
  PeakWatch watch({3, 3, 1.0, true, burst_rule()});
  Applied a;
  watch.offer("gemm f32", "a", 1e9, no_make(), std::make_unique<ScriptedKernel>(std::vector<double>{1e-3}),
              {1e-3}, record(a));
  const std::atomic<bool> stop{true};
  watch.confirm([](const std::string&) { return confirm_rule(); }, &stop, {});
  watch.tick(100.0, &stop);
  EXPECT_EQ(a.calls, 0);
  EXPECT_EQ(watch.bursts(), 0);
}

}  // namespace
}  // namespace truepeak
