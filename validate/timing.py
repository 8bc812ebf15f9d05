"""Child process, under the interpreter a runtime was calibrated in: prepares each case the way
that runtime runs a model (its own `prepare`, the function its probes use) and times them in
interleaved rounds. Prints one JSON document on stdout; progress on stderr.

    PYTHON -m validate.timing --cases FILE.json

FILE.json: {"runtime": KEY, "threads": N, "dtype": D, "rounds": R, "runs": N, "visit_s": S,
"warmup": W, "cases": [{"key", "model", "batch", "seq", "context", "onnx", "inputs"}]}."""
import argparse
import json
import sys

from validate import rounds
from validate.runners import framework_version, prepare_case, set_threads
from validate.sets import runtime_name


def progress(r, total, results):
    cells = [f"{key} {min(res['times_s']) * 1e3:.2f}" if res.get("times_s") else f"{key} failed"
             for key, res in results.items()]
    print(f"validate: round {r}/{total}: " + ", ".join(cells), file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="validate.timing")
    parser.add_argument("--cases", required=True)
    args = parser.parse_args(argv)
    with open(args.cases) as f:
        plan = json.load(f)
    name = runtime_name(plan["runtime"])
    set_threads(name, plan["threads"])
    prepared, failed = [], {}
    for case in plan["cases"]:
        print(f"validate: {plan['runtime']}: preparing {case['key']}", file=sys.stderr, flush=True)
        try:
            prepared.append((case["key"], prepare_case(name, case, plan["dtype"], plan["threads"],
                                                       plan["linears_as_convolutions"])))
        except Exception as error:  # the framework's: this case fails, the others are timed
            failed[case["key"]] = {"error": f"{type(error).__name__}: {error}".splitlines()[0]}
    results = {}
    if prepared:  # each run as the runtime's prepare() made it: its own autograd and inference settings
        results = rounds.run_rounds(prepared, plan["rounds"], plan["runs"], plan["visit_s"], plan["warmup"],
                                    on_round=lambda r, res: progress(r, plan["rounds"], res))
    results.update(failed)
    print(json.dumps({"runtime": plan["runtime"], "framework": framework_version(name),
                      "python": sys.executable, "threads": plan["threads"], "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
