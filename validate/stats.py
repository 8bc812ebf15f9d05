"""Figures of a case's runs and of a table's rows. Interference only ever adds time, so the
fastest run is the measured time; the median and the spread (slowest over fastest) sit beside it."""
import statistics


def fastest(times_s):
    return min(times_s) if times_s else None


def median(times_s):
    return statistics.median(times_s) if times_s else None


def spread(times_s):
    """Slowest run over fastest: 1.0 on a quiet machine."""
    return max(times_s) / min(times_s) if times_s and min(times_s) > 0 else None


def fastest_by_round(times_s, round_ends):
    """The fastest run so far after each round (round_ends: the run count at each round's end)."""
    return [min(times_s[:end]) for end in round_ends if end > 0]


def error_pct(predicted, measured):
    """Signed error of a prediction, in % of the measured time (negative: predicted too fast)."""
    if predicted is None or measured is None or measured <= 0:
        return None
    return 100.0 * (predicted - measured) / measured


WITHIN_PCT = 10.0  # the summary counts rows within ±this


def summarize(rows):
    """Median and worst |error|, rows within ±WITHIN_PCT, rows closer than the naive roofline;
    rows without a prediction or a measurement count in `rows` only."""
    errors = [abs(r["error_pct"]) for r in rows if r.get("error_pct") is not None]
    naive = [abs(r["naive_error_pct"]) for r in rows if r.get("naive_error_pct") is not None]
    closer = sum(1 for r in rows if r.get("error_pct") is not None and r.get("naive_error_pct") is not None
                 and abs(r["error_pct"]) < abs(r["naive_error_pct"]))
    return {
        "rows": len(rows),
        "rows_compared": len(errors),
        "median_abs_error_pct": statistics.median(errors) if errors else None,
        "worst_abs_error_pct": max(errors) if errors else None,
        "rows_within_10_pct": sum(1 for e in errors if e <= WITHIN_PCT),
        "rows_closer_than_naive": closer,
        "naive_median_abs_error_pct": statistics.median(naive) if naive else None,
        "naive_worst_abs_error_pct": max(naive) if naive else None,
    }
