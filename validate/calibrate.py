"""--calibrate: `truepeak calibrate --runtime ...` as a process of its own, ended before any
model runs, so the profile the estimates read is the one the tool wrote."""
import datetime
import os
import shlex
import subprocess
import sys
import time


def calibrate_command(truepeak, profile, runtimes, add_to=False, python=None, quick=False):
    """A new profile (hardware and runtimes) at `profile`, or with `add_to` the runtimes alone into
    the existing one; --python only where one interpreter is asked for every runtime."""
    cmd = [truepeak, "calibrate", "--runtime", ",".join(runtimes)]
    if add_to:
        cmd += ["--add-to", profile]
    else:
        label = os.path.splitext(os.path.basename(profile))[0]
        cmd += ["--label", label, "--out", profile] if label else ["--out", profile]
    if python:
        cmd += ["--python", python]
    if quick:
        cmd += ["--quick"]
    return cmd


def run_calibration(cmd):
    """Runs the calibration (its progress on stderr as it goes); returns what ran, when and how
    long, for the report. A failed calibration ends the validation with its status, before any
    model runs."""
    print("validate: calibrating: " + shlex.join(cmd), file=sys.stderr, flush=True)
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=sys.stderr)
    if done.returncode != 0:
        if done.returncode != 2:  # a refusal (2) is already one line of truepeak's
            print(f"validate: --calibrate: truepeak calibrate exited with status {done.returncode}", file=sys.stderr)
        sys.exit(done.returncode)
    return {"command": shlex.join(cmd), "seconds": round(time.monotonic() - start, 1),
            "ended_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
