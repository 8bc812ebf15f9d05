"""torch-compile: a model as torch.compile runs it (inductor, default options; on a GPU
mode="reduce-overhead"), under torch.inference_mode(), in f32 on the CPU and bf16 on a GPU that
supports it. Needs torch 2.x. Each shape is compiled as its own graph (dynamic=False), as a
deployment that serves one shape gets it; a process that compiles several shapes of one model
would otherwise switch to shape-generic kernels.

Probes: the fixed cost of one kernel call inside a compiled graph (chains of small linear+relu
links: a library call and a generated kernel each) and of one call of the compiled graph itself;
which op chains run as one generated kernel (fusion rules: elementwise chains, elementwise ops
before and after a softmax or layer norm, an elementwise op after a product), each from the time
a chain adds to its first op against the time that op costs alone; the rates of its generated
kernels over the row grid and, for convolutional graphs, over the image grid (a batch norm with
each costly activation after it); the library's GEMM and convolution points as the compiled graph calls
them (PyTorch's own calls, each less the fixed cost above); the main-memory bandwidth of its
kernels."""
import contextlib
import copy
import re

from runtimes import grids, harness, record, torch_common

RUNTIME = "torch-compile"
DEVICES = ("cpu", "cuda")
MINIMUM_TORCH = (2, 0)
# A link of the fixed-cost chains: a linear of 1 x LINK_WIDTH -> LINK_WIDTH (large enough that
# inductor calls the library for it rather than generating its own loop) and a relu (a generated
# kernel: the product's epilogue stays apart, see fusion_rules), two kernels a link.
LINK_WIDTH = 64
# Compiling costs seconds a graph: shorter chains and fewer kernels than the other runtimes.
LINKS, QUICK_LINKS = 16, 4
KINDS = ("elementwise:gelu", "elementwise:gelu_tanh", "elementwise:add", "softmax", "norm:layernorm")
QUICK_KINDS = ("elementwise:add",)
# Fusion probes run on the largest row-grid operand (past the caches of small machines, where a
# pass over memory dominates a kernel's time); --quick on the next smaller one.
FUSION_ELEMENTS, QUICK_FUSION_ELEMENTS = 2 ** 22, 2 ** 19
# Elementwise ops in the probe's chain: more than one pass would cost several times one pass.
CHAIN_OPS = 4
# An op has joined its neighbour's kernel when it adds less than this fraction of what it costs
# as a kernel of its own.
FUSED_FRACTION = 0.5
# The batch norms of the image kernels shift each channel by up to about this many standard
# deviations of their input.
SHIFT = 0.25
# Untimed calls of each fusion probe after all are compiled (a CUDA graph is recorded on the
# second or third).
FUSION_WARMUP = 3


def require():
    return torch_common.require_torch(RUNTIME, MINIMUM_TORCH, need_2x=True)


# Graphs the calibration compiles from one frame: the probes of a kind share their module's
# forward (nn.Sequential's, a wrapped function's), one graph per shape.
PROBE_GRAPHS_PER_FRAME = 64


def compile_every_call(torch, graphs_per_frame):
    """Room for `graphs_per_frame` compiled graphs of one frame, and an error past it. Past the
    compiler's recompile limit (8 graphs) a frame runs eager without a word: a probe or a model
    compiled in a process that has compiled many others would be timed as eager PyTorch runs
    it."""
    config = torch._dynamo.config
    for limit in ("recompile_limit", "cache_size_limit"):
        if hasattr(config, limit):
            setattr(config, limit, max(getattr(config, limit), graphs_per_frame))
    for fail in ("fail_on_recompile_limit_hit", "fail_on_cache_limit_hit"):
        if hasattr(config, fail):
            setattr(config, fail, True)


def default_dtype(torch, device):
    if str(device).startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def compile_module(torch, module, device):
    if str(device).startswith("cuda"):
        return torch.compile(module, mode="reduce-overhead", dynamic=False)
    return torch.compile(module, dynamic=False)


def compile_callable(torch, call, device):
    """A module or a plain function compiled as compile_module compiles a model (a module's float64
    reference is then its own copy, a function's the function itself)."""
    if isinstance(call, torch.nn.Module):
        return compile_module(torch, call, device)
    if str(device).startswith("cuda"):
        return torch.compile(call, mode="reduce-overhead", dynamic=False)
    return torch.compile(call, dynamic=False)


def prepare(module, example_inputs, dtype=None):
    """`module` run as torch-compile runs it: a copy in eval mode in `dtype` (None: f32 on the
    CPU, bf16 on a GPU that supports it) on the device of `example_inputs`, compiled with
    torch.compile (mode="reduce-overhead" on a GPU). Returns a callable(*inputs) that runs it
    under torch.inference_mode()."""
    torch = require()
    device = example_inputs[0].device if example_inputs else torch.device("cpu")
    model = copy.deepcopy(module).eval().to(device, dtype or default_dtype(torch, device))
    compiled = compile_module(torch, model, device)

    def run(*inputs):
        with torch.inference_mode():
            return compiled(*inputs)
    return run


def _as_module(torch, call):
    """A plain function as a module, so that compile_module treats both alike."""
    if isinstance(call, torch.nn.Module):
        return call

    class Function(torch.nn.Module):
        def forward(self, *xs):
            return call(*xs)
    return Function()


def _timed(torch, compiled, xs, sync):
    """A callable that runs `compiled` on xs under torch.inference_mode() (and `sync`)."""
    def run():
        with torch.inference_mode():
            compiled(*xs)
        if sync:
            sync()
    return run


# A kernel launch in the code the compiler generated for a graph: its own kernels (C++ on the CPU,
# Triton on a GPU) and the library calls it makes (extern_kernels.*, torch.ops.*).
_LAUNCH = re.compile(r"\b(cpp_fused_\w+\(|triton_\w+\.run\(|extern_kernels\.\w+\(|torch\.ops\.\w+\.\w+)")


def kernel_launches(codes):
    """The kernels a compiled graph launches a call, from the source the compiler generated (a
    list of module sources): the launch lines of each module's `call` and of the partitions it
    calls (`partition_N`, where the compiler splits a graph for CUDA graphs). None where no
    `call` is found (another compiler, or a generated code of another shape)."""
    launches, found = 0, False
    for code in codes or ():
        indent = None  # the indentation of the `def call` whose body is being read
        for line in code.splitlines():
            depth = len(line) - len(line.lstrip())
            if indent is not None and line.strip() and depth <= indent:
                indent = None
            if indent is not None:
                launches += bool(_LAUNCH.search(line))
            elif re.match(r"\s*def (call|partition_\d+)\(", line):
                indent, found = depth, True
    return launches if found else None


def decide_fusion(t, launches=None):
    """The fusion rules from the probes' times (seconds by case name, fusion_rules' cases): an
    op has joined its neighbour's kernel where it adds less than FUSED_FRACTION of a pass of its
    own (the compiled relu over the same tensor) per op it adds. Where the generated code's
    launches are known (kernel_launches by case name), an op that added a launch of its own has
    not joined, whatever the times say: a time difference within noise decides only where the
    code shows a fusion."""
    pass_s = t["relu"]
    launches = launches or {}

    def joined(together, alone, passes=1):
        more = launches.get(together), launches.get(alone)
        if None not in more and more[0] > more[1]:
            return False
        return t[together] - t[alone] < FUSED_FRACTION * passes * pass_s

    return {
        "pointwise": joined("chain", "relu", CHAIN_OPS - 1),
        # A residual add reads one operand more than the norm alone: half a pass where it fused,
        # one and a half where it ran apart.
        "into_reductions": (joined("layernorm+relu", "layernorm") and joined("scale+softmax", "softmax")
                            and joined("add+layernorm", "layernorm", 2)),
        "into_products": joined("linear+relu", "linear"),
    }


def take_off(points, fixed_s, flops_of):
    """GEMM or convolution points timed whole, made kernel times: `fixed_s` taken off each time
    (harness.kernel_time_s), the rate recomputed (flops_of(point))."""
    for p in points:
        kernel_s = harness.kernel_time_s(p["measured_s"], fixed_s)
        p["median_s"] = max(harness.kernel_time_s(p["median_s"], fixed_s), kernel_s)
        p["time_s"] = kernel_s
        p["flops_per_s"] = flops_of(p) / kernel_s
        p["fixed_s_taken_off"] = p["measured_s"] - kernel_s


def layout_optimized(torch):
    """Whether the compiler lays a convolutional graph's activations out channels-last (its
    layout optimization, on by default): its convolutions then run on NHWC activations."""
    config = getattr(torch._inductor, "config", None)
    return bool(getattr(config, "layout_optimization", False))


def image_kernels(torch, dtype, device, quick=False):
    """Estimator row kind -> (make(shape) -> callable, operand shapes(shape)) of the generated
    kernels of image-shaped activations. A convolution's batch norm runs in the kernel of the
    activation after it: `elementwise` (every elementwise kind without a rate of its own: a batch
    norm in inference and a relu, one kernel of per-channel arithmetic, a convolutional network's
    usual elementwise work), and the activations whose arithmetic costs more than a relu's where
    the compiler's code is scalar (`elementwise:clip`, a relu6, whose NaN-propagating min and max
    cost 5 relus there; `elementwise:silu`, `elementwise:hardswish`); `norm:batchnorm`
    (a batch norm alone, as one that precedes a convolution runs) and `pool:max` (a 3x3 max pool,
    stride 2). --quick: `elementwise` and `pool:max`."""
    from torch import nn

    # A trained network's batch norm gives its activation values of about unit scale, about as
    # often negative as positive: the time of scalar exp and of a clip's branches depends on them.
    def normalized(shape, activation=None):
        norm = nn.BatchNorm2d(shape[1]).to(device, dtype).eval()
        channels = norm.weight.shape
        with torch.no_grad():
            norm.weight.copy_(harness.random_input("torch", channels, dtype, device, seed=12, positive=True))
            norm.running_var.copy_(harness.random_input("torch", channels, dtype, device, seed=15, positive=True))
            for i, tensor in enumerate((norm.bias, norm.running_mean)):
                tensor.copy_(harness.random_input("torch", channels, dtype, device, seed=13 + i) * SHIFT)
        return (nn.Sequential(norm, activation) if activation is not None else norm).eval()

    makes = {"elementwise": lambda shape: normalized(shape, nn.ReLU()),
             "pool:max": lambda shape: nn.MaxPool2d(3, 2, 1)}
    if not quick:
        makes.update({"elementwise:clip": lambda shape: normalized(shape, nn.ReLU6()),
                      "elementwise:silu": lambda shape: normalized(shape, nn.SiLU()),
                      "elementwise:hardswish": lambda shape: normalized(shape, nn.Hardswish()),
                      "norm:batchnorm": normalized})
    return {kind: (make, lambda shape: [shape]) for kind, make in makes.items()}


def fusion_rules(torch, dtype, device, budget, progress, quick, sync=None):
    """Which chains the compiler runs as one kernel. Each rule compares a chain with its first
    op alone: the op that follows has joined the kernel where it adds less than FUSED_FRACTION of
    what it costs as a kernel of its own (a compiled relu over the same tensor). Returns (rules,
    probe points)."""
    from torch import nn
    rtol, atol = torch_common.tolerance(torch, dtype)
    elements = QUICK_FUSION_ELEMENTS if quick else FUSION_ELEMENTS
    rows, cols = grids.ROW_SHAPES[elements]
    x = harness.random_input("torch", (rows, cols), dtype, device, seed=7)
    b = harness.random_input("torch", (rows, cols), dtype, device, seed=8)
    norm = nn.LayerNorm(cols).to(device, dtype).eval()
    with torch.no_grad():
        norm.weight.copy_(harness.random_input("torch", (cols,), dtype, device, seed=9))
        norm.bias.copy_(harness.random_input("torch", (cols,), dtype, device, seed=10))
    # A product whose output has the probe's elements: rows x cols from rows x width.
    width = grids.GEMM_WIDTHS[1]
    linear = nn.Linear(width, cols).to(device, dtype).eval()
    xl = harness.random_input("torch", (rows, width), dtype, device, seed=11)

    def chain(y):
        for _ in range(CHAIN_OPS // 2):
            y = torch.relu(y * 1.5 - 0.25)
        return y

    # name -> (make(norm, linear) -> fn, inputs): the float64 reference is the same fn made
    # of float64 copies of the modules.
    cases = {
        "relu": (lambda n, l: torch.relu, [x]),
        "chain": (lambda n, l: chain, [x]),
        "layernorm": (lambda n, l: n, [x]),
        "layernorm+relu": (lambda n, l: (lambda y: torch.relu(n(y))), [x]),
        "softmax": (lambda n, l: (lambda y: torch.softmax(y, dim=-1)), [x]),
        "scale+softmax": (lambda n, l: (lambda y: torch.softmax(y * 0.125, dim=-1)), [x]),
        "add+layernorm": (lambda n, l: (lambda y, z: n(y + z)), [x, b]),
        "linear": (lambda n, l: l, [xl]),
        "linear+relu": (lambda n, l: (lambda y: torch.relu(l(y))), [xl]),
    }
    reference_modules = (copy.deepcopy(norm).double(), copy.deepcopy(linear).double())
    progress(f"compiling {len(cases)} fusion probes on {rows}x{cols}")
    runs, launches = {}, {}
    for name, (make, xs) in cases.items():
        compiled = compile_module(torch, _as_module(torch, make(norm, linear)), device)
        with torch.inference_mode():
            reach = width if name.startswith("linear") else 1
            got, launches[name] = _first_call(torch, compiled, xs)
            harness.check_close(f"compiled {name}", got, make(*reference_modules)(*[x.double() for x in xs]),
                                rtol, max(atol, rtol * reach ** 0.5))
        runs[name] = _timed(torch, compiled, xs, sync)
    # Reading a graph's code resets the compiler's state, so each probe compiled before the last
    # compiles again (from the cache) at its next call, and a GPU records its CUDA graph again:
    # every probe runs a few times before any is timed.
    with torch.inference_mode():
        for run in runs.values():
            for _ in range(FUSION_WARMUP):
                run()
    with torch.no_grad():
        timings = harness.time_calls(runs, budget, 0.5)
    t = {name: timing.time_s for name, timing in timings.items()}
    rules = decide_fusion(t, launches)
    pass_s = t["relu"]
    probes = [record.probe_point(f"fusion {name}", f"{rows}x{cols}", timings[name], one_pass_s=pass_s,
                                 **({"launches": launches[name]} if launches[name] is not None else {}))
              for name in cases]
    progress("fusion: " + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in rules.items()))
    return rules, probes


def _first_call(torch, compiled, xs):
    """(output, kernel launches) of a compiled callable's first call, which compiles it: the
    launches from the code the compiler generated, None where that code cannot be had."""
    try:
        from torch._inductor import config
        from torch._inductor.utils import run_and_get_code
    except ImportError:
        return compiled(*xs), None
    # A graph found in the compiler's cache is not generated again, and its code not seen: the
    # first call bypasses that cache (the generated kernels' binaries are still reused).
    bypass = config.patch(fx_graph_cache=False) if hasattr(config, "fx_graph_cache") else contextlib.nullcontext()
    with bypass:
        out, codes = run_and_get_code(compiled, *xs)
    return out, kernel_launches(codes)


def calibrate(options):
    torch = require()
    from torch import nn
    from runtimes import torch_eager
    torch_common.set_threads(torch, options.threads)
    compile_every_call(torch, PROBE_GRAPHS_PER_FRAME)
    torch.manual_seed(harness.SEED)
    device, progress, budget = options.device, options.progress, options.budget
    gpu = device.startswith("cuda")
    if gpu and not torch.cuda.is_available():
        raise harness.FrameworkMissing(f"{RUNTIME} --device {device}: this PyTorch ({torch.__version__}) sees no "
                                       "CUDA device")
    dtype = default_dtype(torch, device)
    label = torch_common.dtype_label(torch, dtype)
    sync = torch.cuda.synchronize if gpu else None
    timer = torch_eager.CudaTimer(torch) if gpu else None
    links = QUICK_LINKS if options.quick else LINKS
    x = harness.random_input("torch", (1, LINK_WIDTH), dtype, device)

    def make_chain(n):
        chain = nn.Sequential(*[m for _ in range(n) for m in (nn.Linear(LINK_WIDTH, LINK_WIDTH), nn.ReLU())])
        chain = chain.to(device, dtype).eval()
        compiled = compile_module(torch, chain, device)
        with torch.inference_mode():
            harness.check_close(f"compiled linear+relu chain x{n}", compiled(x), chain(x),
                                *torch_common.tolerance(torch, dtype))
        return _timed(torch, compiled, [x], sync)

    # A compiled graph calls the library's products as eager PyTorch does. They are measured
    # first, in a process that has run no generated kernel yet: the thread pool of the
    # compiler's kernels, idle between calls, would otherwise share the cores with the library's
    # while they are timed, which a graph's kernels, run one after another, do not. The fixed
    # cost of such a call in the graph (op_s) is taken off once measured (take_off).
    channels_last = layout_optimized(torch)
    host = torch_common.host_probe(torch, options.started)
    host()
    gemm, gemm_probes = torch_eager.gemm_points(torch, dtype, device, {}, budget, progress, options.quick, timer)
    conv, conv_probes, dispatch = torch_common.conv_points(torch, dtype, device, 0.0, budget, progress,
                                                           options.quick, sync, timer, channels_last=channels_last)
    host()
    levels, memory_probes = [], []
    if not gpu:
        level, memory_probe = torch_common.dram_level(torch, dtype, budget, progress)
        levels, memory_probes = [level], [memory_probe]

    # The generated kernels: the row kinds, and those of a convolutional graph on activations in
    # the layout the compiler gives such a graph (its elementwise work, a batch norm and its
    # activation; its batch norms; a max pool). Their sweeps are spread over the rest of the
    # calibration, tens of seconds apart.
    def compiled(kernels):
        return {kind: ((lambda s, make=make: compile_callable(torch, make(s), device)), operands)
                for kind, (make, operands) in kernels.items()}

    table = torch_common.row_kernels(dtype, mixed_norm=False)
    rows = compiled({kind: table[kind] for kind in (QUICK_KINDS if options.quick else KINDS)})
    image = compiled(image_kernels(torch, dtype, device, options.quick))
    progress(f"compiling {len(rows) + len(image)} kinds of generated kernels")
    own_kernels = [
        torch_common.OwnKernels(torch, rows, grids.row_shapes(True), dtype, device, sync, timer),  # two sizes
        torch_common.OwnKernels(torch, image, grids.image_shapes(True), dtype, device, sync, timer,
                                memory_format=torch.channels_last if channels_last else None)]

    def sweep_own_kernels():
        for group in own_kernels:
            group.sweep(budget)

    sweep_own_kernels()
    host()
    progress(f"compiling linear+relu chains of 1 and {links} links")
    op_s, probes = torch_common.chain_probe(torch, f"op chain linear+relu 1x{LINK_WIDTH} {label}", make_chain, links,
                                            2, budget)
    # The one-link graph is one call of the graph and its two kernels.
    graph_s = max(0.0, probes[0]["time_s"] - 2 * op_s)
    progress(f"op_s {op_s * 1e6:.2f} us, graph call {graph_s * 1e6:.2f} us")

    if not gpu:  # device time holds no host cost to take off
        take_off(gemm, op_s, lambda p: 2.0 * p["batch"] * p["m"] * p["n"] * p["k"])
        take_off(conv, op_s, grids.conv_flops)

    sweep_own_kernels()
    host()
    fusion, fusion_probes = fusion_rules(torch, dtype, device, budget, progress, options.quick, sync)
    fusion["graph_s"] = graph_s
    # The fusion probes reset the compiler: each generated kernel compiles again (from the
    # compiler's cache) in the warm-up calls of the sweeps left.
    own, own_probes = [], []
    for group in own_kernels:
        entries, points = group.results(budget, progress)
        own += entries
        own_probes += points
    host()

    return record.build_record(
        runtime=RUNTIME, device=device, framework=torch_common.framework(torch), versions=torch_common.versions(torch),
        threads=torch.get_num_threads(), dtypes=[label],
        settings={"compile": "torch.compile, inductor, default options, dynamic=False (one graph per shape)" +
                  (", mode=reduce-overhead" if gpu else ""), "mode": "module.eval() under torch.inference_mode()",
                  "conv_activations": "channels_last (inductor's layout optimization)" if channels_last else "nchw"},
        op_s=op_s, own_kernels=own, layout=None, conv_layout="nhwc" if channels_last else "nchw",
        memory_levels=levels, gemm=gemm, conv=conv, conv_dispatch=dispatch, fusion=fusion,
        probes=probes + fusion_probes + own_probes + gemm_probes + conv_probes + memory_probes + host.points(),
        calibration_s=0.0)
