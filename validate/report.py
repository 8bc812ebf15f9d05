"""One validation table (one runtime, one model set) as JSON and markdown, written atomically."""
import json
import os
import tempfile

from validate import stats

SCHEMA = "1.0"  # of the JSON table; bumped in its minor for added fields


def write_atomic(path, text):
    """A temporary file beside `path`, then a rename: a reader never sees half a table."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as f:
        f.write(text)
    os.replace(f.name, path)


def fmt(value, spec, unit=""):
    return "-" if value is None else format(value, spec) + unit


def row(model, batch, dtype, runtime, timing, estimate, command):
    """A table row from a case's timing (times_s, round_ends, or error) and its estimate
    (predicted_s, naive_s, warnings, or error)."""
    times = timing.get("times_s") or []
    measured_s = stats.fastest(times)
    predicted_s, naive_s = estimate.get("predicted_s"), estimate.get("naive_s")
    return {
        "model": model, "batch": batch, "dtype": dtype, "runtime": runtime,
        "measured_ms": None if measured_s is None else measured_s * 1e3,
        "median_ms": None if not times else stats.median(times) * 1e3,
        "spread": stats.spread(times),
        "runs": len(times), "rounds": len(timing.get("round_ends") or []),
        "predicted_ms": None if predicted_s is None else predicted_s * 1e3,
        "error_pct": stats.error_pct(predicted_s, measured_s),
        "naive_ms": None if naive_s is None else naive_s * 1e3,
        "naive_error_pct": stats.error_pct(naive_s, measured_s),
        "command": command,
        "measure_error": timing.get("error"),
        "estimate_error": estimate.get("error"),
        "estimate_warnings": estimate.get("warnings") or [],
    }


def summary_line(s):
    n = s["rows_compared"]
    return (f"Median |error| {fmt(s['median_abs_error_pct'], '.1f', '%')} (naive roofline "
            f"{fmt(s['naive_median_abs_error_pct'], '.1f', '%')}), worst {fmt(s['worst_abs_error_pct'], '.1f', '%')} "
            f"(naive {fmt(s['naive_worst_abs_error_pct'], '.1f', '%')}); {s['rows_within_10_pct']}/{n} rows within "
            f"±{stats.WITHIN_PCT:g}%; {s['rows_closer_than_naive']}/{n} rows closer than the naive roofline"
            + (f"; {s['rows'] - n} of {s['rows']} rows not compared (below)" if s["rows"] > n else "") + ".")


def header_lines(meta):
    m, r = meta["machine"], meta["runtime"]
    framework = r["framework"] or "?"
    if r.get("ran_framework") and r["ran_framework"] != r["framework"]:
        framework += f" in the profile, {r['ran_framework']} in this run"
    lines = [f"# Validation: {r['key']}, {meta['set']} set", "",
             f"- Date: {meta['date_utc']}",
             f"- Machine: {m['cpu_model']}, {m['cores']} cores ({m['hostname']})",
             f"- Profile: `{meta['profile']['path']}`, created {meta['profile']['created_utc'] or '?'}",
             f"- Runtime: `{r['key']}`, {framework}, {r['threads']} threads, `{r['python']}`",
             f"- Measured: the fastest run of {meta['rounds']} interleaved rounds (every case of the runtime "
             f"visited once a round, at least {meta['runs']} runs a visit"
             + (f", on until the visit lasted {meta['visit_ms']:g} ms" if meta["visit_ms"] else "")
             + f", after {meta['warmup']} warm-up runs); median and spread (slowest over fastest) beside it",
             "- Predicted: each row's command, given nothing but the profile",
             f"- Command: `{meta['command']}`"]
    if meta.get("calibration"):
        c = meta["calibration"]
        lines.append(f"- Calibrated just before: `{c['command']}` ({c['seconds']:.0f} s, ended {c['ended_utc']})")
    return lines


def markdown(meta, rows, summary):
    lines = header_lines(meta) + [
        "", "| model | batch | dtype | runtime | measured ms (fastest) | median ms | spread | predicted ms | error "
            "| naive ms | naive error | command |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['dtype']} | {r['runtime']} | {fmt(r['measured_ms'], '.2f')} | "
            f"{fmt(r['median_ms'], '.2f')} | {fmt(r['spread'], '.2f', 'x')} | {fmt(r['predicted_ms'], '.2f')} | "
            f"{fmt(r['error_pct'], '+.1f', '%')} | {fmt(r['naive_ms'], '.2f')} | "
            f"{fmt(r['naive_error_pct'], '+.1f', '%')} | `{r['command']}` |")
    lines += ["", summary_line(summary)]
    failed = [r for r in rows if r["measure_error"] or r["estimate_error"]]
    exports = meta.get("export_failures") or {}
    if failed or exports:
        lines += ["", "Not compared:"]
        lines += [f"- {model}: the ONNX export failed: {error}" for model, error in exports.items()]
        lines += [f"- {r['model']} b{r['batch']}: " + "; ".join(
            x for x in (r["measure_error"] and f"the run failed: {r['measure_error']}",
                        r["estimate_error"] and f"the estimate failed: {r['estimate_error']}") if x)
            for r in failed]
    warned = {}
    for r in rows:
        for w in r["estimate_warnings"]:
            warned.setdefault(r["model"], dict())[w] = None
    if warned:
        lines += ["", "What the estimates said (stderr):"]
        lines += [f"- {model}: {w}" for model, ws in warned.items() for w in ws]
    return "\n".join(lines) + "\n"


def write_table(base, meta, rows):
    """BASE.json and BASE.md; returns the summary."""
    summary = stats.summarize(rows)
    doc = {"schema_version": SCHEMA, "meta": meta, "summary": summary, "rows": rows}
    write_atomic(base + ".json", json.dumps(doc, indent=1) + "\n")
    write_atomic(base + ".md", markdown(meta, rows, summary))
    return summary
