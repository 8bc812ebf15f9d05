"""Stand-ins for the validation's outside world, for the tests that need no torch and no build: a
truepeak that logs its command lines and answers estimate/calibrate, and an interpreter that
answers the export and timing children. Every call is appended to one log, in order."""
import json
import os
import stat
import sys

TRUEPEAK = r'''
import json, os, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"who": "truepeak", "argv": argv}) + "\n")
def opt(name):
    return argv[argv.index(name) + 1] if name in argv else None
if argv[0] == "estimate":
    model = opt("--model")
    if "broken" in model:
        print("truepeak: " + model + ": cannot read it", file=sys.stderr)
        sys.exit(2)
    batch = int(opt("--batch"))
    print("truepeak: " + model + ": a warning", file=sys.stderr)
    print(json.dumps({"latency_s": 0.011 * batch, "naive_latency_s": 0.005 * batch, "batch": batch}))
elif argv[0] == "calibrate":
    if os.environ.get("FAKE_CALIBRATE_STATUS"):
        print("truepeak: calibrate failed", file=sys.stderr)
        sys.exit(int(os.environ["FAKE_CALIBRATE_STATUS"]))
    path = opt("--out") or opt("--add-to")
    keys = opt("--runtime").split(",")
    doc = json.load(open(path)) if "--add-to" in argv else {"created_utc": "2030-01-01T00:00:00Z",
        "machine": {"label": "fake"}, "devices": [{"kind": "cpu", "runtimes": {}}]}
    for key in keys:
        doc["devices"][0]["runtimes"][key] = {"python": os.environ["FAKE_PYTHON"], "threads": 2,
                                             "framework": "torch 9.9", "dtypes": ["f32"]}
    json.dump(doc, open(path, "w"))
'''

PYTHON = r'''
import json, os, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(json.dumps({"who": "python", "path": sys.argv[0], "argv": argv}) + "\n")
module = argv[1]
if os.environ.get("FAKE_FAIL") == module:
    print("validate: fake refusal", file=sys.stderr)
    sys.exit(int(os.environ.get("FAKE_FAIL_STATUS", "2")))
if module == "validate.export":
    folder = argv[argv.index("--dir") + 1]
    batches = argv[argv.index("--batches") + 1].split(",")
    seq, context = int(argv[argv.index("--seq") + 1]), int(argv[argv.index("--context") + 1])
    models = [a for a in argv[argv.index("--context") + 2:] if a != "--reuse"]
    out = []
    for m in models:
        if m.startswith("broken"):
            out.append({"model": m, "row": m, "error": "RuntimeError: not exportable"})
            continue
        kind = "transformer" if m in ("bert_base", "gpt2_prefill", "gpt2_decode") else "cnn"
        out.append({"model": m, "row": m.rpartition(":")[2], "onnx": os.path.join(folder, m + ".onnx"),
                    "kind": kind, "seq": seq if m in ("bert_base", "gpt2_prefill") else None,
                    "context": context if m == "gpt2_decode" else None,
                    "inputs": {b: os.path.join(folder, f"{m}.b{b}.npz") for b in batches}})
    print(json.dumps(out))
elif module == "validate.timing":
    plan = json.load(open(argv[argv.index("--cases") + 1]))
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(json.dumps({"who": "plan", "plan": plan}) + "\n")
    results = {c["key"]: {"times_s": [0.012 * c["batch"], 0.010 * c["batch"], 0.02 * c["batch"]],
                          "round_ends": [3]} for c in plan["cases"]}
    print(json.dumps({"runtime": plan["runtime"], "framework": "torch 9.9", "threads": plan["threads"],
                      "results": results}))
'''


def executable(path, body):
    with open(path, "w") as f:
        f.write(f"#!{sys.executable}\n{body}")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def make(folder):
    """(truepeak, python, log) in `folder`."""
    return (executable(os.path.join(folder, "truepeak"), TRUEPEAK),
            executable(os.path.join(folder, "python"), PYTHON), os.path.join(folder, "log.jsonl"))


def profile(path, python, keys=("torch-jit", "torch-eager", "onnxruntime"), eager_dtypes=("bf16", "f32")):
    runtimes = {key: {"runtime": key.split(":")[0], "python": python, "threads": 2, "framework": "torch 9.9",
                      "dtypes": list(eager_dtypes) if key.startswith("torch-eager") else ["f32"]} for key in keys}
    doc = {"schema_version": "1.12", "created_utc": "2030-01-01T00:00:00Z",
           "machine": {"label": "fake-box", "cpu_model": "Fake CPU"},
           "devices": [{"id": "cpu", "kind": "cpu", "runtimes": runtimes}]}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]
