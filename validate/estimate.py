"""The estimate of a case: exactly the command a user runs, `truepeak estimate --profile P
--runtime R --model FILE.onnx --batch B ...`. Nothing measured by validation is passed to it."""
import json
import subprocess


def estimate_command(truepeak, profile, runtime, onnx_path, batch, dtype="f32", seq=None, context=None):
    """The user's command line for one case: --seq for a sequence model, --context for a decode
    step, --dtype only where the case runs in another dtype than f32."""
    cmd = [truepeak, "estimate", "--profile", profile, "--runtime", runtime, "--model", onnx_path,
           "--batch", str(batch)]
    if seq is not None:
        cmd += ["--seq", str(seq)]
    if context is not None:
        cmd += ["--context", str(context)]
    if dtype != "f32":
        cmd += ["--dtype", dtype]
    return cmd + ["--format", "json"]


def parse_estimate(stdout):
    """(latency_s, naive_latency_s) of `truepeak estimate --format json` for one batch, or raises
    ValueError saying what is missing."""
    doc = json.loads(stdout)
    if isinstance(doc, list):
        if len(doc) != 1:
            raise ValueError(f"expected the estimate of one batch, got {len(doc)}")
        doc = doc[0]
    latency, naive = doc.get("latency_s"), doc.get("naive_latency_s")
    if not isinstance(latency, (int, float)) or latency <= 0:
        raise ValueError("no positive latency_s in its output")
    return float(latency), float(naive) if isinstance(naive, (int, float)) and naive > 0 else None


def run_estimate(cmd, timeout_s=600):
    """Runs one estimate: {"predicted_s", "naive_s", "warnings"} or {"error"}."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"truepeak estimate did not run ({error})"}
    warnings = [line.removeprefix("truepeak: ") for line in out.stderr.splitlines() if line.strip()]
    if out.returncode != 0:
        return {"error": (warnings or [f"exit {out.returncode}"])[-1]}
    try:
        predicted, naive = parse_estimate(out.stdout)
    except ValueError as error:
        return {"error": f"truepeak estimate: {error}"}
    return {"predicted_s": predicted, "naive_s": naive, "warnings": warnings}
