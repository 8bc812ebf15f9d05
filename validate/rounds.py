"""Interleaved rounds: every case of a runtime is visited once a round, several runs a visit, so
a busy spell of the host slows a few runs of every case rather than every run of one case."""
import time

MOST_RUNS_A_VISIT = 50  # a visit's runs however short they are


def visit_order(keys, rounds):
    """The visits of `rounds` rounds over `keys`: (round, key), every key once a round, in order."""
    return [(r, key) for r in range(1, rounds + 1) for key in keys]


def run_rounds(cases, rounds, runs_per_visit, visit_s=0.0, warmup=2, clock=time.perf_counter, on_round=None):
    """Times `cases` (a list of (key, run) with `run` a callable that does one whole inference).

    Each case first runs `warmup` times untimed (library JIT, first-touch page faults, caches).
    A visit makes `runs_per_visit` runs and goes on until it has lasted `visit_s` (at most
    MOST_RUNS_A_VISIT runs): the first runs after another model's are slower, and a short model
    needs more of them to be warm again. A case whose run raises is recorded with the error and
    left out of the rounds that follow. `on_round(round, results)` follows every round.

    Returns {key: {"times_s": [...], "round_ends": [...]}} or {key: {"error": "..."}}."""
    results = {key: {"times_s": [], "round_ends": []} for key, _ in cases}
    runs = dict(cases)
    for key, run in cases:
        try:
            for _ in range(warmup):
                run()
        except Exception as error:  # the framework's: kept as the case's error, the rest go on
            results[key] = {"error": f"{type(error).__name__}: {error}"}
    for r, key in visit_order([key for key, _ in cases], rounds):
        if "error" not in results[key]:
            _visit(runs[key], results[key], runs_per_visit, visit_s, clock)
        if key == cases[-1][0] and on_round:
            on_round(r, results)
    return results


def _visit(run, result, runs_per_visit, visit_s, clock):
    start_visit = clock()
    done = 0
    try:
        while done < runs_per_visit or (clock() - start_visit < visit_s and done < MOST_RUNS_A_VISIT):
            start = clock()
            run()
            result["times_s"].append(clock() - start)
            done += 1
    except Exception as error:  # as in the warm-up: this case stops, the others go on
        result.clear()
        result["error"] = f"{type(error).__name__}: {error}"
        return
    result["round_ends"].append(len(result["times_s"]))
