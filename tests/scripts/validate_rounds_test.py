"""validate.py's rounds: extra rounds go to the cases whose fastest run still improves, and stop."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import validate  # noqa: E402  (stdlib only at import time; torch is imported where it is used)


# One row of a report, and its summary, for the tests of write_report.
REPORT_ROW = {"model": "m", "batch": 1, "dtype": "f32", "measured_ms": 10.0, "median_ms": 11.0, "spread": 1.2,
              "rounds": 9, "predicted_ms": 10.5, "error_pct": 5.0, "naive_ms": 8.0, "naive_error_pct": -20.0,
              "reorders": 5, "predicted_reorders": 3, "library": "oneDNN"}
REPORT_SUMMARY = {"rows": 2, "rows_better_than_naive": 2, "median_abs_error_pct": 5.0, "worst_abs_error_pct": 5.0,
                  "naive_median_abs_error_pct": 20.0, "naive_worst_abs_error_pct": 20.0}


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def case_with_times(clock, key, times_s):
    """A case whose runs take the scripted times in turn (the last one from then on)."""
    case = validate.Case(key, 1, "f32", None, None, None, "frozen")
    script = list(times_s)

    def runner():
        clock.now += script.pop(0) if len(script) > 1 else script[0]
    case.runner = runner
    return case


class ClockedTest(unittest.TestCase):
    """validate's clock replaced by a FakeClock that the scripted runs advance."""

    def setUp(self):
        self.clock = FakeClock()
        self.saved = validate.time.perf_counter
        validate.time.perf_counter = self.clock

    def tearDown(self):
        validate.time.perf_counter = self.saved

    def args(self, rounds=4, extra=8, runs=1, visit_ms=0):
        return types.SimpleNamespace(warmup=0, rounds=rounds, runs=runs, extra_rounds=extra, visit_ms=visit_ms)


class RoundsTest(ClockedTest):
    def test_settled_needs_more_rounds_than_it_looks_back(self):
        case = validate.Case("m", 1, "f32", None, None, None, "frozen")
        case.times_s, case.round_ends = [1.0, 1.0, 1.0], [1, 2, 3]
        self.assertFalse(validate.settled(case, 3, 0.01))
        case.times_s.append(1.0)
        case.round_ends.append(4)
        self.assertTrue(validate.settled(case, 3, 0.01))

    def test_settled_by_the_gain_over_the_window(self):
        case = validate.Case("m", 1, "f32", None, None, None, "frozen")
        case.round_ends = [1, 2, 3, 4, 5]
        case.times_s = [2.0, 1.02, 1.01, 1.01, 1.01]  # 1.02 -> 1.01: under 1%
        self.assertTrue(validate.settled(case, 3, 0.01))
        case.times_s = [2.0, 1.05, 1.04, 1.03, 1.02]  # 1.05 -> 1.02: 2.9%
        self.assertFalse(validate.settled(case, 3, 0.01))

    def test_fastest_by_round_takes_whole_rounds(self):
        self.assertEqual(validate.fastest_by_round([3.0, 2.0, 2.5, 1.0], [2, 4]), [2.0, 1.0])
        # Rounds of different lengths (visits that ran on).
        self.assertEqual(validate.fastest_by_round([3.0, 2.0, 2.5, 1.5, 1.0], [1, 4, 5]), [3.0, 1.5, 1.0])
        self.assertEqual(validate.round_ends_of(7, 3), [3, 6])

    def test_a_short_case_runs_on_until_its_visit_has_lasted(self):
        short = case_with_times(self.clock, "short", [0.015])
        long = case_with_times(self.clock, "long", [0.5])
        validate.timed_rounds([short, long], self.args(rounds=2, extra=0, runs=3, visit_ms=100))
        # 3 runs at least; the short case's visit goes on past 100 ms (7 runs), the long one's not.
        self.assertEqual(short.round_ends, [7, 14])
        self.assertEqual(long.round_ends, [3, 6])

    def test_a_visit_has_a_most_runs(self):
        tiny = case_with_times(self.clock, "tiny", [1e-6])
        validate.timed_rounds([tiny], self.args(rounds=1, extra=0, runs=3, visit_ms=100))
        self.assertEqual(tiny.round_ends, [validate.MOST_RUNS_A_VISIT])

    def test_host_at_fastest_finds_the_round_of_a_longer_visit(self):
        case = validate.Case("m", 1, "f32", None, None, None, "frozen")
        case.times_s, case.round_ends = [2.0, 1.9, 1.8, 1.7, 1.0, 1.5], [4, 5, 6]
        case.host_s = [1.2, 1.1, 1.3]
        probe = types.SimpleNamespace(fastest_s=1.0)
        # The fastest run is the fifth: the second round's.
        self.assertAlmostEqual(validate.host_at_fastest(case, probe), 1.1)

    def test_only_improving_cases_run_extra_rounds(self):
        steady = case_with_times(self.clock, "steady", [1.0])
        # Slow for its first three rounds (a busy spell), fast from the fourth.
        late = case_with_times(self.clock, "late", [2.0, 2.0, 2.0, 1.0])
        validate.timed_rounds([steady, late], self.args(rounds=4))
        self.assertEqual(len(steady.times_s), 4)
        # Three rounds after the fast one show that it holds.
        self.assertEqual(len(late.times_s), 7)
        self.assertEqual(min(late.times_s), 1.0)

    def test_extra_rounds_are_bounded(self):
        # Every run a little faster than the last: never settled.
        case = case_with_times(self.clock, "falling", [1.0 - 0.05 * i for i in range(20)])
        validate.timed_rounds([case], self.args(rounds=4, extra=3))
        self.assertEqual(len(case.times_s), 7)

    def test_rounds_of_every_case_go_on_over_the_span(self):
        # 2 s a round; 10 s of span: the rounds go on until the fifth has ended (10 s).
        a = case_with_times(self.clock, "a", [1.0])
        b = case_with_times(self.clock, "b", [1.0])
        args = self.args(rounds=2, extra=0)
        args.span_s = 10.0
        validate.timed_rounds([a, b], args)
        self.assertEqual(a.round_ends, [1, 2, 3, 4, 5])
        self.assertEqual(b.round_ends, [1, 2, 3, 4, 5])

    def test_a_fast_spell_late_in_the_span_is_found(self):
        # Slow (2 s a run) for the first 20 s, fast after: without the span, 4 rounds and the extra
        # rounds' settling see only the slow spell; over 30 s the fast runs count.
        spell = [2.0] * 10 + [1.0]
        short = case_with_times(self.clock, "short", spell)
        validate.timed_rounds([short], self.args(rounds=4, extra=0))
        self.assertEqual(min(short.times_s), 2.0)
        self.clock.now = 0.0
        spanned = case_with_times(self.clock, "spanned", spell)
        args = self.args(rounds=4, extra=0)
        args.span_s = 30.0
        validate.timed_rounds([spanned], args)
        self.assertEqual(min(spanned.times_s), 1.0)
        self.assertEqual(len(spanned.times_s), 20)

    def test_a_negative_span_is_one_clear_line(self):
        script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "validate.py")
        for span in ("-1", "inf"):
            run = subprocess.run([sys.executable, script, "--span-s", span], capture_output=True, text=True)
            self.assertEqual(run.returncode, 2)
            self.assertEqual(run.stderr.strip(), f"validate.py: --span-s {span}: must be 0 or more seconds")

    def test_no_extra_rounds_when_asked_for_none(self):
        case = case_with_times(self.clock, "falling", [1.0 - 0.05 * i for i in range(20)])
        validate.timed_rounds([case], self.args(rounds=4, extra=0))
        self.assertEqual(len(case.times_s), 4)


class SampleFastestTest(ClockedTest):
    def test_what_runs_before_a_sample_is_not_timed(self):
        # Each run takes 1 s, what runs before it 5 s: the fastest sample is the run's own second,
        # and the layer ran once before each of the 3 runs of both kernels.
        befores = []

        def before():
            befores.append(self.clock.now)
            self.clock.now += 5.0

        def run():
            self.clock.now += 1.0
        best = {"a": float("inf"), "b": float("inf")}
        validate.sample_fastest({"a": run, "b": run}, best, 3, before)
        self.assertEqual(best, {"a": 1.0, "b": 1.0})
        self.assertEqual(len(befores), 6)

    def test_without_a_before_the_runs_are_timed_back_to_back(self):
        best = {"a": float("inf")}
        script = [3.0, 2.0, 4.0]

        def run():
            self.clock.now += script.pop(0)
        validate.sample_fastest({"a": run}, best, 3)
        self.assertEqual(best["a"], 2.0)


def estimate_command(case, **kwargs):
    """The `truepeak estimate` command validate.estimate runs for `case` (the run itself faked)."""
    seen = {}

    def fake_run(cmd, **run_kwargs):
        seen["cmd"] = cmd
        return types.SimpleNamespace(returncode=2, stdout="", stderr="stop here")
    args = types.SimpleNamespace(truepeak="truepeak", profile="p.json", device="cpu", typical_times=False)
    real = validate.subprocess.run
    validate.subprocess.run = fake_run
    try:
        validate.estimate(args, case, "m.onnx", **kwargs)
    finally:
        validate.subprocess.run = real
    return seen["cmd"]


class InPlaceKindsTest(unittest.TestCase):
    def test_the_frozen_graphs_in_place_nodes_by_the_estimators_names(self):
        nodes = ["prim::Constant", "prim::mkldnn_convolution", "prim::MKLDNNHardTanh_", "aten::relu_",
                 "aten::add_", "aten::add", "aten::hardswish_", "aten::to_dense", "aten::adaptive_avg_pool2d"]
        self.assertEqual(validate.in_place_kinds(nodes),
                         ["elementwise:add", "elementwise:clip", "elementwise:hardswish", "elementwise:relu"])

    def test_out_of_place_and_non_elementwise_nodes_are_left_out(self):
        self.assertEqual(validate.in_place_kinds(["aten::relu", "aten::add", "aten::copy_", "aten::zero_",
                                                  "aten::__iand__", "prim::BroadcastMKLDNNTensors"]), [])

    def test_the_estimate_is_told(self):
        case = validate.Case("resnet18", 1, "f32", None, None, None, "frozen", conv_layout="blocked",
                             in_place_ops=["elementwise:add", "elementwise:relu"])
        cmd = estimate_command(case)
        self.assertEqual(cmd[cmd.index("--in-place-ops") + 1], "elementwise:add,elementwise:relu")


class FrozenKindOverheadTest(unittest.TestCase):
    def test_a_kinds_cost_is_its_link_less_a_convolution(self):
        links = {"elementwise:clip": 11.1, "elementwise:add": 21.5, "elementwise:relu": 9.0,
                 "elementwise:mul": None}
        self.assertEqual(validate.frozen_kind_us(links, 10.0),
                         {"elementwise:clip": 11.1 - 10.0, "elementwise:add": 21.5 - 10.0, "elementwise:relu": 0.0})
        self.assertEqual(validate.frozen_kind_us(links, None), {})

    def test_a_frozen_case_is_told_its_kinds_costs_and_an_eager_one_not(self):
        kinds = {"elementwise:relu": 3.4, "elementwise:clip": 1.0}
        frozen = validate.Case("mobilenet_v2", 1, "f32", None, None, None, "frozen")
        cmd = estimate_command(frozen, overhead_us=10.0, kind_us=kinds)
        self.assertEqual(cmd[cmd.index("--kind-overhead-us") + 1], "elementwise:clip=1.000,elementwise:relu=3.400")
        eager = validate.Case("bert_base", 1, "bf16", None, None, None, "eager")
        cmd = estimate_command(eager, overhead_us=3.0, product_us=14.0, kind_us=kinds)
        self.assertEqual(cmd.count("--kind-overhead-us"), 1)
        self.assertEqual(cmd[cmd.index("--kind-overhead-us") + 1], "linear=14.000,matmul=14.000")

    def test_an_eager_case_is_told_its_layer_norms_and_views_costs(self):
        overheads = {"eager": 3.0, "eager-product": 14.0, "eager-norm": 8.7, "eager-view": 1.2, "frozen": 10.0}
        kinds = validate.eager_kinds_us(overheads)
        self.assertEqual(kinds, {"norm:layernorm": 8.7, "reshape": 1.2})
        eager = validate.Case("bert_base", 1, "bf16", None, None, None, "eager")
        cmd = estimate_command(eager, overhead_us=3.0, product_us=14.0, eager_kind_us=kinds)
        self.assertEqual(cmd[cmd.index("--kind-overhead-us") + 1],
                         "linear=14.000,matmul=14.000,norm:layernorm=8.700,reshape=1.200")
        # On a GPU, no product cost of its own: the kinds alone.
        cmd = estimate_command(eager, overhead_us=13.9, eager_kind_us=kinds)
        self.assertEqual(cmd[cmd.index("--kind-overhead-us") + 1], "norm:layernorm=8.700,reshape=1.200")
        frozen = validate.Case("resnet18", 1, "f32", None, None, None, "frozen")
        self.assertNotIn("--kind-overhead-us", estimate_command(frozen, overhead_us=10.0, eager_kind_us=kinds))
        self.assertEqual(validate.eager_kinds_us({"eager": 3.0}), {})

    def test_the_report_names_each_kinds_cost(self):
        self.assertEqual(validate.overhead_text("frozen elementwise:clip", 1.04), "frozen PyTorch's elementwise:clip 1.0 us")
        self.assertEqual(validate.overhead_text("frozen", 10.04), "frozen PyTorch 10.0 us")


class FakeProbe:
    """A host probe whose samples are scripted (the last one from then on)."""

    def __init__(self, times_s, name="conv f32 probe", point=None, per_op_s=None):
        self.name, self.point = name, point or {"table": "conv", "dtype": "f32", "c": 64}
        self.script = list(times_s)
        self.fastest_s = float("inf")
        self.samples = 0
        self.per_op = per_op_s

    def per_op_s(self):
        return self.per_op

    def sample(self):
        self.samples += 1
        now = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        self.fastest_s = min(self.fastest_s, now)
        return now


class HostProbeTest(ClockedTest):
    def test_a_case_with_no_quiet_round_runs_until_it_has_one(self):
        # The case's times are steady (settled), but the host was slow before each of its first
        # five rounds: the probe only reaches its fastest before the sixth.
        case = case_with_times(self.clock, "m", [1.0])
        probe = FakeProbe([1.0] + [1.3] * 5 + [1.0])
        # The first sample (at 1.0) is another case's, earlier: the fastest is known from it.
        probe.sample()
        validate.timed_rounds([case], self.args(rounds=4), probes={"frozen": probe})
        self.assertEqual(case.host_s, [1.3] * 5 + [1.0])
        self.assertEqual(len(case.times_s), 6)
        self.assertEqual(validate.quiet_rounds(case, probe), 1)

    def test_a_case_with_a_quiet_round_and_settled_stops(self):
        # Two cases of one runtime share the probe; the first's samples set its fastest (1.0). The
        # second's are slow but for one at 1.04, within 5%: that quiet round is enough, and both stop
        # after the planned rounds. With 1.06 there, it would run extra rounds (next test's case).
        first = case_with_times(self.clock, "a", [1.0])
        second = case_with_times(self.clock, "b", [1.0])
        probe = FakeProbe([1.0, 1.2, 1.0, 1.04, 1.0, 1.2, 1.0, 1.2])
        validate.timed_rounds([first, second], self.args(rounds=4), probes={"frozen": probe})
        self.assertEqual(second.host_s, [1.2, 1.04, 1.2, 1.2])
        self.assertEqual(validate.quiet_rounds(second, probe), 1)
        self.assertEqual((len(first.times_s), len(second.times_s)), (4, 4))

    def test_a_sample_past_the_quiet_margin_does_not_count(self):
        first = case_with_times(self.clock, "a", [1.0])
        second = case_with_times(self.clock, "b", [1.0])
        # After the planned rounds only the second runs: its fifth sample 1.2, its sixth 1.0.
        probe = FakeProbe([1.0, 1.2, 1.0, 1.06, 1.0, 1.2, 1.0, 1.2, 1.2, 1.0])
        validate.timed_rounds([first, second], self.args(rounds=4), probes={"frozen": probe})
        self.assertEqual(len(first.times_s), 4)
        self.assertEqual(validate.quiet_rounds(second, probe), 1)  # its sixth, at 1.0
        self.assertEqual(len(second.times_s), 6)

    def test_the_quiet_rule_is_bounded_by_the_extra_rounds(self):
        case = case_with_times(self.clock, "m", [1.0])
        probe = FakeProbe([0.5] + [1.0] * 30)
        probe.sample()
        validate.timed_rounds([case], self.args(rounds=4, extra=3), probes={"frozen": probe})
        self.assertEqual(len(case.times_s), 7)
        self.assertEqual(validate.quiet_rounds(case, probe), 0)

    def test_a_probe_serves_only_its_runtime(self):
        frozen = case_with_times(self.clock, "cnn", [1.0])
        eager = validate.Case("llm", 1, "bf16", None, None, None, "eager")
        eager.runner = lambda: None
        probe = FakeProbe([1.0])
        validate.timed_rounds([frozen, eager], self.args(rounds=4), probes={"frozen": probe})
        self.assertEqual(len(frozen.host_s), 4)
        self.assertEqual(eager.host_s, [])
        self.assertEqual(probe.samples, 4)

    def test_host_probe_gives_the_chain_time_and_the_op_time(self):
        slow = [True]

        def make_run(n):
            def run():  # 1 ms fixed, 2 ms an op; 3 ms an op while the host is busy
                self.clock.now += 1e-3 + n * (3e-3 if slow[0] else 2e-3)
            return run
        probe = validate.HostProbe("fake", make_run, {}, repeats=2)
        self.assertAlmostEqual(probe.sample(), 28e-3)
        slow[0] = False
        self.assertAlmostEqual(probe.sample(), 19e-3)
        slow[0] = True
        self.assertAlmostEqual(probe.sample(), 28e-3)
        self.assertAlmostEqual(probe.fastest_s, 19e-3)
        self.assertAlmostEqual(probe.per_op_s(), 2e-3)

    def test_host_at_fastest_is_the_probe_before_the_fastest_runs_round(self):
        case = validate.Case("m", 1, "f32", None, None, None, "frozen")
        case.times_s = [3.0, 2.9, 2.0, 2.5, 2.2, 2.4]  # 2 a round: the fastest is in round 2
        case.round_ends = [2, 4, 6]
        case.host_s = [1.5, 1.1, 1.0]
        probe = FakeProbe([1.0])
        probe.sample()
        self.assertAlmostEqual(validate.host_at_fastest(case, probe), 1.1)
        self.assertEqual(validate.host_fields(case, probe), {"quiet_rounds": 1, "host_at_fastest": 1.1})
        self.assertEqual(validate.host_fields(case, None), {})

    def test_profile_point_is_the_warm_point_of_that_shape(self):
        doc = {"devices": [{"kind": "cpu", "conv": [
            {"dtype": "f32", "c": 64, "cold_weights": True, "time_s": 9.0},
            {"dtype": "bf16", "c": 64, "cold_weights": False, "time_s": 8.0},
            {"dtype": "f32", "c": 64, "cold_weights": False, "time_s": 2.0}]}]}
        point = {"table": "conv", "dtype": "f32", "c": 64}
        self.assertEqual(validate.profile_point_s(doc, point), 2.0)
        self.assertIsNone(validate.profile_point_s(doc, dict(point, c=128)))
        self.assertIsNone(validate.profile_point_s(None, point))

    def test_host_summary_takes_the_runtimes_per_op_cost_off(self):
        doc = {"devices": [{"kind": "cpu", "conv": [{"dtype": "f32", "c": 64, "time_s": 1.0e-3}]}]}
        probe = FakeProbe([9.9e-3], per_op_s=1.1e-3)
        probe.sample()
        out = validate.host_summary({"frozen": probe}, doc, {"frozen": 50.0})
        self.assertAlmostEqual(out["frozen"]["less_overhead_ms"], 1.05)
        self.assertAlmostEqual(out["frozen"]["over_profile"], 1.05)
        self.assertIn("1.05x", validate.probes_text(out))
        missing = validate.host_summary({"frozen": probe}, {"devices": []})
        self.assertIsNone(missing["frozen"]["over_profile"])
        self.assertIn("no such point", validate.probes_text(missing))
        self.assertEqual(validate.host_summary({"frozen": FakeProbe([1.0])}, doc), {})
        # Without PyTorch's per-op cost (--library-overhead) nothing is taken off, and the text says so.
        plain = validate.host_summary({"frozen": probe}, doc)
        self.assertAlmostEqual(plain["frozen"]["over_profile"], 1.1)
        self.assertNotIn("taken off", validate.probes_text(plain))
        self.assertIn("taken off", validate.probes_text(out))

    def test_the_report_gives_the_host_column_and_the_probes(self):
        import tempfile
        row, summary = dict(REPORT_ROW), dict(REPORT_SUMMARY)
        meta = {"machine": "host", "date_utc": "now", "profile": "p.json", "threads": 2, "rounds": 8, "runs": 3,
                "command": "validate.py", "device": "cpu",
                "host_probes": {"frozen": {"probe": "conv", "per_op_ms": 1.1, "less_overhead_ms": 1.05,
                                           "profile_ms": 1.0, "over_profile": 1.05}}}
        with tempfile.TemporaryDirectory() as d:
            text = validate.write_report([dict(row, quiet_rounds=3, host_at_fastest=1.02), row], summary, meta,
                                         os.path.join(d, "v"))
        self.assertIn("| 9 | 1.02x (3) | 10.50 |", text)
        self.assertIn("| 9 | - | 10.50 |", text)
        self.assertIn("conv 1.050 ms at its fastest here, 1.000 ms in the profile (1.05x)", text)
        meta["extra_rounds"] = 8
        with tempfile.TemporaryDirectory() as d:
            text = validate.write_report([row], summary, meta, os.path.join(d, "v"))
        self.assertIn("or that had no quiet round (host probe), ran extra rounds, up to 8", text)


class SummaryTest(unittest.TestCase):
    def test_median_worst_and_rows_closer_than_naive(self):
        rows = [dict(REPORT_ROW, error_pct=e, naive_error_pct=n)
                for e, n in [(2.0, -30.0), (-8.0, 5.0), (4.0, None), (None, -40.0)]]
        summary = validate.summarize(rows)
        self.assertEqual(summary["rows"], 4)
        self.assertEqual(summary["median_abs_error_pct"], 4.0)
        self.assertEqual(summary["worst_abs_error_pct"], 8.0)
        self.assertEqual(summary["naive_median_abs_error_pct"], 30.0)
        self.assertEqual(summary["naive_worst_abs_error_pct"], 40.0)
        # Only rows with both errors count, and only when closer: the second row is not.
        self.assertEqual(summary["rows_better_than_naive"], 1)

    def test_the_report_gives_each_models_estimate_warnings_once(self):
        warning = "truepeak: /tmp/m.onnx: 1 node(s) of types the importer does not know: custom.Foo x1"
        rows = [dict(REPORT_ROW, estimate_warnings=[warning]), dict(REPORT_ROW, batch=8, estimate_warnings=[warning])]
        meta = {"machine": "host", "date_utc": "now", "profile": "p.json", "threads": 2, "rounds": 8, "runs": 3,
                "command": "validate.py", "device": "cpu"}
        with tempfile.TemporaryDirectory() as d:
            text = validate.write_report(rows, validate.summarize(rows), meta, os.path.join(d, "v"))
        self.assertIn("Estimate warnings:\n- m: /tmp/m.onnx: 1 node(s) of types the importer does not know", text)
        self.assertEqual(text.count("custom.Foo x1"), 1)


class UserModelNamesTest(unittest.TestCase):
    def test_a_model_of_ones_own_is_file_and_function(self):
        self.assertEqual(validate.user_model_spec("models/net.py:build"), ("models/net.py", "build"))
        self.assertEqual(validate.user_model_spec("C:/nets/net.py:build"), ("C:/nets/net.py", "build"))
        for name in ("resnet50", "net.py", "net:build", "gpt2_decode"):
            self.assertIsNone(validate.user_model_spec(name), name)

    def exits_with(self, names, message):
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), self.assertRaises(SystemExit) as exit_:
            validate.check_model_names(names)
        self.assertEqual(exit_.exception.code, 2)
        self.assertIn(message, stderr.getvalue())
        self.assertEqual(stderr.getvalue().count("\n"), 1)

    def test_a_missing_file_or_function_is_one_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "net.py")
            with open(path, "w") as f:
                f.write("def build(batch):\n    return None, None\n")
            validate.check_model_names([f"{path}:build"])
            self.exits_with([f"{path}:make"], f"{path} has no function 'make'")
            self.exits_with([os.path.join(d, "none.py") + ":build"], "no such file")
            self.exits_with([f"{path}:build", os.path.join(d, "other.py") + ":build"],
                            "would both be rows named 'build'")
            with open(path, "w") as f:
                f.write("import nothing_of_that_name\n")
            validate.user_model_function.cache_clear()  # a file is loaded once a process
            self.exits_with([f"{path}:build"], "failed to load: ModuleNotFoundError")


class CalibrateTest(unittest.TestCase):
    """--calibrate: truepeak calibrate into --profile before the runs."""

    SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "validate.py")

    def fake_truepeak(self, directory, status):
        """An executable that records its arguments and writes a profile, or fails with `status`."""
        path = os.path.join(directory, "truepeak")
        with open(path, "w") as f:
            f.write("#!/bin/sh\n"
                    f"echo \"$@\" > {directory}/args\n"
                    + (f"echo 'calibration failed' >&2; exit {status}\n" if status else
                       'while [ $# -gt 0 ]; do [ "$1" = --out ] && echo "{}" > "$2"; shift; done\n'))
        os.chmod(path, 0o755)
        return path

    def test_the_command_calibrates_the_validations_device_into_the_profile(self):
        args = types.SimpleNamespace(truepeak="tp", device="cpu", profile="/r/dev-cpu.json", threads=2)
        self.assertEqual(validate.calibrate_command(args),
                         ["tp", "calibrate", "--device", "cpu", "--label", "dev-cpu", "--out", "/r/dev-cpu.json",
                          "--threads", "2"])
        args.threads, args.device = None, "cuda:0"
        self.assertEqual(validate.calibrate_command(args)[:4], ["tp", "calibrate", "--device", "cuda:0"])
        self.assertNotIn("--threads", validate.calibrate_command(args))

    def test_the_calibration_runs_and_is_reported(self):
        with tempfile.TemporaryDirectory() as d:
            args = types.SimpleNamespace(truepeak=self.fake_truepeak(d, 0), device="cpu",
                                         profile=os.path.join(d, "p.json"), threads=None)
            with contextlib.redirect_stderr(io.StringIO()):
                done = validate.calibrate(args)
            self.assertTrue(os.path.exists(os.path.join(d, "p.json")))
            with open(os.path.join(d, "args")) as f:
                self.assertIn("calibrate --device cpu --label p --out", f.read())
        self.assertTrue(done["command"].startswith("truepeak calibrate --device cpu"))
        self.assertGreaterEqual(done["seconds"], 0)
        row, summary = dict(REPORT_ROW), dict(REPORT_SUMMARY)
        meta = {"machine": "host", "date_utc": "now", "profile": "p.json", "threads": 2, "rounds": 8, "runs": 3,
                "command": "validate.py", "device": "cpu", "span_s": 240,
                "calibration": {"command": "truepeak calibrate --device cpu", "seconds": 137.2, "date_utc": "then"}}
        with tempfile.TemporaryDirectory() as d:
            text = validate.write_report([row], summary, meta, os.path.join(d, "v"))
        self.assertIn("every case's rounds going on until 240 s had passed", text)
        self.assertIn("The profile was calibrated by this validation just before the runs: "
                      "`truepeak calibrate --device cpu` (137 s, ended then).", text)

    def test_a_failed_calibration_ends_the_validation_with_its_status(self):
        with tempfile.TemporaryDirectory() as d:
            args = types.SimpleNamespace(truepeak=self.fake_truepeak(d, 3), device="cpu",
                                         profile=os.path.join(d, "p.json"), threads=None)
            err = io.StringIO()
            with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as ended:
                validate.calibrate(args)
        self.assertEqual(ended.exception.code, 3)
        self.assertIn("truepeak calibrate exited with status 3", err.getvalue())

    def test_what_cannot_be_calibrated_for_is_refused_in_one_line(self):
        for flags in (["--measure-only", "x.json"], ["--reestimate", "x.json"],
                      # A GPU's profile must be named: the default is the CPU's.
                      ["--device", "cuda:0"],
                      # Bad flags are refused before the calibration (truepeak here fails if it runs).
                      ["--models", "bert_base", "--batches", "0", "--truepeak", "/bin/false"]):
            run = subprocess.run([sys.executable, self.SCRIPT, "--calibrate", *flags], capture_output=True, text=True)
            self.assertEqual(run.returncode, 2)
            self.assertRegex(run.stderr, "calibrates this machine for the runs timed here|name the GPU's profile"
                                         "|--batches 0: expected batch sizes")
            self.assertEqual(len(run.stderr.strip().splitlines()), 1)


class HostWaitTest(ClockedTest):
    """wait_for_host: after the rounds, the runs wait for the host to run as at calibration."""

    def setUp(self):
        super().setUp()
        self.saved_sleep = validate.time.sleep

        def sleep(seconds):
            raise AssertionError("the wait runs rounds; it never sleeps")
        validate.time.sleep = sleep

    def tearDown(self):
        validate.time.sleep = self.saved_sleep
        super().tearDown()

    def wait_args(self, host_wait):
        return types.SimpleNamespace(host_wait=host_wait, runs=1, visit_ms=0)

    def test_the_cases_of_a_slow_runtime_run_on_until_the_host_is_back(self):
        # The probe ran at 1.3 through the planned rounds (slower than at calibration: every round
        # quiet against that); in the wait the case runs on, its probe sampled before each visit:
        # 1.3, 1.3, then 1.0, a quiet round against the new fastest, which ends the wait.
        case = case_with_times(self.clock, "m", [1.0])
        probe = FakeProbe([1.3] * 6 + [1.0])
        validate.timed_rounds([case], self.args(rounds=4, extra=0), probes={"frozen": probe})
        self.assertEqual(validate.quiet_rounds(case, probe), 4)
        wait = validate.wait_for_host([case], self.wait_args(60), None, {"frozen": probe},
                                      lambda: {"frozen": probe.fastest_s})
        self.assertEqual(probe.samples, 4 + 3)
        self.assertEqual(case.host_s, [1.3] * 6 + [1.0])
        self.assertEqual(len(case.times_s), 7)
        self.assertEqual(wait["rounds"], 3)
        self.assertEqual(wait["as_calibrated"], {"frozen": True})
        self.assertAlmostEqual(wait["waited_s"], 3.0)
        self.assertIn("every probe got there", validate.host_wait_text(wait))

    def test_the_wait_is_bounded_and_says_which_probe_never_got_there(self):
        case = case_with_times(self.clock, "m", [1.0])
        probe = FakeProbe([1.3])
        validate.timed_rounds([case], self.args(rounds=4, extra=0), probes={"frozen": probe})
        wait = validate.wait_for_host([case], self.wait_args(10), None, {"frozen": probe}, lambda: {"frozen": 1.3})
        # A round a second while the host stays slow, the last one begun before the limit.
        self.assertAlmostEqual(wait["waited_s"], 10.0)
        self.assertEqual((wait["rounds"], len(case.times_s)), (10, 14))
        self.assertEqual(wait["as_calibrated"], {"frozen": False})
        self.assertIn("still slower at the end: frozen", validate.host_wait_text(wait))

    def test_no_wait_when_the_host_already_runs_as_at_calibration(self):
        case = case_with_times(self.clock, "m", [1.0])
        probe = FakeProbe([1.0])
        validate.timed_rounds([case], self.args(rounds=4, extra=0), probes={"frozen": probe})
        before = self.clock.now
        wait = validate.wait_for_host([case], self.wait_args(60), None, {"frozen": probe}, lambda: {"frozen": 1.0})
        self.assertEqual(self.clock.now, before)
        self.assertEqual((wait["rounds"], wait["waited_s"]), (0, 0))

    def test_a_slow_runtimes_cases_run_beside_another_runtimes_late_ones(self):
        # The frozen probe reached the profile's speed after the rounds (its case now has no quiet
        # round); the eager probe is still slow: both cases run in the wait, and the eager probe,
        # timed before each of its case's visits, gets there on its third sample.
        cnn = case_with_times(self.clock, "cnn", [1.0])
        llm = validate.Case("llm", 1, "bf16", None, None, None, "eager")
        llm.runner = lambda: setattr(self.clock, "now", self.clock.now + 1.0)
        frozen = FakeProbe([1.3] * 4 + [1.0, 1.0])
        eager = FakeProbe([1.3] * 6 + [1.0])
        validate.timed_rounds([cnn, llm], self.args(rounds=4, extra=0), probes={"frozen": frozen, "eager": eager})
        frozen.sample()  # its fastest is now 1.0
        wait = validate.wait_for_host([cnn, llm], self.wait_args(60), None, {"frozen": frozen, "eager": eager},
                                      lambda: {"frozen": frozen.fastest_s, "eager": eager.fastest_s})
        self.assertEqual(eager.samples, 4 + 3)
        self.assertEqual(wait["rounds"], 3)
        self.assertEqual(wait["as_calibrated"], {"frozen": True, "eager": True})
        self.assertGreaterEqual(validate.quiet_rounds(llm, eager), 1)
        self.assertGreaterEqual(validate.quiet_rounds(cnn, frozen), 1)

    def test_only_the_runtimes_with_cases_are_waited_for(self):
        # An eager probe with no eager case here: slow or not, it is neither timed nor reported.
        case = case_with_times(self.clock, "m", [1.0])
        frozen, eager = FakeProbe([1.0]), FakeProbe([1.3])
        validate.timed_rounds([case], self.args(rounds=4, extra=0), probes={"frozen": frozen})
        wait = validate.wait_for_host([case], self.wait_args(60), None, {"frozen": frozen, "eager": eager},
                                      lambda: {"frozen": 1.0, "eager": 1.3})
        self.assertEqual((wait["waited_s"], eager.samples), (0, 0))
        self.assertEqual(wait["as_calibrated"], {"frozen": True})

    def test_a_probe_without_a_comparison_is_said_so(self):
        case = case_with_times(self.clock, "m", [1.0])
        probe = FakeProbe([1.0])
        validate.timed_rounds([case], self.args(rounds=4, extra=0), probes={"frozen": probe})
        wait = validate.wait_for_host([case], self.wait_args(60), None, {"frozen": probe}, lambda: {"frozen": None})
        self.assertEqual(wait["as_calibrated"], {"frozen": None})
        self.assertIn("not compared", validate.host_wait_text(wait))
        self.assertNotIn("every probe got there", validate.host_wait_text(wait))


class MeasuredFileTest(unittest.TestCase):
    """--measured files: round ends are optional (files from before them), and checked."""

    def load(self, round_ends="absent"):
        doc = {"device": "cuda:0", "meta": {"runs": 2}, "times_s": {"m b1 f32": [1.0, 0.9, 0.8, 0.85]}}
        if round_ends != "absent":
            doc["round_ends"] = round_ends
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(doc, f)
        try:
            with contextlib.redirect_stderr(io.StringIO()) as err:
                try:
                    return validate.load_measured(f.name), ""
                except SystemExit as stop:
                    self.assertEqual(stop.code, 2)
                    return None, err.getvalue()
        finally:
            os.unlink(f.name)

    def test_round_ends_are_optional(self):
        doc, _ = self.load()
        self.assertIsNotNone(doc)
        self.assertEqual(validate.round_ends_of(4, doc["meta"]["runs"]), [2, 4])
        self.assertIsNotNone(self.load(None)[0])
        self.assertIsNotNone(self.load({"m b1 f32": [1, 4]})[0])

    def test_bad_round_ends_are_one_clear_line(self):
        for bad in ([1, 4], {"m b1 f32": [4, 1]}, {"m b1 f32": [1, 3]}, {"m b1 f32": [0, 4]}, {"m b1 f32": "1,4"}):
            doc, err = self.load(bad)
            self.assertIsNone(doc, bad)
            self.assertIn("round_ends", err)
            self.assertEqual(err.count("\n"), 1)

    def test_a_breakdown_must_map_cases_to_times_per_family(self):
        for bad, ok in (({"m b1 f32": {"gemm": 1.5, "copy": 0.2}}, True), ({"m b1 f32": [1.5]}, False),
                        ({"m b1 f32": {"gemm": "1.5"}}, False), ([], False)):
            doc = {"device": "cuda:0", "meta": {}, "times_s": {"m b1 f32": [1.0]}, "breakdowns_ms": bad}
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(doc, f)
            try:
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    try:
                        loaded = validate.load_measured(f.name)
                    except SystemExit as stop:
                        self.assertEqual(stop.code, 2)
                        loaded = None
            finally:
                os.unlink(f.name)
            self.assertEqual(loaded is not None, ok, bad)
            if not ok:
                self.assertIn("breakdowns_ms", err.getvalue())
                self.assertEqual(err.getvalue().count("\n"), 1)


class BreakdownTest(unittest.TestCase):
    """--breakdown: time per op family, on a GPU the device time of the kernels each op launched."""

    def fake_torch(self, events):
        """torch and torch.profiler stand-ins whose profile yields `events` (key, device type,
        self host us, self device us)."""
        class Event:
            def __init__(self, key, device, host_us, device_us):
                self.key, self.device_type = key, f"DeviceType.{device}"
                self.self_cpu_time_total, self.self_device_time_total = host_us, device_us

        class Profile:
            def __init__(self, activities, record_shapes=False):
                self.activities = activities

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def key_averages(self, group_by_input_shape=False):
                return [Event(*e) for e in events]

        @contextlib.contextmanager
        def no_grad():
            yield
        profiler = types.SimpleNamespace(ProfilerActivity=types.SimpleNamespace(CPU="cpu", CUDA="cuda"),
                                         profile=Profile)
        return types.SimpleNamespace(no_grad=no_grad, profiler=profiler), profiler

    def breakdown(self, events, gpu, ops=None):
        torch, profiler = self.fake_torch(events)
        saved = {k: sys.modules.get(k) for k in ("torch", "torch.profiler")}
        sys.modules["torch"], sys.modules["torch.profiler"] = torch, profiler
        try:
            case = validate.Case("m", 1, "bf16", None, None, lambda: None, "eager")
            return validate.measured_breakdown(case, repeats=1, gpu=gpu, ops=ops)
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v

    EVENTS = [("aten::addmm", "CPU", 30.0, 400.0), ("aten::gelu", "CPU", 8.0, 120.0),
              ("aten::view", "CPU", 2.0, 0.0), ("sm90_gemm_kernel", "CUDA", 0.0, 400.0),
              ("vectorized_elementwise_kernel", "CUDA", 0.0, 120.0), ("memcpy_kernel", "CUDA", 0.0, 50.0)]

    def test_on_a_gpu_the_kernels_are_counted_once_by_the_op_that_launched_them(self):
        b = self.breakdown(self.EVENTS, gpu=True)
        self.assertAlmostEqual(b["gemm"], 0.4)
        self.assertAlmostEqual(b["elementwise"], 0.12)
        self.assertAlmostEqual(b["unattributed"], 0.05)
        self.assertNotIn("other", b)  # a view launches nothing

    def test_the_longest_ops_are_listed_longest_first(self):
        ops = []
        self.breakdown(self.EVENTS, gpu=True, ops=ops)
        self.assertEqual([o[0] for o in ops], ["aten::addmm", "aten::gelu"])  # a view launches nothing
        self.assertAlmostEqual(ops[0][3], 0.4)

    def test_on_the_cpu_the_ops_self_time_counts(self):
        b = self.breakdown(self.EVENTS[:3], gpu=False)
        self.assertEqual(b, {"gemm": 0.03, "elementwise": 0.008, "other": 0.002})

    def test_the_predicted_device_time_leaves_the_issue_time_out(self):
        doc = {"ops": [{"kind": "linear", "time_s": 5e-6, "overhead_s": 3e-6, "phase": "forward"},
                       {"kind": "gelu", "time_s": 4e-6, "overhead_s": 0.0}]}
        self.assertAlmostEqual(validate.predicted_breakdown(doc)["gemm"], 5e-3)
        device = validate.predicted_breakdown(doc, device_time=True)
        self.assertAlmostEqual(device["gemm"], 2e-3)
        self.assertAlmostEqual(device["gelu"], 4e-3)


class GpuOwnRatesTest(unittest.TestCase):
    """On a GPU, a kind's rate is its larger size's elements over the device time of its kernels."""

    def rates_with(self, events, wall_s):
        class Event:
            def __init__(self, key, device, count, device_us):
                self.key, self.device_type, self.count = key, f"DeviceType.{device}", count
                self.device_time_total = device_us

        class Profile:
            def __init__(self, activities):
                pass

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

            def key_averages(self):
                return [Event(*e) for e in events]

        profiler = types.SimpleNamespace(ProfilerActivity=types.SimpleNamespace(CPU="cpu", CUDA="cuda"),
                                         profile=Profile, record_function=lambda name: contextlib.nullcontext())
        rates = validate.OwnKernelRates.__new__(validate.OwnKernelRates)
        rates.gpu, rates.device_s = True, {}
        calls = []
        rates.runs = {(k, size): (lambda k=k, size=size: calls.append((k, size)))
                      for k in ("softmax", "norm:layernorm") for size in ("small", "large")}
        rates.elements = {(k, size): n for k in ("softmax", "norm:layernorm") for size, n in (("small", 1e6), ("large", 8e6))}
        rates.best = {key: wall_s[key] for key in rates.runs}
        saved = sys.modules.get("torch.profiler")
        sys.modules["torch.profiler"] = profiler
        try:
            rates.sample_device_time(2)
        finally:
            if saved is None:
                sys.modules.pop("torch.profiler", None)
            else:
                sys.modules["torch.profiler"] = saved
        self.assertEqual(calls, [("norm:layernorm", "large")] * 2 + [("softmax", "large")] * 2)
        return rates.rates()

    def test_the_kernels_device_time_sets_the_rate(self):
        # The layer norm's small call is bound by the host: 60 us against 70 for 8x the elements,
        # a difference that says nothing of its kernels; they ran for 40 us a call.
        wall = {("norm:layernorm", "small"): 60e-6, ("norm:layernorm", "large"): 70e-6,
                ("softmax", "small"): 20e-6, ("softmax", "large"): 90e-6}
        events = [(validate.OwnKernelRates.MARK + "norm:layernorm", "CPU", 2, 80.0),
                  (validate.OwnKernelRates.MARK + "norm:layernorm", "CUDA", 2, 150.0),  # the range on the device
                  ("aten::native_layer_norm", "CPU", 2, 50.0)]
        rates = self.rates_with(events, wall)
        self.assertAlmostEqual(rates["norm:layernorm"] / (8e6 / 40e-6), 1.0)
        # No device time for softmax: the difference of wall times stands.
        self.assertAlmostEqual(rates["softmax"] / (7e6 / 70e-6), 1.0)


if __name__ == "__main__":
    unittest.main()
