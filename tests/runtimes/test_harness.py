"""The probes' harness: the stopping rule, interleaved timing, the chain and slope fits, output
checks, the cache size from the OS (standard library only)."""
import io
import math
import os
import statistics
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import harness  # noqa: E402


class FakeClock:
    """A clock that only moves when a fake call runs."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def call(self, durations, log=None, name=None):
        """A callable taking the next of `durations` (the last repeats) per call."""
        durations = list(durations)

        def run():
            self.now += durations.pop(0) if len(durations) > 1 else durations[0]
            if log is not None:
                log.append(name)
        return run


def budget(quick=False, clock=None, total_s=None):
    return harness.Budget(quick, total_s=total_s, clock=clock or FakeClock(), started=0.0)


class StopSamplingTest(unittest.TestCase):
    def test_never_before_the_minimum(self):
        self.assertFalse(harness.stop_sampling([1.0] * 4, elapsed_s=100, budget_s=1, min_samples=5, cv_target=0.03))

    def test_a_steady_point_stops_at_the_minimum(self):
        self.assertTrue(harness.stop_sampling([1.0] * 5, elapsed_s=0, budget_s=1, min_samples=5, cv_target=0.03))

    def test_a_noisy_point_samples_until_its_budget_is_spent(self):
        noisy = [1.0, 2.0, 1.0, 3.0, 1.0]
        self.assertFalse(harness.stop_sampling(noisy, elapsed_s=0.5, budget_s=1, min_samples=5, cv_target=0.03))
        self.assertTrue(harness.stop_sampling(noisy, elapsed_s=1.0, budget_s=1, min_samples=5, cv_target=0.03))

    def test_the_sample_cap_ends_it_too(self):
        noisy = [1.0, 2.0] * 10
        self.assertTrue(harness.stop_sampling(noisy, 0, 10, 5, 0.03, max_samples=20))

    def test_coefficient_of_variation(self):
        self.assertEqual(harness.coefficient_of_variation([2.0]), 0.0)
        self.assertAlmostEqual(harness.coefficient_of_variation([1.0, 3.0]), math.sqrt(2) / 2)

    def test_running_samples_keep_the_same_coefficient(self):
        import random
        rng = random.Random(3)
        values = [1e-4 * (1 + rng.random()) for _ in range(500)] + [3e-4, 1e-5]
        kept = harness.Samples()
        self.assertEqual(harness.coefficient_of_variation(kept), 0.0)
        for i, v in enumerate(values):
            kept.append(v)
            if i % 50 == 1 or i == len(values) - 1:
                plain = statistics.stdev(values[:i + 1]) / statistics.fmean(values[:i + 1])
                self.assertAlmostEqual(harness.coefficient_of_variation(kept), plain, places=12)
                self.assertAlmostEqual(harness.coefficient_of_variation(list(kept)), plain, places=12)
        self.assertEqual(list(kept), values)
        self.assertEqual(harness.Timing(kept).count, len(values))
        # Joined through extend, +=, the constructor or a copy, the statistics stay whole.
        import copy
        import pickle
        joined = harness.Samples(values[:100])
        joined += values[100:300]
        joined.extend(values[300:])
        for other in (joined, copy.copy(joined), copy.deepcopy(joined), pickle.loads(pickle.dumps(joined))):
            self.assertEqual(list(other), values)
            self.assertAlmostEqual(harness.coefficient_of_variation(other),
                                   statistics.stdev(values) / statistics.fmean(values), places=12)
        for change in (lambda s: s.insert(0, 1.0), lambda s: s.pop(), lambda s: s.__setitem__(0, 1.0),
                       lambda s: s.sort(), lambda s: s.clear()):
            with self.assertRaises(TypeError):
                change(joined)
        self.assertEqual(list(joined), values)


class TimeCallsTest(unittest.TestCase):
    def test_the_warm_up_is_never_timed_and_the_fastest_is_kept(self):
        clock = FakeClock()
        # Warm-up calls take 9 s; then 3, 1, 2, 2, 2, ...
        run = clock.call([9.0, 9.0, 3.0, 1.0, 2.0, 2.0, 2.0])
        t = harness.time_call(run, budget(clock=clock), clock=clock)
        self.assertEqual(t.time_s, 1.0)
        self.assertNotIn(9.0, t.samples)
        self.assertGreaterEqual(t.count, 5)
        self.assertEqual(t.median_s, 2.0)

    def test_keys_are_interleaved_round_by_round(self):
        clock, log = FakeClock(), []
        calls = {"a": clock.call([1.0], log, "a"), "b": clock.call([2.0], log, "b")}
        b = budget(clock=clock)
        timings = harness.time_calls(calls, b, clock=clock)
        timed = log[2 * b.warmup:]
        self.assertEqual(timed[:4], ["a", "b", "a", "b"])
        self.assertEqual(timings["a"].time_s, 1.0)
        self.assertEqual(timings["b"].time_s, 2.0)

    def test_a_noisy_group_stops_when_its_budget_is_spent(self):
        clock = FakeClock()
        b = budget(clock=clock)
        calls = {"a": clock.call([0.01, 0.02, 0.03] * 1000), "b": clock.call([0.01])}
        timings = harness.time_calls(calls, b, clock=clock)
        spent = sum(timings["a"].samples) + sum(timings["b"].samples)
        self.assertLess(spent, b.base_point_s * 2 + 0.1)
        self.assertGreater(timings["a"].count, b.min_samples)

    def test_the_before_hook_runs_untimed(self):
        clock = FakeClock()
        slow_hook = clock.call([5.0])
        t = harness.time_call(clock.call([1.0]), budget(clock=clock), clock=clock, before=slow_hook)
        self.assertEqual(set(t.samples), {1.0})

    def test_fields_are_the_point_format(self):
        t = harness.Timing([2.0, 1.0, 3.0])
        self.assertEqual(t.fields(), {"time_s": 1.0, "median_s": 2.0, "cv": t.cv, "samples": 3})
        with self.assertRaises(ValueError):
            harness.Timing([])


class TimeInSweepsTest(unittest.TestCase):
    def timed(self, calls, clock):
        group = lambda c, b, w: harness.time_calls(c, b, w, clock=clock)  # noqa: E731
        return harness.time_in_sweeps(calls, budget(clock=clock), group)

    def test_each_point_runs_back_to_back_once_a_sweep(self):
        clock, log = FakeClock(), []
        calls = {"a": clock.call([1.0], log, "a"), "b": clock.call([1.0], log, "b")}
        timings = self.timed(calls, clock)
        bursts = [name for i, name in enumerate(log) if i == 0 or log[i - 1] != name]
        self.assertEqual(bursts, ["a", "b"] * harness.SWEEPS)
        self.assertEqual(timings["a"].count + timings["b"].count, len(log) - 2 * harness.SWEEPS * budget().warmup)

    def test_together_a_sweep_interleaves_the_group(self):
        clock, log = FakeClock(), []
        calls = {"a": clock.call([1.0], log, "a"), "b": clock.call([1.0], log, "b")}
        group = lambda c, b, w: harness.time_calls(c, b, w, clock=clock)  # noqa: E731
        timings = harness.time_in_sweeps(calls, budget(clock=clock), group, together=True)
        warm = budget().warmup
        self.assertEqual(log[2 * warm:2 * warm + 4], ["a", "b", "a", "b"])
        self.assertEqual(timings["a"].count, timings["b"].count)
        self.assertEqual(timings["a"].count, (len(log) - 2 * warm * harness.SWEEPS) // 2)

    def test_sweeps_started_apart_pool_their_samples(self):
        clock, log, slow = FakeClock(), [], [True]

        def call():  # slow until another probe has run between two sweeps
            clock.now += 3.0 if slow[0] else 1.0
            log.append("a")
        group = harness.Sweeps({"a": call}, lambda c, b, w: harness.time_calls(c, b, w, clock=clock), sweeps=3,
                               together=True)
        group.sweep(budget(clock=clock))
        first = len(log)
        self.assertEqual(group.timings()["a"].time_s, 3.0)
        slow[0] = False
        group.sweep(budget(clock=clock))
        group.sweep(budget(clock=clock))
        timing = group.timings()["a"]
        self.assertEqual(timing.time_s, 1.0)
        self.assertIn(3.0, timing.samples)
        self.assertEqual(timing.count, len(log) - 3 * budget().warmup)
        self.assertGreater(len(log), first)
        # Every sweep has run: finishing runs none more.
        self.assertEqual(group.finish(budget(clock=clock))["a"].count, timing.count)

    def test_finish_runs_the_sweeps_left(self):
        clock, log = FakeClock(), []
        group = harness.Sweeps({"a": clock.call([1.0], log, "a")},
                               lambda c, b, w: harness.time_calls(c, b, w, clock=clock), sweeps=3)
        group.sweep(budget(clock=clock))
        group.finish(budget(clock=clock))
        self.assertEqual(group.done, 3)
        bursts = [name for i, name in enumerate(log) if i == 0 or log[i - 1] != name]
        self.assertEqual(bursts, ["a"])
        self.assertEqual(group.timings()["a"].count, len(log) - 3 * budget().warmup)

    def test_a_slow_spell_in_one_sweep_leaves_the_rate_to_another(self):
        clock = FakeClock()
        # "a" runs slow through the whole of the first sweep (its warm-up and the fewest samples
        # a point over its budget takes), then at its own speed.
        first_sweep = budget().warmup + budget().min_samples
        calls = {"a": clock.call([5.0] * first_sweep + [1.0]), "b": clock.call([1.0])}
        timings = self.timed(calls, clock)
        self.assertEqual(timings["a"].time_s, 1.0)
        self.assertIn(5.0, timings["a"].samples)


class HostProbeTest(unittest.TestCase):
    def test_each_moment_is_the_fastest_of_its_calls_after_a_warm_up(self):
        clock, log = FakeClock(), []
        calls = harness.HOST_PROBE_CALLS
        # The warm-up call is the fastest of all and never counts.
        call = clock.call([1.0] + [3.0, 2.0] + [4.0] * (calls - 2) + [1.0] + [5.0] + [6.0] * (calls - 1), log, "mm")
        host = harness.HostProbe("matmul f32", "128x128x128", call, clock=clock, started=0.0)
        host()
        self.assertEqual(len(log), 1 + calls)
        host()
        points = host.points()
        self.assertEqual([p["time_s"] for p in points], [2.0, 5.0])
        first = 1.0 + 3.0 + 2.0 + 4.0 * (calls - 2)
        self.assertEqual([p["at_s"] for p in points], [first, first + 1.0 + 5.0 + 6.0 * (calls - 1)])
        self.assertEqual(points[0]["name"], harness.HOST_PROBE_PREFIX + "matmul f32")
        self.assertEqual(points[0]["shape"], "128x128x128")
        self.assertEqual(points[0]["samples"], calls)

    def test_a_maker_makes_the_call_anew_for_each_moment(self):
        clock, made = FakeClock(), []

        def make():
            made.append(1)
            return clock.call([1.0])
        host = harness.HostProbe("MatMul f32", "8x8x8", make=make, clock=clock, started=0.0)
        host()
        host()
        self.assertEqual(len(made), 2)
        with self.assertRaises(ValueError):
            harness.HostProbe("x", "1", clock=clock)

    def test_the_points_pass_the_records_checks(self):
        clock = FakeClock()
        host = harness.HostProbe("matmul f32", "8x8x8", clock.call([1e-4, 2e-4]), clock=clock)
        host()
        host()
        sys.path.insert(0, os.path.dirname(os.path.dirname(harness.__file__)))
        from runtimes import record
        doc = record.build_record("torch-eager", "cpu", "torch 2", {}, 2, ["f32"], {}, 1e-6, host.points(), 1.0)
        self.assertEqual(record.problems(doc), [])

    def test_the_spread_is_the_slowest_and_the_median_over_the_fastest(self):
        name = harness.HOST_PROBE_PREFIX + "matmul f32"
        points = [{"name": name, "shape": "8x8x8", "time_s": t} for t in (2.0, 3.0, 2.5)]
        others = [{"name": "conv", "time_s": 1.0}, {"name": None}, {"name": name, "time_s": "fast"},
                  {"name": name, "time_s": float("nan")}, "not a point"]
        self.assertEqual(harness.host_spread(points + others),
                         "matmul f32 8x8x8 at 3 moments, the slowest 1.50x the fastest, the median 1.25x")
        # An even number of moments: the median is the mean of the middle two.
        self.assertEqual(harness.host_spread(points + [{"name": name, "time_s": 2.7}]),
                         "matmul f32 8x8x8 at 4 moments, the slowest 1.50x the fastest, the median 1.30x")
        self.assertEqual(harness.host_spread(points[:1]), "")  # one moment has no spread
        self.assertEqual(harness.host_spread([]), "")


class TimeColdRingsTest(unittest.TestCase):
    def test_every_sample_follows_an_eviction_and_leaves_it_out(self):
        clock, log = FakeClock(), []
        evict = clock.call([5e-3], log, "evict")  # an eviction takes time, never counted
        calls = {"a": [clock.call([2e-5, 3e-5, 4e-5], log, "a")], "b": [clock.call([1e-5], log, "b")]}
        timings = harness.time_cold_rings(calls, [evict], 3, clock)
        self.assertEqual(log, ["evict", "a", "evict", "b"] * 3)
        self.assertEqual(timings["a"].count, 3)
        self.assertAlmostEqual(timings["a"].time_s, 2e-5)
        self.assertAlmostEqual(timings["a"].median_s, 3e-5)
        self.assertAlmostEqual(timings["b"].median_s, 1e-5)

    def test_each_round_calls_the_next_layer_of_every_ring_after_the_next_write(self):
        clock, log = FakeClock(), []
        writes = [clock.call([1e-3], log, f"w{j}") for j in range(3)]
        rings = {"a": [clock.call([2e-5], log, "a0"), clock.call([3e-5], log, "a1")],
                 "b": [clock.call([1e-5], log, "b0")]}
        timings = harness.time_cold_rings(rings, writes, 2, clock)
        self.assertEqual(log, ["w0", "a0", "w1", "b0", "w2", "a1", "w0", "b0"])
        self.assertAlmostEqual(timings["a"].time_s, 2e-5)
        self.assertEqual(timings["b"].count, 2)

    def test_an_eviction_writes_the_last_level_cache(self):
        self.assertEqual(harness.eviction_bytes(32 * 2 ** 20), 32 * 2 ** 20)
        self.assertEqual(harness.eviction_bytes(None), harness.EVICTION_FALLBACK_BYTES)


class BudgetTest(unittest.TestCase):
    def test_points_take_their_minimum_once_the_total_is_spent(self):
        clock = FakeClock()
        b = budget(clock=clock, total_s=10)
        self.assertGreater(b.point_s(), 0)
        self.assertAlmostEqual(b.point_s(2.0), 2 * b.base_point_s)
        self.assertEqual(b.min_samples, harness.MIN_SAMPLES)
        clock.now = 11
        self.assertEqual(b.point_s(), 0.0)
        self.assertEqual(b.min_samples, harness.FEWEST_SAMPLES)

    def test_quick_points_are_shorter(self):
        self.assertLess(budget(quick=True).base_point_s, budget().base_point_s)
        self.assertLessEqual(budget(quick=True).min_samples, budget().min_samples)


class ChainCostTest(unittest.TestCase):
    def test_the_fixed_cost_drops_out(self):
        # 20 us of fixed cost, 5 us an op, 2 ops a link.
        fixed, op = 20e-6, 5e-6
        self.assertAlmostEqual(harness.chain_cost(fixed + 2 * op, fixed + 64 * 2 * op, 64, 2), op)

    def test_noise_that_leaves_the_long_chain_no_slower_is_zero(self):
        self.assertEqual(harness.chain_cost(1e-3, 0.9e-3, 32), 0.0)

    def test_a_chain_needs_two_links(self):
        with self.assertRaises(ValueError):
            harness.chain_cost(1.0, 1.0, 1)


class SlopeRateTest(unittest.TestCase):
    def test_the_fixed_cost_drops_out_of_the_rate(self):
        rate, fixed = 1e9, 30e-6
        points = [(n, fixed + n / rate) for n in (2 ** 13, 2 ** 16, 2 ** 19, 2 ** 22)]
        got, method = harness.slope_rate(points)
        self.assertEqual(method, "slope")
        self.assertAlmostEqual(got / rate, 1.0, places=9)

    def test_two_points_are_the_slope_between_them(self):
        got, method = harness.slope_rate([(1e5, 2e-4), (4e5, 5e-4)])
        self.assertEqual(method, "slope")
        self.assertAlmostEqual(got / (3e5 / 3e-4), 1.0)

    def test_a_slope_lost_in_noise_falls_back_to_the_largest_point(self):
        # Growth over the grid (0.1 us) is far under a quarter of the smallest time (10 us).
        got, method = harness.slope_rate([(1e3, 10e-6), (2e3, 10.1e-6)])
        self.assertEqual(method, "largest")
        self.assertAlmostEqual(got, 2e3 / 10.1e-6)

    def test_a_falling_slope_falls_back_too(self):
        self.assertEqual(harness.slope_rate([(1e3, 2e-3), (1e6, 1e-3)])[1], "largest")

    def test_a_slope_that_leaves_most_of_the_largest_point_to_fixed_cost_falls_back(self):
        # The slope says 4.5e10/s, which leaves 63% of the largest point's 6 us to fixed cost.
        got, method = harness.slope_rate([(1e4, 4e-6), (1e5, 6e-6)])
        self.assertEqual(method, "largest")
        self.assertAlmostEqual(got, 1e5 / 6e-6)

    def test_one_size_falls_back(self):
        self.assertEqual(harness.slope_rate([(1e3, 1e-3)]), (1e6, "largest"))

    def test_bad_points_are_refused(self):
        for points in ([], [(1e3, 0.0)], [(1e3, float("nan"))], [(-1, 1e-3)]):
            with self.assertRaises(ValueError):
                harness.slope_rate(points)

    def test_kernel_time_takes_off_the_fixed_cost_down_to_a_floor(self):
        self.assertAlmostEqual(harness.kernel_time_s(100e-6, 20e-6), 80e-6)
        self.assertAlmostEqual(harness.kernel_time_s(30e-6, 20e-6), 15e-6)
        self.assertAlmostEqual(harness.kernel_time_s(30e-6, -1.0), 30e-6)


class WithinCacheTest(unittest.TestCase):
    def test_points_past_the_cache_leave_the_fit(self):
        points = [(1e3, 1e-6, 1e4), (1e4, 1e-5, 1e5), (1e5, 1e-4, 1e6), (1e6, 1e-2, 1e7)]
        self.assertEqual(harness.within_cache(points, 2e6), [(1e3, 1e-6), (1e4, 1e-5), (1e5, 1e-4)])
        rate, _ = harness.slope_rate(harness.within_cache(points, 2e6))
        self.assertAlmostEqual(rate, 1e9, delta=1e6)

    def test_all_points_where_fewer_than_two_fit_or_the_cache_is_unknown(self):
        points = [(1e3, 1e-6, 1e4), (1e6, 1e-2, 1e7)]
        self.assertEqual(len(harness.within_cache(points, 5e4)), 2)
        self.assertEqual(len(harness.within_cache(points, None)), 2)


class CheckCloseTest(unittest.TestCase):
    def test_within_tolerance_passes(self):
        harness.check_close("x", [1.0, 2.0], [1.0, 2.0000001])
        harness.check_close("x", [[1.0], [2.0]], (1.0, 2.0))

    def test_a_wrong_value_fails_naming_it(self):
        with self.assertRaises(harness.CheckFailed) as caught:
            harness.check_close("relu 1x4", [1.0, 2.5], [1.0, 2.0])
        self.assertIn("relu 1x4", str(caught.exception))
        self.assertIn("element 1", str(caught.exception))

    def test_a_wrong_size_fails(self):
        with self.assertRaises(harness.CheckFailed):
            harness.check_close("x", [1.0], [1.0, 2.0])

    def test_non_finite_output_fails(self):
        with self.assertRaises(harness.CheckFailed):
            harness.check_close("x", [float("nan")], [1.0])
        with self.assertRaises(harness.CheckFailed):
            harness.check_close("x", [float("inf")], [float("inf")])


    def frameworks(self):
        """(name, make a 1-d value of floats) for numpy and torch, where installed."""
        made = []
        try:
            import numpy
            made.append(("numpy", lambda values: numpy.array(values, dtype=numpy.float32)))
        except ImportError:
            pass
        try:
            import torch
            made.append(("torch", lambda values: torch.tensor(values, dtype=torch.float32)))
        except ImportError:
            pass
        if not made:
            self.skipTest("neither numpy nor torch is installed")
        return made

    def test_tensors_and_arrays_are_judged_as_lists_are(self):
        # The framework's own comparison (fast on a convolution's output) says what the loop
        # over Python floats says, in the same words.
        cases = [([1.0, 2.0], [1.0, 2.0000001]), ([1.0, 2.5], [1.0, 2.0]), ([1.0], [1.0, 2.0]),
                 ([float("nan")], [1.0]), ([float("inf")], [float("inf")]), ([1.0, 2.0], [1.0, float("nan")]),
                 ([3.0, 1.0, 9.0], [3.0, 1.0, 8.0])]

        def verdict(got, want):
            try:
                harness.check_close("conv 3x3", got, want)
                return None
            except harness.CheckFailed as failed:
                return str(failed)
        for name, make in self.frameworks():
            for got, want in cases:
                with self.subTest(framework=name, got=got, want=want):
                    expected = verdict(got, want)
                    self.assertEqual(verdict(make(got), make(want)), expected)
                    if len(got) == len(want) and expected is not None and "finite" not in expected:
                        self.assertIn(f"element {len(got) - 1}", expected)

    def test_a_low_precision_output_is_judged_against_its_float64_reference(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        want = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64) / 3
        harness.check_close("linear bf16", (want * (1 + 2e-3)).to(torch.bfloat16), want, rtol=1e-2, atol=1e-3)
        with self.assertRaises(harness.CheckFailed) as caught:
            harness.check_close("linear bf16", (want * 1.1).to(torch.bfloat16), want, rtol=1e-2, atol=1e-3)
        self.assertIn("element 0", str(caught.exception))
        harness.check_close("conv f32", want.float(), want, rtol=1e-6, atol=0)


class RandomInputTest(unittest.TestCase):
    def test_inputs_are_seeded_and_never_zero(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("numpy is not installed")
        a = harness.random_input("numpy", (4, 1000))
        self.assertEqual((a.shape, a.dtype), ((4, 1000), numpy.float32))
        self.assertTrue((a != 0).all())
        self.assertTrue((a == harness.random_input("numpy", (4, 1000))).all())
        self.assertFalse((a == harness.random_input("numpy", (4, 1000), seed=1)).all())
        self.assertLess(abs(float(a.mean())), 0.1)
        self.assertLess(abs(float(a.var()) - 1.0), 0.1)
        self.assertEqual(harness.random_input("numpy", (1000,), numpy.float64).dtype, numpy.float64)
        p = harness.random_input("numpy", (1000,), positive=True)
        self.assertTrue(((p >= 0.5) & (p < 1.5)).all())
        self.assertEqual(harness.random_input("numpy", (8,), numpy.float16).dtype, numpy.float16)

    def test_torch_inputs_alike(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        a = harness.random_input("torch", (4, 1000), torch.bfloat16)
        self.assertEqual((tuple(a.shape), a.dtype), ((4, 1000), torch.bfloat16))
        self.assertTrue(bool((a != 0).all()))
        self.assertTrue(bool((a == harness.random_input("torch", (4, 1000), torch.bfloat16)).all()))
        p = harness.random_input("torch", (1000,), positive=True)
        self.assertTrue(bool(((p >= 0.5) & (p < 1.5)).all()))

    def test_an_unknown_framework_is_refused(self):
        with self.assertRaises(ValueError):
            harness.random_input("jax", (2,))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class CacheTest(unittest.TestCase):
    def fake_cpu_tree(self, root, cpus, l3_of):
        for cpu in range(cpus):
            base = os.path.join(root, f"cpu{cpu}", "cache")
            for index, (level, kind, size, shared) in enumerate([
                    (1, "Data", "48K", str(cpu)), (1, "Instruction", "32K", str(cpu)),
                    (2, "Unified", "1024K", str(cpu)), (3, "Unified", "32768K", l3_of(cpu))]):
                for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
                    write(os.path.join(base, f"index{index}", name), f"{value}\n")
        write(os.path.join(root, "online"), "0-3\n")  # not a cpuN directory

    def test_sizes_parse(self):
        self.assertEqual(harness.parse_cache_size("32768K\n"), 32 * 2 ** 20)
        self.assertEqual(harness.parse_cache_size("2M"), 2 * 2 ** 20)
        self.assertEqual(harness.parse_cache_size("512"), 512)

    def test_one_shared_last_level_cache_counts_once(self):
        with tempfile.TemporaryDirectory() as root:
            self.fake_cpu_tree(root, 4, lambda cpu: "0-3")
            self.assertEqual(harness.last_level_cache_bytes(root), 32 * 2 ** 20)

    def test_each_instance_of_a_split_last_level_cache_counts(self):
        with tempfile.TemporaryDirectory() as root:
            self.fake_cpu_tree(root, 4, lambda cpu: "0-1" if cpu < 2 else "2-3")
            self.assertEqual(harness.last_level_cache_bytes(root), 64 * 2 ** 20)

    def test_no_cache_information_is_none(self):
        with tempfile.TemporaryDirectory() as root:
            self.assertIsNone(harness.last_level_cache_bytes(root))
        self.assertIsNone(harness.last_level_cache_bytes("/nonexistent/truepeak"))

    def test_the_main_memory_working_set_is_four_caches(self):
        self.assertEqual(harness.dram_working_set_bytes(32 * 2 ** 20), 128 * 2 ** 20)
        self.assertEqual(harness.dram_working_set_bytes(None), 256 * 2 ** 20)

    def test_smt_siblings_count_as_one_physical_core(self):
        cpus = sorted(os.sched_getaffinity(0))
        with tempfile.TemporaryDirectory() as root:
            for cpu in cpus:
                write(os.path.join(root, f"cpu{cpu}", "topology", "physical_package_id"), "0\n")
                write(os.path.join(root, f"cpu{cpu}", "topology", "core_id"), f"{cpu // 2}\n")
            self.assertEqual(harness.physical_core_count(root), len({cpu // 2 for cpu in cpus}))
            self.assertEqual(harness.physical_core_count(os.path.join(root, "missing")), len(cpus))


class ProgressTest(unittest.TestCase):
    def test_lines_name_the_runtime(self):
        out = io.StringIO()
        harness.Progress("torch-jit", stream=out)("hello")
        self.assertRegex(out.getvalue(), r"^\[torch-jit +\d+\.\ds\] hello\n$")


if __name__ == "__main__":
    unittest.main()
