"""validate.py's rounds: extra rounds go to the cases whose fastest run still improves, and stop."""
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import validate  # noqa: E402  (stdlib only at import time; torch is imported where it is used)


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


class RoundsTest(unittest.TestCase):
    def setUp(self):
        self.clock = FakeClock()
        self.saved = validate.time.perf_counter
        validate.time.perf_counter = self.clock

    def tearDown(self):
        validate.time.perf_counter = self.saved

    def args(self, rounds=4, extra=8):
        return types.SimpleNamespace(warmup=0, rounds=rounds, runs=1, extra_rounds=extra)

    def test_settled_needs_more_rounds_than_it_looks_back(self):
        case = validate.Case("m", 1, "f32", None, None, None, "frozen")
        case.times_s = [1.0, 1.0, 1.0]
        self.assertFalse(validate.settled(case, 1, 3, 0.01))
        case.times_s.append(1.0)
        self.assertTrue(validate.settled(case, 1, 3, 0.01))

    def test_settled_by_the_gain_over_the_window(self):
        case = validate.Case("m", 1, "f32", None, None, None, "frozen")
        case.times_s = [2.0, 1.02, 1.01, 1.01, 1.01]  # 1.02 -> 1.01: under 1%
        self.assertTrue(validate.settled(case, 1, 3, 0.01))
        case.times_s = [2.0, 1.05, 1.04, 1.03, 1.02]  # 1.05 -> 1.02: 2.9%
        self.assertFalse(validate.settled(case, 1, 3, 0.01))

    def test_fastest_by_round_takes_whole_rounds(self):
        self.assertEqual(validate.fastest_by_round([3.0, 2.0, 2.5, 1.0], 2), [2.0, 1.0])

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

    def test_no_extra_rounds_when_asked_for_none(self):
        case = case_with_times(self.clock, "falling", [1.0 - 0.05 * i for i in range(20)])
        validate.timed_rounds([case], self.args(rounds=4, extra=0))
        self.assertEqual(len(case.times_s), 4)


if __name__ == "__main__":
    unittest.main()
