"""validate's interleaved rounds on a fake clock (no torch): visits, runs a visit, warm-up, errors."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from validate import rounds  # noqa: E402


class Clock:
    """A clock that only the fake runs move."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def case(clock, log, key, duration_s, fail_at=None):
    calls = [0]

    def run():
        calls[0] += 1
        log.append(key)
        if fail_at is not None and calls[0] >= fail_at:
            raise RuntimeError(f"{key} broke")
        clock.now += duration_s
    return key, run


class VisitOrderTest(unittest.TestCase):
    def test_every_case_once_a_round_in_order(self):
        self.assertEqual(rounds.visit_order(["a", "b"], 3),
                         [(1, "a"), (1, "b"), (2, "a"), (2, "b"), (3, "a"), (3, "b")])


class RunRoundsTest(unittest.TestCase):
    def test_interleaved_with_warmup_untimed(self):
        clock, log = Clock(), []
        cases = [case(clock, log, "a", 0.01), case(clock, log, "b", 0.02)]
        result = rounds.run_rounds(cases, rounds=3, runs_per_visit=2, warmup=1, clock=clock)
        self.assertEqual(log, ["a", "b"] + ["a", "a", "b", "b"] * 3)
        self.assertEqual(len(result["a"]["times_s"]), 6)
        self.assertEqual(result["a"]["round_ends"], [2, 4, 6])
        for t in result["b"]["times_s"]:
            self.assertAlmostEqual(t, 0.02)

    def test_a_visit_runs_on_until_it_lasted_visit_s(self):
        clock, log = Clock(), []
        # Binary fractions, so that the fake clock's sums are exact.
        result = rounds.run_rounds([case(clock, log, "short", 1 / 1024), case(clock, log, "long", 0.5)],
                                   rounds=2, runs_per_visit=3, visit_s=10 / 1024, warmup=0, clock=clock)
        self.assertEqual(result["short"]["round_ends"], [10, 20])
        self.assertEqual(result["long"]["round_ends"], [3, 6])

    def test_a_visit_stops_at_the_most_runs(self):
        clock, log = Clock(), []
        result = rounds.run_rounds([case(clock, log, "tiny", 1e-9)], rounds=1, runs_per_visit=1, visit_s=10,
                                   warmup=0, clock=clock)
        self.assertEqual(len(result["tiny"]["times_s"]), rounds.MOST_RUNS_A_VISIT)

    def test_a_failing_case_is_left_out_the_others_go_on(self):
        clock, log = Clock(), []
        cases = [case(clock, log, "bad", 0.01, fail_at=3), case(clock, log, "good", 0.01)]
        result = rounds.run_rounds(cases, rounds=3, runs_per_visit=2, warmup=0, clock=clock)
        self.assertEqual(result["bad"], {"error": "RuntimeError: bad broke"})
        self.assertEqual(result["good"]["round_ends"], [2, 4, 6])
        self.assertEqual(log.count("bad"), 3)

    def test_a_case_failing_its_warmup_is_never_timed(self):
        clock, log = Clock(), []
        result = rounds.run_rounds([case(clock, log, "bad", 0.01, fail_at=1), case(clock, log, "good", 0.01)],
                                   rounds=2, runs_per_visit=1, warmup=1, clock=clock)
        self.assertIn("error", result["bad"])
        self.assertEqual(log.count("bad"), 1)
        self.assertEqual(len(result["good"]["times_s"]), 2)

    def test_on_round_follows_every_round(self):
        clock, log, seen = Clock(), [], []
        rounds.run_rounds([case(clock, log, "a", 0.01), case(clock, log, "b", 0.01)], rounds=3, runs_per_visit=1,
                          warmup=0, clock=clock, on_round=lambda r, res: seen.append((r, len(res["b"]["times_s"]))))
        self.assertEqual(seen, [(1, 1), (2, 2), (3, 3)])


if __name__ == "__main__":
    unittest.main()
