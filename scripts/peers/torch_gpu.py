#!/usr/bin/env python3
"""A peer for truepeak's GPU figures: the same operations through PyTorch on the same GPU.

Measures, with CUDA events, on random data:
  - bf16 GEMM 8192^3 and 16384^3 as a linear layer computes it (x @ w^T: cuBLAS's "TN", the
    layout truepeak times) and as a plain x @ w ("NN");
  - a device-to-device copy of 1 GiB (bytes read plus bytes written);
  - a pinned host-to-device copy of 1 GiB;
  - the convolution layers of truepeak's quick GPU suite (batch 32: ResNet's 3x3 and 1x1, the
    7x7/2 stem, a MobileNetV2 depthwise 3x3), through cuDNN as PyTorch runs them with
    torch.backends.cudnn.benchmark on (every algorithm tried, the fastest kept) and TF32 off.
    Their kernels take microseconds, less than PyTorch's host work per call, so they are timed
    as truepeak times them: many calls replayed from a CUDA graph, over enough input sets to
    cover twice the L2 cache, seconds per call = the replay's time over its calls.
Each figure is the best and the median of the timed calls after a warm-up that lets the clocks
ramp. Writes JSON to --out and prints one line per figure.

Usage: torch_gpu.py --out FILE [--device N] [--repeats R]
"""
import argparse
import json
import os
import sys
import tempfile
import time


def timed(fn, repeats, warmup_s, torch):
    """Seconds of each of `repeats` calls of fn, after calling it for warmup_s."""
    start = time.perf_counter()
    while time.perf_counter() - start < warmup_s:
        fn()
        torch.cuda.synchronize()  # the warm-up is GPU time, not calls queued ahead of it
    times = []
    for _ in range(repeats):
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        fn()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) * 1e-3)
    return times


def summary(times, work):
    ordered = sorted(times)
    return {"best": work / ordered[0], "median": work / ordered[len(ordered) // 2], "calls": len(times)}


# (dtype, layout, n, c, hw, k, rs, stride, pad, groups): the quick GPU suite's convolutions.
CONVS = [
    ("f16", "nhwc", 32, 64, 56, 64, 3, 1, 1, 1),
    ("f16", "nhwc", 32, 256, 14, 1024, 1, 1, 0, 1),
    ("f16", "nhwc", 32, 3, 224, 64, 7, 2, 3, 1),
    ("f16", "nhwc", 32, 144, 56, 144, 3, 1, 1, 144),
    ("bf16", "nhwc", 32, 64, 56, 64, 3, 1, 1, 1),
    ("f16", "nchw", 32, 64, 56, 64, 3, 1, 1, 1),
    ("f32", "nchw", 32, 64, 56, 64, 3, 1, 1, 1),
]


def convolutions(dev, gen, repeats, torch):
    """Best and median FLOP/s of each layer in CONVS (FLOPs of a direct convolution)."""
    torch.backends.cudnn.benchmark = True
    if hasattr(torch.backends.cudnn, "benchmark_limit"):
        torch.backends.cudnn.benchmark_limit = 0  # every engine cuDNN offers, not the first 10
    torch.backends.cudnn.allow_tf32 = False
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    rows = []
    for dtype, layout, n, c, hw, k, rs, stride, pad, groups in CONVS:
        fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
        x = torch.randn(n, c, hw, hw, device=dev, dtype=dtypes[dtype], generator=gen).to(memory_format=fmt)
        w = torch.randn(k, c // groups, rs, rs, device=dev, dtype=dtypes[dtype], generator=gen)
        w = w.to(memory_format=fmt)
        out_hw = (hw + 2 * pad - rs) // stride + 1
        flops = 2.0 * n * k * out_hw * out_hw * (c // groups) * rs * rs
        sets = max(1, min(16, -(-2 * l2 // ((x.numel() + n * k * out_hw * out_hw) * x.element_size()))))
        xs = [x] + [torch.randn_like(x).to(memory_format=fmt) for _ in range(sets - 1)]
        calls = 4 * sets
        conv = torch.nn.functional.conv2d
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):  # the algorithm search runs here, before the capture
            for _ in range(3):
                conv(x, w, stride=stride, padding=pad, groups=groups)
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        outputs = []  # kept, so that each call writes an output of its own, as truepeak's sets do
        with torch.cuda.graph(graph):
            for i in range(calls):
                outputs.append(conv(xs[i % sets], w, stride=stride, padding=pad, groups=groups))
        out = summary(timed(graph.replay, repeats, 0.2, torch), flops * calls)
        rows.append({"dtype": dtype, "layout": layout, "n": n, "c": c, "h": hw, "w": hw, "k": k,
                     "r": rs, "s": rs, "stride": stride, "pad": pad, "groups": groups,
                     "best_flops_per_s": out["best"], "median_flops_per_s": out["median"]})
        print(f"torch conv {dtype} {layout} n{n} c{c} {hw}x{hw} k{k} {rs}x{rs}/{stride} g{groups}: "
              f"best {out['best'] / 1e12:.1f} TFLOP/s, median {out['median'] / 1e12:.1f}", flush=True)
        del x, w, xs, graph, outputs
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="JSON file to write")
    parser.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per figure (default 20)")
    args = parser.parse_args()
    if args.repeats < 1:
        sys.exit(f"torch_gpu.py: --repeats {args.repeats}: must be at least 1")
    try:
        import torch
    except ImportError as error:
        sys.exit(f"torch_gpu.py: PyTorch is not importable here ({error})")
    if not torch.cuda.is_available():
        sys.exit("torch_gpu.py: PyTorch sees no CUDA device")
    torch.cuda.set_device(args.device)
    dev = torch.device("cuda", args.device)
    gen = torch.Generator(device=dev).manual_seed(1234)
    result = {"torch": torch.__version__, "device": torch.cuda.get_device_name(dev),
              "cuda": torch.version.cuda, "gemm": []}

    for size in (8192, 16384):
        x = torch.randn(size, size, device=dev, dtype=torch.bfloat16, generator=gen)
        w = torch.randn(size, size, device=dev, dtype=torch.bfloat16, generator=gen)
        flops = 2.0 * size ** 3
        for layout, fn in (("tn", lambda: torch.nn.functional.linear(x, w)), ("nn", lambda: x @ w)):
            out = summary(timed(fn, args.repeats, 0.5, torch), flops)
            result["gemm"].append({"dtype": "bf16", "m": size, "n": size, "k": size, "layout": layout,
                                   "best_flops_per_s": out["best"], "median_flops_per_s": out["median"]})
            print(f"torch bf16 GEMM {size}^3 {layout}: best {out['best'] / 1e12:.1f} TFLOP/s, "
                  f"median {out['median'] / 1e12:.1f}", flush=True)
        del x, w

    nbytes = 1 << 30
    src = torch.randint(0, 256, (nbytes,), device=dev, dtype=torch.uint8, generator=gen)
    dst = torch.empty_like(src)
    out = summary(timed(lambda: dst.copy_(src), args.repeats, 0.2, torch), 2.0 * nbytes)
    result["device_copy_Bps"] = {"bytes": nbytes, "best": out["best"], "median": out["median"]}
    print(f"torch device copy 1 GiB: best {out['best'] / 1e12:.2f} TB/s (read + write), "
          f"median {out['median'] / 1e12:.2f}", flush=True)

    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host.random_(0, 256)
    out = summary(timed(lambda: dst.copy_(host, non_blocking=True), max(3, args.repeats // 4), 0.2,
                        torch), float(nbytes))
    result["h2d_pinned_Bps"] = {"bytes": nbytes, "best": out["best"], "median": out["median"]}
    print(f"torch pinned H2D 1 GiB: best {out['best'] / 1e9:.1f} GB/s, median {out['median'] / 1e9:.1f}",
          flush=True)

    result["conv"] = convolutions(dev, gen, args.repeats, torch)

    directory = os.path.dirname(os.path.abspath(args.out))
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    os.replace(f.name, args.out)


if __name__ == "__main__":
    main()
