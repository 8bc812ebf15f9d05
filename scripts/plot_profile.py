#!/usr/bin/python3
"""Plots truepeak profiles as PNG: the figures of `truepeak report`, for slides and papers.

    /usr/bin/python3 scripts/plot_profile.py results/a.json [results/b.json ...] [-o plots/]

Writes roofline_<machine>_<device>.png (one per device), gemm_efficiency.png, bandwidth.png and,
when a device measured host transfers, transfers.png. Needs matplotlib (Debian: python3-matplotlib).
Work and bytes are counted as in core/shapes.cpp: FLOPs = 2 x multiply-adds, minimal bytes = each
input and the output moved once.
"""
import argparse
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator  # noqa: E402

DTYPE_BYTES = {"f64": 8, "f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "fp8": 1, "int8": 1}
DTYPE_ORDER = ["f64", "f32", "tf32", "f16", "bf16", "fp8", "int8"]


def gemm_flops(p):
    return 2.0 * p["batch"] * p["m"] * p["n"] * p["k"]


def gemm_bytes(p):
    e = DTYPE_BYTES[p["dtype"]]
    out = 4 if p["dtype"] == "int8" else e
    return p["batch"] * ((p["m"] * p["k"] + p["k"] * p["n"]) * e + p["m"] * p["n"] * out)


def conv_out(size, kernel, stride, pad, dilation):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def conv_flops(p):
    oh = conv_out(p["h"], p["r"], p["stride"], p["pad"], p["dilation"])
    ow = conv_out(p["w"], p["s"], p["stride"], p["pad"], p["dilation"])
    return 2.0 * p["n"] * p["k"] * oh * ow * (p["c"] // p["groups"]) * p["r"] * p["s"]


def conv_bytes(p):
    oh = conv_out(p["h"], p["r"], p["stride"], p["pad"], p["dilation"])
    ow = conv_out(p["w"], p["s"], p["stride"], p["pad"], p["dilation"])
    e = DTYPE_BYTES[p["dtype"]]
    return (p["n"] * p["c"] * p["h"] * p["w"] + p["k"] * (p["c"] // p["groups"]) * p["r"] * p["s"]
            + p["n"] * p["k"] * oh * ow) * e


def si(v, _pos=None):
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale * 0.9999:
            return f"{v / scale:g}{prefix}"
    return f"{v:g}"


def binary(v, _pos=None):
    for scale, unit in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if abs(v) >= scale * 0.9999:
            return f"{v / scale:g} {unit}"
    return f"{v:g} B"


def gemm_dtypes(dev):
    names = set((dev.get("peaks") or {}).get("flops_per_s") or {}) | {p["dtype"] for p in dev.get("gemm") or []}
    return sorted(names, key=lambda d: DTYPE_ORDER.index(d) if d in DTYPE_ORDER else 99)


def best_gemm(dev, dtype):
    peak = ((dev.get("peaks") or {}).get("flops_per_s") or {}).get(dtype)
    if peak is not None:
        return peak
    rates = [p["flops_per_s"] for p in dev.get("gemm") or [] if p["dtype"] == dtype]
    return max(rates) if rates else None


def main_memory_Bps(dev):
    peak = (dev.get("peaks") or {}).get("memory_Bps")
    if peak is not None:
        return peak
    for name in ("HBM", "DRAM"):
        for level in (dev.get("memory") or {}).get("levels") or []:
            if level["name"] == name:
                return level["Bps"]
    return None


def load(paths):
    devices = []
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"plot_profile: {path}: cannot read profile: {e}")
        if not str(doc.get("schema_version", "")).startswith("1."):
            sys.exit(f"plot_profile: {path}: not a truepeak 1.x profile")
        for dev in doc.get("devices", []):
            devices.append((f"{doc['machine']['label']}/{dev['id']}", dev))
    return devices


def setup_log_axes(ax, x_binary=False):
    ax.set_xscale("log", base=2 if x_binary else 10)
    ax.set_yscale("log")
    if x_binary:
        ax.xaxis.set_major_locator(LogLocator(base=4))
        ax.xaxis.set_major_formatter(FuncFormatter(binary))
    ax.yaxis.set_major_formatter(FuncFormatter(si))
    ax.grid(True, which="major", color="#d8d8d8")
    ax.grid(True, which="minor", color="#f0f0f0")


def roofline(label, dev, out):
    fig, ax = plt.subplots(figsize=(8, 5))
    setup_log_axes(ax)
    ais = [gemm_flops(p) / gemm_bytes(p) for p in dev.get("gemm") or []]
    ais += [conv_flops(p) / conv_bytes(p) for p in dev.get("conv") or []]
    bw, ds = main_memory_Bps(dev), dev.get("datasheet") or {}
    ds_bw = ds.get("memory_Bps")
    for dt in gemm_dtypes(dev):
        for peak, b in ((best_gemm(dev, dt), bw), ((ds.get("flops_per_s") or {}).get(dt), ds_bw)):
            if peak and b:
                ais.append(peak / b)
    lo, hi = (min(ais) / 4, max(ais) * 4) if ais else (0.1, 1000)
    for i, dt in enumerate(gemm_dtypes(dev)):
        color = f"C{i}"

        def ceiling(peak, b):
            xs = [lo] + ([peak / b] if lo < peak / b < hi else []) + [hi]
            return xs, [min(peak, x * b) for x in xs]

        peak = best_gemm(dev, dt)
        if peak and bw:
            ax.plot(*ceiling(peak, bw), color=color, label=f"{dt} measured ceiling")
        ds_peak = (ds.get("flops_per_s") or {}).get(dt)
        if ds_peak and ds_bw:
            ax.plot(*ceiling(ds_peak, ds_bw), color=color, linestyle="--", label=f"{dt} datasheet ceiling")
        g = [p for p in dev.get("gemm") or [] if p["dtype"] == dt]
        if g:
            ax.scatter([gemm_flops(p) / gemm_bytes(p) for p in g], [p["flops_per_s"] for p in g], color=color,
                       marker="o", s=18, label=f"{dt} GEMM", zorder=3)
        c = [p for p in dev.get("conv") or [] if p["dtype"] == dt]
        if c:
            ax.scatter([conv_flops(p) / conv_bytes(p) for p in c], [p["flops_per_s"] for p in c], color=color,
                       marker="^", s=24, label=f"{dt} conv", zorder=3)
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(f"Roofline: {label}")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)


def gemm_efficiency(devices, out):
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(si))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:g}%"))
    ax.grid(True, color="#d8d8d8")
    prefix = len(devices) > 1
    for label, dev in devices:
        for dt in gemm_dtypes(dev):
            ref = ((dev.get("datasheet") or {}).get("flops_per_s") or {}).get(dt)
            suffix = ""
            if not ref:
                ref, suffix = best_gemm(dev, dt), " (of best measured)"
            pts = sorted((gemm_flops(p), p["flops_per_s"] / ref) for p in dev.get("gemm") or [] if p["dtype"] == dt)
            if pts:
                ax.plot(*zip(*pts), marker="o", markersize=4, label=(f"{label} " if prefix else "") + dt + suffix)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("problem size (FLOPs = 2 m n k batch)")
    ax.set_ylabel("fraction of datasheet peak")
    ax.set_title("GEMM efficiency against size")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)


def bandwidth(devices, out):
    fig, ax = plt.subplots(figsize=(8, 5))
    setup_log_axes(ax, x_binary=True)
    prefix = len(devices) > 1
    for label, dev in devices:
        sweep = (dev.get("memory") or {}).get("sweep") or []
        kernels = list(dict.fromkeys(p["kernel"] for p in sweep))
        lines = []
        for k in kernels:
            pts = sorted((p["bytes"], p["Bps"]) for p in sweep if p["kernel"] == k)
            lines += ax.plot(*zip(*pts), marker="o", markersize=4, label=(f"{label} " if prefix else "") + k)
        ds = (dev.get("datasheet") or {}).get("memory_Bps")
        if ds and sweep:
            xs = [min(p["bytes"] for p in sweep), max(p["bytes"] for p in sweep)]
            ax.plot(xs, [ds, ds], linestyle="--", color=lines[0].get_color() if lines else None,
                    label=(f"{label} " if prefix else "") + "datasheet")
    ax.set_xlabel("working set (bytes)")
    ax.set_ylabel("bandwidth (bytes/s, read + written)")
    ax.set_title("Memory bandwidth against working-set size")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)


def transfers(devices, out):
    series = []
    for label, dev in devices:
        for name, fit in (dev.get("transfers") or {}).items():
            if isinstance(fit, dict) and fit.get("points"):
                series.append((label, name, fit))
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(8, 5))
    setup_log_axes(ax, x_binary=True)
    prefix = len(devices) > 1
    for label, name, fit in series:
        pts = sorted((p["bytes"], p["bytes"] / p["time_s"]) for p in fit["points"] if p["time_s"] > 0)
        (line,) = ax.plot(*zip(*pts), marker="o", markersize=4, label=(f"{label} " if prefix else "") + name)
        if fit.get("Bps") and fit.get("latency_s") is not None:
            xs = [b for b, _ in pts]
            ax.plot(xs, [b / (fit["latency_s"] + b / fit["Bps"]) for b in xs], linestyle="--",
                    color=line.get_color(), label=(f"{label} " if prefix else "") + name + " fit")
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("bandwidth (bytes/s)")
    ax.set_title("Host-device transfer bandwidth against size")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.savefig(out, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("profiles", nargs="+", help="truepeak profile JSON files")
    parser.add_argument("-o", "--out-dir", default=".", help="directory for the PNG files (default: .)")
    args = parser.parse_args()
    if not os.path.isdir(args.out_dir):
        sys.exit(f"plot_profile: {args.out_dir}: not a directory")
    devices = load(args.profiles)
    written = []
    for label, dev in devices:
        path = os.path.join(args.out_dir, "roofline_" + re.sub(r"[^A-Za-z0-9_-]", "-", label) + ".png")
        roofline(label, dev, path)
        written.append(path)
    for name, fn in (("gemm_efficiency.png", gemm_efficiency), ("bandwidth.png", bandwidth)):
        fn(devices, os.path.join(args.out_dir, name))
        written.append(os.path.join(args.out_dir, name))
    if transfers(devices, os.path.join(args.out_dir, "transfers.png")):
        written.append(os.path.join(args.out_dir, "transfers.png"))
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
