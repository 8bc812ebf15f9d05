"""The child processes: the ONNX export under a torch interpreter, and each runtime's timings under
the interpreter its profile record names. Each finds this package and runtimes/ on PYTHONPATH,
as `truepeak calibrate --runtime` runs the probes."""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


class ChildError(Exception):
    """A child that failed; `status` 2 when it already said why on stderr in one line."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def child_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_json(cmd, what):
    """Runs a child (its stderr passes through as progress) and returns its stdout's JSON."""
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=child_env(), cwd=ROOT)
    except OSError as error:
        raise ChildError(f"{what}: {cmd[0]} did not start ({error.strerror})", 1)
    if done.returncode != 0:
        raise ChildError(f"{what}: {' '.join(cmd[:3])} exited with status {done.returncode}", done.returncode)
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise ChildError(f"{what}: no JSON document on its stdout", 1)


def export(python, folder, models, batches, seq, context, reuse):
    cmd = [python, "-m", "validate.export", "--dir", folder, "--batches", ",".join(map(str, batches)),
           "--seq", str(seq), "--context", str(context)] + (["--reuse"] if reuse else []) + list(models)
    return run_json(cmd, "the ONNX export")


def time_cases(python, plan):
    """The timing child's document for `plan` (see validate.timing)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="truepeak-validate-plan-", delete=False) as f:
        json.dump(plan, f)
    try:
        return run_json([python, "-m", "validate.timing", "--cases", f.name], f"the {plan['runtime']} runs")
    finally:
        os.unlink(f.name)


def read_timing(path):
    """An earlier timing document, or None where there is none to read."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_timing(path, timing):
    """The timing document, whole or not at all (a temporary file, then a rename)."""
    partial = f"{path}.partial"
    with open(partial, "w") as f:
        json.dump(timing, f, indent=1)
    os.replace(partial, path)


def say(message):
    print(f"validate: {message}", file=sys.stderr, flush=True)
