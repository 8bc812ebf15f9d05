#!/usr/bin/python3
"""Exports the torchvision models to ONNX and estimates each with truepeak: how many import.

Run with the PyTorch whose exporter is checked (Debian's PyTorch 1.13 and torchvision 0.14):
    /usr/bin/python3 scripts/onnx-coverage.py --truepeak build/truepeak

Every classification, segmentation and detection model that torchvision registers is built with
random weights (nothing is downloaded) and exported with `torch.onnx.export`'s defaults; the
segmentation and detection models at opset 11, as torchvision's own ONNX tests export them. A
detector is given one image as a batch of one ([1, 3, H, W]). Then

    truepeak estimate --model FILE --batch 1 --format json

runs on each file, and a model counts as estimated when that exits 0 with a finite, positive
latency; a model PyTorch fails to export is listed apart (there is no file to import). Models
with more parameters than --max-params are skipped (their files near or past protobuf's 2 GB,
and hours of export on a small machine); they are listed as skipped, not counted.
Each export runs in a child process of this script (--export-one), so that a crash or the
memory of one model does not stop the others. Prints one line per model and the count; --report
writes the same as a markdown table.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

INPUT_SIZES = {"inception_v3": 299}  # classification input side; 224 otherwise
SEGMENTATION_SIDE = 320
DETECTION_SIDE = 320


def models():
    """(family, name) for every registered classification, segmentation and detection model."""
    import torchvision
    from torchvision import models as tvm
    from torchvision.models import detection, segmentation

    found = []
    for family, module in (("classification", tvm), ("segmentation", segmentation), ("detection", detection)):
        if hasattr(tvm, "list_models"):
            names = tvm.list_models(module=module)
        else:  # before torchvision 0.14: every lower-case callable that builds a model
            names = sorted(n for n in dir(module) if n[0].islower() and callable(getattr(module, n))
                           and not n.startswith("_"))
        found += [(family, name) for name in names]
    return found, torchvision.__version__


def export_one(family, name, path, max_params):
    """Child: builds one model with random weights and exports it. Exit 3: skipped (too large)."""
    import torch
    from torchvision import models as tvm

    torch.manual_seed(0)
    config = {"weights": None}
    if family in ("segmentation", "detection"):
        config["weights_backbone"] = None
    if family == "segmentation":
        config["aux_loss"] = None
    if name in ("googlenet", "inception_v3"):
        config["init_weights"] = False  # random init without scipy's truncated normal; same graph
    builder = tvm.get_model_builder(name) if hasattr(tvm, "get_model_builder") else getattr(tvm, name)
    try:
        model = builder(**config)
    except TypeError:
        config.pop("init_weights", None)
        config.pop("aux_loss", None)
        model = builder(**config)
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"params": params}), flush=True)
    if params > max_params:
        return 3
    model.eval()
    if family == "classification":
        side = INPUT_SIZES.get(name, 224)
    else:
        side = SEGMENTATION_SIDE if family == "segmentation" else DETECTION_SIDE
    x = torch.rand(1, 3, side, side)
    kwargs = {} if family == "classification" else {"opset_version": 11}
    # As a user calls it: no torch.no_grad() around it either (under no_grad, PyTorch 1.13 runs
    # nn.MultiheadAttention's fused fast path, which its exporter does not know).
    torch.onnx.export(model, (x,), path, **kwargs)
    return 0


def run(command, timeout):
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        return done.returncode, done.stdout, done.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or "", e.stderr or "", time.monotonic() - started


def last_line(text):
    lines = [l for l in (text or "").splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--truepeak", default="build/truepeak", help="the truepeak executable")
    parser.add_argument("--profile", help="passed to truepeak estimate (default: its built-in profile)")
    parser.add_argument("--out", default="/tmp/truepeak-onnx-coverage", help="where the .onnx files go")
    parser.add_argument("--max-params", type=float, default=200e6,
                        help="skip models with more parameters (default 2e8)")
    parser.add_argument("--only", nargs="*", help="these models only")
    parser.add_argument("--reuse", action="store_true", help="keep .onnx files already exported in --out")
    parser.add_argument("--export-timeout", type=int, default=1800, help="seconds per export")
    parser.add_argument("--estimate-timeout", type=int, default=900, help="seconds per estimate")
    parser.add_argument("--report", help="also write the results as a markdown table to this file")
    parser.add_argument("--export-one", nargs=3, metavar=("FAMILY", "NAME", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.export_one:
        sys.exit(export_one(*args.export_one, args.max_params))

    found, tv_version = models()
    if args.only:
        found = [(f, n) for f, n in found if n in args.only]
    os.makedirs(args.out, exist_ok=True)
    import torch
    print(f"torch {torch.__version__}, torchvision {tv_version}; {len(found)} models", flush=True)

    rows = []
    for family, name in found:
        path = os.path.join(args.out, f"{name}.onnx")
        row = {"family": family, "model": name, "params": None, "status": "", "latency_ms": None,
               "assumptions": 0, "note": ""}
        if not (args.reuse and os.path.exists(path)):
            code, out, err, seconds = run([sys.executable, os.path.abspath(__file__), "--max-params",
                                           str(args.max_params), "--export-one", family, name, path],
                                          args.export_timeout)
            for line in out.splitlines():
                if line.startswith("{"):
                    row["params"] = json.loads(line).get("params")
            if code == 3:
                row["status"], row["note"] = "skipped", f"more than {args.max_params:.3g} parameters"
            elif code != 0:
                row["status"] = "export failed"
                row["note"] = "timed out" if code is None else last_line(err)
        if not row["status"]:
            command = [args.truepeak, "estimate", "--model", path, "--batch", "1", "--format", "json"]
            if args.profile:
                command += ["--profile", args.profile]
            code, out, err, seconds = run(command, args.estimate_timeout)
            latency = None
            if code == 0:
                try:
                    latency = json.loads(out).get("latency_s")
                except (ValueError, AttributeError):
                    latency = None
            # One warning line per assumption, or one for several alike: "NonZero x180 ('/NonZero', ...): ..."
            warnings = [l for l in err.splitlines() if l.startswith("truepeak:")]
            for line in warnings:
                if "(--data-dependent-size)" in line or "assumed the" in line:
                    alike = re.search(r": \S+ x(\d+) \(", line)
                    row["assumptions"] += int(alike.group(1)) if alike else 1
            if code == 0 and isinstance(latency, (int, float)) and math.isfinite(latency) and latency > 0:
                row["status"], row["latency_ms"] = "estimated", latency * 1e3
            else:
                row["status"] = "refused" if code == 2 or code == 1 else f"failed ({code})"
                row["note"] = "timed out" if code is None else last_line(err)
            row["seconds"] = round(seconds, 1)
        rows.append(row)
        latency = f"{row['latency_ms']:.2f} ms" if row["latency_ms"] else ""
        extra = f"{row['assumptions']} assumption(s)" if row["assumptions"] else ""
        print(f"{family:14} {name:36} {row['status']:14} {latency:>12} {extra} {row['note']}", flush=True)

    # What PyTorch could not export is no file to import: counted apart from the files.
    counted = [r for r in rows if r["status"] not in ("skipped", "export failed")]
    estimated = [r for r in counted if r["status"] == "estimated"]
    unexported = [r["model"] for r in rows if r["status"] == "export failed"]
    skipped = [r["model"] for r in rows if r["status"] == "skipped"]
    summary = f"{len(estimated)} of {len(counted)} exported models estimated"
    if unexported:
        summary += f"; PyTorch did not export: {', '.join(unexported)}"
    if skipped:
        summary += f"; skipped (too large): {', '.join(skipped)}"
    print(summary, flush=True)
    if args.report:
        with open(args.report, "w") as f:
            f.write(f"torch {torch.__version__}, torchvision {tv_version}: {summary}\n\n")
            f.write("| family | model | params (M) | result | latency | assumptions | note |\n")
            f.write("|---|---|---:|---|---:|---:|---|\n")
            for r in rows:
                params = f"{r['params'] / 1e6:.1f}" if r["params"] else ""
                latency = f"{r['latency_ms']:.2f} ms" if r["latency_ms"] else ""
                note = r["note"].replace("|", "/")
                f.write(f"| {r['family']} | {r['model']} | {params} | {r['status']} | {latency} | "
                        f"{r['assumptions'] or ''} | {note} |\n")
    sys.exit(0 if len(estimated) == len(counted) else 1)


if __name__ == "__main__":
    main()
