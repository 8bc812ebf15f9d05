"""What the PyTorch runtimes share: the framework check, versions, the Linear-as-convolution
rewrite, the op kinds by estimator row name, the own-kernel rates over the size grids and the
main-memory bandwidth of PyTorch's own kernels. torch is imported where it is used."""
import contextlib
import copy
import os
import re
import sys

from runtimes import grids, harness, record

DEBIAN_TORCH = "/usr/bin/python3"


def version_tuple(text):
    """(major, minor) of a version string such as "1.13.0a0+git" or "2.3.1+cpu"."""
    m = re.match(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def install_hint(need_2x=False):
    """The command that installs a PyTorch this interpreter can use."""
    if need_2x:
        return "scripts/setup-venv.sh torch"
    if sys.executable == DEBIAN_TORCH:
        return "apt-get install python3-torch (or scripts/setup-venv.sh torch and --python .venv/bin/python)"
    return "scripts/setup-venv.sh torch (or --python /usr/bin/python3 with Debian's python3-torch)"


def require_torch(runtime, minimum=(1, 10), need_2x=False):
    """torch, or harness.FrameworkMissing with one line naming the install command."""
    try:
        import torch
    except ImportError as error:
        raise harness.FrameworkMissing(f"{runtime} needs PyTorch, which {sys.executable} cannot import "
                                       f"({error}): {install_hint(need_2x)}") from None
    if version_tuple(torch.__version__) < minimum:
        if need_2x:
            raise harness.FrameworkMissing(f"{runtime} needs torch 2.x, {sys.executable} has "
                                           f"{torch.__version__}: {install_hint(True)}")
        raise harness.FrameworkMissing(f"{runtime} needs torch >= {minimum[0]}.{minimum[1]}, {sys.executable} has "
                                       f"{torch.__version__}: {install_hint()}")
    return torch


def versions(torch):
    """torch, oneDNN, the BLAS and CUDA as this build reports them."""
    out = {"torch": torch.__version__}
    config = torch.__config__.show()
    m = re.search(r"(?:MKL-DNN|oneDNN) v([\d.]+)", config)
    if m:
        out["onednn"] = m.group(1)
    m = re.search(r"BLAS_INFO=([^,\s]+)", config)
    if m:
        out["blas"] = m.group(1)
    if torch.version.cuda:
        out["cuda"] = torch.version.cuda
    return out


def framework(torch):
    return f"torch {torch.__version__}"


def set_threads(torch, threads):
    torch.set_num_threads(threads)


def host_probe(torch, started):
    """harness.HostProbe over a harness.HOST_PROBE_SIDE^3 f32 product on the host's CPU (on a GPU
    run too: the host's speed is what it says)."""
    side = harness.HOST_PROBE_SIDE
    a = harness.random_input("torch", (side, side), torch.float32, "cpu", seed=harness.SEED + 91)
    b = harness.random_input("torch", (side, side), torch.float32, "cpu", seed=harness.SEED + 92)
    out = torch.empty(side, side)

    def call():
        with torch.no_grad():
            torch.mm(a, b, out=out)
    with torch.no_grad():
        harness.check_close("host probe matmul", torch.mm(a, b), a.double() @ b.double(), 1e-4,
                            1e-5 * side ** 0.5)
    return harness.HostProbe("matmul f32", f"{side}x{side}x{side}", call, started=started)


def linears_as_convolutions(module):
    """Replaces every nn.Linear inside `module` by the same product as a 1x1 convolution, in
    place, and returns `module`. A frozen f32 graph runs nn.Linear as aten::linear on PyTorch's
    BLAS (Debian's torch 1.13: the generic reference BLAS), a 1x1 convolution on oneDNN with
    prepacked weights, the library the profile measures."""
    import torch
    from torch import nn

    class ConvLinear(nn.Module):
        def __init__(self, linear):
            super().__init__()
            self.conv = nn.Conv2d(linear.in_features, linear.out_features, 1, bias=linear.bias is not None)
            with torch.no_grad():
                self.conv.weight.copy_(linear.weight[:, :, None, None])
                if linear.bias is not None:
                    self.conv.bias.copy_(linear.bias)

        def forward(self, x):
            y = self.conv(x.reshape(-1, x.shape[-1], 1, 1))
            return y.reshape(*x.shape[:-1], y.shape[1])

    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.Linear):
                setattr(parent, name, ConvLinear(child))
    return module


def call_module(f):
    """f as an nn.Module (so that it traces and deep-copies like one)."""
    from torch import nn

    class Call(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = f

        def forward(self, *xs):
            return self.f(*xs)
    return Call()


def elementwise_modules():
    """Estimator row kind -> (module, operands) of the elementwise ops probes time."""
    import torch
    from torch import nn
    return {
        "elementwise:relu": (nn.ReLU(), 1), "elementwise:clip": (nn.ReLU6(), 1),
        "elementwise:sigmoid": (nn.Sigmoid(), 1), "elementwise:tanh": (nn.Tanh(), 1),
        "elementwise:gelu": (nn.GELU(), 1), "elementwise:silu": (nn.SiLU(), 1),
        "elementwise:hardswish": (nn.Hardswish(), 1), "elementwise:hardsigmoid": (nn.Hardsigmoid(), 1),
        "elementwise:add": (call_module(torch.add), 2), "elementwise:mul": (call_module(torch.mul), 2),
    }


def image_modules(channels):
    """Estimator row kind -> (module, operands) of the ops of image-shaped activations besides
    the elementwise ones: 3x3 pools (stride 1, padded), the global average, an inference batch
    norm over `channels` and a concatenation of two along the channels."""
    import torch
    from torch import nn
    norm = nn.BatchNorm2d(channels).eval()
    with torch.no_grad():  # statistics of a trained norm, not the identity
        norm.running_mean.copy_(harness.random_input("torch", (channels,)) * 0.1)
        norm.running_var.copy_(harness.random_input("torch", (channels,), seed=1).abs() + 0.5)
    return {
        "pool:max": (nn.MaxPool2d(3, 1, 1), 1), "pool:avg": (nn.AvgPool2d(3, 1, 1), 1),
        "pool:global_avg": (nn.AdaptiveAvgPool2d(1), 1), "norm:batchnorm": (norm, 1),
        "concat": (call_module(lambda a, b: torch.cat([a, b], 1)), 2),
    }


def window_of(kind, shape):
    """Elements a pool reads for each output: its window (the whole image for a global pool)."""
    if kind.startswith("pool:global"):
        return shape[2] * shape[3]
    return 9 if kind.startswith("pool:") else 1


class MixedPrecisionLayerNorm:
    """Factory of the layer norm a bf16 model runs in eager mode: computed in f32 whatever the
    activations' type, as mixed-precision inference does (PyTorch's CPU autocast keeps
    layer_norm in f32, and its bf16 layer_norm can be a slow path)."""

    @staticmethod
    def make(width):
        from torch import nn

        class LayerNorm(nn.LayerNorm):
            def forward(self, x):
                return nn.functional.layer_norm(x.float(), self.normalized_shape, self.weight.float(),
                                                self.bias.float(), self.eps).to(x.dtype)
        return LayerNorm(width)

    @staticmethod
    def replace_in(module):
        """Every nn.LayerNorm inside `module` computed in f32, in place; returns `module`."""
        from torch import nn
        for parent in list(module.modules()):
            for name, child in list(parent.named_children()):
                if type(child) is nn.LayerNorm and child.elementwise_affine:
                    norm = MixedPrecisionLayerNorm.make(child.normalized_shape)
                    norm.load_state_dict(child.state_dict())
                    setattr(parent, name, norm.to(child.weight.dtype))
        return module


def row_kernels(dtype, mixed_norm):
    """Estimator row kind -> (make(shape) -> callable, operand shapes(shape)) of the ops of
    row-shaped (rows, cols) activations: activations, binary ops, a scale, softmax and layer norm
    over each row, the transposes of a row split into TRANSPOSE_GROUPS groups (the outer axes
    moved; the innermost moved too), and a concatenation of two along the rows."""
    import torch
    from torch import nn
    f = nn.functional
    g = grids.TRANSPOSE_GROUPS

    def norm(shape):
        module = MixedPrecisionLayerNorm.make(shape[1]) if mixed_norm else nn.LayerNorm(shape[1])
        with torch.no_grad():
            module.weight.copy_(harness.random_input("torch", (shape[1],), seed=2))
            module.bias.copy_(harness.random_input("torch", (shape[1],), seed=3))
        return module.to(dtype).eval()

    one = lambda shape: [shape]  # noqa: E731
    two = lambda shape: [shape, shape]  # noqa: E731
    return {
        "elementwise:gelu": (lambda s: f.gelu, one),
        "elementwise:gelu_tanh": (lambda s: (lambda x: f.gelu(x, approximate="tanh")), one),
        "elementwise:relu": (lambda s: torch.relu, one),
        "elementwise:silu": (lambda s: f.silu, one),
        "elementwise:tanh": (lambda s: torch.tanh, one),
        "elementwise:sigmoid": (lambda s: torch.sigmoid, one),
        "elementwise:add": (lambda s: torch.add, two),
        "elementwise:mul": (lambda s: torch.mul, two),
        "elementwise:div": (lambda s: (lambda x: x / 3.0), one),
        "softmax": (lambda s: (lambda x: torch.softmax(x, dim=-1)), one),
        "norm:layernorm": (norm, one),
        "transpose": (lambda s: (lambda x: x.view(s[0], g, s[1] // g).transpose(0, 1).contiguous()), one),
        "transpose:inner": (lambda s: (lambda x: x.view(s[0], g, s[1] // g).permute(1, 2, 0).contiguous()), one),
        "concat": (lambda s: (lambda a, b: torch.cat([a, b], 0)), two),
    }


def image_kernels(kinds=None):
    """Estimator row kind -> (make(shape) -> callable, operand shapes(shape)) of the ops of
    image-shaped (N, C, H, W) activations: elementwise_modules and image_modules."""
    def from_table(kind, table_of):
        def make(shape):
            return table_of(shape)[kind][0].eval()

        def operands(shape):
            return [shape] * table_of(shape)[kind][1]
        return make, operands

    table = {}
    for kind in elementwise_modules():
        table[kind] = from_table(kind, lambda shape: elementwise_modules())
    for kind in image_modules(16):
        table[kind] = from_table(kind, lambda shape: image_modules(shape[1]))
    return {k: v for k, v in table.items() if kinds is None or k in kinds}


def tolerance(torch, dtype):
    """(rtol, atol) of an output in `dtype` against a float64 reference."""
    return (3e-2, 3e-2) if dtype in (torch.bfloat16, torch.float16) else (1e-4, 1e-4)


def reference_of(call):
    """The same op in float64: a module deep-copied and converted, else the callable itself."""
    import torch
    if isinstance(call, torch.nn.Module):
        return copy.deepcopy(call).double()
    return call


# Sweeps over every own kernel: a kernel's fastest time comes from moments several seconds apart.
# On a shared host an arithmetic-bound kernel (a scalar exp) can run up to 1.7x slow for seconds
# at a time while memory-bound ones do not, longer than the few hundred milliseconds in which
# one kind's sizes are timed.
OWN_KERNEL_SWEEPS = 3


class OwnKernels:
    """The runtime's own kernels (kernels: kind -> (make, operands), as row_kernels and
    image_kernels give) over `shapes` (the grid), made and checked, then timed interleaved in
    OWN_KERNEL_SWEEPS sweeps that the caller starts (sweep()), so that a calibration can spread
    them between its other probes. Each kind's output is checked once, at the smallest size,
    against the op in float64. `sync` ends every timed call (a GPU's synchronize); `time_group`
    replaces harness.time_calls (a GPU's device timer); `memory_format` lays out the 4-D operands
    (torch.channels_last)."""

    def __init__(self, torch, kernels, shapes, dtype, device="cpu", sync=None, time_group=None,
                 memory_format=None):
        self.kinds, self.shapes = list(kernels), shapes
        self.dtype_name = dtype_label(torch, dtype)
        self.cache_bytes = harness.last_level_cache_bytes() if device == "cpu" else None
        rtol, atol = tolerance(torch, dtype)
        calls, self.work, self.moved = {}, {}, {}
        for kind, (make, operands) in kernels.items():
            for i, shape in enumerate(shapes):
                call = make(shape)
                if isinstance(call, torch.nn.Module):
                    call = call.to(device, dtype).eval()
                xs = [harness.random_input("torch", s, dtype, device, seed=j) for j, s in enumerate(operands(shape))]
                if memory_format is not None:
                    xs = [x.contiguous(memory_format=memory_format) if x.dim() == 4 else x for x in xs]
                with torch.no_grad():
                    out = call(*xs)
                    if i == 0:
                        want = reference_of(call)(*[x.double() for x in xs])
                        harness.check_close(f"{kind} {shape}", out, want, rtol, atol)
                key = (kind, i)
                self.work[key] = out.numel() * window_of(kind, shape)
                self.moved[key] = sum(x.numel() * x.element_size() for x in xs) + out.numel() * out.element_size()
                calls[key] = _synced(call, xs, sync)
        self.torch = torch
        self.group = harness.Sweeps(calls, time_group, OWN_KERNEL_SWEEPS, weight=0.5, together=True)

    def sweep(self, budget):
        with self.torch.no_grad():
            self.group.sweep(budget)

    def results(self, budget, progress):
        """The sweeps not yet run, then (own_kernels entries, probe points): each kind's rate the
        slope between its sizes (harness.slope_rate); an op's elements are its outputs, a pool's
        its window elements."""
        with self.torch.no_grad():
            timings = self.group.finish(budget)
        entries, probes = [], []
        for kind in self.kinds:
            keys = [(kind, i) for i in range(len(self.shapes))]
            fitted = harness.within_cache([(self.work[k], timings[k].time_s, self.moved[k]) for k in keys],
                                          self.cache_bytes)
            rate, method = harness.slope_rate(fitted)
            entries.append({"kind": kind, "dtype": self.dtype_name, "elements_per_s": rate})
            for key, shape in zip(keys, self.shapes):
                probes.append(record.probe_point(f"own {kind} {self.dtype_name}", "x".join(map(str, shape)),
                                                 timings[key], elements=self.work[key], fit=method))
            progress(f"own kernel {kind}: {rate:.3g} elements/s ({method})")
        return entries, probes


def own_kernel_rates(torch, kernels, shapes, dtype, budget, progress, device="cpu", sync=None, time_group=None,
                     memory_format=None):
    """OwnKernels timed in sweeps one after another. Returns (own_kernels entries, probe points)."""
    own = OwnKernels(torch, kernels, shapes, dtype, device, sync, time_group, memory_format)
    progress(f"timing {len(own.kinds)} own kernels at {len(shapes)} sizes in {OWN_KERNEL_SWEEPS} sweeps")
    return own.results(budget, progress)


def _synced(call, xs, sync):
    if sync is None:
        return lambda: call(*xs)

    def run():
        call(*xs)
        sync()
    return run


def dtype_label(torch, dtype):
    return {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]


def dram_level(torch, dtype, budget, progress, device="cpu", sync=None, working_set_bytes=None):
    """Main-memory bandwidth of one of PyTorch's own kernels with plain stores: torch.add(a, b,
    out=c), the three tensors together 4x the last-level cache (from the OS), bytes = two read +
    one written. Returns (memory level, probe point)."""
    llc = harness.last_level_cache_bytes() if device == "cpu" else None
    working = working_set_bytes or harness.dram_working_set_bytes(llc)
    itemsize = torch.tensor([], dtype=dtype).element_size()
    n = working // (3 * itemsize)
    a = harness.random_input("torch", (n,), dtype, device, seed=4, positive=True)
    b = harness.random_input("torch", (n,), dtype, device, seed=5, positive=True)
    out = torch.empty(n, dtype=dtype, device=device)
    with torch.no_grad():
        torch.add(a, b, out=out)
        rtol, atol = tolerance(torch, dtype)
        for part in (slice(0, 4096), slice(n - 4096, n)):
            harness.check_close("memory add", out[part], a[part].double() + b[part].double(), rtol, atol)
        timing = harness.time_call(_synced(lambda: torch.add(a, b, out=out), (), sync), budget, weight=2)
    moved = 3 * n * itemsize
    bps = moved / timing.time_s
    progress(f"main memory, add out=: {bps / 1e9:.1f} GB/s over {moved / 2 ** 20:.0f} MiB")
    probe = record.probe_point(f"memory add out= {dtype_label(torch, dtype)}", f"3x{n}", timing, bytes=moved,
                               last_level_cache_bytes=llc or 0)
    return {"name": "DRAM", "bytes": None, "Bps": bps}, probe


def chain_of(step, x, sync=None):
    """make_run(n) of a chain applying `step` n times to x (each step on the last's output)."""
    def make(n):
        def run():
            y = x
            for _ in range(n):
                y = step(y)
            if sync:
                sync()
        return run
    return make


def chain_probe(torch, name, make_run, links, ops_per_link, budget, weight=3.0):
    """Fixed cost of one op from chains of 1 and of `links` links (make_run(n) -> callable),
    timed interleaved (harness.chain_cost). Returns (seconds per op, probe points)."""
    runs = {1: make_run(1), links: make_run(links)}
    with torch.no_grad():
        timings = harness.time_calls(runs, budget, weight)
    cost = harness.chain_cost(timings[1].time_s, timings[links].time_s, links, ops_per_link)
    probes = [record.probe_point(f"{name} x{n}", f"{n} links of {ops_per_link}", timings[n], op_s=cost)
              for n in (1, links)]
    return cost, probes


def _conv_call(torch, shape, dtype, device, channels_last, seed=0):
    """(nn.Conv2d with a bias, its input) of a conv shape (grids.conv_shape, _dispatch_shape), the
    weights and the input drawn from `seed`; the input in NHWC order with `channels_last`."""
    from torch import nn
    torch.manual_seed(harness.SEED + seed)
    conv = nn.Conv2d(shape["c"], shape["k"], (shape["r"], shape["s"]), stride=shape["stride"], padding=shape["pad"],
                     dilation=shape["dilation"], groups=shape["groups"], bias=True).to(device, dtype).eval()
    x = harness.random_input("torch", (shape["n"], shape["c"], shape["h"], shape["w"]), dtype, device, seed=seed)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    return conv, x


def check_conv(name, conv, x, shape, rtol, atol):
    """conv(x) against the same convolution in float64, the absolute tolerance grown with the
    square root of the products summed into each output (a conv shape's channels a group times
    its window)."""
    from torch import nn
    want = nn.functional.conv2d(x.double(), conv.weight.double(), conv.bias.double(), conv.stride, conv.padding,
                                conv.dilation, conv.groups)
    reach = shape["c"] // shape["groups"] * shape["r"] * shape["s"]
    harness.check_close(name, conv(x), want, rtol, max(atol, rtol * reach ** 0.5))


def conv_points(torch, dtype, device, fixed_s, budget, progress, quick, sync=None, time_group=None,
                channels_last=False):
    """The runtime's own convolution points in the profile's point format: nn.Conv2d (with bias)
    on contiguous NCHW activations, as PyTorch runs a model that never asks for another memory
    format (with `channels_last`, activations in NHWC order and the weights as a model has them),
    over grids.conv_grid and grids.image_input_grid. Each kernel/stride/grouping class's output
    (and each image-input kernel's) is checked once against the convolution in float64; the points are
    timed in sweeps over the grid (harness.time_in_sweeps). Each point's impl is the implementation
    the framework dispatched it to (conv_impl), and conv_dispatch finds the rule behind them.
    time_s and median_s are kernel times: measured less `fixed_s` (the per-op cost the estimator
    charges), at least half of measured. Where a rule is found on the CPU, each path's per-call
    cost is measured too (dispatch_path_costs) and kept in the rule: the least a call there takes.
    Returns (points, probe points, rule or None)."""
    label = dtype_label(torch, dtype)
    rtol, atol = tolerance(torch, dtype)
    shapes = grids.conv_grid(quick) + grids.image_input_grid(quick)
    calls, names, impls, checked = {}, {}, {}, set()
    for i, shape in enumerate(shapes):
        conv, x = _conv_call(torch, shape, dtype, device, channels_last, seed=i)
        names[i] = (f"mb{shape['n']}ic{shape['c']}ih{shape['h']}oc{shape['k']}kh{shape['r']}sh{shape['stride']}"
                    f"ph{shape['pad']}g{shape['groups']}")
        with torch.inference_mode():
            key = (shape["r"], shape["stride"], shape["c"] // shape["groups"] if shape["groups"] > 1 else 0,
                   shape["c"] == shape["k"])
            if key not in checked:
                check_conv(f"conv {names[i]}", conv, x, shape, rtol, atol)
                checked.add(key)
        calls[i] = _synced(conv, [x], sync)
        impls[i] = conv_impl(torch, conv, x)
    rule, probes = conv_dispatch(torch, dtype, device, [(shapes[i], impls[i]) for i in impls], progress,
                                 channels_last)
    if rule is not None and sync is None:
        costs, cost_probes = dispatch_path_costs(torch, rule, dtype, device, budget, progress, quick, channels_last)
        rule.update(costs)
        probes += cost_probes
    with torch.inference_mode():
        timings = harness.time_in_sweeps(calls, budget, time_group)
    points = []
    for i, shape in enumerate(shapes):
        timing = timings[i]
        kernel_s = harness.kernel_time_s(timing.time_s, fixed_s)
        flops = grids.conv_flops(shape)
        point = dict(dtype=label, **shape, layout="nhwc" if channels_last else "nchw")
        point.update({"time_s": kernel_s,
                      "median_s": max(harness.kernel_time_s(timing.median_s, fixed_s), kernel_s),
                      "flops_per_s": flops / kernel_s, "cv": timing.cv, "samples": timing.count,
                      "impl": impls[i], "cold_weights": False, "measured_s": timing.time_s,
                      "fixed_s_taken_off": timing.time_s - kernel_s})
        points.append(point)
        probes.append(record.probe_point(f"conv conv2d {label}", names[i], timing))
    best = max(points, key=lambda p: p["flops_per_s"])
    progress(f"{len(points)} conv points, best {best['flops_per_s'] / 1e9:.1f} GFLOP/s")
    return points, probes, rule


# Ops a convolution call passes through on its way to an implementation, whatever the shape.
CONV_WRAPPERS = {"aten::conv2d", "aten::convolution", "aten::_convolution"}


@contextlib.contextmanager
def _quiet_stderr():
    """The process's standard error (the descriptor, where the profiler's C++ side logs each
    start and stop) sent to /dev/null for the duration."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def recorded_op_names(torch, call):
    """The names of the ops call() runs, in call order, as PyTorch's profiler records them. The
    autograd profiler (use_kineto=False) records the same CPU-side op events and starts in
    milliseconds, where torch.profiler's first start takes a second or more (it looks for
    devices); a PyTorch whose autograd profiler refuses the option takes torch.profiler."""
    with _quiet_stderr():
        try:
            prof = torch.autograd.profiler.profile(use_kineto=False)
            prof.__enter__()
        except (TypeError, RuntimeError, AssertionError):
            prof = None
        if prof is not None:
            try:
                call()
            finally:
                prof.__exit__(None, None, None)
            return [event.name for event in prof.function_events]
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as fallback:
            call()
        return [event.name for event in fallback.events()]


def innermost_conv_op(names):
    """The implementation among the op names a convolution call recorded, in call order: the last
    that names a convolution and is not one of CONV_WRAPPERS, without its namespace ("aten::thnn_conv2d",
    then "aten::_slow_conv2d_forward" -> "_slow_conv2d_forward"); "" when none does."""
    found = ""
    for name in names:
        if "conv" in name and name not in CONV_WRAPPERS:
            found = name.split("::")[-1]
    return found


def conv_impl(torch, conv, x):
    """The implementation PyTorch dispatches the call conv(x) to, as its profiler records it
    (mkldnn_convolution, _slow_conv2d_forward, cudnn_convolution, ...): a framework that picks
    its kernel by shape is read, never assumed to pick one."""
    with torch.inference_mode():
        return innermost_conv_op(recorded_op_names(torch, lambda: conv(x))) or "unknown"


def holds_batchnorm(names):
    """Whether a call's recorded op names hold a batch norm computed as an op of its own
    (aten::batch_norm and the ops it dispatches to), not folded into a convolution's weights."""
    return any(name.split("::")[-1].lstrip("_").startswith(("batch_norm", "native_batch_norm"))
               for name in names)


# The convolution of the batch-norm probe: 3x3 over BATCHNORM_PROBE_CHANNELS channels on a
# BATCHNORM_PROBE_SIDE image.
BATCHNORM_PROBE_CHANNELS, BATCHNORM_PROBE_SIDE = 16, 8


def conv_batchnorm_apart(torch, prepare, dtype, progress, device="cpu"):
    """Whether the runtime, given a convolution followed by a batch norm (a module as written, as
    a model has them), runs the batch norm as an op of its own: read from PyTorch's profiler on the
    module as prepare(module, example_inputs, dtype) runs it, and said through `progress`. An
    ONNX export and a graph optimizer fold such a batch norm into the convolution's weights; a
    runtime that runs the module as written pays a pass over the convolution's output for it."""
    from torch import nn
    c, side = BATCHNORM_PROBE_CHANNELS, BATCHNORM_PROBE_SIDE
    torch.manual_seed(harness.SEED)
    module = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)).eval()
    with torch.no_grad():
        module[1].running_mean.uniform_(-1, 1)
        module[1].running_var.uniform_(0.5, 2)
    x = harness.random_input("torch", (1, c, side, side), dtype, device)
    run = prepare(module.to(device), (x,), dtype)
    run(x)
    apart = holds_batchnorm(recorded_op_names(torch, lambda: run(x)))
    progress(f"a convolution's batch norm runs {'apart' if apart else 'folded into it'}")
    return apart


def _dispatch_shape(c, kernel=1, stride=1, groups=1, batch=1, window=None):
    """A dispatch-probe convolution: c channels to c on grids.DISPATCH_SIDE, a square `kernel`
    (or a `window` of (rows, columns)), 'same' padding."""
    r, s = window or (kernel, kernel)
    shape = grids.conv_shape(c, grids.DISPATCH_SIDE, kernel, stride, groups, batch)
    shape.update(r=r, s=s, pad=(r // 2, s // 2))
    return shape


def meets_dispatch(rule, shape):
    """Whether a convolution of `shape` meets every condition of `rule` (the estimator's
    runs_dispatched_impl)."""
    window = (min if rule["window_side"] == "smaller" else max)(shape["r"], shape["s"])
    depthwise = shape["groups"] > 1 and shape["groups"] == shape["c"] == shape["k"]
    grouping = shape["groups"] == 1 or (rule["depthwise"] if depthwise else rule["grouped"])
    bound = rule["max_input_elements"]
    return (shape["n"] <= rule["max_batch"] and window <= rule["max_window"] and grouping and
            (shape["stride"] == 1 or rule["strided"]) and
            (bound is None or shape["n"] * shape["c"] * shape["h"] * shape["w"] <= bound))


def find_conv_dispatch(impl_of, grid):
    """Where a framework that picks its convolution's implementation by shape sends small calls:
    a rule of the form "every condition holds", each condition found by trying shapes with
    `impl_of(shape)` (the implementation a call of that shape runs): the input elements (batch x
    channels x pixels) bisected over channels, the largest window (square, and whether a window
    of one row counts by its smaller side), the largest batch, and whether strided, grouped and
    depthwise calls stay on it. `grid`: [(shape, implementation)] of the measured points. None
    when the small call's implementation is that of every point (one implementation, nothing to
    tell apart), and when the rule misplaces a point (a framework whose choice no such rule
    describes, such as one condition or another).
    Returns (rule or None, [(shape name, implementation)] of the calls tried)."""
    tried = []

    def impl(shape):
        name = (f"mb{shape['n']}ic{shape['c']}ih{shape['h']}kh{shape['r']}kw{shape['s']}"
                f"sh{shape['stride']}g{shape['groups']}")
        found = impl_of(shape)
        tried.append((name, found))
        return found

    c = grids.DISPATCH_CHANNELS
    small = impl(_dispatch_shape(c))
    if all(i == small for _, i in grid):
        return None, tried

    def stays(shape):
        return impl(shape) == small

    lo, hi = c, grids.DISPATCH_MAX_CHANNELS
    max_elements = None
    if not stays(_dispatch_shape(hi)):
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if stays(_dispatch_shape(mid)) else (lo, mid)
        max_elements = lo * grids.DISPATCH_SIDE ** 2
    max_window = 1
    for kernel in grids.DISPATCH_WINDOWS:
        if not stays(_dispatch_shape(c, kernel)):
            break
        max_window = kernel
    larger = max(grids.DISPATCH_WINDOWS)
    window_side = "larger"
    if max_window < larger and stays(_dispatch_shape(c, window=(1, larger))):
        window_side = "smaller"
    max_batch = 1
    for batch in grids.DISPATCH_BATCHES:
        if not stays(_dispatch_shape(grids.DISPATCH_BATCH_CHANNELS, batch=batch)):
            break
        max_batch = batch
    rule = {"impl": small, "max_input_elements": max_elements, "max_batch": max_batch, "max_window": max_window,
            "window_side": window_side, "strided": stays(_dispatch_shape(c, min(max_window, 3), stride=2)),
            "grouped": stays(_dispatch_shape(c, groups=2)),
            "depthwise": stays(_dispatch_shape(c, min(max_window, 3), groups=c))}
    if any(meets_dispatch(rule, shape) != (i == small) for shape, i in grid):
        return None, tried
    return rule, tried


def path_cost_shapes(rule):
    """(shape of a call the rule sends to its implementation, [shapes of calls it does not, in the
    order to try]) for dispatch_path_costs: a 1x1 of grids.PATH_CHANNELS channels to as many on a
    grids.PATH_SIDE image, and the same at one image more than the rule's batch, depthwise or
    grouped where the rule keeps those off, with a window past its bound. Each keeps its input's
    shape, so that calls chain."""
    c, side = grids.PATH_CHANNELS, grids.PATH_SIDE
    small = grids.conv_shape(c, side, 1, 1, 1)
    window = rule["max_window"] + 1 + rule["max_window"] % 2  # the next odd side, 'same' padding
    others = [grids.conv_shape(c, side, 1, 1, 1, batch=rule["max_batch"] + 1),
              grids.conv_shape(c, side, 3, 1, c), grids.conv_shape(c, side, 1, 1, 2),
              grids.conv_shape(c, side, window, 1, 1)]
    return small, [s for s in others if not meets_dispatch(rule, s)]


def dispatch_path_costs(torch, rule, dtype, device, budget, progress, quick, channels_last=False):
    """What a convolution's call costs beside its kernel on each path of `rule`: the fixed cost of
    a chain of tiny calls (chain_probe) on the rule's implementation and on another, each call's
    implementation read from the profiler first (a path whose tiny call runs elsewhere is not
    measured), its output checked against the convolution in float64. On a CPU the two differ
    tenfold: PyTorch's own small-call path, against a library call that sets its primitive up
    and reorders its operands each time. Returns ({"op_s": s, "others_op_s": s} for the paths
    measured, probe points)."""
    label = dtype_label(torch, dtype)
    rtol, atol = tolerance(torch, dtype)
    small, others = path_cost_shapes(rule)
    calls = {}
    for key, shapes in (("op_s", [small] if meets_dispatch(rule, small) else []), ("others_op_s", others)):
        for shape in shapes:
            conv, x = _conv_call(torch, shape, dtype, device, channels_last)
            runs_rule = conv_impl(torch, conv, x) == rule["impl"]
            if runs_rule == (key == "op_s"):
                calls[key] = (shape, conv, x)
                break
    costs, probes = {}, []
    with torch.inference_mode():
        for key, (shape, conv, x) in calls.items():
            check_conv(f"path cost conv {key}", conv, x, shape, rtol, atol)
            name = (f"{'rule' if key == 'op_s' else 'other'} path conv mb{shape['n']}ic{shape['c']}ih{shape['h']}"
                    f"kh{shape['r']}g{shape['groups']} {label}")
            costs[key], points = chain_probe(torch, name, chain_of(conv, x), grids.chain_links(quick), 1, budget)
            probes += points
    progress("convolution call: " + ", ".join(
        f"{rule['impl'] if key == 'op_s' else 'other paths'} {s * 1e6:.1f} us" for key, s in costs.items()))
    return costs, probes


def conv_dispatch(torch, dtype, device, grid, progress, channels_last=False):
    """find_conv_dispatch for nn.Conv2d in `dtype` on `device` (activations in NHWC order with
    `channels_last`, as conv_points), against the grid's [(shape, implementation)].
    Returns (rule or None, probe points)."""
    def impl_of(shape):
        return conv_impl(torch, *_conv_call(torch, shape, dtype, device, channels_last))

    rule, tried = find_conv_dispatch(impl_of, grid)
    if rule is None:
        progress(f"convolutions: no rule of shape ({', '.join(sorted({i for _, i in grid}))})")
    else:
        bound = rule["max_input_elements"]
        progress(f"convolutions: {rule['impl']} up to {bound if bound is not None else 'any number of'} input "
                 f"elements, batch {rule['max_batch']}, window {rule['max_window']}")
    return rule, [record.probe_point("conv dispatch", name, impl=found) for name, found in tried]

