#!/usr/bin/python3
"""Checks truepeak's latency estimates against real PyTorch runs on this machine.

For each model x batch: build it in PyTorch with random weights, time it on the CPU through
oneDNN (the library the profile measured), export it to ONNX, run `truepeak estimate` on the
ONNX file, and compare. Writes one markdown and one JSON table (default results/validation.*).

Run with Debian's PyTorch:  /usr/bin/python3 scripts/validate.py --profile results/dev-cpu.json

Models: the public set by default (ResNet-18, ResNet-50, MobileNetV2, a BERT-base-like encoder,
a GPT-2-small-like decoder in prefill and in one decode step); --models also takes any of
torchvision's classification models (resnet34, densenet121, efficientnet_b0, ...), built with
random weights at the image size of their default weights.

On a GPU (--device cuda:0), CNNs run in bf16, channels-last, with batch norms folded into the
convolutions (torch.fx), and transformers in bf16, all in eager mode through cuDNN and cuBLAS;
each run ends with a device synchronize. The GPU machine may lack truepeak's ONNX import: measure
there with --measure-only FILE, then estimate where truepeak is built with --measured FILE (the
same models are exported to ONNX there).

How the runs are made:
- CNNs run in f32 as a frozen TorchScript graph after torch.jit.optimize_for_inference: batch
  norms folded into convolutions, convolutions executed by oneDNN (mkldnn); ReLU and the
  residual adds run as separate in-place kernels; a classifier's Linear runs as the same product
  in a 1x1 convolution, since PyTorch would send it to its BLAS (Debian's: the generic reference
  BLAS) instead of oneDNN. Transformers run in bf16 in eager mode, where PyTorch sends bf16
  linears and batched matmuls to oneDNN; their layer norms compute in f32. Where the profile has
  no bf16 matmuls (oneDNN has no bf16 kernels below AVX-512), they run in f32 with their linears
  as oneDNN inner products (torch.utils.mkldnn; the estimate is told --linears-as-convs) and
  their batched matmuls in PyTorch's BLAS, timed here and passed as --own-rates matmul=FLOP/s. A probe run with
  ONEDNN_VERBOSE=1 counts which oneDNN primitives each model executed; the output says so.
- Threads as in calibration (the profile's thread count, else all cores).
- On the CPU, glibc's malloc is set to keep freed memory for reuse, as a caching allocator does:
  with its defaults, large activations are fresh pages every run and the page faults land inside
  the convolutions. --system-malloc leaves the defaults.
- The estimate is told PyTorch's own fixed cost per op (--op-overhead-us), measured in this process
  with chains of tiny ops (1x1 convolutions through oneDNN in a frozen graph; in eager mode, bf16
  linears too small for oneDNN: the dispatch every eager op pays); the profile's per-op overhead
  is oneDNN's alone, without the framework's dispatch. An eager run's mixed-precision layer norm
  (five ops) and its views (free in a graph runtime) are timed with chains of their own and passed
  as --kind-overhead-us norm:layernorm=...,reshape=... --library-overhead estimates with the
  profile's instead.
- PyTorch's layout changes in frozen graphs are probed here (which ops run on channel-blocked
  tensors, how many oneDNN reorders one change makes) and passed to the estimate as --blocked-ops
  and --layout-copies; the table sets the reorders each model ran beside those the estimate counts.
  --no-layout estimates without them.
- The elementwise ops a frozen graph runs in place (its aten::relu_, aten::add_,
  prim::MKLDNNHardTanh_ nodes) are passed as --in-place-ops: such an op costs its reads at the
  profile's in-place bandwidth (its update sweep), not the triad's.
- Warm-up, then several rounds; in each round every model x batch runs a few times (--runs), and
  on until its visit has lasted --visit-ms (the first runs after another model's are slow), so
  interference spreads over all of them. The fastest run is the measured time (the estimator
  predicts the undisturbed time, as calibration measures it); median and spread sit beside it.
- A case whose fastest run still improved by more than 1% over its last 3 rounds runs extra
  rounds (up to --extra-rounds): a busy spell over its early rounds has not yet passed.
- On the CPU, a host probe times one calibration point through PyTorch before every round of
  every case: for the frozen graphs a chain of 3x3 convolutions (64 channels, 56x56, f32), for
  the eager runs of bf16 matmuls 512x512x512. A round that began with its probe within 5% of the
  probe's fastest is quiet; a case with no quiet round runs extra rounds too (same bound). The output
  gives each case's host state at its fastest run, and the probes' fastest against the profile's
  points: how this host compares with the calibration's.
- Then, for up to --host-wait seconds, the CPU runs wait for the host to run as fast as it did at
  calibration: while a runtime's probe, at its fastest so far and less PyTorch's per-op cost, is
  more than 3% slower than the profile's point, its probe is timed again every half second; once
  it is not, that runtime's cases without a quiet round (within 5% of the probe's new fastest)
  run more rounds. Other tenants here slow the host for minutes at a time (the eager probe at
  1.06x the profile over a whole run, every transformer row 13-31% under its measurement, and
  0.99x in the run after it, the same rows 4-15% under): without the wait, the table says as
  much about when it ran as about the estimate. The output says how long it waited and whether
  each probe got there.
- --layers (CPU) times each case's oneDNN primitives in a child process (ONEDNN_VERBOSE, a few
  runs, each primitive at its fastest) and sets them beside the estimate's rows, layer by layer:
  which convolutions and matmuls the estimate misses, and what runs outside them.
- --breakdown profiles each case (PyTorch's profiler, the fastest of 3 runs) and sets its time per
  op family beside the estimate's: on the CPU each op's self time, on a GPU the device time of the
  kernels each op launched against each op's predicted kernel time. With --measure-only the
  breakdown goes into FILE, and --measured reports it.
"""
import argparse
import bisect
import copy
import datetime
import functools
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEFAULT_PROFILE = os.path.join(ROOT, "results", "dev-cpu.json")  # --profile: the development machine's CPU
# The dtype the transformers run in eager mode on the CPU (cpu_eager_dtype): "bf16" or "f32".
EAGER = {"dtype": "bf16"}
DEFAULT_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2_prefill", "gpt2_decode"]


def usage_error(message):
    """Bad flags or input files: one line on stderr and exit status 2, as truepeak itself does."""
    print(message, file=sys.stderr)
    sys.exit(2)


# ---- models ---------------------------------------------------------------------------------

def layer_norm_class():
    import torch
    from torch import nn

    class LayerNorm(nn.LayerNorm):
        """Computed in f32 whatever the activations' type, as mixed-precision inference does
        (PyTorch's CPU autocast keeps layer_norm in f32): this build's bf16 layer_norm is a slow
        path, about 15x its f32 time. An f32 model (the ONNX export) runs the plain layer norm."""

        def forward(self, x):
            if x.dtype == torch.float32:
                return super().forward(x)
            w = None if self.weight is None else self.weight.float()
            b = None if self.bias is None else self.bias.float()
            return nn.functional.layer_norm(x.float(), self.normalized_shape, w, b, self.eps).to(x.dtype)

    return LayerNorm


def transformer_classes():
    import torch
    from torch import nn
    LayerNorm = layer_norm_class()

    class Block(nn.Module):
        """One transformer layer, written as BERT/GPT-2 implementations write it."""

        def __init__(self, d, heads, ff, causal, pre_norm, gelu):
            super().__init__()
            self.d, self.h, self.hd = d, heads, d // heads
            self.causal, self.pre_norm = causal, pre_norm
            self.ln1, self.ln2 = LayerNorm(d), LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, ff), nn.Linear(ff, d)
            self.act = nn.GELU(approximate=gelu)
            if causal:
                self.register_buffer("mask", torch.full((1024, 1024), float("-inf")).triu(1), persistent=False)

        def attention(self, x, past):
            b, s, _ = x.shape
            q, k, v = self.qkv(x).split(self.d, dim=-1)
            q = q.view(b, s, self.h, self.hd).transpose(1, 2)
            k = k.view(b, s, self.h, self.hd).transpose(1, 2)
            v = v.view(b, s, self.h, self.hd).transpose(1, 2)
            if past is not None:
                k = torch.cat([past[0], k], dim=2)
                v = torch.cat([past[1], v], dim=2)
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
            if self.causal and s > 1:
                scores = scores + self.mask[:s, :s].to(scores.dtype)
            probs = torch.softmax(scores, dim=-1)
            out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, self.d)
            return self.proj(out), (k, v)

        def forward(self, x, past=None):
            if self.pre_norm:
                a, kv = self.attention(self.ln1(x), past)
                x = x + a
                x = x + self.fc2(self.act(self.fc1(self.ln2(x))))
            else:
                a, kv = self.attention(x, past)
                x = self.ln1(x + a)
                x = self.ln2(x + self.fc2(self.act(self.fc1(x))))
            return x, kv

    class Encoder(nn.Module):
        """BERT-base-like: 12 post-norm layers, d 768, 12 heads, FFN 3072, vocab 30522."""

        def __init__(self, layers=12, d=768, heads=12, ff=3072, vocab=30522, positions=512):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(positions, d)
            self.ln = LayerNorm(d)
            self.blocks = nn.ModuleList([Block(d, heads, ff, False, False, "none") for _ in range(layers)])

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.ln(self.wte(ids) + self.wpe(pos))
            for block in self.blocks:
                x, _ = block(x)
            return x

    class Decoder(nn.Module):
        """GPT-2-small-like: 12 pre-norm causal layers, d 768, 12 heads, FFN 3072, vocab 50257,
        LM head tied to the token embedding; logits for every position (as HF's prefill does)."""

        def __init__(self, layers=12, d=768, heads=12, ff=3072, vocab=50257, positions=1024):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(positions, d)
            self.blocks = nn.ModuleList([Block(d, heads, ff, True, True, "tanh") for _ in range(layers)])
            self.ln_f = LayerNorm(d)
            # The LM head shares the token embedding's weight (a module, so that the f32 CPU run
            # makes it a oneDNN inner product like the other linears).
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.wte.weight

        def forward(self, ids, *past):
            start = past[0].shape[2] if past else 0
            pos = torch.arange(start, start + ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            present = []
            for i, block in enumerate(self.blocks):
                x, kv = block(x, (past[2 * i], past[2 * i + 1]) if past else None)
                present.extend(kv)
            logits = self.head(self.ln_f(x))
            return (logits, *present) if past else logits

    return Encoder, Decoder


class Case:
    """One model at one batch: the module, its inputs, and how PyTorch runs it."""

    def __init__(self, model, batch, dtype, module, inputs, runner, runtime, seq=None, context=None,
                 input_names=None, conv_layout=None, in_place_ops=None, source=None):
        self.model, self.batch, self.dtype = model, batch, dtype
        self.source = source or model  # as --models names it (a child process builds it from that)
        # The estimator's elementwise kinds that the runtime runs in place (in_place_kinds).
        self.in_place_ops = in_place_ops or []
        self.runtime = runtime  # "frozen" (TorchScript graph) or "eager"
        self.conv_layout = conv_layout
        self.module, self.inputs, self.runner = module, inputs, runner
        self.seq, self.context = seq, context
        self.input_names = input_names or ["input"]
        self.times_s = []
        self.round_ends = []  # len(times_s) at the end of each of the case's rounds
        self.host_s = []  # the host probe's time before each of the case's rounds (HostProbe)

    @property
    def key(self):
        return f"{self.model} b{self.batch} {self.dtype}"


def on_gpu(device):
    return device != "cpu"


def synced(run):
    """A GPU run that ends when its kernels have finished."""
    import torch

    def run_and_wait():
        run()
        torch.cuda.synchronize()
    return run_and_wait


# The elementwise functions PyTorch's graphs name in place (aten::relu_, prim::MKLDNNHardTanh_),
# by the estimator's name for them where it differs.
IN_PLACE_NAMES = {"hardtanh": "clip", "clamp": "clip", "relu6": "clip"}
ELEMENTWISE_FNS = {"relu", "clip", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "add",
                   "sub", "mul", "div"}


def in_place_kinds(node_kinds):
    """The estimator's elementwise kinds (--in-place-ops) that a graph of these node kinds runs in
    place: a frozen graph's oneDNN subgraph writes activations and residual adds over their input
    (aten::relu_, aten::add_, prim::MKLDNNHardTanh_) wherever alias analysis allows."""
    kinds = set()
    for kind in node_kinds:
        name = kind.split("::")[-1]
        if not name.endswith("_") or name.endswith("__"):
            continue
        name = name[:-1].lower()
        if name.startswith("mkldnn"):
            name = name[len("mkldnn"):]
        name = IN_PLACE_NAMES.get(name, name)
        if name in ELEMENTWISE_FNS:
            kinds.add(f"elementwise:{name}")
    return sorted(kinds)


def linears_as_convolutions(module):
    """Replaces every nn.Linear in `module` by the same product as a 1x1 convolution, in place.

    In a frozen f32 graph PyTorch runs Linear as aten::matmul on its BLAS (Debian's build: the
    generic reference BLAS, BLAS_INFO=generic), not on oneDNN; as a 1x1 convolution it runs on
    oneDNN with prepacked weights, the library the profile measured. The ONNX export keeps the
    original Gemm; the estimate is told (--linears-as-convs)."""
    import torch

    class ConvLinear(torch.nn.Module):
        def __init__(self, linear):
            super().__init__()
            self.conv = torch.nn.Conv2d(linear.in_features, linear.out_features, 1, bias=linear.bias is not None)
            with torch.no_grad():
                self.conv.weight.copy_(linear.weight[:, :, None, None])
                if linear.bias is not None:
                    self.conv.bias.copy_(linear.bias)

        def forward(self, x):
            y = self.conv(x.reshape(-1, x.shape[-1], 1, 1))
            return y.reshape(*x.shape[:-1], y.shape[1])

    for parent in list(module.modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, child_name, ConvLinear(child))
    return module


def keep_freed_memory():
    """Sets glibc's malloc to serve every allocation from its heap and to keep what is freed.

    With glibc's defaults, blocks above its mmap threshold (at most 32 MiB) come straight from the
    kernel and go back on free, and a large free top of the heap is trimmed: PyTorch's large
    activations then arrive as fresh pages every run, and the first write to each page faults
    inside the oneDNN primitive (up to 5x a convolution's time here). The profile measures kernels
    on reused buffers, as a serving process with a caching allocator (jemalloc, tcmalloc) runs
    them. Returns a line for the report."""
    import ctypes
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(M_MMAP_MAX, 0) == 1 and libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1) == 1
    except (OSError, AttributeError):
        ok = False
    return ("glibc malloc keeps freed memory (mallopt: M_MMAP_MAX 0, M_TRIM_THRESHOLD 2 GiB)" if ok
            else "the C library's default allocator (mallopt not available)")


TRANSFORMERS = ("bert_base", "gpt2_prefill", "gpt2_decode")


def torchvision_classifier(name):
    """The image size of torchvision's classification model `name` (its default weights' crop,
    read from their metadata: nothing is downloaded), or None when torchvision has no such model."""
    import torchvision
    if name not in torchvision.models.list_models(module=torchvision.models):
        return None
    try:
        crop = torchvision.models.get_model_weights(name).DEFAULT.transforms().crop_size
        return int(crop[0] if isinstance(crop, (list, tuple)) else crop)
    except (AttributeError, ValueError, TypeError):
        return 224


def user_model_spec(name):
    """(path, function) when `name` is FILE.py:FUNCTION, a model of the user's own, else None."""
    path, sep, function = name.rpartition(":")
    return (path, function) if sep and path.endswith(".py") else None


def row_name(name):
    """The name of a --models entry's rows: FUNCTION for FILE.py:FUNCTION, else the name."""
    spec = user_model_spec(name)
    return spec[1] if spec else name


@functools.lru_cache(maxsize=None)
def user_model_function(name):
    """The FUNCTION of FILE.py:FUNCTION, loaded from the file (once a process); one line and exit 2
    when the file cannot be loaded or has no such function."""
    path, function = user_model_spec(name)
    import importlib.util
    if not os.path.isfile(path):
        usage_error(f"validate.py: --models {name}: no such file {path}")
    spec = importlib.util.spec_from_file_location(f"truepeak_user_model_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's file: whatever it raises is reported in one line
        usage_error(f"validate.py: --models {name}: {path} failed to load: {type(error).__name__}: {error}")
    make = getattr(module, function, None)
    if not callable(make):
        usage_error(f"validate.py: --models {name}: {path} has no function '{function}'")
    return make


def user_model(name, batch):
    """FUNCTION(batch) of FILE.py:FUNCTION: a torch.nn.Module and its example inputs (a tensor or
    a tuple of tensors) for `batch` samples, the batch their first dimension."""
    import torch
    try:
        module, inputs = user_model_function(name)(batch)
    except SystemExit:
        raise
    except Exception as error:  # the user's code
        usage_error(f"validate.py: --models {name}: calling it with batch {batch} failed: "
                    f"{type(error).__name__}: {error}")
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    if not isinstance(module, torch.nn.Module) or not inputs or \
            not all(isinstance(t, torch.Tensor) and t.dim() >= 1 and t.shape[0] == batch for t in inputs):
        usage_error(f"validate.py: --models {name}: expected (torch.nn.Module, inputs) with every input a tensor "
                    f"whose first dimension is the batch ({batch})")
    return module.eval(), inputs


def check_model_names(names):
    """Exits with one line naming the first model that is neither a transformer of this script,
    a torchvision classification model, nor a FILE.py:FUNCTION that can be loaded."""
    rows = {}
    for name in names:
        row = row_name(name)
        if row in rows:
            usage_error(f"validate.py: --models: {rows[row]} and {name} would both be rows named '{row}'")
        rows[row] = name
        if user_model_spec(name):
            user_model_function(name)
            continue
        if name not in TRANSFORMERS and torchvision_classifier(name) is None:
            usage_error(f"validate.py: --models: unknown model '{name}' (known: {', '.join(TRANSFORMERS)}, "
                     f"torchvision's classification models, e.g. resnet34, densenet121, "
                     f"efficientnet_b0, and FILE.py:FUNCTION for a model of your own)")


def cpu_eager_dtype(doc):
    """The dtype of the transformers' eager runs on the CPU: bf16 where the profile's CPU ran bf16
    matmuls through oneDNN (PyTorch sends bf16 linears and batched matmuls there only where oneDNN
    has bf16 kernels: AVX-512 and up), else f32. In f32 PyTorch 1.13 sends linears and matmuls to
    its BLAS, so there the linears are oneDNN inner products (torch.utils.mkldnn) and the batched
    matmuls between activations stay in PyTorch's BLAS, whose rate is measured here."""
    for device in (doc or {}).get("devices", []):
        if device.get("kind") == "cpu":
            return "bf16" if any(p.get("dtype") == "bf16" for p in device.get("gemm", [])) else "f32"
    return "bf16"


def eager_torch_dtype():
    import torch
    return torch.bfloat16 if EAGER["dtype"] == "bf16" else torch.float32


def as_eager_cpu(module):
    """`module` as the CPU's eager runs run it: in f32 its linears become oneDNN inner products
    (torch.utils.mkldnn); in bf16 it is left as it is (PyTorch sends bf16 linears to oneDNN)."""
    if EAGER["dtype"] != "f32":
        return module
    from torch.utils import mkldnn as torch_mkldnn
    return torch_mkldnn.to_mkldnn(module)


def build_case(name, batch, seq, context, device="cpu", runnable=True):
    """One model at one batch. With runnable=False only the module and example inputs are made
    (for the ONNX export), not the runner on `device`."""
    import torch
    import torchvision

    torch.manual_seed(0)
    gpu = on_gpu(device)
    source, user_inputs = name, None
    if user_model_spec(name):
        # A model of the user's own: run as the CNNs when its first input is floating point
        # (an image), as the transformers when it is integer (token ids).
        module, user_inputs = user_model(name, batch)
        name = row_name(name)
    elif name not in TRANSFORMERS:
        size = torchvision_classifier(name)
        if size is None:
            check_model_names([name])
        # Random weights; eval mode (dropout off, batch norms use their running statistics, no
        # auxiliary classifiers).
        module = torchvision.models.get_model(name, weights=None).eval()
        user_inputs = (torch.randn(batch, 3, size, size),)
    if user_inputs is not None and user_inputs[0].is_floating_point():
        inputs = user_inputs
        names = ["input"] if len(inputs) == 1 else [f"input_{i}" for i in range(len(inputs))]
        if gpu:
            run = None
            if runnable:
                from torch.fx.experimental.optimization import fuse
                net = fuse(copy.deepcopy(module)).to(device, torch.bfloat16)
                net = net.to(memory_format=torch.channels_last)
                moved = tuple(t.to(device, torch.bfloat16).contiguous(memory_format=torch.channels_last)
                              if t.dim() == 4 else t.to(device, torch.bfloat16) for t in inputs)
                run = synced(lambda: net(*moved))
            return Case(name, batch, "bf16", module, inputs, run, "eager-conv", conv_layout="nhwc",
                        input_names=names, source=source)
        if not runnable:
            return Case(name, batch, "f32", module, inputs, None, "frozen", conv_layout="blocked",
                        input_names=names, source=source)
        with torch.no_grad():
            net = linears_as_convolutions(copy.deepcopy(module))
            frozen = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, inputs)))
        # PyTorch's oneDNN path keeps activations channel-blocked (aBcd16b in ONEDNN_VERBOSE): the
        # estimate uses the profile's blocked convolution points.
        return Case(name, batch, "f32", module, inputs, lambda: frozen(*inputs), "frozen", conv_layout="blocked",
                    in_place_ops=in_place_kinds(node.kind() for node in frozen.graph.nodes()),
                    input_names=names, source=source)

    dtype = "bf16" if gpu else EAGER["dtype"]
    torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float32

    def runner(module, *inputs):
        """The module in the case's dtype on `device`, called on `inputs` moved there (floats in
        that dtype); on the CPU in f32, its linears as oneDNN inner products."""
        if not runnable:
            return None
        net = copy.deepcopy(module).to(device, torch_dtype)
        if not gpu:
            net = as_eager_cpu(net)
        moved = tuple(t.to(device, torch_dtype) if t.is_floating_point() else t.to(device)
                      for t in inputs)
        run = lambda: net(*moved)
        return synced(run) if gpu else run

    if user_inputs is not None:
        names = [f"input_{i}" for i in range(len(user_inputs))]
        return Case(name, batch, dtype, module, user_inputs, runner(module, *user_inputs), "eager",
                    input_names=names, source=source)
    encoder, decoder = transformer_classes()
    if name == "bert_base":
        module = encoder().eval()
        ids = torch.randint(0, 30522, (batch, seq))
        return Case(name, batch, dtype, module, (ids,), runner(module, ids), "eager", seq=seq,
                    input_names=["input_ids"])
    if name == "gpt2_prefill":
        module = decoder().eval()
        ids = torch.randint(0, 50257, (batch, seq))
        return Case(name, batch, dtype, module, (ids,), runner(module, ids), "eager", seq=seq,
                    input_names=["input_ids"])
    if name == "gpt2_decode":
        module = decoder().eval()
        ids = torch.randint(0, 50257, (batch, 1))
        past = tuple(torch.randn(batch, 12, context, 64) for _ in range(24))
        names = ["input_ids"] + [f"past_{kv}_{i}" for i in range(12) for kv in ("k", "v")]
        return Case(name, batch, dtype, module, (ids, *past), runner(module, ids, *past), "eager", seq=1,
                    context=context, input_names=names)
    raise AssertionError(f"unhandled transformer '{name}'")


# ---- runtime per-op overhead ----------------------------------------------------------------

def sample_fastest(runs, best, repeats, before=None):
    """Runs each of `runs` (key -> callable) `repeats` times, keeping in `best` the fastest run of
    each key so far, in seconds; `before`, when given, runs untimed before every run."""
    for key, run in runs.items():
        for _ in range(repeats):
            if before:
                before()
            start = time.perf_counter()
            run()
            best[key] = min(best[key], time.perf_counter() - start)


class ChainTimer:
    """Microseconds per op of a chain of ops: make_run(n) returns a run of a chain of n links of
    `ops_per_link` ops each; per op = (time of `links` links - time of 1) / ((links - 1) *
    ops_per_link), each time the fastest run over every sample taken. Sampled once at the start and
    once a round, as the models are, so that a busy spell at the start does not set the figure."""

    def __init__(self, make_run, ops_per_link, links=64, warmup=5):
        self.runs = {1: make_run(1), links: make_run(links)}
        self.ops_per_link, self.links = ops_per_link, links
        self.best = {n: float("inf") for n in self.runs}
        for run in self.runs.values():
            for _ in range(warmup):
                run()

    def sample(self, repeats):
        """This sample's fastest run of each chain length, in seconds (also kept in `best`)."""
        now = {n: float("inf") for n in self.runs}
        sample_fastest(self.runs, now, repeats)
        for n, t in now.items():
            self.best[n] = min(self.best[n], t)
        return now

    def per_op_us(self):
        """None where noise leaves nothing measurable."""
        value = (self.best[self.links] - self.best[1]) / ((self.links - 1) * self.ops_per_link) * 1e6
        return value if value > 0 else None


class Overheads:
    """Each runtime's fixed cost per op ("frozen", "eager" or "eager-conv" -> ChainTimer)."""

    def __init__(self, timers, repeats=10):
        self.timers, self.repeats = timers, repeats
        self.sample(3 * repeats)

    def sample(self, repeats=None):
        import torch
        with torch.no_grad():
            for timer in self.timers.values():
                timer.sample(repeats or self.repeats)

    def us(self):
        return {k: t.per_op_us() for k, t in self.timers.items()}


FROZEN_KIND_LINKS = 64  # links of the chains that time a frozen graph's elementwise ops (frozen_kind_timers)


def frozen_kind_timers(kinds):
    """The fixed cost of each elementwise op kind of `kinds` in a frozen graph: chains of links of a
    1x1 convolution (16 channels, 4x4) and the op (on its output, and for a binary op on the link's
    input too), timed as the per-op chains are (ChainTimer). A link's cost less a convolution's
    (the frozen chain's per-op cost) is the op's (frozen_kind_us). Measured here, a frozen graph's
    ReLU6 cost 1.0 us, its ReLU 3.4, its sigmoid 3.5, its add 11.3, where a convolution costs 10.1:
    the elementwise ops that PyTorch runs in its own in-place kernels on oneDNN's tensors skip most
    of what a oneDNN call costs."""
    import torch
    from torch import nn
    modules = layout_probe_modules()

    class Link(nn.Module):
        def __init__(self, op, operands):
            super().__init__()
            self.conv, self.op, self.operands = nn.Conv2d(16, 16, 1), op, operands

        def forward(self, x):
            y = self.conv(x)
            return self.op(y, x) if self.operands == 2 else self.op(y)

    def chains(kind):
        op, operands = modules[kind]

        def make(n):
            x = torch.randn(1, 16, 4, 4)
            net = nn.Sequential(*[Link(op, operands) for _ in range(n)]).eval()
            graph = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, x)))
            return lambda: graph(x)
        return make

    torch.manual_seed(0)
    with torch.no_grad():
        return Overheads({kind: ChainTimer(chains(kind), 1, links=FROZEN_KIND_LINKS) for kind in kinds
                          if kind.startswith("elementwise:") and kind in modules})


def eager_kinds_us(overheads_us):
    """The estimator's kind -> an eager op's cost, from the chains of eager_kind_timers."""
    names = {"eager-norm": "norm:layernorm", "eager-view": "reshape"}
    overheads_us = overheads_us or {}
    return {kind: overheads_us[key] for key, kind in names.items() if overheads_us.get(key) is not None}


def frozen_kind_us(link_us, frozen_us):
    """Each kind's own cost in a frozen graph: its link's cost (frozen_kind_timers) less a
    convolution's (`frozen_us`), 0 where noise puts it below; kinds whose link noise left
    unmeasured are left out, and all of them without the convolution's."""
    if frozen_us is None:
        return {}
    return {kind: max(0.0, us - frozen_us) for kind, us in link_us.items() if us is not None}


def gpu_overheads(device):
    """Issue time of one eager op on a GPU: the time per op of chains of tiny ops, each chain
    ended by a synchronize, as (time of 64 pairs - time of 1) / 126. CNN layers are mostly
    convolutions and elementwise ops: pairs of a 1x1 convolution (16 channels, 4x4, bf16,
    channels-last) and a ReLU; transformer layers mostly linears and elementwise ops: pairs of a
    bf16 linear (1 x 16 -> 16) and a GELU; and a transformer's layer norm and views apart
    (eager_kind_timers)."""
    import torch
    from torch import nn

    def conv_pairs(n):
        x = torch.randn(1, 16, 4, 4).to(device, torch.bfloat16).contiguous(memory_format=torch.channels_last)
        chain = nn.Sequential(*[m for _ in range(n) for m in (nn.Conv2d(16, 16, 1), nn.ReLU())])
        chain = chain.to(device, torch.bfloat16).to(memory_format=torch.channels_last).eval()
        return synced(lambda: chain(x))

    def linear_pairs(n):
        x = torch.randn(1, 16).to(device, torch.bfloat16)
        chain = nn.Sequential(*[m for _ in range(n) for m in (nn.Linear(16, 16), nn.GELU())])
        chain = chain.to(device, torch.bfloat16).eval()
        return synced(lambda: chain(x))

    torch.manual_seed(0)
    with torch.no_grad():
        return Overheads({"eager-conv": ChainTimer(conv_pairs, 2), "eager": ChainTimer(linear_pairs, 2),
                          **eager_kind_timers(device, torch.bfloat16)})


def runtime_overheads():
    """Fixed cost of one op in each way the cases run, from chains of tiny ops: in a frozen
    TorchScript graph, 1x1 convolutions (16 channels, 4x4), which go to oneDNN as nearly all of a
    frozen CNN's ops do; in eager mode, bf16 linears of 1 x 16 -> 16, below the size PyTorch sends
    to oneDNN, so the cost every eager op pays for its dispatch (most of a transformer's ops,
    the norms, activations, views and copies, run in PyTorch's own kernels); and in eager bf16
    ("eager-product"), linears of 8 x 64 -> 64 that reach oneDNN's matmul, the cost a product
    pays instead (about 20 us here against 4 of an add: PyTorch sets up the oneDNN call each
    time); and a transformer's layer norm and views apart (eager_kind_timers)."""
    import torch
    from torch import nn

    def frozen_convs(n):
        x = torch.randn(1, 16, 4, 4)
        chain = nn.Sequential(*[nn.Conv2d(16, 16, 1) for _ in range(n)]).eval()
        graph = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(chain, x)))
        return lambda: graph(x)

    def eager_linears(rows, width, dtype):
        def make(n):
            x = torch.randn(rows, width).to(dtype)
            layers = [nn.Linear(width, width).to(dtype) for _ in range(n)]

            def run():
                y = x
                for layer in layers:
                    y = layer(y)
            return run
        return make

    timers = {"frozen": ChainTimer(frozen_convs, 1), "eager": ChainTimer(eager_linears(1, 16, eager_torch_dtype()), 1),
              **eager_kind_timers("cpu", eager_torch_dtype())}
    if eager_torch_dtype() == torch.bfloat16:
        timers["eager-product"] = ChainTimer(eager_linears(8, 64, torch.bfloat16), 1)
    torch.manual_seed(0)
    with torch.no_grad():
        return Overheads(timers)


def eager_kind_timers(device, dtype):
    """The cost of the eager ops that a transformer runs apart from the one an op of the ONNX graph
    stands for, from chains of them at tiny sizes: its layer norm as mixed-precision inference
    computes it, five ops (the input and the weights converted to f32, the norm, the output
    converted back: layer_norm_class), and a view (pairs of a view and a transpose of 768
    elements), which the ONNX graph's reshapes, splits and slices stand for, free in a graph
    runtime. Keys: "eager-norm", "eager-view"."""
    import torch
    LayerNorm = layer_norm_class()
    gpu = on_gpu(device)

    def norms(n):
        x = torch.randn(1, 1, 768).to(device, dtype)
        chain = torch.nn.Sequential(*[LayerNorm(768) for _ in range(n)]).to(device, dtype).eval()
        return synced(lambda: chain(x)) if gpu else (lambda: chain(x))

    def views(n):
        x = torch.randn(1, 768).to(device, dtype)

        def run():
            for _ in range(n):
                x.view(12, 64).transpose(0, 1)
        return synced(run) if gpu else run

    return {"eager-norm": ChainTimer(norms, 1), "eager-view": ChainTimer(views, 2)}


# ---- the host's speed -----------------------------------------------------------------------

QUIET = 0.05  # a round is quiet when the host probe ran within this of its fastest (see HostProbe)
HOST_MATCH = 0.03  # the host runs as at calibration when its probe is within this of the profile's point


class HostProbe:
    """How fast the host runs one profile point right now. A sample times chains of 1 and of 9 of
    the same operation, each the fastest of a few runs; the 9-chain's time is the host's state (a
    round whose probe ran within QUIET of the 9-chain's fastest over the whole validation is a
    quiet round), and (9-chain - 1-chain) / 8, from the fastest of each over all samples, is the
    operation's own time, for the comparison with the profile point `point` (the host at
    calibration). It is sampled before every round of every case of its runtime."""

    def __init__(self, name, make_run, point, repeats=3):
        self.name, self.point, self.repeats = name, point, repeats
        self.chains = ChainTimer(make_run, 1, links=9, warmup=3)

    @property
    def fastest_s(self):
        return self.chains.best[9]

    def sample(self):
        """The 9-chain's time now, in seconds (the fastest of this sample's runs)."""
        return self.chains.sample(self.repeats)[9]

    def per_op_s(self):
        """The operation's time at the host's fastest, or None where noise leaves nothing."""
        us = self.chains.per_op_us()
        return us * 1e-6 if us is not None else None


def host_probes():
    """The host probes of the CPU runtimes: a frozen graph's 3x3 convolution of 64 channels on
    56x56 (f32, oneDNN, channel-blocked), as in the CNNs; an eager bf16 matmul 512x512x512, as in
    the transformers. Both are points of the default calibration."""
    import torch
    from torch import nn

    def convs(n):
        x = torch.randn(1, 64, 56, 56)
        conv = nn.Conv2d(64, 64, 3, padding=1, bias=False)
        chain = nn.Sequential(*[conv] * n).eval()
        graph = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(chain, x)))
        return lambda: graph(x)

    def matmuls(n):
        x = torch.randn(512, 512).to(eager_torch_dtype())
        w = (torch.randn(512, 512) / 512 ** 0.5).to(eager_torch_dtype())  # keeps the chain's values in range
        if EAGER["dtype"] == "f32":
            # The transformers' f32 linears: oneDNN inner products (y @ w as a linear of w^T).
            layer = nn.Linear(512, 512, bias=False)
            layer.weight.data = w.t().contiguous()
            layer = as_eager_cpu(layer)
        else:
            layer = lambda y: torch.matmul(y, w)

        def run():
            y = x
            for _ in range(n):
                y = layer(y)
        return run

    torch.manual_seed(0)
    with torch.no_grad():
        return {
            "frozen": HostProbe("conv f32 3x3 64ch 56x56", convs,
                                {"table": "conv", "dtype": "f32", "layout": "blocked", "n": 1, "c": 64, "k": 64,
                                 "h": 56, "w": 56, "r": 3, "s": 3, "stride": 1, "groups": 1}),
            "eager": HostProbe(f"matmul {EAGER['dtype']} 512x512x512", matmuls,
                               {"table": "gemm", "dtype": EAGER["dtype"], "batch": 1, "m": 512, "n": 512, "k": 512}),
        }


def profile_point_s(doc, point):
    """The fastest time of the profile's warm point that matches `point`, in seconds, or None."""
    for device in (doc or {}).get("devices", []):
        if device.get("kind") != "cpu":
            continue
        for p in device.get(point["table"], []):
            if not p.get("cold_weights") and all(p.get(k) == v for k, v in point.items() if k != "table"):
                return p.get("time_s")
    return None


def quiet_rounds(case, probe):
    """How many of the case's rounds began with the host probe within QUIET of its fastest."""
    return sum(1 for t in case.host_s if t <= probe.fastest_s * (1 + QUIET))


def host_at_fastest(case, probe):
    """The probe's time before the round of the case's fastest run, over the probe's fastest
    (1.0: the host was at its quietest)."""
    if not case.host_s or not case.times_s:
        return None
    round_index = bisect.bisect_right(case.round_ends, case.times_s.index(min(case.times_s)))
    return case.host_s[round_index] / probe.fastest_s if round_index < len(case.host_s) else None


def host_fields(case, probe):
    """A row's host fields: its quiet rounds and the host's state at its fastest run."""
    if probe is None or not case.host_s:
        return {}
    return {"quiet_rounds": quiet_rounds(case, probe), "host_at_fastest": host_at_fastest(case, probe)}


def host_summary(probes, profile, overheads_us=None):
    """Per runtime: the probe's operation time here, less PyTorch's per-op cost of that runtime
    where measured, against the profile point's; over 1: the host at its fastest here was slower
    than at calibration."""
    out = {}
    for runtime, probe in probes.items():
        per_op = probe.per_op_s()
        if per_op is None:
            continue
        ref = profile_point_s(profile, probe.point)
        # The eager probe is a product: it pays a product's dispatch where that was measured.
        overheads_us = overheads_us or {}
        product_us = overheads_us.get("eager-product") if runtime == "eager" else None
        overhead_us = product_us if product_us is not None else overheads_us.get(runtime)
        own = per_op - (overhead_us or 0.0) * 1e-6
        out[runtime] = {"probe": probe.name, "per_op_ms": per_op * 1e3, "less_overhead_ms": own * 1e3,
                        "overhead_taken_off": bool(overhead_us),
                        "profile_ms": ref * 1e3 if ref else None,
                        "over_profile": own / ref if ref else None}
    return out


# ---- PyTorch's layouts ----------------------------------------------------------------------

def layout_probe_modules():
    """Estimator row kind -> (module, operands): a frozen graph runs it between two convolutions
    of 16 channels (operands 2: on the outputs of two convolutions). A ReLU runs before a batch
    norm, which would otherwise fold into the convolution."""
    import torch
    from torch import nn

    class Call(nn.Module):
        def __init__(self, f):
            super().__init__()
            self.f = f

        def forward(self, *xs):
            return self.f(*xs)

    return {
        "elementwise:relu": (nn.ReLU(), 1), "elementwise:clip": (nn.ReLU6(), 1),
        "elementwise:sigmoid": (nn.Sigmoid(), 1), "elementwise:tanh": (nn.Tanh(), 1),
        "elementwise:gelu": (nn.GELU(), 1), "elementwise:silu": (nn.SiLU(), 1),
        "elementwise:hardswish": (nn.Hardswish(), 1), "elementwise:hardsigmoid": (nn.Hardsigmoid(), 1),
        "elementwise:add": (Call(lambda a, b: a + b), 2), "elementwise:mul": (Call(lambda a, b: a * b), 2),
        "pool:max": (nn.MaxPool2d(3, 1, 1), 1), "pool:avg": (nn.AvgPool2d(3, 1, 1), 1),
        "pool:global_avg": (nn.AdaptiveAvgPool2d(1), 1),
        "concat": (Call(lambda a, b: torch.cat([a, b], 1)), 2),
        "norm:batchnorm": (nn.Sequential(nn.ReLU(), nn.BatchNorm2d(16).eval()), 1),
    }


def layout_probe_net(middle, operands):
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(16, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1)
            self.middle = middle
            self.out = nn.LazyConv2d(16, 1) if operands == 2 else nn.Conv2d(16, 16, 1)

        def forward(self, x):
            y = self.middle(self.a(x), self.b(x)) if operands == 2 else self.middle(self.a(x))
            return self.out(y)

    torch.manual_seed(0)
    x = torch.randn(1, 16, 16, 16)
    net = Net().eval()
    with torch.no_grad():
        net(x)  # sizes the lazy convolution
        return torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(net, x))), x


# Channels per group of the grouped convolutions the layout probe tries (16 channels in all).
GROUP_WIDTHS = (2, 4, 8)


def group_probe_module(width):
    """A grouped 3x3 convolution of 16 channels in groups of `width`, between ReLUs (which run
    blocked, so that only the convolution's own layout can add reorders)."""
    from torch import nn
    return nn.Sequential(nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1, groups=16 // width), nn.ReLU())


def broadcast_probe_module():
    """A squeeze-excitation scale: the activation times sigmoid(1x1 convolution(global average)),
    a broadcast [N, 16, 1, 1] operand."""
    from torch import nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool, self.conv = nn.AdaptiveAvgPool2d(1), nn.Conv2d(16, 16, 1)

        def forward(self, x):
            return x * self.conv(self.pool(x)).sigmoid()
    return Scale()


def own_kernel_modules():
    """Estimator row kind -> (module, operands) of PyTorch's own kernels, timed on plain tensors
    of 64 channels: the layout probe's elementwise ops and pools, and the batch norm alone."""
    from torch import nn
    modules = {k: v for k, v in layout_probe_modules().items() if k not in ("concat", "norm:batchnorm")}
    modules["norm:batchnorm"] = (nn.BatchNorm2d(64).eval(), 1)
    return modules


def frozen_kernels():
    """The kernels a frozen graph runs plain, in f32 (OwnKernelRates' form): on 1x64x28x28 and
    4x64x28x28 tensors; a pool's elements are its window elements (x 9 for the 3x3 pools, the
    whole 28x28 image for the global one)."""
    import torch
    return cnn_kernels(own_kernel_modules(), (1, 64, 28, 28), (4, 64, 28, 28), torch.float32)


def cnn_kernels(modules, small, large, dtype):
    """OwnKernelRates' form of `modules` (kind -> (module, operands)) on `small` and `large` 4-D
    tensors in `dtype`: a pool's elements are its window elements (the whole image for a global
    one)."""
    kernels = {}
    for kind, (module, operands) in modules.items():
        window = (small[2] * small[3] if kind.startswith("pool:global")
                  else module.kernel_size ** 2 if kind.startswith("pool:") else 1)
        kernels[kind] = (module, [small] * operands, [large] * operands, window, dtype)
    return kernels


def eager_layer():
    """What runs between two samples of an eager kernel: a transformer layer's MLP up-projection
    (bf16, 128 tokens, 768 -> 3072), as a model's ops find the caches after its matmuls, which
    stream their weights and write their outputs through them. Timed back to back on their own,
    the ops ran from caches holding their operands: a bf16 add of 128 x 768 in 12.8 us against 22
    after the layer and 30 inside BERT-base, a scaled 12 x 128 x 128 in 25 us against 41 and 46."""
    import torch
    from torch import nn
    layer = as_eager_cpu(nn.Linear(768, 3072).to(eager_torch_dtype()))
    x = torch.randn(128, 768).to(eager_torch_dtype())
    return lambda: layer(x)


def eager_kernels():
    """The kernels of the transformers' non-matmul ops in eager mode, in their dtype (bf16, or f32
    where the CPU has no bf16 matmuls in oneDNN, and then PyTorch's f32 batched matmul too)
    (OwnKernelRates' form): activations, adds, the attention's scale and softmax over rows of 128
    keys, the mixed-precision layer norm (its two conversions included), the transposes of the
    keys' view of a fused QKV output (the heads copied apart, and with the innermost axis moved),
    the decode step's KV-cache concatenation (transformer_kernels), and the copy of a linear's bias
    into its output that PyTorch's addmm makes before the product."""
    import torch
    bf16 = eager_torch_dtype()  # the eager runs' dtype (cpu_eager_dtype)
    # The scores of 6 and 24 rows of 128 queries.
    kernels = transformer_kernels(1, 4, bf16, score_rows=(768, 3072))
    # A linear's bias, copied into its output before the product adds to it (aten::addmm).
    kernels["linear:bias"] = (lambda bias, out: out.copy_(bias.expand_as(out)), [(768,), (128, 768)],
                              [(768,), (512, 768)], 1, bf16)
    if EAGER["dtype"] == "f32":
        # PyTorch's f32 batched matmul (its BLAS), in FLOPs per second: the attention's scores
        # of 12 and of 48 heads of 128 tokens by 64; the linears' bias is in oneDNN's product.
        kernels["matmul"] = (torch.matmul, [(12, 128, 64), (12, 64, 128)], [(48, 128, 64), (48, 64, 128)],
                             2 * 64, bf16)
        del kernels["linear:bias"]
    return kernels


def gpu_conv_kernels():
    """The kernels of the CNNs' ops outside cuDNN on a GPU (OwnKernelRates' form), in bf16,
    channels-last, on 16x64x56x56 and 128x64x56x56 tensors: the layout probe's elementwise ops and
    pools, and the bias that PyTorch adds to a cuDNN convolution's output in an op of its own (a
    folded batch norm's too), broadcast over the channels."""
    import torch
    small, large = (16, 64, 56, 56), (128, 64, 56, 56)
    modules = {k: v for k, v in layout_probe_modules().items() if k not in ("concat", "norm:batchnorm")}
    kernels = cnn_kernels(modules, small, large, torch.bfloat16)
    kernels["conv2d:bias"] = (lambda out, bias: out.add_(bias), [small, (1, 64, 1, 1)], [large, (1, 64, 1, 1)], 1,
                              torch.bfloat16)
    return kernels


def gpu_eager_kernels():
    """The kernels of the transformers' non-matmul ops on a GPU, in bf16 (OwnKernelRates' form), at
    batch 8 and 64 of 128 tokens: eager_kernels' set without the bias copy (cuBLAS adds a linear's
    bias in the product's epilogue)."""
    import torch
    return transformer_kernels(8, 64, torch.bfloat16, wide_activations=True)


def transformer_kernels(batch, more_batch, dtype, wide_activations=False, score_rows=None):
    """OwnKernelRates' form of a transformer layer's kernels outside its products, over `batch` and
    `more_batch` sequences of 128 tokens (the small and large sizes; the rows of the activations,
    adds and layer norm): activations (over the FFN's 3072 features with `wide_activations`, else
    768), adds, the attention's scale and softmax over rows of 128 keys, the mixed-precision layer
    norm (its two conversions included), a transpose copy of the keys' [batch, 128 tokens, 12
    heads, 64] view of a fused QKV projection's output (PyTorch copies the heads apart), the same
    view copied with its innermost axis moved ([batch, 12 heads, 64, 128 tokens], a key made
    contiguous for Q.K^T: each output row gathers elements a token apart), and the decode step's
    KV-cache concatenation: the past keys (or values) and the new token's, [batch, 12 heads, 128
    tokens, 64], joined along the tokens. `score_rows`: the scores' rows of 128 keys at the two sizes
    (default: every head's 128 queries of each sequence)."""
    import torch
    from torch import nn
    f = nn.functional
    rows, more_rows = [(batch * 128, 768)], [(more_batch * 128, 768)]
    width = 3072 if wide_activations else 768
    act, more_act = [(batch * 128, width)], [(more_batch * 128, width)]
    few, many = score_rows or (batch * 12 * 128, more_batch * 12 * 128)
    scores, more_scores = [(few, 128)], [(many, 128)]

    def heads(qkv):
        """The keys of a fused QKV projection's output [batch, tokens, 3 x 768], split into 12
        heads of 64 without a copy, as the attention's view of them is."""
        return qkv[..., 768:1536].unflatten(-1, (12, 64))
    return {
        "elementwise:gelu": (f.gelu, act, more_act, 1, dtype),
        "elementwise:gelu_tanh": (lambda x: f.gelu(x, approximate="tanh"), act, more_act, 1, dtype),
        "elementwise:relu": (torch.relu, act, more_act, 1, dtype),
        "elementwise:silu": (f.silu, act, more_act, 1, dtype),
        "elementwise:tanh": (torch.tanh, rows, more_rows, 1, dtype),
        "elementwise:sigmoid": (torch.sigmoid, rows, more_rows, 1, dtype),
        "elementwise:add": (lambda a, b: a + b, rows * 2, more_rows * 2, 1, dtype),
        "elementwise:mul": (lambda a, b: a * b, rows * 2, more_rows * 2, 1, dtype),
        "elementwise:div": (lambda x: x / 8.0, scores, more_scores, 1, dtype),
        "softmax": (lambda x: torch.softmax(x, dim=-1), scores, more_scores, 1, dtype),
        "norm:layernorm": (layer_norm_class()(768), rows, more_rows, 1, dtype),
        "transpose": (lambda qkv: heads(qkv).transpose(1, 2).contiguous(), [(batch, 128, 2304)],
                      [(more_batch, 128, 2304)], 1, dtype),
        "transpose:inner": (lambda qkv: heads(qkv).permute(0, 2, 3, 1).contiguous(), [(batch, 128, 2304)],
                            [(more_batch, 128, 2304)], 1, dtype),
        "concat": (lambda past, new: torch.cat([past, new], dim=2), [(batch, 12, 128, 64), (batch, 12, 1, 64)],
                   [(more_batch, 12, 128, 64), (more_batch, 12, 1, 64)], 1, dtype),
    }


class OwnKernelRates:
    """Elements per second of PyTorch's own kernels, by estimator row kind. `kernels`: kind ->
    (call, small operand shapes, large operand shapes, elements per output, dtype). The rate is
    (elements at the large shapes - at the small) / (time at the large - at the small), each
    time the fastest run over every sample, so that the fixed cost of a call (charged as the
    per-op overhead) drops out. Sampled at the start and once a round, as the models are;
    `before` (untimed) runs before every sample. On a GPU (`device`), operands and modules go
    there, 4-D operands channels-last with `channels_last`, and every run ends with a device
    synchronize; there the rate is the larger size's elements over the device time of the
    kernels one call launches (the profiler's, the fastest of its samples): a call of the smaller
    size is bound by the host's issue time, so a difference of wall times is no kernel's."""

    MARK = "truepeak own "  # the profiler range of one call of a kind

    def __init__(self, kernels, repeats=3, before=None, device="cpu", channels_last=False):
        import torch
        torch.manual_seed(0)
        self.repeats, self.before = repeats, before
        self.runs, self.elements = {}, {}
        self.device_s = {}  # GPU: kind -> the fastest device time of one call of the larger size
        gpu = self.gpu = on_gpu(device)
        with torch.no_grad():
            for kind, (call, small, large, per_output, dtype) in kernels.items():
                if isinstance(call, torch.nn.Module) and gpu:
                    call = call.to(device, dtype)
                for size, shapes in (("small", small), ("large", large)):
                    xs = [torch.randn(*shape).to(device, dtype) for shape in shapes]
                    if channels_last:
                        xs = [x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs]
                    run = (lambda c=call, xs=xs: c(*xs))
                    self.runs[kind, size] = synced(run) if gpu else run
                    self.elements[kind, size] = call(*xs).numel() * per_output
        self.best = {key: float("inf") for key in self.runs}
        self.sample(3 * repeats)

    def sample(self, repeats=None):
        import torch
        with torch.no_grad():
            sample_fastest(self.runs, self.best, repeats or self.repeats, self.before)
            if self.gpu:
                self.sample_device_time(repeats or self.repeats)

    def sample_device_time(self, repeats):
        """Each kind's larger size, `repeats` calls in one profiled run: the device time of the
        kernels each call launched (on average), kept where it is the fastest so far."""
        from torch.profiler import ProfilerActivity, profile, record_function
        kinds = sorted({k for k, _ in self.runs})
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for kind in kinds:
                for _ in range(repeats):
                    with record_function(self.MARK + kind):
                        self.runs[kind, "large"]()
        for event in prof.key_averages():
            if not event.key.startswith(self.MARK) or not on_host(event):
                continue
            kind = event.key[len(self.MARK):]
            per_call_s = device_us(event, own=False) / max(getattr(event, "count", 1), 1) / 1e6
            if per_call_s > 0:
                self.device_s[kind] = min(self.device_s.get(kind, float("inf")), per_call_s)

    def rates(self):
        """{kind: elements per second}; where noise leaves the larger size no slower than a
        quarter over the smaller, the larger's elements over its time. On a GPU, the larger
        size's elements over its kernels' device time where the profiler gave one."""
        out = {}
        for kind in {k for k, _ in self.runs}:
            ts, tl = self.best[kind, "small"], self.best[kind, "large"]
            es, el = self.elements[kind, "small"], self.elements[kind, "large"]
            if kind in self.device_s:
                out[kind] = el / self.device_s[kind]
            else:
                out[kind] = (el - es) / (tl - ts) if tl - ts > 0.25 * ts else el / tl
        return dict(sorted(out.items()))


def layout_probe(args):
    """Child process (ONEDNN_VERBOSE=1): which estimator op kinds PyTorch's frozen graphs run on
    channel-blocked tensors, and how many copies a layout change makes. An op runs blocked when
    its graph has no aten::to_dense beyond the one at the graph's end, as between two convolutions
    a ReLU does. The copies: the oneDNN reorders of one run of conv-SiLU-conv (SiLU runs plain)
    beyond those of conv-ReLU-conv, by direction. Prints one JSON line."""
    import ctypes
    import torch
    torch.set_num_threads(args.threads)
    libc = ctypes.CDLL(None)
    kinds = layout_probe_modules()
    nets = {kind: layout_probe_net(module, operands) for kind, (module, operands) in kinds.items()}
    nets["broadcast"] = layout_probe_net(broadcast_probe_module(), 1)
    for width in GROUP_WIDTHS:
        nets[f"group-{width}"] = layout_probe_net(group_probe_module(width), 1)
    dense = {kind: str(graph.graph).count("aten::to_dense") for kind, (graph, _) in nets.items()}
    base = dense["elementwise:relu"]
    if base != 1:
        raise SystemExit(f"layout probe: conv-ReLU-conv has {base} aten::to_dense, not 1 at the graph's end: "
                         "this PyTorch does not keep ReLU blocked, and the probe cannot tell the layouts apart")
    blocked = [kind for kind in kinds if dense[kind] <= base]
    broadcast_blocked = dense["broadcast"] <= base
    with torch.no_grad():
        for name, kind in (("base", "elementwise:relu"), ("cross", "elementwise:silu"),
                           ("broadcast", "broadcast"), *((f"group-{w}", f"group-{w}") for w in GROUP_WIDTHS)):
            graph, x = nets[kind]
            graph(x)
            graph(x)
            libc.fflush(None)
            os.write(1, f"truepeak-layout-{name}\n".encode())
            graph(x)
            libc.fflush(None)
            os.write(1, b"truepeak-layout-end\n")
    os.write(1, (json.dumps({"blocked_ops": blocked, "broadcast_blocked": broadcast_blocked}) + "\n").encode())


def reorder_directions(lines):
    """(to plain, to blocked) counts of the oneDNN reorders among ONEDNN_VERBOSE `lines`: a reorder
    from a channel-blocked source (aBcd16b, aBcd8b, ...) is to plain; from a plain source, to a plain
    copy or a blocked layout, to blocked."""
    to_plain = to_blocked = 0
    for line in lines:
        fields = exec_fields(line)
        if not fields or len(fields) < 7 or fields[3] != "reorder":
            continue
        # The source: src_f32::blocked:aBcd16b:f0 (oneDNN 2.x), src:f32::blocked:aBcd16b::f0 (3.x).
        src = next((f for f in fields[6].split() if f.startswith(("src_", "src:"))), "")
        if re.search(r":blocked:a[A-Z][a-z]*\d+[a-z]", src):
            to_plain += 1
        else:
            to_blocked += 1
    return to_plain, to_blocked


def group_reorder_widths(base_reorders, reorders_by_width):
    """The channels per group whose grouped convolution runs in a layout of its own: its
    conv-ReLU-conv-ReLU-conv run makes reorders beyond conv-ReLU-conv's (its input out of the
    blocked layout and its output back)."""
    return sorted(w for w, n in reorders_by_width.items() if n >= base_reorders + 2)


def runtime_layout(args):
    """PyTorch's layout rules for frozen graphs, probed in a child process: {"blocked_ops": [...],
    "copies": [to plain, to blocked]}, or {"error": ...}."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    cmd = [sys.executable, os.path.abspath(__file__), "--layout-probe", "--threads", str(args.threads)]
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"layout probe did not finish ({error})"}
    lines = out.stdout.splitlines()
    marks = ["truepeak-layout-base", "truepeak-layout-cross", "truepeak-layout-broadcast",
             *(f"truepeak-layout-group-{w}" for w in GROUP_WIDTHS)]
    if (out.returncode != 0 or not all(m in lines for m in marks)
            or lines.count("truepeak-layout-end") != len(marks) or not lines[-1].startswith("{")):
        return {"error": (out.stderr.strip().splitlines() or ["layout probe failed"])[-1]}
    try:
        found = json.loads(lines[-1])
    except ValueError:
        return {"error": "layout probe printed no result"}

    def run_of(mark):
        start = lines.index(mark) + 1
        return lines[start:lines.index("truepeak-layout-end", start)]
    base, cross = reorder_directions(run_of(marks[0])), reorder_directions(run_of(marks[1]))
    found["copies"] = [max(0, cross[0] - base[0]), max(0, cross[1] - base[1])]
    # A broadcast multiply between blocked tensors that makes reorders to blocked beyond
    # conv-ReLU-conv's expands its broadcast operand (PyTorch: to_dense, expand, to_mkldnn).
    broadcast = reorder_directions(run_of(marks[2]))
    found["expand_broadcast"] = bool(found.pop("broadcast_blocked", False)) and broadcast[1] > base[1]
    found["group_reorders"] = group_reorder_widths(
        sum(base), {w: sum(reorder_directions(run_of(f"truepeak-layout-group-{w}"))) for w in GROUP_WIDTHS})
    if max(found["copies"]) > 8:
        return {"error": f"layout probe counted {found['copies']} copies per layout change (more than 8)"}
    return found


# ---- oneDNN probe ---------------------------------------------------------------------------

def probe(args):
    """Child process: run one case a few times with ONEDNN_VERBOSE=1 set before torch loads, each
    run after a line of its own (PROBE_RUN) once the first has made the primitives."""
    import torch
    torch.set_num_threads(args.threads)
    import ctypes
    libc = ctypes.CDLL(None)
    if not args.system_malloc:
        keep_freed_memory()  # as the timed runs
    case = build_case(args.probe, args.probe_batch, args.seq, args.context)
    with torch.no_grad():
        case.runner()  # first run: weight reorders and JIT of the primitives
        libc.fflush(None)
        os.write(1, PROBE_START.encode() + b"\n")
        for _ in range(args.probe_runs):
            os.write(1, PROBE_RUN.encode() + b"\n")
            case.runner()
            libc.fflush(None)


PROBE_START, PROBE_RUN = "truepeak-probe-start", "truepeak-probe-run"
SUMMARY_RUNS = 2  # probe runs the primitive counts (onednn_summary) come from


def verbose_body(line):
    """The fields of an ONEDNN_VERBOSE line after its marker, without what other oneDNN versions put
    before the operation (a timestamp with ONEDNN_VERBOSE_TIMESTAMP=1, a format version such as
    "v1", the record type "primitive"), else None: "exec,cpu,..." and "info,..." lines alike."""
    fields = line.split(",")
    if fields[0] not in ("onednn_verbose", "dnnl_verbose"):
        return None
    rest = fields[1:]
    while rest and (re.fullmatch(r"[\d.]+|v\d+", rest[0]) or rest[0] == "primitive"):
        rest = rest[1:]
    return rest


def exec_fields(line):
    """The comma-separated fields of an ONEDNN_VERBOSE line of an executed primitive, in oneDNN
    2.x's order ("exec" in [1], kind in [3], implementation in [4], problem in [-2], milliseconds
    in [-1]), else None."""
    rest = verbose_body(line)
    if rest and len(rest) > 3 and rest[0] == "exec":
        return [line.split(",", 1)[0]] + rest
    return None


def onednn_version(line):
    """The version of oneDNN its ONEDNN_VERBOSE info line names, else None."""
    rest = verbose_body(line)
    m = re.match(r"info,oneDNN v([\d.]+)", ",".join(rest)) if rest else None
    return m.group(1) if m else None


def probe_command(name, args, batch=1, runs=SUMMARY_RUNS):
    # The profile sets the dtype the transformers run in (cpu_eager_dtype).
    cmd = [sys.executable, os.path.abspath(__file__), "--probe", name, "--threads", str(args.threads),
           "--seq", str(args.seq), "--context", str(args.context), "--probe-batch", str(batch),
           "--probe-runs", str(runs), "--profile", args.profile]
    return cmd + (["--system-malloc"] if args.system_malloc else [])


def onednn_summary(name, args):
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    cmd = probe_command(name, args)
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    version, counts = None, {}
    lines = out.stdout.splitlines()
    if PROBE_START in lines:
        start = lines.index(PROBE_START)
        lines = [l for l in lines[:start] if ",info," in l] + lines[start + 1:]
    for line in lines:
        version = onednn_version(line) or version
        fields = exec_fields(line)
        if fields:
            key = f"{fields[3]}:{fields[4]}"  # primitive kind : implementation
            counts[key] = counts.get(key, 0) + 1
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1:] or ["probe failed"]}
    return {"onednn_version": version, "primitives": counts}


# ---- truepeak -------------------------------------------------------------------------------

def find_truepeak(path):
    if path:
        return path
    for candidate in ("build/truepeak", "build-release/truepeak", "build-onnx/truepeak"):
        full = os.path.join(ROOT, candidate)
        if os.path.exists(full):
            return full
    return shutil.which("truepeak") or os.path.join(ROOT, "build/truepeak")


def find_key(doc, key):
    """First value of `key` in a JSON document, depth first."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = find_key(v, key)
            if found is not None:
                return found
    elif isinstance(doc, list):
        for v in doc:
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def estimate(args, case, onnx_path, overhead_us=None, layout=None, own_rates=None, product_us=None,
             kind_us=None, eager_kind_us=None):
    """`own_rates`: the rates of PyTorch's own kernels in the case's runtime (kind -> elements/s):
    for a frozen graph, of the ops its layout runs plain (so with the layout only); in eager mode,
    of every op outside oneDNN. `product_us`: an eager run's cost per linear and matmul, where its
    products pay more than its other ops (runtime_overheads' "eager-product"). `kind_us`: a
    frozen graph's cost per op of the elementwise kinds that differ from a convolution's
    (frozen_kind_us). `eager_kind_us`: an eager run's cost per op of the kinds its chains timed
    apart (eager_kinds_us: its layer norm, its views)."""
    cmd = [args.truepeak, "estimate", "--profile", args.profile, "--model", onnx_path, "--format", "json",
           "--batch", str(case.batch), "--dtype", case.dtype]
    if case.seq and case.model != "gpt2_decode":
        cmd += ["--seq", str(case.seq)]
    if on_gpu(args.device):
        cmd += ["--device", args.device]
    if case.conv_layout:
        cmd += ["--conv-layout", case.conv_layout]
    if overhead_us is not None:
        cmd += ["--op-overhead-us", f"{overhead_us:.3f}"]
    kinds = {}
    if case.runtime == "eager":
        kinds = {"linear": product_us, "matmul": product_us} if product_us is not None else {}
        kinds.update(eager_kind_us or {})
    elif case.runtime == "frozen":
        kinds = dict(sorted((kind_us or {}).items()))
    if kinds:
        cmd += ["--kind-overhead-us", ",".join(f"{k}={v:.3f}" for k, v in kinds.items())]
    if getattr(args, "typical_times", False):
        cmd += ["--typical-times"]
    if case.runtime == "frozen" or (case.runtime == "eager" and case.dtype == "f32" and not on_gpu(args.device)):
        # The frozen graphs run each Linear as a 1x1 convolution (linears_as_convolutions), the
        # f32 eager runs as oneDNN's inner product, which it runs the same way.
        cmd += ["--linears-as-convs"]
    with_layout = bool(layout) and case.runtime == "frozen" and "error" not in layout
    if with_layout:
        cmd += ["--blocked-ops", ",".join(layout["blocked_ops"]) or "conv2d",
                "--layout-copies", ",".join(str(c) for c in layout["copies"])]
        if layout.get("expand_broadcast"):
            cmd += ["--expand-broadcast"]
        if layout.get("group_reorders"):
            cmd += ["--group-reorders", ",".join(str(w) for w in layout["group_reorders"])]
    if getattr(case, "in_place_ops", None):
        cmd += ["--in-place-ops", ",".join(case.in_place_ops)]
    if own_rates and (with_layout or case.runtime in ("eager", "eager-conv")):
        cmd += ["--own-rates", ",".join(f"{k}={v:.4g}" for k, v in own_rates.items())]
    return run_estimate(cmd, case.runtime == "frozen")


def run_estimate(cmd, frozen):
    """Runs one `truepeak estimate` command line; its latency, naive latency, per-family and
    per-layer times, reorders and warnings, or its error. `frozen`: a frozen graph's layers."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        return {"error": f"truepeak estimate did not run ({error})", "command": cmd}
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1], "command": cmd}
    doc = json.loads(out.stdout)
    ops = find_key(doc, "ops") or []
    return {"latency_s": find_key(doc, "latency_s"), "naive_s": find_key(doc, "naive_latency_s"),
            "breakdown_ms": predicted_breakdown(doc, device_time="--device" in cmd),
            "layer_ms": predicted_layers(ops, frozen),
            "reorders": sum(1 for op in ops if ":reorder_" in op.get("kind", "")),
            "warnings": [l for l in out.stderr.splitlines() if l.strip()], "command": cmd}


def prediction_fields(predicted_s, naive_s, measured_s):
    """A row's predicted and naive times (ms) and their errors against the measured time."""
    return {"predicted_ms": predicted_s * 1e3 if predicted_s else None,
            "error_pct": error_pct(predicted_s, measured_s),
            "naive_ms": naive_s * 1e3 if naive_s else None, "naive_error_pct": error_pct(naive_s, measured_s)}


def export_onnx(case, path):
    """One file per model, batch left dynamic: the importer binds it from --batch."""
    import torch
    dynamic = {name: {0: "batch"} for name in case.input_names}
    with torch.no_grad():
        torch.onnx.export(case.module, case.inputs, path, opset_version=17, input_names=case.input_names,
                          dynamic_axes=dynamic, do_constant_folding=True)


# ---- timing ---------------------------------------------------------------------------------

SETTLE_ROUNDS, SETTLE_GAIN = 3, 0.01  # see settled()


# A visit runs a case at most this many times, however short its runs.
MOST_RUNS_A_VISIT = 50
CPU_SPAN_S = 240  # the default --span-s on the CPU (main memory's spells here last up to 40 s)


def run_round(cases, runs, probes=None, visit_s=0.0):
    """One visit to each case: `runs` runs, and more until the visit has lasted `visit_s`. The
    first runs after another model's are slow here (seen: a small CNN's first 17-36% over its
    steady time, its fifth still up to 12%), so a short model runs on until it is warm again."""
    for case in cases:
        probe = (probes or {}).get(case.runtime)
        if probe:
            case.host_s.append(probe.sample())
        visit_start = time.perf_counter()
        done = 0
        while done < runs or (time.perf_counter() - visit_start < visit_s and done < MOST_RUNS_A_VISIT):
            start = time.perf_counter()
            case.runner()
            case.times_s.append(time.perf_counter() - start)
            done += 1
        case.round_ends.append(len(case.times_s))


def round_ends_of(count, runs):
    """The round ends of `count` runs taken `runs` a round (files without round ends)."""
    return list(range(runs, count + 1, runs)) if runs else []


def fastest_by_round(times_s, ends):
    """The fastest run so far after each round, from a case's times and where its rounds ended."""
    return [min(times_s[:end]) for end in ends if end > 0]


def settled(case, rounds, gain):
    """True when the case's fastest run has not improved by more than `gain` over its last `rounds`
    rounds: a busy spell that covered its early rounds has then passed, or lasts."""
    history = fastest_by_round(case.times_s, case.round_ends)
    return len(history) > rounds and history[-1 - rounds] <= history[-1] * (1 + gain)


def measure(cases, args, each_round=None, probes=None, host_state=None):
    """Warm-up, then `rounds` rounds of every case. A case runs extra rounds, up to --extra-rounds
    of them, while its fastest run still improved by more than 1% over its last 3 rounds, or while
    none of its rounds was quiet (`probes`: runtime -> HostProbe): interference comes in spells of
    seconds to minutes here, and a spell that covered a case's rounds leaves its fastest run above
    the machine's. Every run counts (interference only adds time). `each_round` runs after every
    round (the per-op overhead chains). Then, with `host_state` (a function: each runtime's probe
    over its profile point), the wait of --host-wait (wait_for_host); returns its record, or None."""
    import torch
    with torch.no_grad():
        timed_rounds(cases, args, each_round, probes)
        if host_state and probes and getattr(args, "host_wait", 0) > 0:
            return wait_for_host(cases, args, each_round, probes, host_state)
    return None


def slower_than_calibrated(state):
    """The runtimes of a host state (runtime -> the probe over its profile point, None where it
    was not compared) whose probe ran more than HOST_MATCH slower than at calibration."""
    return {k for k, v in state.items() if v is not None and v > 1 + HOST_MATCH}


def wait_for_host(cases, args, each_round, probes, host_state):
    """Up to --host-wait seconds: while a runtime's probe has not yet run as fast as at calibration
    (host_state(): runtime -> its probe's fastest over the profile's point, None where there is no
    comparison), that runtime's cases run more rounds, their probe timed before each visit (a run
    in the wait can only lower a case's fastest); the cases of the other runtimes that had no
    quiet round against their probe's fastest run more rounds too. Returns what it did: seconds
    waited, rounds run, and each probed runtime's state at the end (True: as at calibration,
    False: still slower, None: not compared)."""
    start = time.perf_counter()
    rounds = 0
    probed = {c.runtime for c in cases if c.runtime in probes}  # the runtimes that have cases here
    while time.perf_counter() - start < args.host_wait:
        slow = slower_than_calibrated(host_state()) & probed
        late = [c for c in cases if c.runtime in probes and
                (c.runtime in slow or quiet_rounds(c, probes[c.runtime]) == 0)]
        if not late:
            break
        rounds += 1
        visit_round(late, args, probes, each_round, lambda: f"host round {rounds}")
    state = host_state()
    slow = slower_than_calibrated(state) & probed
    waited = time.perf_counter() - start
    if waited > 0.1:
        print(f"  waited {waited:.0f} s for the host to run as at calibration"
              + (f"; still slower: {', '.join(sorted(slow))}" if slow else ""), file=sys.stderr, flush=True)
    return {"waited_s": waited, "rounds": rounds, "limit_s": args.host_wait,
            "as_calibrated": {runtime: None if state.get(runtime) is None else runtime not in slow
                              for runtime in sorted(probed)}}


def behind(case, probes):
    """True while the case needs another round: not settled, or no quiet round yet."""
    probe = (probes or {}).get(case.runtime)
    return (not settled(case, SETTLE_ROUNDS, SETTLE_GAIN)
            or (probe is not None and quiet_rounds(case, probe) == 0))


def host_text(cases, probes):
    """The host probes' last times over their fastest, for the progress lines."""
    last = {}
    for case in cases:
        if case.host_s and case.runtime in (probes or {}):
            last[case.runtime] = case.host_s[-1]
    return "".join(f", host {probes[k].name.split()[0]} {v / probes[k].fastest_s:.2f}x" for k, v in last.items())


def visit_s(args):
    return getattr(args, "visit_ms", 0) / 1e3


def timed_rounds(cases, args, each_round=None, probes=None):
    """Warm-up, then --rounds rounds of every case, and more rounds of every case until --span-s
    seconds have passed since the first began: the host's slow and fast spells last seconds to
    minutes here, and a case's fastest run is only the machine's when its rounds span several.
    Then the extra rounds of the cases still behind."""
    for case in cases:
        for _ in range(args.warmup):
            case.runner()
    start = time.perf_counter()
    span_s = getattr(args, "span_s", 0) or 0
    r = 0
    while r < args.rounds or time.perf_counter() - start < span_s:
        r += 1
        visit_round(cases, args, probes, each_round,
                    lambda: f"round {r}/{args.rounds}" if r <= args.rounds
                    else f"round {r} ({time.perf_counter() - start:.0f} of {span_s:g} s)")
    for extra in range(args.extra_rounds):
        late = [c for c in cases if behind(c, probes)]
        if not late:
            break
        visit_round(late, args, probes, each_round, lambda: f"extra round {extra + 1}/{args.extra_rounds}")


def visit_round(cases, args, probes, each_round, label):
    """One round of `cases` (run_round), then `each_round` (the samplers that follow every round),
    then the progress line: `label()`, taken once the round has run, and each case's fastest run."""
    run_round(cases, args.runs, probes, visit_s(args))
    if each_round:
        each_round()
    print(f"  {label()}: " + ", ".join(f"{c.key} {min(c.times_s) * 1e3:.1f}" for c in cases)
          + host_text(cases, probes), file=sys.stderr, flush=True)


# ---- layer by layer -------------------------------------------------------------------------

LAYER_RUNS = 8  # verbose runs of a case for --layers
LAYER_ROWS = 12  # layers a case lists in the report, the longest (measured or predicted) first


def conv_layer(groups, batch, c, k, size, kernel, stride, pad):
    return f"conv g{groups} mb{batch} {c}>{k} {size} k{kernel} s{stride} p{pad}"


def gemm_layer(batch, rows, cols, depth):
    return f"gemm b{batch} {rows}x{cols}x{depth}"


def primitive_layer(kind, problem):
    """The layer a oneDNN primitive computes, from ONEDNN_VERBOSE's problem field, as the key the
    estimate's rows share (layer_of_row); None for other primitives. A convolution's
    `g32mb8_ic128oc128_ih56oh56kh3sh1dh0ph1_iw56...` (oneDNN 2.6; other versions write
    `mb8_g32ic128...`) is "conv g32 mb8 128>128 56 k3 s1 p1"; a
    matmul's `96x1x64:96x64x129:96x1x129` (source, weights, destination) is "gemm b96 1x129x64"
    (rows x columns x depth)."""
    if kind == "convolution":
        m = re.match(r"(?:g(\d+))?mb(\d+)_(?:g(\d+))?ic(\d+)oc(\d+)_ih(\d+)oh\d+kh(\d+)sh(\d+)dh\d+ph(\d+)",
                     problem)
        if not m:
            return None
        g_before, mb, g_after, ic, oc, ih, kh, sh, ph = m.groups()
        return conv_layer(int(g_before or g_after or 1), *(int(v) for v in (mb, ic, oc, ih, kh, sh, ph)))
    if kind == "matmul":
        try:
            dims = [[int(d) for d in part.split("x")] for part in problem.split(":")[:2] if part]
        except ValueError:  # a size known only at run time ("*")
            return None
        if len(dims) != 2 or len(dims[0]) != len(dims[1]) or len(dims[0]) < 2:
            return None
        src, wei = dims
        batch = 1
        for d in src[:-2]:
            batch *= d
        return gemm_layer(batch, src[-2], wei[-1], src[-1])
    return None


def layer_of_row(kind, shape, linears_as_convs=False):
    """The layer of one of the estimate's rows (its kind and shape), as primitive_layer keys it:
    a conv2d's `g1mb8ic64ih56oc256kh1sh1ph0dh1`, a linear's or matmul's `b96m1n129k64`; a linear
    run as a 1x1 convolution (frozen graphs) keys as that convolution. None for other rows."""
    base = kind.split(":")[0]
    if base == "conv2d":
        m = re.match(r"g(\d+)mb(\d+)ic(\d+)ih(\d+)oc(\d+)kh(\d+)sh(\d+)ph(\d+)", shape)
        if not m:
            return None
        g, mb, ic, ih, oc, kh, sh, ph = (int(v) for v in m.groups())
        return conv_layer(g, mb, ic, oc, ih, kh, sh, ph)
    if base in ("linear", "matmul"):
        m = re.match(r"b(\d+)m(\d+)n(\d+)k(\d+)", shape)
        if not m:
            return None
        b, rows, cols, depth = (int(v) for v in m.groups())
        if base == "linear" and linears_as_convs:
            return conv_layer(1, rows, depth, cols, 1, 1, 1, 0)
        return gemm_layer(b, rows, cols, depth)
    return None


def verbose_runs(lines):
    """The primitives of each run after a PROBE_RUN line: [(kind, problem, ms), ...] a run."""
    runs = []
    for line in lines:
        if line == PROBE_RUN:
            runs.append([])
            continue
        fields = exec_fields(line)
        if runs and fields:
            try:
                runs[-1].append((fields[3], fields[-2], float(fields[-1])))
            except ValueError:
                pass
    return runs


def fastest_primitives(runs):
    """Each primitive of a run at its fastest over the runs that ran the same sequence of
    primitives (the most common one): [(kind, problem, ms), ...]."""
    shapes = [tuple((k, p) for k, p, _ in run) for run in runs if run]
    if not shapes:
        return []
    common = max(shapes, key=shapes.count)  # ties: the first
    same = [run for run, shape in zip((r for r in runs if r), shapes) if shape == common]
    return [(k, p, min(run[i][2] for run in same)) for i, (k, p) in enumerate(common)]


def layer_table(primitives, predicted):
    """Per layer: the primitives' fastest times inside the model against the estimate's kernel
    times (predicted: key -> [rows, ms]). Returns {"layers": [...], "other_ms": {kind: ms},
    "matched_ms": [measured, predicted]}, layers the longest (measured or predicted) first."""
    measured, other = {}, {}
    for kind, problem, ms in primitives:
        key = primitive_layer(kind, problem)
        if key is None:
            other[kind] = other.get(kind, 0.0) + ms
            continue
        entry = measured.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += ms
    layers = []
    def longest(key):
        return -max(measured.get(key, [0, 0.0])[1], predicted.get(key, [0, 0.0])[1]), key
    for key in sorted(set(measured) | set(predicted), key=longest):
        m, p = measured.get(key, [0, 0.0]), predicted.get(key, [0, 0.0])
        layers.append({"layer": key, "measured": m[0], "predicted": p[0], "measured_ms": m[1],
                       "predicted_ms": p[1]})
    both = [l for l in layers if l["measured"] and l["predicted"]]
    return {"layers": layers, "other_ms": dict(sorted(other.items())),
            "matched_ms": [sum(l["measured_ms"] for l in both), sum(l["predicted_ms"] for l in both)]}


def predicted_layers(ops, linears_as_convs=False):
    """key -> [rows, ms] over the estimate's forward rows: each row's kernel time (its time less
    its per-op overhead, which the primitives' times do not hold)."""
    out = {}
    for op in ops:
        if op.get("phase") not in (None, "forward", "prefill", "decode"):
            continue
        key = layer_of_row(op.get("kind", ""), op.get("shape", ""), linears_as_convs)
        if key is None:
            continue
        entry = out.setdefault(key, [0, 0.0])
        entry[0] += 1
        entry[1] += (op.get("time_s", 0.0) - op.get("overhead_s", 0.0)) * 1e3
    return out


def measured_layers(case, args):
    """The case's primitives at their fastest over LAYER_RUNS verbose runs in a child process."""
    env = dict(os.environ, ONEDNN_VERBOSE="1", DNNL_VERBOSE="1")
    try:
        out = subprocess.run(probe_command(case.source, args, case.batch, LAYER_RUNS), env=env,
                             capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        print(f"  {case.key}: the layer probe ran past 30 minutes; no layer table", file=sys.stderr)
        return None
    if out.returncode != 0:
        print(f"  {case.key}: the layer probe failed; no layer table: "
              + ((out.stderr.strip().splitlines() or ["exit %d" % out.returncode])[-1]), file=sys.stderr)
        return None
    return fastest_primitives(verbose_runs(out.stdout.splitlines()))


def layers_text(row):
    """The report's lines for one case's layer table."""
    table = row["layers"]
    shown = table["layers"][:LAYER_ROWS]
    m, p = table["matched_ms"]
    lines = ["", f"{row['model']} b{row['batch']} {row['dtype']}, layer by layer: the primitives' fastest times "
             f"inside the model (each over {LAYER_RUNS} verbose runs) against the estimate's kernel times "
             f"(per-op overhead left out); {len(shown)} of {len(table['layers'])} layers, the longest first.", "",
             "| layer | primitives / rows | measured ms | predicted ms | measured / predicted |",
             "|---|---:|---:|---:|---:|"]
    for l in shown:
        ratio = l["measured_ms"] / l["predicted_ms"] if l["measured"] and l["predicted_ms"] > 0 else None
        lines.append(f"| {l['layer']} | {l['measured']} / {l['predicted']} | {l['measured_ms']:.3f} | "
                     f"{l['predicted_ms']:.3f} | {fmt(ratio, '.2f')} |")
    lines.append(f"| all layers in both | | {m:.2f} | {p:.2f} | {fmt(m / p if p > 0 else None, '.2f')} |")
    if table["other_ms"]:
        lines.append("")
        lines.append("Other primitives, ms: " + ", ".join(f"{k} {v:.2f}" for k, v in table["other_ms"].items()) + ".")
    return lines


# ---- per-kind breakdown ---------------------------------------------------------------------

# PyTorch op (self time) -> the estimator's op family. Copies are PyTorch's own layout moves.
TORCH_KINDS = [
    ("gemm", ("convolution", "conv2d", "addmm", "aten::mm", "bmm", "matmul", "linear", "baddbmm")),
    ("norm", ("layer_norm", "batch_norm", "group_norm")),
    ("softmax", ("softmax",)),
    ("pool", ("pool",)),
    ("embedding", ("embedding", "index_select")),
    ("copy", ("copy_", "clone", "contiguous", "aten::cat", "to_dense", "to_mkldnn", "_to_copy", "expand")),
    ("elementwise", ("relu", "add", "mul", "div", "sub", "gelu", "hardtanh", "sigmoid", "tanh", "erf", "clamp",
                     "silu", "hardswish")),
]


def torch_kind(name):
    # A frozen TorchScript graph's oneDNN convolutions (prim::mkldnn_convolution) record no event
    # of their own: their time is the self time of the graph's "forward".
    if name == "forward":
        return "gemm"
    for kind, keys in TORCH_KINDS:
        if any(k in name for k in keys):
            return kind
    return "other"


def estimate_kind(kind):
    if kind == "linear:bias":
        return "copy"  # aten::copy_ of the expanded bias
    if kind == "conv2d:bias":
        return "elementwise"  # aten::add_ of the bias after cuDNN's convolution
    base = kind.split(":")[0]
    return {"conv2d": "gemm", "linear": "gemm", "matmul": "gemm", "attention": "gemm", "transpose": "copy",
            "concat": "copy", "reshape": "free"}.get(base, base)


def device_us(event, own=True):
    """The time of the GPU kernels that a profiled op launched itself (`own`), or that it and the
    ops inside it launched, in microseconds (the attribute's name changed in PyTorch 2.4)."""
    names = ("self_device_time_total", "self_cuda_time_total") if own else ("device_time_total", "cuda_time_total")
    for name in names:
        value = getattr(event, name, None)
        if value is not None:
            return value
    return 0.0


def on_host(event):
    """Whether a profiler event is an op on the host (not a GPU kernel or copy)."""
    return str(getattr(event, "device_type", "CPU")).rsplit(".", 1)[-1] == "CPU"


BREAKDOWN_OPS = 16  # the longest ops (by name and input shapes) a breakdown lists


def measured_breakdown(case, repeats=3, gpu=False, ops=None):
    """Time per op family from the fastest of a few profiled runs, in ms: on the CPU each op's
    self time; on a GPU the time of the kernels each op launched (device time), with the kernels
    no op claims under "unattributed". `ops`, a list, receives that run's longest ops by name and
    input shapes: [name, shapes, calls, ms]."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    best, best_ops = None, []
    with torch.no_grad():
        for _ in range(repeats):
            with profile(activities=activities, record_shapes=ops is not None) as prof:
                case.runner()
            kinds, kernels_us, longest = {}, 0.0, []
            for event in prof.key_averages(group_by_input_shape=ops is not None):
                if gpu and not on_host(event):
                    kernels_us += device_us(event)
                    continue
                us = device_us(event) if gpu else event.self_cpu_time_total
                k = torch_kind(event.key)
                kinds[k] = kinds.get(k, 0.0) + us / 1e3
                if us > 0:
                    longest.append([event.key, str(getattr(event, "input_shapes", "") or ""),
                                    getattr(event, "count", 1), us / 1e3])
            if gpu:
                kinds = {k: v for k, v in kinds.items() if v > 0}
                rest = kernels_us / 1e3 - sum(kinds.values())
                if rest > 1e-3:
                    kinds["unattributed"] = rest
            if best is None or sum(kinds.values()) < sum(best.values()):
                best, best_ops = kinds, sorted(longest, key=lambda o: -o[3])[:BREAKDOWN_OPS]
    if ops is not None:
        ops[:] = best_ops
    return best


def predicted_breakdown(doc, device_time=False):
    """The estimate's time per op family, in ms; with `device_time` (a GPU) each op's kernel time
    alone, without the host's issue time beyond it, as the GPU's measured breakdown counts."""
    kinds = {}
    for op in find_key(doc, "ops") or []:
        if op.get("phase") not in (None, "forward", "prefill"):
            continue
        k = estimate_kind(op.get("kind", "other"))
        t = op.get("time_s", 0.0) - (op.get("overhead_s", 0.0) if device_time else 0.0)
        kinds[k] = kinds.get(k, 0.0) + t * 1e3
    return kinds


# ---- report ---------------------------------------------------------------------------------

def error_pct(predicted, measured):
    if predicted is None or measured is None or measured <= 0:
        return None
    return 100.0 * (predicted - measured) / measured


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def overhead_text(runtime, us):
    if runtime == "eager-product":
        return f"eager PyTorch's linears and matmuls through oneDNN {fmt(us, '.1f')} us"
    if runtime == "eager-norm":
        return f"eager PyTorch's mixed-precision layer norm (five ops) {fmt(us, '.1f')} us"
    if runtime == "eager-view":
        return f"eager PyTorch's views {fmt(us, '.1f')} us"
    if runtime.startswith("frozen "):
        return f"frozen PyTorch's {runtime.split(' ', 1)[1]} {fmt(us, '.1f')} us"
    return f"{runtime} PyTorch {fmt(us, '.1f')} us"


def write_report(rows, summary, meta, out_base):
    os.makedirs(os.path.dirname(out_base) or ".", exist_ok=True)
    write_atomic(out_base + ".json", json.dumps({"meta": meta, "rows": rows, "summary": summary}, indent=2) + "\n")
    gpu = on_gpu(meta.get("device", "cpu"))
    lines = [f"Validation on {meta['machine']} ({meta['date_utc']}), profile `{meta['profile']}`, "
             + ("" if gpu else f"{meta['threads']} threads, ") + f"{meta['rounds']} rounds x {meta['runs']} runs"
             + (f" or more, a case running on in its round until {meta['visit_ms']:g} ms had passed"
                if meta.get("visit_ms") else "")
             + (f", every case's rounds going on until {meta['span_s']:g} s had passed" if meta.get("span_s") else "")
             + ".",
             f"Command: `{meta['command']}`"]
    if meta.get("calibration"):
        c = meta["calibration"]
        lines.append((f"The validation that timed these runs calibrated its profile just before them"
                      if meta.get("reestimated_from") else
                      "The profile was calibrated by this validation just before the runs")
                     + f": `{c['command']}` ({c['seconds']:.0f} s, ended {c['date_utc']}).")
    if meta.get("reestimated_from"):
        lines.append(f"The times are those of `{meta['reestimated_from']}` (measured {meta['date_utc']}); "
                     "only the estimates ran again.")
    if meta.get("measure_command"):
        lines.append(f"Times measured on that machine with `{meta['measure_command']}`.")
    if meta.get("allocator"):
        lines.append(f"Allocator: {meta['allocator']}.")
    if meta.get("extra_rounds"):
        lines.append(f"A case whose fastest run still improved by more than {SETTLE_GAIN:.0%} over its last "
                     f"{SETTLE_ROUNDS} rounds" + (", or that had no quiet round (host probe)," if meta.get("host_probes")
                                                  else "")
                     + f" ran extra rounds, up to {meta['extra_rounds']} (rounds column).")
    if meta.get("layout"):
        lines.append(layout_text(meta["layout"]) + ".")
    in_place = {}
    for row in rows:
        if row.get("in_place_ops"):
            in_place.setdefault(", ".join(k.split(":", 1)[-1] for k in row["in_place_ops"]), []).append(row["model"])
    if in_place:
        lines.append("Run in place (the frozen graphs' nodes; estimated so with --in-place-ops): "
                     + "; ".join(f"{', '.join(dict.fromkeys(models))}: {kinds}" for kinds, models in in_place.items())
                     + ".")
    if meta.get("own_kernel_rates"):
        lines.append(rates_text(meta["own_kernel_rates"]) + " (measured beside the models).")
    if meta.get("host_probes"):
        lines.append(probes_text(meta["host_probes"]) + ".")
    if meta.get("host_wait"):
        lines.append(host_wait_text(meta["host_wait"]) + ".")
    lines += [
             "Per-op overhead: " + ("; ".join(overhead_text(k, v) for k, v in meta["runtime_overhead_us"].items())
                                    + " (tiny-op chains, measured beside the models)" if meta.get("runtime_overhead_us")
                                    else "the profile's (the library's alone)") + ".", "",
             "| model | batch | dtype | measured ms (fastest) | median ms | spread | rounds | host at fastest (quiet rounds) | "
             "predicted ms | error | naive ms | naive error | reorders run / estimated | library |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['batch']} | {r['dtype']} | {fmt(r['measured_ms'], '.2f')} | "
            f"{fmt(r['median_ms'], '.2f')} | {fmt(r['spread'], '.2f')}x | "
            f"{r.get('rounds') or '-'} | {host_cell(r)} | "
            f"{fmt(r['predicted_ms'], '.2f')} | "
            f"{fmt(r['error_pct'], '+.1f')}% | {fmt(r['naive_ms'], '.2f')} | {fmt(r['naive_error_pct'], '+.1f')}% | "
            f"{fmt(r.get('reorders'), 'd')} / {fmt(r.get('predicted_reorders'), 'd')} | {r['library']} |")
    lines += ["", f"Median absolute error: {fmt(summary['median_abs_error_pct'], '.1f')}% "
              f"(naive roofline: {fmt(summary['naive_median_abs_error_pct'], '.1f')}%); worst: "
              f"{fmt(summary['worst_abs_error_pct'], '.1f')}% (naive: {fmt(summary['naive_worst_abs_error_pct'], '.1f')}%); "
              f"rows closer than naive: {summary['rows_better_than_naive']}/{summary['rows']}."]
    with_breakdown = [r for r in rows if r.get("measured_breakdown_ms")]
    if with_breakdown:
        lines += ["", "Time per op family, ms: measured / predicted. " + (
            "Measured: the GPU kernels each PyTorch op launched (profiler device time, fastest of 3 profiled "
            "runs); predicted: each op's kernel time, without the host's issue time beyond it." if gpu else
            "Measured: PyTorch profiler self time, fastest of 3 profiled runs; profiling adds overhead."), ""]
        kinds = sorted({k for r in with_breakdown for k in list(r["measured_breakdown_ms"]) +
                        list(r.get("predicted_breakdown_ms") or {})} - {"free"})
        lines += ["| model | batch | " + " | ".join(kinds) + " |", "|---|---:|" + "---:|" * len(kinds)]
        for r in with_breakdown:
            m, p = r["measured_breakdown_ms"], r.get("predicted_breakdown_ms") or {}
            lines.append(f"| {r['model']} | {r['batch']} | " + " | ".join(
                f"{m.get(k, 0):.1f} / {p.get(k, 0):.1f}" for k in kinds) + " |")
    for r in rows:
        if r.get("layers"):
            lines += layers_text(r)
    # What truepeak estimate said of each export (unknown node types, approximations), once a model.
    warned = {}
    for r in rows:
        for w in r.get("estimate_warnings") or []:
            warned.setdefault(r["model"], []).append(w.removeprefix("truepeak: "))
    if warned:
        lines += ["", "Estimate warnings:"]
        for model, warnings in warned.items():
            lines += [f"- {model}: {w}" for w in dict.fromkeys(warnings)]
    errors = [r for r in rows if r.get("estimate_error")]
    if errors:
        lines += ["", "Estimates that failed (left out of the median and worst):"]
    for r in errors:
        lines.append(f"- {r['model']} b{r['batch']}: estimate failed: {r['estimate_error']}")
    text = "\n".join(lines) + "\n"
    write_atomic(out_base + ".md", text)
    return text


def write_atomic(path, text):
    """Writes `text` to a temporary file beside `path`, then renames it: never half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=directory, delete=False, suffix=".tmp") as f:
        f.write(text)
    os.replace(f.name, path)


def layout_text(layout):
    if "error" in layout:
        return f"PyTorch's layouts: probe failed ({layout['error']}); estimated without layout changes"
    return ("PyTorch's layouts (probed): frozen graphs run convolutions and "
            + (", ".join(layout["blocked_ops"]) or "nothing else") + " on channel-blocked tensors, the rest "
            f"plain; a layout change copies {layout['copies'][0]} time(s) to plain, {layout['copies'][1]} to blocked"
            + ("; a broadcast operand of a blocked multiply is expanded and reordered to blocked"
               if layout.get("expand_broadcast") else "")
            + (f"; grouped convolutions of {'/'.join(str(w) for w in layout['group_reorders'])} channels a "
               "group reorder their input out of the blocked layout and their output back"
               if layout.get("group_reorders") else ""))


def host_cell(row):
    if row.get("quiet_rounds") is None:
        return "-"
    return f"{fmt(row.get('host_at_fastest'), '.2f')}x ({row['quiet_rounds']})"


def probes_text(probes):
    parts = []
    for runtime, p in probes.items():
        ratio = p.get("over_profile")
        parts.append(f"{runtime}: {p['probe']} {p['less_overhead_ms']:.3f} ms at its fastest here"
                     + (f", {p['profile_ms']:.3f} ms in the profile ({ratio:.2f}x)" if ratio else
                        " (no such point in the profile)"))
    taken_off = all(p.get("overhead_taken_off", True) for p in probes.values())
    return ("Host probes, timed before every round of every case"
            + (" (PyTorch's per-op cost taken off)" if taken_off else "") + "; the "
            f"host column is the probe before the case's fastest run over the probe's fastest, and the "
            f"rounds that began within {QUIET:.0%} of it: " + "; ".join(parts))


def host_wait_text(wait):
    """The wait for the host to run as at calibration (wait_for_host), in a line."""
    state = wait.get("as_calibrated") or {}
    slow = [k for k, ok in state.items() if ok is False]
    unknown = [k for k, ok in state.items() if ok is None]
    return (f"Wait for the host to run as at calibration (each probe within {HOST_MATCH:.0%} of its profile point; "
            f"meanwhile the cases of a slower one run on), up to {wait['limit_s']:.0f} s: {wait['waited_s']:.0f} s, "
            f"{wait['rounds']} more round(s); "
            + (f"still slower at the end: {', '.join(slow)}" if slow else
               "every probe compared got there" if unknown else "every probe got there")
            + (f"; not compared (no profile point, or noise): {', '.join(unknown)}" if unknown else ""))


def rates_where(runtime):
    if runtime == "frozen":
        return "frozen graphs, f32, for the ops that run plain"
    if runtime == "eager":
        return (f"eager mode, {EAGER['dtype']}, for the ops outside oneDNN, each timed after a 768 -> 3072 linear "
                "over 128 tokens" + ("; matmul in G FLOP/s" if EAGER["dtype"] == "f32" else ""))
    return runtime


def rates_text(rates):
    """`rates`: runtime -> {kind: elements per second}."""
    return ("PyTorch's own kernels (G elements/s; pools: window elements): " + "; ".join(
        f"{rates_where(runtime)}: " + ", ".join(f"{k} {v / 1e9:.2f}" for k, v in kinds.items())
        for runtime, kinds in rates.items()))


def run_reorders(info):
    """oneDNN reorders one run of the case executed (the probe ran it SUMMARY_RUNS times), or None."""
    if not info or "error" in info:
        return None
    return sum(n for key, n in info["primitives"].items() if key.split(":")[0] == "reorder") // SUMMARY_RUNS


def library_text(info):
    if not info:
        return "not probed"
    if "error" in info:
        return "probe failed"
    prims = {}
    for key, count in info["primitives"].items():
        kind = key.split(":")[0]
        prims[kind] = prims.get(kind, 0) + count
    if not prims:
        return "PyTorch native (no oneDNN primitive ran)"
    parts = ", ".join(f"{k} {v // SUMMARY_RUNS}" for k, v in sorted(prims.items()))
    return f"oneDNN {info.get('onednn_version') or '?'}: {parts}"


def summarize(rows):
    errs = [abs(r["error_pct"]) for r in rows if r["error_pct"] is not None]
    naive_errs = [abs(r["naive_error_pct"]) for r in rows if r["naive_error_pct"] is not None]
    better = sum(1 for r in rows if r["error_pct"] is not None and r["naive_error_pct"] is not None
                 and abs(r["error_pct"]) < abs(r["naive_error_pct"]))
    return {
        "rows": len(rows), "rows_better_than_naive": better,
        "median_abs_error_pct": statistics.median(errs) if errs else None,
        "worst_abs_error_pct": max(errs) if errs else None,
        "naive_median_abs_error_pct": statistics.median(naive_errs) if naive_errs else None,
        "naive_worst_abs_error_pct": max(naive_errs) if naive_errs else None,
    }


def reestimate_drops(args):
    """The options a re-estimate leaves out of the recorded commands: with --library-overhead the
    per-op costs measured in PyTorch, with --profile-rates the rates of PyTorch's own kernels."""
    drops = []
    if args.library_overhead:
        drops += ["--op-overhead-us", "--kind-overhead-us"]
    if args.profile_rates:
        drops.append("--own-rates")
    return drops


def without_options(cmd, names):
    """A command line without the named options and their values."""
    out, skip = [], False
    for i, item in enumerate(cmd):
        if skip:
            skip = False
        elif item in names:
            skip = i + 1 < len(cmd)
        else:
            out.append(item)
    return out


def reestimate(args):
    """--reestimate FILE: the estimates of an earlier validation run again, with this --truepeak and
    --profile, against the times it measured (a change to the estimator or the profile, judged on
    the same measurements, free of the host's noise between two validations)."""
    source = args.reestimate
    try:
        with open(source) as f:
            doc = json.load(f)
        rows, meta = doc["rows"], doc["meta"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        usage_error(f"validate.py: --reestimate {source}: not a validation written by this script ({error})")
    truepeak = args.truepeak or os.path.join(ROOT, "build", "truepeak")
    if not os.access(truepeak, os.X_OK):
        usage_error(f"validate.py: --truepeak {truepeak}: not an executable (build first, or pass its path)")
    for i, row in enumerate(rows):
        cmd = row.get("estimate_command")
        if not cmd or "--profile" not in cmd:
            usage_error(f"validate.py: --reestimate {source}: row {i} ({row.get('model')} b{row.get('batch')}) "
                        "records no estimate command (a validation from before they were recorded)")
        cmd = without_options(cmd, reestimate_drops(args))
        cmd[0] = truepeak
        cmd[cmd.index("--profile") + 1] = args.profile
        if args.typical_times and "--typical-times" not in cmd:
            cmd.append("--typical-times")
        model = cmd[cmd.index("--model") + 1]
        if not os.path.exists(model):
            usage_error(f"validate.py: --reestimate {source}: row {i}: model file {model} is gone "
                        "(export it again with the original command)")
        e = run_estimate(cmd, False)
        measured = row["measured_ms"] / 1e3 if row.get("measured_ms") else None
        row.update(prediction_fields(e.get("latency_s"), e.get("naive_s"), measured))
        row.update({"estimate_error": e.get("error"), "estimate_warnings": e.get("warnings", []),
                    "estimate_command": cmd, "predicted_breakdown_ms": e.get("breakdown_ms"), "layers": None})
        print(f"  {row['model']} b{row['batch']}: predicted {fmt(row['predicted_ms'], '.2f')} ms", file=sys.stderr,
              flush=True)
    meta = dict(meta, truepeak=truepeak,
                profile=os.path.relpath(args.profile, ROOT) if args.profile.startswith(ROOT) else args.profile,
                command=" ".join(["scripts/validate.py"] + sys.argv[1:]),
                reestimated_from=source)
    print(write_report(rows, summarize(rows), meta, args.out))


def main():
    parser = argparse.ArgumentParser(description="Validate truepeak estimates against PyTorch runs.")
    parser.add_argument("--profile", default=DEFAULT_PROFILE)
    parser.add_argument("--truepeak", default=None, help="the truepeak executable (default: build/truepeak)")
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS),
                        help="comma-separated: bert_base, gpt2_prefill, gpt2_decode, any torchvision "
                             "classification model (resnet34, densenet121, efficientnet_b0, ...), and "
                             "FILE.py:FUNCTION for a model of your own: FUNCTION(batch) returns a "
                             "torch.nn.Module and its inputs (a tensor or a tuple), the batch their first "
                             "dimension; a floating-point first input runs as the CNNs do (frozen, f32), "
                             "an integer one (token ids) as the transformers (eager); rows are named "
                             "FUNCTION; default: the public set")
    parser.add_argument("--batches", default="1,8")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3, help="runs of each case per round, at least")
    parser.add_argument("--visit-ms", type=float, default=100,
                        help="a case runs on in its round until this long has passed (at most %d runs): "
                             "the first runs after another model's are slow" % MOST_RUNS_A_VISIT)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--extra-rounds", type=int, default=8,
                        help="at most this many more rounds for the cases whose fastest run still "
                             "improved by more than 1%% over their last 3 rounds (a case needs more than 3 "
                             "rounds to count as settled), or, on the CPU, that had no quiet round (the host "
                             "probe within 5%% of its fastest); 0: none")
    parser.add_argument("--calibrate", action="store_true",
                        help="first calibrate this machine's device (truepeak calibrate, about 3 minutes on "
                             "the CPU) into --profile, then validate against that profile: the profile and "
                             "the runs then see the host in the same few minutes")
    parser.add_argument("--span-s", type=float, default=None,
                        help="keep running rounds of every case until this many seconds have passed since "
                             "the first began, so that each case's fastest run is taken over the host's slow "
                             "and fast spells (default: %g on the CPU, 0 on a GPU)" % CPU_SPAN_S)
    parser.add_argument("--host-wait", type=float, default=300,
                        help="on the CPU, after the rounds: while a host probe has not run within 3%% of its "
                             "profile point (as at calibration), up to this many seconds, its runtime's cases run "
                             "more rounds, and so do the other cases with no quiet round; 0: no wait (default "
                             "%(default)s; with another machine's profile the wait takes all of it)")
    parser.add_argument("--seq", type=int, default=128, help="sequence (prefill) length of the transformers")
    parser.add_argument("--context", type=int, default=128, help="KV-cache length of the decode step")
    parser.add_argument("--threads", type=int, default=None, help="default: the profile's, else all cores")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "validation"),
                        help="output path without extension: writes OUT.md and OUT.json")
    parser.add_argument("--onnx-dir", default=None, help="keep the exported ONNX files here")
    parser.add_argument("--breakdown", action="store_true",
                        help="also profile each case and compare time per op family with the estimate's (on a "
                             "GPU: the device time of the kernels each op launched; with --measure-only it is "
                             "written to FILE, and --measured reports it)")
    parser.add_argument("--reuse-onnx", action="store_true", help="use ONNX files already in --onnx-dir")
    parser.add_argument("--no-probe", action="store_true",
                        help="skip the ONEDNN_VERBOSE probe runs (the primitive counts and PyTorch's layouts)")
    parser.add_argument("--library-overhead", action="store_true",
                        help="estimate with the profile's per-op overhead (oneDNN's alone) instead of "
                             "PyTorch's, measured here with chains of tiny ops (with --reestimate: leave out "
                             "the recorded per-op costs)")
    parser.add_argument("--device", default="cpu",
                        help="cpu, or cuda:N: run the models on that GPU and estimate for the profile's "
                             "device of that id")
    parser.add_argument("--measure-only", metavar="FILE",
                        help="time the models here and write the times (and PyTorch's per-op overhead) "
                             "to FILE; no ONNX export, no estimate")
    parser.add_argument("--measured", metavar="FILE",
                        help="take the times from FILE, written by --measure-only (on the GPU machine), "
                             "instead of timing here")
    parser.add_argument("--reestimate", metavar="FILE",
                        help="run again the estimates of a validation written by this script (FILE.json), "
                             "with --truepeak and --profile, against the times it measured; nothing is timed")
    parser.add_argument("--system-malloc", action="store_true",
                        help="CPU: leave glibc's malloc at its defaults (large activations are then "
                             "paged in fresh every run) instead of keeping freed memory for reuse")
    parser.add_argument("--no-layout", action="store_true",
                        help="CPU: estimate frozen graphs without PyTorch's layout changes (probed here: "
                             "which ops run on channel-blocked tensors, copies per change)")
    parser.add_argument("--profile-rates", action="store_true",
                        help="CPU: cost the ops that run in PyTorch's own kernels (those a frozen graph runs "
                             "plain, and an eager run's ops outside oneDNN) with the profile's figures instead "
                             "of the rates of PyTorch's kernels, measured here (with --reestimate: leave out "
                             "the recorded rates)")
    parser.add_argument("--typical-times", action="store_true",
                        help="estimate with each profile point's typical time (the median of its quietest look) "
                             "instead of its fastest sample")
    parser.add_argument("--layers", action="store_true",
                        help="CPU: also time each case's oneDNN primitives (ONEDNN_VERBOSE, %d runs in a child "
                             "process) and compare them layer by layer with the estimate's rows" % LAYER_RUNS)
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    parser.add_argument("--probe-batch", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--probe-runs", type=int, default=2, help=argparse.SUPPRESS)
    parser.add_argument("--layout-probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reestimate:
        if args.calibrate:
            usage_error("validate.py: --calibrate calibrates this machine for the runs timed here; with --reestimate "
                        "nothing is timed (pass the profile to estimate with as --profile)")
        reestimate(args)
        return

    if not re.fullmatch(r"cpu|cuda:\d+", args.device):
        usage_error(f"validate.py: --device {args.device}: expected cpu or cuda:N")
    if not args.visit_ms >= 0:
        usage_error(f"validate.py: --visit-ms {args.visit_ms}: must be 0 or more")
    if args.rounds < 1 or args.runs < 1 or args.extra_rounds < 0:
        usage_error(f"validate.py: --rounds {args.rounds}, --runs {args.runs}, --extra-rounds {args.extra_rounds}: "
                 "rounds and runs must be 1 or more, extra rounds 0 or more")
    if args.measure_only and args.measured:
        usage_error("validate.py: --measure-only and --measured exclude each other")
    measured_doc = load_measured(args.measured) if args.measured else None
    if measured_doc:
        args.device = measured_doc["device"]
    gpu = on_gpu(args.device)
    if args.span_s is None:
        args.span_s = 0.0 if gpu else CPU_SPAN_S
    if not (math.isfinite(args.span_s) and args.span_s >= 0):
        usage_error(f"validate.py: --span-s {args.span_s:g}: must be 0 or more seconds")
    if args.breakdown and measured_doc:
        usage_error("validate.py: --breakdown profiles the runs in this process; with --measured the breakdown "
                    "is the one FILE holds (from --measure-only --breakdown)")
    if args.layers and (gpu or measured_doc or args.measure_only):
        usage_error("validate.py: --layers times oneDNN's primitives on this CPU; it is not available with "
                    "--device cuda:N, --measured or --measure-only")
    if args.calibrate and (measured_doc or args.measure_only):
        usage_error("validate.py: --calibrate calibrates this machine for the runs timed here; it is not "
                    "available with --measured or --measure-only")
    if args.calibrate and gpu and os.path.abspath(args.profile) == DEFAULT_PROFILE:
        usage_error(f"validate.py: --calibrate --device {args.device}: name the GPU's profile with --profile "
                    f"(the default, {os.path.relpath(DEFAULT_PROFILE, ROOT)}, is this machine's CPU profile)")
    calibration = None
    if not (args.probe or args.layout_probe):  # the probes' child processes are checked by their parent
        # What can be refused is refused before the minutes of a calibration that replaces --profile.
        batches = batches_of(args)
        models = [m for m in args.models.split(",") if m]
        check_model_names(models)
        args.truepeak = find_truepeak(args.truepeak)
        if not args.measure_only and not os.access(args.truepeak, os.X_OK):
            usage_error(f"validate.py: --truepeak {args.truepeak}: not an executable (build truepeak first, or pass "
                        "its path)")
        if args.calibrate:
            calibration = calibrate(args)
    profile_doc = read_profile(args.profile)
    if args.threads is None:
        args.threads = profile_threads(profile_doc) or os.cpu_count()
    EAGER["dtype"] = cpu_eager_dtype(profile_doc)
    if args.probe:
        return probe(args)
    if args.layout_probe:
        return layout_probe(args)
    import torch
    torch.set_num_threads(args.threads)
    if gpu and not measured_doc and not torch.cuda.is_available():
        usage_error(f"validate.py: --device {args.device}: PyTorch {torch.__version__} sees no CUDA device here")

    if gpu and not measured_doc:
        print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name(args.device)}, cuDNN "
              f"{torch.backends.cudnn.version()}", file=sys.stderr)
    elif not gpu:
        print(f"PyTorch {torch.__version__}, {args.threads} threads, mkldnn available: "
              f"{torch.backends.mkldnn.is_available()}", file=sys.stderr)
    allocator = None
    if not gpu and not measured_doc:
        allocator = "glibc malloc defaults (--system-malloc)" if args.system_malloc else keep_freed_memory()
        print(f"  allocator: {allocator}", file=sys.stderr)
    libraries = {}
    if not args.no_probe and not gpu and not args.measure_only and not measured_doc:
        for m in models:
            libraries[m] = onednn_summary(m, args)
            print(f"  {m}: {library_text(libraries[m])}", file=sys.stderr, flush=True)

    # PyTorch's per-op overhead: sampled at the start and after every round, the fastest chains
    # over all of them (as each model's fastest run); the estimates follow the measurements.
    timers = None
    if not measured_doc and (not args.library_overhead or args.measure_only):
        timers = gpu_overheads(args.device) if gpu else runtime_overheads()

    kind_timers = [None]  # the frozen graphs' elementwise kinds, once the layout is known

    def overheads_now():
        if measured_doc:
            return None if args.library_overhead else measured_doc.get("runtime_overhead_us")
        if not timers:
            return None
        us = timers.us()
        if kind_timers[0]:
            us.update({f"frozen {kind}": v for kind, v in frozen_kind_us(kind_timers[0].us(), us.get("frozen")).items()})
        return us

    layout = None
    # The layouts of this machine's PyTorch, for the estimates of the cases it times here.
    if not gpu and not args.no_layout and not args.no_probe and not args.measure_only and not measured_doc:
        layout = runtime_layout(args)
        print("  " + layout_text(layout), file=sys.stderr, flush=True)
    cases = [build_case(m, b, args.seq, args.context, args.device, runnable=not measured_doc)
             for m in models for b in batches]
    # The rates of PyTorch's own kernels, for the ops the layout model runs plain in the frozen
    # graphs and for the eager runs' ops outside oneDNN: sampled at the start and after every
    # round, as the per-op overhead.
    own = {}
    if not gpu and not measured_doc and not args.measure_only and not args.profile_rates:
        runtimes = {c.runtime for c in cases}
        if "frozen" in runtimes and layout and "error" not in layout:
            own["frozen"] = OwnKernelRates(frozen_kernels())
        if "eager" in runtimes:
            own["eager"] = OwnKernelRates(eager_kernels(), before=eager_layer())
    if gpu and not measured_doc:
        # Both runtimes' kernels whatever the models: a file of one set's times serves the other's too.
        own["eager"] = OwnKernelRates(gpu_eager_kernels(), device=args.device)
        own["eager-conv"] = OwnKernelRates(gpu_conv_kernels(), device=args.device, channels_last=True)
    # A frozen graph's cost per elementwise op, for the kinds its layout runs blocked (those that
    # run plain change layout too, which the estimate costs as copies of their own).
    if not gpu and not measured_doc and not args.library_overhead and layout and "error" not in layout \
            and any(c.runtime == "frozen" for c in cases):
        kind_timers[0] = frozen_kind_timers(layout["blocked_ops"])
    samplers = [t.sample for t in (timers, kind_timers[0], *own.values()) if t]
    each_round = (lambda: [sample() for sample in samplers]) if samplers else None
    # The host's speed before every round of every case (CPU: a shared machine's neighbours come
    # and go); a case runs extra rounds until one of its rounds was quiet.
    probes = host_probes() if not gpu and not measured_doc and not args.measure_only else None
    if args.measure_only:
        measure(cases, args, each_round, probes)
        breakdowns, longest = None, {}
        if args.breakdown:
            breakdowns = {c.key: measured_breakdown(c, gpu=gpu, ops=longest.setdefault(c.key, [])) for c in cases}
        return write_measured(args, cases, overheads_now(), allocator, breakdowns, longest,
                              {runtime: rates.rates() for runtime, rates in own.items()})
    if measured_doc:
        missing = [c.key for c in cases if c.key not in measured_doc["times_s"]]
        if missing:
            usage_error(f"validate.py: {args.measured}: no times for {', '.join(missing)} "
                     f"(it holds {', '.join(measured_doc['times_s']) or 'none'})")
        for case in cases:
            case.times_s = list(measured_doc["times_s"][case.key])
            case.round_ends = list((measured_doc.get("round_ends") or {}).get(case.key) or
                                   round_ends_of(len(case.times_s), measured_doc["meta"].get("runs")))
    onnx_dir = args.onnx_dir or tempfile.mkdtemp(prefix="truepeak-validate-")
    os.makedirs(onnx_dir, exist_ok=True)
    paths = {}
    for case in cases:
        if case.model in paths:
            continue
        paths[case.model] = path = os.path.join(onnx_dir, f"{case.model}.onnx")
        if not (args.reuse_onnx and os.path.exists(path)):
            print(f"  exporting {case.model} to {path}", file=sys.stderr, flush=True)
            export_onnx(case, path)

    host_wait = None
    if not measured_doc:
        def host_state():
            summary = host_summary(probes, profile_doc, overheads_now())
            return {k: summary.get(k, {}).get("over_profile") for k in probes}
        host_wait = measure(cases, args, each_round, probes, host_state if probes else None)
    overheads = overheads_now()
    if overheads:
        print("  PyTorch per-op overhead: " + ", ".join(
            f"{k} {fmt(v, '.1f')} us" + ("" if v is not None else " (not measurable: the profile's)")
            for k, v in overheads.items()), file=sys.stderr, flush=True)
    own_rates = {runtime: rates.rates() for runtime, rates in own.items()}
    if measured_doc and not args.profile_rates:
        own_rates = dict(measured_doc.get("own_kernel_rates") or {})
    if own_rates:
        print("  " + rates_text(own_rates), file=sys.stderr, flush=True)
    estimates = {}
    for case in cases:
        estimates[case.key] = estimate(args, case, paths[case.model],
                                       None if overheads is None else overheads[case.runtime], layout,
                                       own_rates.get(case.runtime),
                                       None if overheads is None or gpu else overheads.get("eager-product"),
                                       {k.split(" ", 1)[1]: v for k, v in (overheads or {}).items()
                                        if k.startswith("frozen ")},
                                       eager_kinds_us(overheads))
        e = estimates[case.key]
        print(f"  {case.key}: predicted {fmt(e.get('latency_s') and e['latency_s'] * 1e3, '.2f')} ms"
              + (f" ({e['error']})" if "error" in e else ""), file=sys.stderr, flush=True)
    breakdowns = dict((measured_doc or {}).get("breakdowns_ms") or {})
    if args.breakdown:
        for case in cases:
            breakdowns[case.key] = measured_breakdown(case, gpu=gpu)
    layer_tables = {}
    if args.layers:
        for case in cases:
            print(f"  {case.key}: timing its primitives layer by layer", file=sys.stderr, flush=True)
            primitives = measured_layers(case, args)
            if primitives is not None and "layer_ms" in estimates[case.key]:
                layer_tables[case.key] = layer_table(primitives, estimates[case.key]["layer_ms"])

    rows = []
    for case in cases:
        t = case.times_s
        e = estimates[case.key]
        measured = min(t) if t else None
        predicted = e.get("latency_s")
        naive = e.get("naive_s")
        rows.append({
            "model": case.model, "batch": case.batch, "dtype": case.dtype, "seq": case.seq, "context": case.context,
            "measured_ms": measured * 1e3 if measured else None, "median_ms": statistics.median(t) * 1e3 if t else None,
            "spread": max(t) / min(t) if t else None, "runs": len(t),
            "rounds": len(case.round_ends) or None,
            "fastest_by_round_ms": [f * 1e3 for f in fastest_by_round(t, case.round_ends)] or None,
            **prediction_fields(predicted, naive, measured),
            "library": gpu_library_text(measured_doc or {"meta": torch_meta(torch)}) if gpu
                       else library_text(libraries.get(case.source)),
            "onednn": libraries.get(case.source),
            "reorders": run_reorders(libraries.get(case.source)), "predicted_reorders": e.get("reorders"),
            "in_place_ops": case.in_place_ops,
            "estimate_error": e.get("error"), "estimate_warnings": e.get("warnings", []),
            "estimate_command": e.get("command"),
            "predicted_breakdown_ms": e.get("breakdown_ms"), "measured_breakdown_ms": breakdowns.get(case.key),
            "layers": layer_tables.get(case.key),
            **host_fields(case, (probes or {}).get(case.runtime)),
        })
    summary = summarize(rows)
    where = measured_doc["meta"] if measured_doc else None
    meta = {
        "date_utc": where["date_utc"] if where else datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        "machine": where["machine"] if where else f"{cpu_model()}, {os.cpu_count()} cores, {platform.node()}",
        "device": args.device,
        "profile": os.path.relpath(args.profile, ROOT) if args.profile.startswith(ROOT) else args.profile,
        "truepeak": args.truepeak, "torch": where["torch"] if where else torch.__version__,
        "threads": where["threads"] if where else args.threads,
        "rounds": where["rounds"] if where else args.rounds, "runs": where["runs"] if where else args.runs,
        "visit_ms": where.get("visit_ms") if where else args.visit_ms,
        "span_s": where.get("span_s") if where else args.span_s,
        "command": " ".join(["scripts/validate.py"] + sys.argv[1:]),
        "measure_command": where["command"] if where else None,
        "runtime_overhead_us": overheads,
        "allocator": where.get("allocator") if where else allocator,
        "extra_rounds": where.get("extra_rounds") if where else args.extra_rounds,
        "layout": layout,
        "own_kernel_rates": own_rates or None,
        "host_probes": host_summary(probes, profile_doc, overheads) if probes else None,
        "host_wait": host_wait,
        "calibration": calibration,
    }
    print(write_report(rows, summary, meta, args.out))


def write_measured(args, cases, overheads, allocator, breakdowns=None, longest=None, own_rates=None):
    """--measure-only: the times of every case, the per-op overheads and the rates of PyTorch's own
    kernels (and, with --breakdown, each case's time per op family and its longest ops), for
    --measured."""
    import torch
    gpu = on_gpu(args.device)
    doc = {
        "device": args.device,
        "meta": {
            "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "machine": (f"{torch.cuda.get_device_name(args.device)}, host {platform.node()}" if gpu
                        else f"{cpu_model()}, {os.cpu_count()} cores, {platform.node()}"),
            **torch_meta(torch),
            "threads": args.threads, "rounds": args.rounds, "runs": args.runs,
            "visit_ms": args.visit_ms, "extra_rounds": args.extra_rounds, "span_s": args.span_s,
            "command": " ".join(["scripts/validate.py"] + sys.argv[1:]),
            "allocator": allocator,
        },
        "runtime_overhead_us": overheads,
        "times_s": {c.key: c.times_s for c in cases},
        "round_ends": {c.key: c.round_ends for c in cases},
    }
    if own_rates:
        doc["own_kernel_rates"] = own_rates
    if breakdowns:
        doc["breakdowns_ms"] = breakdowns
        doc["breakdown_ops"] = longest
    write_atomic(args.measure_only, json.dumps(doc, indent=1) + "\n")
    for c in cases:
        print(f"{c.key}: fastest {min(c.times_s) * 1e3:.3f} ms, median "
              f"{statistics.median(c.times_s) * 1e3:.3f} ms over {len(c.times_s)} runs")
    print(f"wrote {args.measure_only}")


def load_measured(path):
    """A --measure-only file, checked enough to fail with one clear line."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as error:
        usage_error(f"validate.py: --measured {path}: cannot read it ({error.strerror})")
    except ValueError as error:
        usage_error(f"validate.py: --measured {path}: not JSON ({error})")
    ok = (isinstance(doc, dict) and isinstance(doc.get("times_s"), dict) and isinstance(doc.get("meta"), dict)
          and isinstance(doc.get("device"), str)
          and all(isinstance(v, list) and v and all(isinstance(t, (int, float)) and t > 0 for t in v)
                  for v in doc["times_s"].values()))
    if not ok:
        usage_error(f"validate.py: --measured {path}: not a file written by --measure-only "
                 "(needs device, meta and times_s with positive times)")
    rates = doc.get("own_kernel_rates")
    if rates is not None and not (isinstance(rates, dict) and all(
            isinstance(r, dict) and all(isinstance(v, (int, float)) and v > 0 for v in r.values()) for r in rates.values())):
        usage_error(f"validate.py: --measured {path}: own_kernel_rates must map each runtime to positive rates by kind")
    breakdowns = doc.get("breakdowns_ms")
    if breakdowns is not None and not (isinstance(breakdowns, dict) and all(
            isinstance(b, dict) and all(isinstance(v, (int, float)) for v in b.values()) for b in breakdowns.values())):
        usage_error(f"validate.py: --measured {path}: breakdowns_ms must map each case to ms per op family")
    ends = doc.get("round_ends")
    if ends is not None and not (isinstance(ends, dict) and all(
            isinstance(e, list) and all(isinstance(i, int) for i in e) and e == sorted(set(e))
            and (not e or (e[0] > 0 and e[-1] == len(doc["times_s"].get(key, []))))
            for key, e in ends.items())):
        usage_error(f"validate.py: --measured {path}: round_ends must give each case's run counts at the end "
                    "of its rounds, increasing, the last one its number of times")
    return doc


def torch_meta(torch):
    """The library versions of this process's PyTorch, as --measure-only records them."""
    return {"torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.cuda.is_available() else None}


def gpu_library_text(doc):
    meta = doc.get("meta", {})
    return (f"cuDNN {meta.get('cudnn') or '?'} / cuBLAS (PyTorch {meta.get('torch', '?')}, "
            f"CUDA {meta.get('cuda') or '?'})")


def batches_of(args):
    """--batches as a list of whole numbers of 1 or more, or one line and exit 2."""
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        batches = []
    if not batches or min(batches) < 1:
        usage_error(f"validate.py: --batches {args.batches}: expected batch sizes of 1 or more, comma-separated")
    return batches


def calibrate_command(args):
    """`truepeak calibrate` for --calibrate: the validation's device and threads, the profile to
    --profile, labelled by its file name."""
    label = os.path.splitext(os.path.basename(args.profile))[0] or "validation"
    cmd = [args.truepeak, "calibrate", "--device", args.device, "--label", label, "--out", args.profile]
    return cmd + (["--threads", str(args.threads)] if args.threads else [])


def calibrate(args):
    """--calibrate: runs truepeak calibrate (its progress on stderr, its summary too) and returns
    what ran and how long it took, for the report; a failed calibration ends the validation."""
    cmd = calibrate_command(args)
    print("  calibrating: " + " ".join(cmd), file=sys.stderr, flush=True)
    start = time.perf_counter()
    run = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # its progress on stderr as it goes
    print(run.stdout, end="", file=sys.stderr, flush=True)  # then its summary
    if run.returncode != 0:
        print(f"validate.py: --calibrate: truepeak calibrate exited with status {run.returncode}", file=sys.stderr)
        sys.exit(run.returncode)
    return {"command": " ".join(["truepeak"] + cmd[1:]),
            "date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
            "seconds": time.perf_counter() - start}


def read_profile(path):
    """The profile's JSON, or None where it cannot be read (truepeak estimate then says why)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def profile_threads(doc):
    """The threads the profile's CPU was calibrated with (`doc`: read_profile's), or None."""
    if doc is None:
        return None
    for device in doc.get("devices", []):
        if device.get("kind") == "cpu":
            for where in ("conditions", "properties"):
                threads = device.get(where, {}).get("threads")
                if isinstance(threads, int) and threads > 0:
                    return threads
    return None


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


if __name__ == "__main__":
    sys.exit(main())
