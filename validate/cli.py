"""`python3 -m validate` (or scripts/validate.py): time real models in each calibrated runtime,
estimate them with `truepeak estimate --profile P --runtime R ...`, write the tables."""
import argparse
import datetime
import os
import shlex
import shutil
import sys
import tempfile

from validate import calibrate, children, estimate, host, profile, report, sets
from validate.children import ROOT, ChildError, say
from validate.errors import usage_error

DEFAULT_RUNTIMES = "torch-jit,torch-eager,onnxruntime"
TORCH_PYTHON = "/usr/bin/python3"  # Debian's PyTorch and torchvision: the exporter


class Parser(argparse.ArgumentParser):
    def error(self, message):
        usage_error(message)


def parser():
    p = Parser(prog="validate", description="Time real models in each calibrated runtime and compare them with "
               "truepeak estimate --profile P --runtime R, the command a user runs.")
    p.add_argument("--profile", required=True,
                   help="the profile to estimate with; with --calibrate, where the new profile is written")
    p.add_argument("--runtimes", default=DEFAULT_RUNTIMES,
                   help="the profile's runtime keys to validate, NAME or NAME:LABEL, comma-separated "
                        f"(default {DEFAULT_RUNTIMES}; also torch-compile)")
    p.add_argument("--sets", default="public", help="model sets, comma-separated: public, torchvision")
    p.add_argument("--models", help="these models instead of the sets, comma-separated: bert_base, gpt2_prefill, "
                   "gpt2_decode, torchvision's classifiers (resnet34, ...), FILE.py:FUNCTION (FUNCTION(batch) returns "
                   "a torch.nn.Module and its inputs, batch first)")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--seq", type=int, default=128, help="the transformers' prefill length")
    p.add_argument("--context", type=int, default=128, help="the decode step's KV-cache length")
    p.add_argument("--eager-cnns", action="store_true", help="torch-eager runs the CNNs too")
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--runs", type=int, default=3, help="runs of a case a visit, at least")
    p.add_argument("--visit-ms", type=float, default=100, help="a visit runs on until this long has passed")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--truepeak", help="the truepeak executable (default: build/truepeak, else on PATH)")
    p.add_argument("--export-python", default=TORCH_PYTHON, help="the torch interpreter that exports to ONNX")
    p.add_argument("--onnx-dir", help="keep the ONNX files and inputs here (default: a temporary folder)")
    p.add_argument("--reuse-onnx", action="store_true", help="with --onnx-dir: reuse earlier exports there")
    p.add_argument("--out", help="the tables' folder (default: results/<machine>/)")
    p.add_argument("--timings-dir", help="keep each runtime's timings here (timing-RUNTIME.json)")
    p.add_argument("--reuse-timings", action="store_true",
                   help="with --timings-dir: reuse a runtime's earlier timings there where they hold the same cases, "
                        "threads and interpreter (re-estimate with another profile without timing again)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--calibrate", action="store_true",
                     help="first calibrate a new profile with the runtimes (truepeak calibrate --runtime ... --out P)")
    how.add_argument("--calibrate-runtimes", action="store_true",
                     help="first calibrate the runtimes into --profile (truepeak calibrate --runtime ... --add-to P)")
    p.add_argument("--python", help="with --calibrate*: the interpreter for every runtime (calibrate --python)")
    p.add_argument("--quick", action="store_true", help="with --calibrate*: calibrate --quick")
    return p


def whole_list(text, what):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        usage_error(f"{what} {text}: expected whole numbers of 1 or more, comma-separated")
    return values


def check_args(args):
    """Everything that can be refused is refused before a calibration or an export starts."""
    args.batches = whole_list(args.batches, "--batches")
    for flag, value, least in (("--rounds", args.rounds, 1), ("--runs", args.runs, 1), ("--warmup", args.warmup, 0),
                               ("--seq", args.seq, 1), ("--context", args.context, 1)):
        if value < least:
            usage_error(f"{flag} {value}: must be {least} or more")
    if not args.visit_ms >= 0:
        usage_error(f"--visit-ms {args.visit_ms:g}: must be 0 or more")
    args.runtimes = [k for k in args.runtimes.split(",") if k]
    for key in args.runtimes:
        if sets.runtime_name(key) not in sets.RUNTIME_KINDS:
            usage_error(f"--runtimes {key}: validation runs the CPU runtimes {', '.join(sets.RUNTIME_KINDS)}")
    if not args.runtimes or len(set(args.runtimes)) != len(args.runtimes):
        usage_error("--runtimes: name each runtime key once")
    if args.models is not None:
        models = [m for m in args.models.split(",") if m]
        problem = sets.check_models(models)
        if problem:
            usage_error(problem)
        # The children run from the project's root: a model file is passed on by its full path.
        args.models = [absolute_spec(m) for m in models]
        args.set_of = {m: sets.USER_SET for m in args.models}
    else:
        names = [s for s in args.sets.split(",") if s]
        unknown = [s for s in names if s not in sets.SETS] or ([] if names else ["(none)"])
        if unknown:
            usage_error(f"--sets {unknown[0]}: expected {' or '.join(sets.SETS)}")
        if len(set(names)) != len(names):
            usage_error(f"--sets {args.sets}: name each set once")
        args.models = [m for s in names for m in sets.SETS[s]]
        args.set_of = {m: s for s in names for m in sets.SETS[s]}
    if args.reuse_onnx and not args.onnx_dir:
        usage_error("--reuse-onnx: name the folder of the earlier exports with --onnx-dir")
    if args.reuse_timings and not args.timings_dir:
        usage_error("--reuse-timings: name the folder of the earlier timings with --timings-dir")
    if args.timings_dir and not os.path.isdir(args.timings_dir):
        usage_error(f"--timings-dir {args.timings_dir}: not a folder")
    if (args.python or args.quick) and not (args.calibrate or args.calibrate_runtimes):
        usage_error("--python and --quick are calibration options: add --calibrate or --calibrate-runtimes")
    args.truepeak = find_truepeak(args.truepeak)
    if not (os.path.isfile(args.truepeak) and os.access(args.truepeak, os.X_OK)):
        usage_error(f"--truepeak {args.truepeak}: not an executable (build truepeak first, or pass its path)")
    if not os.access(args.export_python, os.X_OK):
        usage_error(f"--export-python {args.export_python}: not an executable (an interpreter with PyTorch)")


def absolute_spec(name):
    spec = sets.user_model_spec(name)
    return f"{os.path.abspath(spec[0])}:{spec[1]}" if spec else name


def find_truepeak(path):
    if path:
        return path
    for build in ("build", "build-release"):
        candidate = os.path.join(ROOT, build, "truepeak")
        if os.path.isfile(candidate):
            return candidate
    return shutil.which("truepeak") or os.path.join(ROOT, "build", "truepeak")


def load_runtimes(args):
    """The profile and each runtime's (record, python, threads); a runtime the profile lacks is
    one line and exit 2 naming the calibration that adds it."""
    doc = profile.read_profile(args.profile)
    missing = profile.missing_runtimes(doc, args.runtimes)
    if missing:
        usage_error(f"--profile {args.profile}: no runtime {', '.join(missing)} on its CPU (add it: truepeak calibrate "
                    f"--runtime {','.join(missing)} --add-to {args.profile}, or pass --calibrate-runtimes)")
    runtimes = {}
    for key in args.runtimes:
        record = profile.runtime_record(doc, key)
        python, threads = profile.record_fields(key, record)
        if not os.access(python, os.X_OK):
            usage_error(f"runtime {key}: its interpreter {python} (from the profile) is not an executable here")
        runtimes[key] = {"record": record, "python": python, "threads": threads}
    return doc, runtimes


def out_dir(args, doc):
    """--out, else the profile's own folder when it is one of results/, else results/<machine>/."""
    if args.out:
        return args.out
    results = os.path.join(ROOT, "results")
    folder = os.path.dirname(os.path.abspath(args.profile))
    if os.path.dirname(folder) == results:
        return folder
    return os.path.join(results, profile.machine_slug(doc))


def validate_command(argv):
    launcher = "scripts/validate.py" if os.path.basename(sys.argv[0]) == "validate.py" else "python3 -m validate"
    return launcher + (" " + shlex.join(argv) if argv else "")


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    check_args(args)
    args.started_utc = now_utc()
    calibration = None
    if args.calibrate or args.calibrate_runtimes:
        cmd = calibrate.calibrate_command(args.truepeak, args.profile, args.runtimes, args.calibrate_runtimes,
                                          args.python, args.quick)
        calibration = calibrate.run_calibration(cmd)
    doc, runtimes = load_runtimes(args)
    onnx_dir = os.path.abspath(args.onnx_dir) if args.onnx_dir else tempfile.mkdtemp(prefix="truepeak-validate-")
    try:
        manifest = children.export(args.export_python, onnx_dir, args.models, args.batches, args.seq, args.context,
                                   args.reuse_onnx)
        tables = validate_all(args, doc, runtimes, manifest, calibration, validate_command(argv))
    except ChildError as error:
        if error.status != 2:  # a child's refusal is already one line on stderr
            print(f"validate: {error}", file=sys.stderr)
        return 2 if error.status == 2 else 1
    finally:
        if not args.onnx_dir:
            shutil.rmtree(onnx_dir, ignore_errors=True)
    for path, summary in tables:
        print(f"{path}.md: {report.summary_line(summary)}")
    return 0


def plan_cases(args, key, manifest):
    """The cases of runtime `key`: each model of a kind it runs, at each batch."""
    kinds = sets.kinds_of(key, args.eager_cnns)
    return [{"key": f"{entry['row']} b{batch}", "model": entry["model"], "row": entry["row"],
             "set": args.set_of[entry["model"]], "batch": batch, "seq": entry.get("seq"),
             "context": entry.get("context"), "onnx": entry["onnx"], "inputs": entry["inputs"][str(batch)]}
            for entry in manifest if entry["kind"] in kinds for batch in args.batches]


def time_runtime(args, key, runtime, cases, dtype):
    plan = {"runtime": key, "threads": runtime["threads"], "dtype": dtype, "rounds": args.rounds, "runs": args.runs,
            "visit_s": args.visit_ms / 1e3, "warmup": args.warmup, "cases": cases,
            "linears_as_convolutions": bool(runtime["record"].get("linears_as_convolutions"))}
    saved = os.path.join(args.timings_dir, f"timing-{profile.slug(key)}.json") if args.timings_dir else None
    if saved and args.reuse_timings:
        earlier = children.read_timing(saved)
        if timing_matches(earlier, plan, runtime["python"]):
            say(f"{key}: reusing the timings in {saved}")
            return earlier
    say(f"{key}: timing {len(cases)} case(s) in {runtime['python']}, {runtime['threads']} threads")
    try:
        timing = children.time_cases(runtime["python"], plan)
    except ChildError as error:  # this runtime's rows say so; the other runtimes go on
        return {"framework": None, "results": {c["key"]: {"error": str(error)} for c in cases}}
    if saved:
        timing["plan"] = {k: v for k, v in plan.items() if k != "cases"}
        timing["plan"]["cases"] = [c["key"] for c in cases]
        timing["plan"]["python"] = runtime["python"]
        children.write_timing(saved, timing)
    return timing


def timing_matches(timing, plan, python):
    """Whether an earlier timing document holds every case of `plan`, timed alike (dtype, threads,
    rounds, runs, the record's settings, the interpreter), each without an error."""
    if not isinstance(timing, dict) or not isinstance(timing.get("plan"), dict):
        return False
    earlier = timing["plan"]
    same = all(earlier.get(k) == plan[k] for k in ("runtime", "threads", "dtype", "rounds", "runs", "warmup",
                                                   "linears_as_convolutions"))
    results = timing.get("results") or {}
    return (same and os.path.realpath(earlier.get("python") or "") == os.path.realpath(python) and
            all(c["key"] in results and "error" not in results[c["key"]] for c in plan["cases"]))


def validate_all(args, doc, runtimes, manifest, calibration, command):
    """Times every runtime's cases (one child at a time, so they never run together), then
    estimates them, then writes a table per runtime and set; returns (path, summary) of each."""
    failed = [e for e in manifest if "error" in e]
    manifest = [e for e in manifest if "error" not in e]
    timed = {}
    for key, runtime in runtimes.items():
        cases = plan_cases(args, key, manifest)
        dtype = sets.case_dtype(key, runtime["record"])
        timed[key] = (cases, dtype, time_runtime(args, key, runtime, cases, dtype) if cases else None)
    folder = out_dir(args, doc)
    tables = []
    for key, (cases, dtype, timing) in timed.items():
        for set_name, rows in estimate_rows(args, key, cases, dtype, timing).items():
            meta = table_meta(args, doc, key, runtimes[key], timing, set_name, calibration, command)
            meta["export_failures"] = {e["row"]: e["error"] for e in failed
                                       if args.set_of[e["model"]] == set_name} or None
            base = os.path.join(folder, f"validation-{set_name}-{profile.slug(key)}")
            tables.append((base, report.write_table(base, meta, rows)))
    return tables


def estimate_rows(args, key, cases, dtype, timing):
    """Each case of runtime `key` estimated with the user's command, as table rows by set."""
    by_set = {}
    for case in cases:
        cmd = estimate.estimate_command(args.truepeak, args.profile, key, case["onnx"], case["batch"], dtype,
                                        case["seq"], case["context"])
        result = estimate.run_estimate(cmd)
        said = f"{result['predicted_s'] * 1e3:.2f} ms" if "predicted_s" in result else result["error"]
        say(f"{key}: {case['key']}: predicted {said}")
        measured = timing["results"].get(case["key"], {"error": "not timed"})
        by_set.setdefault(case["set"], []).append(
            report.row(case["row"], case["batch"], dtype, key, measured, result, shlex.join(cmd)))
    return by_set


def table_meta(args, doc, key, runtime, timing, set_name, calibration, command):
    record = runtime["record"]
    return {
        "date_utc": args.started_utc, "machine": host.machine(),
        "profile": {"path": args.profile, "created_utc": doc.get("created_utc"),
                    "label": (doc.get("machine") or {}).get("label")},
        "runtime": {"key": key, "framework": record.get("framework"), "ran_framework": timing.get("framework"),
                    "threads": runtime["threads"], "python": runtime["python"], "settings": record.get("settings")},
        "set": set_name, "truepeak": args.truepeak, "rounds": args.rounds, "runs": args.runs,
        "visit_ms": args.visit_ms, "warmup": args.warmup, "command": command, "calibration": calibration,
    }
