"""torch-eager: a model as eager PyTorch runs it, module.eval() under torch.inference_mode(): on
the CPU in f32, the dtype a plain script's model has; on a GPU in bf16 where the device supports
it. --dtype names another (bf16 or f16: the model converted, as a script that calls
.to(torch.bfloat16) runs it), once its kernels pass their output check here. In bf16 a layer norm
computes in f32, as mixed-precision inference does (prepare()).

Probes: the fixed cost of one op (chains of linears too small for oneDNN: the dispatch every
eager op pays); the costs of the kinds that pay more or less than that (products that reach
oneDNN, views, the eval-mode batch norm, the mixed-precision layer norm); the rates of
PyTorch's own kernels over the size grids (row-shaped, and image-shaped in NCHW: pools, the
batch norm); the runtime's own GEMM points (linears and batched matmuls over a grid skinny to
square, each less its kind's fixed cost, which kind_op_s charges; skinny linears again with
cold weights); its convolution points (contiguous NCHW, the layout a model keeps unless asked
for another, each less the conv2d kind's fixed cost); the main-memory bandwidth of its own
kernels. On a GPU (unverified on hardware so far): issue times per op and kind from
synchronized chains, kernel rates and GEMM points from device time (CUDA events)."""
import copy
import time

from runtimes import grids, harness, record, torch_common

RUNTIME = "torch-eager"
DEVICES = ("cpu", "cuda")
MINIMUM_TORCH = (1, 9)  # torch.inference_mode
# The dtypes --dtype may name.
DTYPES = ("f32", "bf16", "f16")

# The dtype check's linear: rows x width -> width.
DTYPE_PROBE_ROWS, DTYPE_PROBE_WIDTH = 256, 512
# op_s: linears of 1 x TINY_WIDTH -> TINY_WIDTH, below the size PyTorch sends to oneDNN.
TINY_WIDTH = 16
# A product that reaches oneDNN: PRODUCT_ROWS x PRODUCT_WIDTH -> PRODUCT_WIDTH, and batched
# matmuls [PRODUCT_BATCH, PRODUCT_ROWS, PRODUCT_WIDTH] x [.., PRODUCT_WIDTH, PRODUCT_WIDTH].
PRODUCT_ROWS, PRODUCT_WIDTH, PRODUCT_BATCH = 8, 64, 2
# The convolution of the conv2d kind cost: 1x1 over TINY_CHANNELS channels of TINY_SIDE^2 pixels.
TINY_CHANNELS, TINY_SIDE = 16, 4
# Views: a tensor of VIEW_SIDE^2 elements viewed as a square and transposed.
VIEW_SIDE = 16
# The layer-norm chain's width.
NORM_WIDTH = 64
# cold_costs: the kinds it measures (None: the plain op).
COLD_KINDS = (None, "linear", "matmul", "reshape", "conv2d", "norm:batchnorm", "norm:layernorm")
# A GEMM point's kernel time is at least this fraction of its measured time.
KERNEL_FLOOR = 0.5
QUICK_ROW_KINDS = ("elementwise:gelu", "elementwise:add", "softmax", "norm:layernorm", "linear:bias")
QUICK_IMAGE_KINDS = ("pool:max", "norm:batchnorm")


def prepare(module, example_inputs, dtype=None):
    """`module` run as torch-eager runs it: a copy in eval mode in `dtype` (a torch dtype; None:
    the runtime's default on that device, see default_dtype), its layer norms computing in
    f32 when the dtype is bf16 or f16, on the device of `example_inputs`. Returns a
    callable(*inputs) that runs it under torch.inference_mode(), floating-point inputs
    converted to the dtype."""
    torch = torch_common.require_torch(RUNTIME, MINIMUM_TORCH)
    device = example_inputs[0].device if example_inputs else torch.device("cpu")
    if dtype is None:
        dtype = default_dtype(torch, str(device))
    model = copy.deepcopy(module).eval().to(device, dtype)
    if dtype in (torch.bfloat16, torch.float16):
        torch_common.MixedPrecisionLayerNorm.replace_in(model)

    def run(*inputs):
        with torch.inference_mode():
            return model(*(x.to(dtype) if torch.is_tensor(x) and x.is_floating_point() else x for x in inputs))
    return run


def _linear(torch, rows, width, dtype, device, bias=True, seed=0, outputs=None):
    """A linear layer width -> outputs (default: width) and an input of `rows` rows for it."""
    from torch import nn
    torch.manual_seed(seed)
    layer = nn.Linear(width, outputs or width, bias=bias).to(device, dtype).eval()
    return layer, harness.random_input("torch", (rows, width), dtype, device, seed=seed)


def default_dtype(torch, device):
    """What a plain script runs in: f32 on the CPU; on a GPU, bf16 where the device supports it
    (serving there converts the model), else f32."""
    if device.startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def pick_dtype(torch, device, asked):
    """The torch dtype for --dtype `asked` (a label; None: default_dtype). A half-precision
    dtype must pass a linear's output check on this device first: harness.UsageError, one line,
    where it does not."""
    if asked is None:
        return default_dtype(torch, device)
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[asked]
    if dtype == torch.float32:
        return dtype
    layer, x = _linear(torch, DTYPE_PROBE_ROWS, DTYPE_PROBE_WIDTH, dtype, device)
    try:
        with torch.inference_mode():
            harness.check_close(f"linear {asked}", layer(x), torch.nn.functional.linear(
                x.double(), layer.weight.double(), layer.bias.double()), *torch_common.tolerance(torch, dtype))
    except (RuntimeError, harness.CheckFailed) as error:
        raise harness.UsageError(f"runtimes: {RUNTIME} --dtype {asked}: this PyTorch's {asked} linear does not "
                                 f"work on {device}: {str(error).splitlines()[0]}") from error
    return dtype


def fixed_costs(torch, dtype, device, budget, progress, quick, sync=None):
    """op_s and kind_op_s from chains of tiny ops; on the CPU, each also as a cold call
    (cold_costs): kind_op_s entries gain cold_op_s. Returns (op_s, kind_op_s, probe points, the
    plain op's cold cost or None)."""
    from torch import nn
    links = grids.chain_links(quick)
    label = torch_common.dtype_label(torch, dtype)
    rtol, atol = torch_common.tolerance(torch, dtype)
    probes, kinds = [], []

    def module_kind(kind, name, module, x):
        """kind_op_s of `kind` from a chain of `module` on `x`, its output checked first."""
        harness.check_close(name, module(x), copy.deepcopy(module).double()(x.double()), rtol, atol)
        cost, points = torch_common.chain_probe(torch, f"kind chain {name}", torch_common.chain_of(module, x, sync),
                                                links, 1, budget)
        kinds.append({"kind": kind, "dtype": label, "op_s": cost})
        probes.extend(points)

    def linear_step(rows, width):
        layer, x = _linear(torch, rows, width, dtype, device)
        harness.check_close(f"linear {rows}x{width}", layer(x), torch.nn.functional.linear(
            x.double(), layer.weight.double(), layer.bias.double()), rtol, atol)
        return layer, x

    with torch.inference_mode():
        layer, x = linear_step(1, TINY_WIDTH)
        op_s, points = torch_common.chain_probe(torch, f"op chain linear 1x{TINY_WIDTH} {label}",
                                                torch_common.chain_of(layer, x, sync), links, 1, budget)
        probes += points

        layer, x = linear_step(PRODUCT_ROWS, PRODUCT_WIDTH)
        cost, points = torch_common.chain_probe(torch, f"kind chain linear {PRODUCT_ROWS}x{PRODUCT_WIDTH} {label}",
                                                torch_common.chain_of(layer, x, sync), links, 1, budget)
        kinds.append({"kind": "linear", "dtype": label, "op_s": cost})
        probes += points

        w = harness.random_input("torch", (PRODUCT_BATCH, PRODUCT_WIDTH, PRODUCT_WIDTH), dtype, device, seed=1)
        w = w / PRODUCT_WIDTH ** 0.5  # keeps the chain's values in range
        a = harness.random_input("torch", (PRODUCT_BATCH, PRODUCT_ROWS, PRODUCT_WIDTH), dtype, device, seed=2)
        harness.check_close("matmul", torch.matmul(a, w), torch.matmul(a.double(), w.double()), rtol, atol)
        cost, points = torch_common.chain_probe(
            torch, f"kind chain matmul {PRODUCT_BATCH}x{PRODUCT_ROWS}x{PRODUCT_WIDTH} {label}",
            torch_common.chain_of(lambda y: torch.matmul(y, w), a, sync), links, 1, budget)
        kinds.append({"kind": "matmul", "dtype": label, "op_s": cost})
        probes += points

        # Each link views the same tensor anew: a view of a transposed view would copy.
        v = harness.random_input("torch", (1, VIEW_SIDE * VIEW_SIDE), dtype, device)
        cost, points = torch_common.chain_probe(
            torch, f"kind chain view+transpose {VIEW_SIDE}x{VIEW_SIDE}",
            torch_common.chain_of(lambda y: v.view(VIEW_SIDE, VIEW_SIDE).transpose(0, 1), v, sync), links, 2, budget)
        kinds.append({"kind": "reshape", "dtype": None, "op_s": cost})
        probes += points

        # A convolution too small for its kernel to matter: what each call of one costs beside it.
        conv = nn.Conv2d(TINY_CHANNELS, TINY_CHANNELS, 1).to(device, dtype).eval()
        c = harness.random_input("torch", (1, TINY_CHANNELS, TINY_SIDE, TINY_SIDE), dtype, device)
        harness.check_close("conv 1x1", conv(c), nn.functional.conv2d(c.double(), conv.weight.double(),
                                                                       conv.bias.double()), rtol, atol)
        cost, points = torch_common.chain_probe(
            torch, f"kind chain conv1x1 {TINY_CHANNELS}ch {TINY_SIDE}x{TINY_SIDE} {label}",
            torch_common.chain_of(conv, c, sync), links, 1, budget)
        kinds.append({"kind": "conv2d", "dtype": label, "op_s": cost})
        probes += points

        # An eval-mode batch norm derives each channel's scale and shift from its running statistics
        # on every call, a fixed cost well above a dispatch's: the chain's tensor is small enough for
        # that to be all of its time.
        batchnorm = nn.BatchNorm2d(TINY_CHANNELS).to(device, dtype).eval()
        with torch.no_grad():
            batchnorm.running_mean.copy_(harness.random_input("torch", (TINY_CHANNELS,), dtype, device, seed=3))
            batchnorm.running_var.copy_(harness.random_input("torch", (TINY_CHANNELS,), dtype, device, seed=4,
                                                             positive=True))
        module_kind("norm:batchnorm", f"batch norm {TINY_CHANNELS}ch {TINY_SIDE}x{TINY_SIDE} {label}", batchnorm, c)

        mixed = dtype in (torch.bfloat16, torch.float16)
        norm = (torch_common.MixedPrecisionLayerNorm.make(NORM_WIDTH) if mixed else nn.LayerNorm(NORM_WIDTH))
        norm = norm.to(device, dtype).eval()
        n = harness.random_input("torch", (1, NORM_WIDTH), dtype, device)
        module_kind("norm:layernorm", f"layer norm 1x{NORM_WIDTH} {label}{' computed in f32' if mixed else ''}",
                    norm, n)
    progress(f"op_s {op_s * 1e6:.2f} us; " + ", ".join(f"{k['kind']} {k['op_s'] * 1e6:.2f} us" for k in kinds))
    if device != "cpu":
        return op_s, kinds, probes, None
    cold, cold_probes = cold_costs(torch, dtype, device, label, quick)
    for k in kinds:
        k["cold_op_s"] = max(cold[k["kind"]], k["op_s"])
    cold_op_s = max(cold[None], op_s)
    progress(f"cold calls: op_s {cold_op_s * 1e6:.2f} us; " +
             ", ".join(f"{k['kind']} {k['cold_op_s'] * 1e6:.2f} us" for k in kinds))
    return op_s, kinds, probes + cold_probes, cold_op_s


def cold_costs(torch, dtype, device, label, quick):
    """What each call of the plain op (key None) and of each kind of kind_op_s costs inside a
    model whose pass outgrows the caches: a ring of harness.COLD_RING layers of the kind, each of
    a shape of its own, the call of each after a write of 1/COLD_RING of the last-level cache
    (harness.time_cold_rings), so that a layer's call comes back to its module, its
    parameters and the library's state for its shape after a cache's worth of other traffic, as
    a model's layer does a pass later, while the kind's own code, which every layer of the ring
    runs, stays as warm as a model's many layers of the kind keep it. The figure is the median
    over the ring's calls: a pass sums hundreds of such calls, typical ones rather than the
    luckiest. Returns ({kind: seconds}, probe points)."""
    ring_size = harness.COLD_RING
    size = harness.eviction_bytes(harness.last_level_cache_bytes())
    buffers = [torch.empty(size // ring_size // 4, dtype=torch.float32) for _ in range(ring_size)]
    writes = [lambda b=b: b.fill_(1.0) for b in buffers]
    rounds = harness.COLD_CALL_ROUNDS_QUICK if quick else harness.COLD_CALL_ROUNDS
    rtol, atol = torch_common.tolerance(torch, dtype)
    costs, probes = {}, []
    with torch.inference_mode():
        for kind in COLD_KINDS:
            ring = [_cold_layer(torch, kind, i, dtype, device, rtol, atol) for i in range(ring_size)]
            timing = harness.time_cold_rings({kind: ring}, writes, rounds * ring_size)[kind]
            costs[kind] = timing.median_s
            probes.append(record.probe_point(f"cold call {kind or 'op'} {label}",
                                             f"ring of {ring_size}, {size // ring_size} bytes written between calls",
                                             timing))
    return costs, probes


def _cold_layer(torch, kind, i, dtype, device, rtol, atol):
    """The `i`th layer of a cold_costs ring for `kind` (None: the plain op's tiny linear), its
    output checked: a callable making one call."""
    from torch import nn
    torch.manual_seed(harness.SEED + i)
    step = 4 * i  # each layer's shape its own
    if kind in (None, "linear"):
        rows, width = (1, TINY_WIDTH + step) if kind is None else (PRODUCT_ROWS, PRODUCT_WIDTH + step)
        layer, x = _linear(torch, rows, width, dtype, device, seed=i)
        call = lambda: layer(x)  # noqa: E731
        want = torch.nn.functional.linear(x.double(), layer.weight.double(), layer.bias.double())
    elif kind == "matmul":
        width = PRODUCT_WIDTH + step
        a = harness.random_input("torch", (PRODUCT_BATCH, PRODUCT_ROWS, width), dtype, device, seed=i)
        w = harness.random_input("torch", (PRODUCT_BATCH, width, width), dtype, device, seed=i + 1) / width ** 0.5
        call = lambda: torch.matmul(a, w)  # noqa: E731
        want = torch.matmul(a.double(), w.double())
    elif kind == "reshape":
        side = VIEW_SIDE + i
        v = harness.random_input("torch", (1, side * side), dtype, device, seed=i)
        call = lambda: v.view(side, side).transpose(0, 1)  # noqa: E731
        want = v.double().view(side, side).transpose(0, 1)
    else:
        channels = TINY_CHANNELS + step
        x = harness.random_input("torch", (1, channels, TINY_SIDE, TINY_SIDE), dtype, device, seed=i)
        if kind == "conv2d":
            layer = nn.Conv2d(channels, channels, 1).to(device, dtype).eval()
        elif kind == "norm:batchnorm":
            layer = nn.BatchNorm2d(channels).to(device, dtype).eval()
            layer.running_var.copy_(harness.random_input("torch", (channels,), dtype, device, seed=i, positive=True))
        else:  # norm:layernorm, over the last dimension of rows
            mixed = dtype in (torch.bfloat16, torch.float16)
            width = NORM_WIDTH + step
            layer = (torch_common.MixedPrecisionLayerNorm.make(width) if mixed else nn.LayerNorm(width))
            layer = layer.to(device, dtype).eval()
            x = harness.random_input("torch", (1, width), dtype, device, seed=i)
        call = lambda: layer(x)  # noqa: E731
        want = copy.deepcopy(layer).double()(x.double())
    harness.check_close(f"cold call {kind or 'op'} {i}", call(), want, rtol, atol)
    return call


def gemm_points(torch, dtype, device, kind_costs, budget, progress, quick, time_group=None):
    """The runtime's own GEMM points in the profile's point format: linears (weights [n][k],
    without bias: its copy is the own kernel linear:bias) over grids.gemm_grid and batched
    matmuls over grids.batched_matmul_grid, timed in sweeps over the grid (harness.time_in_sweeps).
    time_s and median_s are kernel times: measured less the kind's fixed cost (kind_op_s charges
    it per op), at least KERNEL_FLOOR of measured."""
    label = torch_common.dtype_label(torch, dtype)
    rtol, atol = torch_common.tolerance(torch, dtype)
    items = []  # (op, batch, m, n, k, call, layout, cold weights)

    def point(op, batch, m, n, k, call, layout, reference, cold=False):
        if reference is not None:
            with torch.inference_mode():
                harness.check_close(f"{op} {batch}x{m}x{n}x{k}", call(), reference(), rtol, max(atol, rtol * k ** 0.5))
        items.append((op, batch, m, n, k, call, layout, cold))

    cache_bytes = harness.last_level_cache_bytes() if device == "cpu" else None
    cold_copies = {}  # (n, k) -> the copies its cold points share
    grid = grids.gemm_grid(quick)
    checked = grids.checked_products(grid)
    for i, (m, n, k) in enumerate(grid):
        layer, x = _linear(torch, m, k, dtype, device, bias=False, seed=i, outputs=n)
        ref = (lambda layer=layer, x=x: x.double() @ layer.weight.double().t()) if (m, n, k) in checked else None
        point("linear", 1, m, n, k, lambda layer=layer, x=x: layer(x), "row-major, weights [n][k]", ref)
        if device == "cpu" and grids.cold_product(m, n, k):
            if (n, k) not in cold_copies:
                cold_copies[(n, k)] = cold_layer_copies(torch, layer, grids.cold_span_bytes(cache_bytes, quick))
            call, check = _rotating(cold_copies[(n, k)], x)
            point("linear", 1, m, n, k, call, "row-major, weights [n][k]", check, cold=True)
    for i, (batch, side) in enumerate(grids.batched_matmul_grid(quick)):
        a = harness.random_input("torch", (batch, side, side), dtype, device, seed=2 * i)
        b = harness.random_input("torch", (batch, side, side), dtype, device, seed=2 * i + 1)
        ref = (lambda a=a, b=b: a.double() @ b.double()) if i == 0 else None
        point("matmul", batch, side, side, side, lambda a=a, b=b: torch.matmul(a, b), "row-major, B [k][n]", ref)
    with torch.inference_mode():
        timings = harness.time_in_sweeps({i: item[5] for i, item in enumerate(items)}, budget, time_group)
    points, probes = [], []
    for i, (op, batch, m, n, k, _, layout, cold) in enumerate(items):
        timing = timings[i]
        fixed = kind_costs.get(op, 0.0)
        kernel_s = harness.kernel_time_s(timing.time_s, fixed, KERNEL_FLOOR)
        kernel_median_s = harness.kernel_time_s(timing.median_s, fixed, KERNEL_FLOOR)
        flops = 2.0 * batch * m * n * k
        points.append({"dtype": label, "m": m, "n": n, "k": k, "batch": batch, "time_s": kernel_s,
                       "median_s": kernel_median_s, "flops_per_s": flops / kernel_s, "cv": timing.cv,
                       "samples": timing.count, "impl": f"torch {op}", "layout": layout, "cold_weights": cold,
                       "op": op, "measured_s": timing.time_s, "fixed_s_taken_off": timing.time_s - kernel_s})
        probes.append(record.probe_point(f"gemm {op}{' cold weights' if cold else ''} {label}",
                                         f"{batch}x{m}x{n}x{k}", timing))
    best = max(points, key=lambda p: p["flops_per_s"])
    progress(f"{len(points)} gemm points, best {best['flops_per_s'] / 1e9:.1f} GFLOP/s "
             f"({best['op']} {best['m']}x{best['n']}x{best['k']})")
    return points, probes


def cold_layer_copies(torch, layer, span_bytes):
    """Copies of a bias-free linear `layer` (as _linear makes), each from a seed of its own,
    cold_copy_count of them."""
    weight_bytes = layer.weight.numel() * layer.weight.element_size()
    return [_linear(torch, 1, layer.in_features, layer.weight.dtype, layer.weight.device, bias=False,
                    seed=grids.COLD_SEED + i, outputs=layer.out_features)[0]
            for i in range(grids.cold_copy_count(weight_bytes, span_bytes))]


def _rotating(copies, x):
    """(call, check): each call runs `x` through the next of `copies`; check() is the float64
    reference of the copy the last call used."""
    turn = [0]

    def call():
        copy_ = copies[turn[0] % len(copies)]
        turn[0] += 1
        return copy_(x)

    def check():
        return x.double() @ copies[(turn[0] - 1) % len(copies)].weight.double().t()
    return call, check


def row_kernel_table(torch, dtype, quick):
    """The own kernels eager runs time: row_kernels in `dtype` (the layer norm mixed-precision
    in bf16) and the copy of a linear's bias into its output before the product (aten::addmm)."""
    mixed = dtype in (torch.bfloat16, torch.float16)
    kernels = dict(torch_common.row_kernels(dtype, mixed_norm=mixed))
    kernels["linear:bias"] = (lambda s: (lambda bias, out: out.copy_(bias.expand_as(out))),
                              lambda s: [(s[1],), s])
    if quick:
        kernels = {k: v for k, v in kernels.items() if k in QUICK_ROW_KINDS}
    return kernels


def image_kernel_table(row_table, quick):
    """The own kernels of image-shaped (N, C, H, W) activations in the contiguous layout eager
    keeps: pools, the batch norm and the activations the row table lacks. A pool's kernel runs
    per window element, far from a memory pass (PyTorch's max pool over NCHW computes the indices
    it would need for training), so it is timed rather than taken as the memory roof."""
    return {kind: kernel for kind, kernel in torch_common.image_kernels().items()
            if kind not in row_table and (not quick or kind in QUICK_IMAGE_KINDS)}


class CudaTimer:
    """harness.time_calls with device time: CUDA events around each call (the kernels' time on
    the device, not the host's issue time)."""

    def __init__(self, torch):
        self.torch = torch

    def __call__(self, calls, budget, weight=1.0):
        torch = self.torch
        for call in calls.values():
            for _ in range(max(1, budget.warmup)):
                call()
        torch.cuda.synchronize()
        budget_s = budget.point_s(weight) * len(calls)
        samples = {key: harness.Samples() for key in calls}
        started = time.perf_counter()  # the budget is the host's time: a sample costs a synchronize
        while True:
            for key, call in calls.items():
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                end.synchronize()
                samples[key].append(start.elapsed_time(end) / 1e3)
            elapsed = time.perf_counter() - started
            if all(harness.stop_sampling(s, elapsed, budget_s, budget.min_samples, budget.cv_target)
                   for s in samples.values()):
                break
        return {key: harness.Timing(s) for key, s in samples.items()}


def calibrate(options):
    torch = torch_common.require_torch(RUNTIME, MINIMUM_TORCH)
    torch_common.set_threads(torch, options.threads)
    torch.manual_seed(harness.SEED)
    progress, budget, device = options.progress, options.budget, options.device
    gpu = device.startswith("cuda")
    if gpu and not torch.cuda.is_available():
        raise harness.FrameworkMissing(f"{RUNTIME} --device {device}: this PyTorch ({torch.__version__}) sees no "
                                       f"CUDA device: scripts/setup-venv.sh torch on a machine with one")
    sync = torch.cuda.synchronize if gpu else None
    timer = CudaTimer(torch) if gpu else None

    host = torch_common.host_probe(torch, options.started)
    host()
    dtype = pick_dtype(torch, device, options.dtype)
    label = torch_common.dtype_label(torch, dtype)
    progress(f"dtype {label}")
    op_s, kind_op_s, fixed_probes, cold_op_s = fixed_costs(torch, dtype, device, budget, progress, options.quick,
                                                           sync)
    host()
    kernels = row_kernel_table(torch, dtype, options.quick)
    own, own_probes = torch_common.own_kernel_rates(torch, kernels, grids.row_shapes(options.quick), dtype, budget,
                                                    progress, device, time_group=timer)
    image, image_probes = torch_common.own_kernel_rates(torch, image_kernel_table(kernels, options.quick),
                                                        grids.image_shapes(options.quick), dtype, budget, progress,
                                                        device, time_group=timer)
    own, own_probes = own + image, own_probes + image_probes
    host()
    kind_costs = {k["kind"]: k["op_s"] for k in kind_op_s}
    if gpu:
        kind_costs = {}  # device time holds no host cost to take off
    gemm, gemm_probes = gemm_points(torch, dtype, device, kind_costs, budget, progress, options.quick, timer)
    host()
    conv, conv_probes, dispatch = torch_common.conv_points(
        torch, dtype, device, 0.0 if gpu else kind_costs.get("conv2d", op_s), budget, progress, options.quick,
        sync, timer)
    host()
    if gpu:
        props = torch.cuda.get_device_properties(device)
        working = 4 * getattr(props, "L2_cache_size", 0) or 1024 ** 3
        level, memory_probe = _gpu_memory_level(torch, dtype, device, working, budget, timer, progress)
    else:
        level, memory_probe = torch_common.dram_level(torch, dtype, budget, progress)

    batchnorm_apart = torch_common.conv_batchnorm_apart(torch, prepare, dtype, progress, device)
    settings = {"mode": "module.eval() under torch.inference_mode()"}
    if dtype in (torch.bfloat16, torch.float16):
        settings["layernorm_dtype"] = "f32"
    return record.build_record(
        runtime=RUNTIME, device=device, framework=torch_common.framework(torch), versions=torch_common.versions(torch),
        threads=torch.get_num_threads(), dtypes=[label], settings=settings, op_s=op_s, kind_op_s=kind_op_s,
        own_kernels=own, layout=None, conv_layout="nchw", linears_as_convolutions=False, in_place=[],
        fuse_activations=False, memory_levels=[level], gemm=gemm, conv=conv, conv_dispatch=dispatch,
        conv_batchnorm_apart=batchnorm_apart,
        probes=fixed_probes + own_probes + gemm_probes + conv_probes + [memory_probe] + host.points(),
        calibration_s=0.0, cold_op_s=cold_op_s)


def _gpu_memory_level(torch, dtype, device, working, budget, timer, progress):
    """Device-memory bandwidth of torch.add out= over 4x the L2 cache, from device time."""
    itemsize = torch.tensor([], dtype=dtype).element_size()
    n = working // (3 * itemsize)
    a = harness.random_input("torch", (n,), dtype, device, seed=4, positive=True)
    b = harness.random_input("torch", (n,), dtype, device, seed=5, positive=True)
    out = torch.empty(n, dtype=dtype, device=device)
    timing = timer({0: lambda: torch.add(a, b, out=out)}, budget, weight=2)[0]
    bps = 3 * n * itemsize / timing.time_s
    progress(f"device memory, add out=: {bps / 1e9:.0f} GB/s")
    return ({"name": "DRAM", "bytes": None, "Bps": bps},
            record.probe_point("memory add out= device", f"3x{n}", timing, bytes=3 * n * itemsize))
