#!/usr/bin/python3
"""Writes the synthetic profile fixtures used by the report/compare/export tests.

The figures are made up (a smooth efficiency curve over a chosen peak), not measurements: the
machine labels and datasheet sources say so. Rates are derived from the declared work exactly as
the calibrate driver does (FLOPs = 2 x multiply-adds, bandwidth = bytes read + written), so the
fixtures are self-consistent. Run: /usr/bin/python3 tests/report/data/make_fixtures.py
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
DTYPE_BYTES = {"f64": 8, "f32": 4, "tf32": 4, "f16": 2, "bf16": 2, "fp8": 1, "int8": 1}


def timing(time_s, samples=20):
    return {"time_s": time_s, "median_s": time_s * 1.04, "cv": 0.03, "samples": samples}


def gemm_points(dtype, peak, sizes, impl, half_flops, memory_Bps):
    pts = []
    for m, n, k in sizes:
        flops = 2.0 * m * n * k
        out_bytes = 4 if dtype == "int8" else DTYPE_BYTES[dtype]
        bytes_moved = (m * k + k * n) * DTYPE_BYTES[dtype] + m * n * out_bytes
        eff = flops / (flops + half_flops)  # saturating efficiency curve
        # Under the memory roof, as a real run of a large problem would be.
        t = flops / min(peak * eff, flops / bytes_moved * memory_Bps)
        p = {"dtype": dtype, "m": m, "n": n, "k": k, "batch": 1}
        p.update(timing(t))
        p["flops_per_s"] = flops / t
        p["impl"] = impl
        pts.append(p)
    return pts


def conv_point(dtype, n, c, h, k, r, stride, pad, peak_eff, layout, impl):
    oh = (h + 2 * pad - r) // stride + 1
    flops = 2.0 * n * k * oh * oh * c * r * r
    t = flops / peak_eff
    p = {"dtype": dtype, "n": n, "c": c, "h": h, "w": h, "k": k, "r": r, "s": r, "stride": stride,
         "pad": pad, "dilation": 1, "groups": 1, "layout": layout, "impl": impl}
    p.update(timing(t))
    p["flops_per_s"] = flops / t
    return p


def sweep(levels):
    """levels: list of (capacity_bytes or None, Bps); bandwidth steps down past each capacity."""
    pts = []
    b = 16 * 1024
    while b <= 1 << 30:
        bw = levels[-1][1]
        for cap, lvl_bw in levels:
            if cap is not None and b <= cap * 0.75:
                bw = lvl_bw
                break
        for kernel, f in (("copy", 0.92), ("triad", 1.0)):
            pts.append({"kernel": kernel, "bytes": b, "Bps": bw * f, "median_Bps": bw * f * 0.95})
        b *= 4
    return pts


def transfer(latency_s, Bps):
    pts = []
    b = 4096
    while b <= 256 << 20:
        pts.append({"bytes": b, "time_s": latency_s + b / Bps})
        b *= 8
    return {"latency_s": latency_s, "Bps": Bps, "points": pts}


def header(label, price, devices, cores, mem):
    return {
        "schema_version": "1.0",
        "tool": {"name": "truepeak", "version": "0.1.0", "git_sha": "fixture", "argv": ["truepeak", "calibrate"]},
        "created_utc": "2026-11-30T10:00:00Z",
        "complete": True,
        "machine": {"label": label, "hostname": label, "os": "Linux 6.1", "cpu_model": "Synthetic CPU",
                    "cpu_cores": cores, "memory_bytes": mem, "price_per_hour_usd": price},
        "devices": devices,
    }


def cpu_device(cores, f32_peak, bf16_peak, dram_Bps):
    sizes = [(64, 64, 64), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048),
             (16, 4096, 4096), (4096, 4096, 4096)]
    gemm = gemm_points("f32", f32_peak * 0.88, sizes, "onednn:brg:avx512_core", 2e7, dram_Bps)
    gemm += gemm_points("bf16", bf16_peak * 0.80, sizes, "onednn:brg:avx512_core_bf16", 4e7, dram_Bps)
    levels = [(48 << 10, dram_Bps * 20), (2 << 20, dram_Bps * 8), (32 << 20, dram_Bps * 3), (None, dram_Bps)]
    return {
        "id": "cpu", "kind": "cpu", "name": "Synthetic CPU", "libraries": {"onednn": "2.6.3"},
        "properties": {"isa": "avx512_core_bf16", "threads": cores},
        "memory_bytes": 16 << 30,
        "datasheet": {"flops_per_s": {"f32": f32_peak, "bf16": bf16_peak},
                      "vector_flops_per_s": {"f32": f32_peak, "f64": f32_peak / 2},
                      "memory_Bps": dram_Bps / 0.8, "source": "synthetic test fixture"},
        "peaks": {"flops_per_s": {"f32": max(p["flops_per_s"] for p in gemm if p["dtype"] == "f32"),
                                  "bf16": max(p["flops_per_s"] for p in gemm if p["dtype"] == "bf16")},
                  "vector_flops_per_s": {"f32": f32_peak * 0.95, "f64": f32_peak * 0.47},
                  "memory_Bps": dram_Bps},
        "gemm": gemm,
        "conv": [conv_point("f32", 1, 64, 56, 64, 3, 1, 1, f32_peak * 0.6, "blocked", "onednn:brgconv"),
                 conv_point("f32", 8, 128, 28, 128, 3, 1, 1, f32_peak * 0.7, "nhwc", "onednn:brgconv"),
                 conv_point("f32", 1, 256, 14, 256, 1, 1, 0, f32_peak * 0.5, "nchw", "onednn:gemm")],
        "memory": {"sweep": sweep(levels),
                   "levels": [{"name": "L1", "bytes": 48 << 10, "Bps": levels[0][1]},
                              {"name": "L2", "bytes": 2 << 20, "Bps": levels[1][1]},
                              {"name": "L3", "bytes": 32 << 20, "Bps": levels[2][1]},
                              {"name": "DRAM", "bytes": None, "Bps": dram_Bps}]},
        "overhead": {"op_s": 2.0e-6, "graph_op_s": None},
        "transfers": {"bidirectional_Bps": None},
        "conditions": {"threads": cores, "sentinel_cv": 0.04, "remeasured_points": 1},
        "skipped": [{"what": "gemm f16", "reason": "not supported by oneDNN on this ISA"}],
    }


def gpu_device():
    f16_peak, f32_peak, int8_peak, hbm = 989e12, 67e12, 1979e12, 3.35e12
    sizes = [(256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192),
             (64, 8192, 8192)]
    gemm = gemm_points("bf16", f16_peak * 0.78, sizes, "cublaslt", 3e9, hbm * 0.8)
    gemm += gemm_points("f16", f16_peak * 0.79, sizes, "cublaslt", 3e9, hbm * 0.8)
    gemm += gemm_points("f32", f32_peak * 0.85, sizes, "cublaslt", 5e8, hbm * 0.8)
    gemm += gemm_points("int8", int8_peak * 0.70, sizes, "cublaslt", 6e9, hbm * 0.8)
    levels = [(50 << 20, hbm * 2.5), (None, hbm * 0.8)]
    dev = {
        "id": "cuda:0", "kind": "gpu", "name": "Synthetic GPU 80GB",
        "libraries": {"cuda_runtime": "13.0", "driver": "580.0", "cublas": "13.0", "cudnn": "9.10"},
        "properties": {"cc": "9.0", "sms": 132, "l2_bytes": 50 << 20, "pcie": "gen5 x16"},
        "memory_bytes": 80 * 10**9,
        "datasheet": {"flops_per_s": {"bf16": f16_peak, "f16": f16_peak, "f32": f32_peak, "tf32": 494e12,
                                      "int8": int8_peak},
                      "vector_flops_per_s": {"f32": f32_peak, "f64": 34e12},
                      "memory_Bps": hbm, "source": "synthetic test fixture"},
        "peaks": {"flops_per_s": {d: max(p["flops_per_s"] for p in gemm if p["dtype"] == d)
                                  for d in ("bf16", "f16", "f32", "int8")},
                  "vector_flops_per_s": {"f32": f32_peak * 0.93, "f64": 34e12 * 0.95},
                  "memory_Bps": hbm * 0.8},
        "gemm": gemm,
        "conv": [conv_point("bf16", 32, 64, 56, 64, 3, 1, 1, f16_peak * 0.45, "nhwc", "cudnn"),
                 conv_point("bf16", 32, 256, 14, 256, 3, 1, 1, f16_peak * 0.6, "nhwc", "cudnn")],
        "memory": {"sweep": [p for p in sweep(levels) if p["kernel"] == "triad"] +
                   [{"kernel": "d2d_copy", "bytes": 1 << 30, "Bps": hbm * 0.78, "median_Bps": hbm * 0.76}],
                   "levels": [{"name": "L2", "bytes": 50 << 20, "Bps": levels[0][1]},
                              {"name": "HBM", "bytes": None, "Bps": hbm * 0.8}]},
        "overhead": {"op_s": 2.5e-6, "graph_op_s": 1.3e-6},
        "transfers": {"h2d_pinned": transfer(8e-6, 55e9), "d2h_pinned": transfer(8e-6, 53e9),
                      "h2d_pageable": transfer(12e-6, 20e9), "d2h_pageable": transfer(12e-6, 18e9),
                      "bidirectional_Bps": 100e9},
        "conditions": {"sentinel_cv": 0.01, "remeasured_points": 0},
        "skipped": [{"what": "gemm fp8", "reason": "fixture: not measured"}],
    }
    return dev


def main():
    cpu_box = header("fixture-cpu-box", 0.40, [cpu_device(8, 1.2e12, 4.8e12, 40e9)], 8, 32 << 30)
    gpu_box = header("fixture-gpu-box", 4.50, [cpu_device(32, 4.0e12, 16e12, 200e9), gpu_device()], 32, 512 << 30)
    gpu_box["devices"][0]["memory_bytes"] = 512 << 30
    for name, doc in (("profile_cpu.json", cpu_box), ("profile_gpu.json", gpu_box)):
        with open(os.path.join(HERE, name), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
