"""validate's figures: fastest, median, spread, errors and the table's summary (no torch)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from validate import stats  # noqa: E402


class RunFiguresTest(unittest.TestCase):
    def test_fastest_median_spread(self):
        times = [0.012, 0.010, 0.020, 0.011]
        self.assertEqual(stats.fastest(times), 0.010)
        self.assertAlmostEqual(stats.median(times), 0.0115)
        self.assertAlmostEqual(stats.spread(times), 2.0)

    def test_no_runs_no_figures(self):
        self.assertIsNone(stats.fastest([]))
        self.assertIsNone(stats.median([]))
        self.assertIsNone(stats.spread([]))

    def test_fastest_by_round(self):
        self.assertEqual(stats.fastest_by_round([5, 4, 6, 3, 7, 8], [2, 4, 6]), [4, 3, 3])


class ErrorTest(unittest.TestCase):
    def test_signed_percent_of_the_measured_time(self):
        self.assertAlmostEqual(stats.error_pct(0.011, 0.010), 10.0)
        self.assertAlmostEqual(stats.error_pct(0.009, 0.010), -10.0)

    def test_missing_side_is_none(self):
        self.assertIsNone(stats.error_pct(None, 0.01))
        self.assertIsNone(stats.error_pct(0.01, None))
        self.assertIsNone(stats.error_pct(0.01, 0.0))


def row(error, naive):
    return {"error_pct": error, "naive_error_pct": naive}


class SummaryTest(unittest.TestCase):
    def test_median_worst_within_and_closer(self):
        s = stats.summarize([row(-4.0, -50.0), row(12.0, -40.0), row(-10.0, 5.0), row(2.0, -60.0)])
        self.assertEqual(s["rows"], 4)
        self.assertEqual(s["rows_compared"], 4)
        self.assertAlmostEqual(s["median_abs_error_pct"], 7.0)
        self.assertAlmostEqual(s["worst_abs_error_pct"], 12.0)
        self.assertEqual(s["rows_within_10_pct"], 3)  # ±10% counts
        self.assertEqual(s["rows_closer_than_naive"], 3)
        self.assertAlmostEqual(s["naive_median_abs_error_pct"], 45.0)
        self.assertAlmostEqual(s["naive_worst_abs_error_pct"], 60.0)

    def test_rows_without_a_comparison_count_only_as_rows(self):
        s = stats.summarize([row(5.0, 20.0), row(None, None), row(None, 30.0)])
        self.assertEqual(s["rows"], 3)
        self.assertEqual(s["rows_compared"], 1)
        self.assertEqual(s["median_abs_error_pct"], 5.0)
        self.assertEqual(s["rows_closer_than_naive"], 1)

    def test_empty_table(self):
        s = stats.summarize([])
        self.assertEqual(s["rows"], 0)
        self.assertIsNone(s["median_abs_error_pct"])
        self.assertIsNone(s["worst_abs_error_pct"])


if __name__ == "__main__":
    unittest.main()
