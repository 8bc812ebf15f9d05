"""A quick real run of the runtime probes whose framework is installed here: torch-jit with
Debian's PyTorch (/usr/bin/python3, or TRUEPEAK_TORCH_PYTHON), onnxruntime, and torch-eager and
torch-compile with the torch 2.x of the project's venv (.venv/bin/python, or TRUEPEAK_ORT_PYTHON
and TRUEPEAK_TORCH2_PYTHON, see scripts/setup-venv.sh). Each record must pass the record checks;
torch-compile's must carry its fusion rules; torch-eager's its image kernels, a batch norm's
call cost, cold calls' costs, image-input convolutions and cold-weights GEMM points, and both
the implementation of each convolution point; onnxruntime's its cold-weights GEMM points and a relu folded into a
convolution; torch-jit's a cold call's cost, its own dense convolution points (given a library
version it does not bundle) and the two timings behind its linears' choice;
torch-eager must find that
it runs a convolution's batch norm apart, torch-jit that it folds it.
Each runtime whose framework is missing is skipped, saying why; exit 77 (skipped) when none ran."""
import json
import os
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
from runtimes import record  # noqa: E402

SKIP = 77
VENV_PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
TORCH2_PYTHON = os.environ.get("TRUEPEAK_TORCH2_PYTHON", VENV_PYTHON)
# (runtime, interpreter, module it needs, the check that the module is recent enough)
RUNS = (
    ("torch-jit", os.environ.get("TRUEPEAK_TORCH_PYTHON", "/usr/bin/python3"), "torch", "True"),
    ("onnxruntime", os.environ.get("TRUEPEAK_ORT_PYTHON", VENV_PYTHON), "onnxruntime", "True"),
    ("torch-eager", TORCH2_PYTHON, "torch 2.x", "int(torch.__version__.split('.')[0]) >= 2"),
    ("torch-compile", TORCH2_PYTHON, "torch 2.x", "int(torch.__version__.split('.')[0]) >= 2"),
)


def imports(python, module, recent):
    if not os.path.exists(python):
        return False
    name = module.split()[0]
    done = subprocess.run([python, "-c", f"import {name}, sys; sys.exit(0 if {recent} else 1)"],
                          capture_output=True, timeout=120)
    return done.returncode == 0


def run(runtime, python):
    """The record of one quick run, or an error line."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    start = time.perf_counter()
    # A library version no PyTorch bundles: torch-jit times its own convolutions.
    done = subprocess.run([python, "-m", "runtimes", "--runtime", runtime, "--device", "cpu", "--quick",
                           "--library", "onednn=0.0"], env=env,
                          capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        return None, f"{runtime}: exit {done.returncode}: {(done.stderr.strip().splitlines() or [''])[-1]}"
    try:
        doc = json.loads(done.stdout)
    except ValueError as error:
        return None, f"{runtime}: stdout is not one JSON document ({error})"
    wrong = record.problems(doc)
    if wrong:
        return None, f"{runtime}: the record fails its checks: {'; '.join(wrong[:3])}"
    same_python = os.path.realpath(doc["python"]) == os.path.realpath(python)
    if doc["runtime"] != runtime or not same_python:
        return None, f"{runtime}: the record names {doc['runtime']} run by {doc['python']}"
    host = [p for p in doc["probes"] if p["name"].startswith("host ")]
    if len(host) < 2 or any(p.get("samples", 0) < 1 for p in host):
        return None, f"{runtime}: the record holds {len(host)} moments of the host probe, not two or more"
    if runtime == "torch-compile" and "fusion" not in doc:
        return None, f"{runtime}: the record has no fusion rules"
    if runtime == "torch-eager":
        missing = {"pool:max", "norm:batchnorm"} - {k["kind"] for k in doc["own_kernels"]}
        if missing:
            return None, f"{runtime}: the record has no image kernel {', '.join(sorted(missing))}"
        costed = {k["kind"] for k in doc["kind_op_s"]}
        if "norm:batchnorm" not in costed:
            return None, f"{runtime}: the record has no batch norm call cost ({sorted(costed)})"
        if "cold_op_s" not in doc or any("cold_op_s" not in k for k in doc["kind_op_s"]):
            return None, f"{runtime}: the record lacks a cold call's costs"
        if not any(c["c"] < c["k"] and c["groups"] == 1 for c in doc["conv"]):
            return None, f"{runtime}: the record has no image-input convolution point"
        if not any(g["cold_weights"] for g in doc["gemm"]):
            return None, f"{runtime}: the record has no cold-weights GEMM point"
    if runtime == "onnxruntime":
        if not any(g["cold_weights"] for g in doc["gemm"]):
            return None, f"{runtime}: the record has no cold-weights GEMM point"
        if "relu" not in doc.get("fused_activations", []):
            return None, f"{runtime}: a relu after a convolution is not folded ({doc.get('fused_activations')})"
    if runtime == "torch-jit":
        if doc.get("cold_op_s", 0.0) < doc["op_s"]:
            return None, f"{runtime}: the record lacks a cold call's cost, or it is under the warm one"
        classes = {(c["groups"] == 1, c["layout"]) for c in doc["conv"]}
        if classes != {(True, "blocked")}:
            return None, f"{runtime}: its own convolution points are not blocked dense ones ({sorted(classes)})"
        timed = {p["name"] for p in doc["probes"] if p["name"].startswith("frozen ")}
        if timed != {"frozen linear f32", "frozen conv1x1 f32"}:
            return None, f"{runtime}: the linears' choice lacks its timings ({sorted(timed)})"
    # Eager PyTorch runs a module as written; a frozen graph folds a convolution's batch norm.
    expected_apart = {"torch-eager": True, "torch-jit": False}.get(runtime)
    if expected_apart is not None and doc.get("conv_batchnorm_apart") is not expected_apart:
        return None, (f"{runtime}: conv_batchnorm_apart is {doc.get('conv_batchnorm_apart')!r}, where the "
                      f"runtime {'runs' if expected_apart else 'folds'} a convolution's batch norm")
    if runtime in ("torch-eager", "torch-compile"):
        unnamed = sorted({c["impl"] for c in doc["conv"]} & {"", "unknown"})
        if unnamed:
            return None, f"{runtime}: a convolution point's implementation was not read ({unnamed[0]!r})"
        rule = doc.get("conv_dispatch")
        unmeasured = [key for key in ("op_s", "others_op_s") if rule and key not in rule]
        if unmeasured:
            return None, f"{runtime}: the dispatch rule has no {unmeasured[0]} (a path's call cost)"
    print(f"{runtime}: ok in {seconds:.1f} s (calibration_s {doc['calibration_s']:.1f}), op_s "
          f"{doc['op_s'] * 1e6:.2f} us, {len(doc['own_kernels'])} own kernels, {len(doc['probes'])} probe points")
    return doc, None


def main():
    ran, failures = 0, []
    for runtime, python, module, recent in RUNS:
        if not imports(python, module, recent):
            print(f"{runtime}: skipped, {python} cannot import {module}")
            continue
        ran += 1
        _, error = run(runtime, python)
        if error:
            failures.append(error)
            print(error)
    if failures:
        return 1
    if not ran:
        print("skipped: no framework installed (apt-get install python3-torch; scripts/setup-venv.sh onnxruntime torch)")
        return SKIP
    return 0


if __name__ == "__main__":
    sys.exit(main())
