"""torch-jit: a model as frozen TorchScript runs it on the CPU, in f32: torch.jit.trace,
torch.jit.freeze, torch.jit.optimize_for_inference (convolutions on oneDNN, channel-blocked),
with every nn.Linear run as the same product in a 1x1 convolution where this PyTorch's frozen
linear is the slower of the two (prepare(), linears_run_as_convolutions()).

Probes: which of a frozen linear and the same product as a 1x1 convolution is faster; the fixed
cost of one op (chains of 1x1 convolutions, 16 channels, 4x4, in a frozen graph), warm and
cold (cold_op_cost); the cost of each elementwise kind that runs blocked, beside a convolution
(chains of conv+op links less the convolutions'); the layout rules, in-place kinds and
activation folding (the layout probe, runtimes/torch_layout.py, from oneDNN's verbose lines);
the rates of its dense convolutions where its oneDNN is not the profile's (conv_points); the
rates of PyTorch's own kernels, which run the ops a frozen graph leaves plain, over the size
grids; and the main-memory bandwidth of its own kernels."""
import copy
import statistics
import warnings

from runtimes import frozen_graph, grids, harness, record, torch_common, torch_layout

RUNTIME = "torch-jit"
DEVICES = ("cpu",)
MINIMUM_TORCH = (1, 10)  # torch.jit.optimize_for_inference

# The kinds of the elementwise chains in --quick (the full run tries every elementwise kind that
# runs blocked).
QUICK_KINDS = ("elementwise:relu", "elementwise:add")
# Row-shaped kernels timed beside the image-shaped ones (the kinds both have are timed once).
ROW_KINDS = ("softmax", "norm:layernorm", "transpose", "transpose:inner", "elementwise:gelu_tanh",
             "elementwise:div")
QUICK_IMAGE_KINDS = ("elementwise:relu", "elementwise:add", "elementwise:silu", "pool:max", "norm:batchnorm")
QUICK_ROW_KINDS = ("softmax", "norm:layernorm")
CHAIN_CHANNELS, CHAIN_SIDE = 16, 4
# A convolution graph's share of a point's sampling time: a point's pair and follower are two of
# some 120 graphs, and the fastest of fifteen samples over three sweeps holds a point's rate to
# within a few percent.
CONV_POINT_WEIGHT = 0.15
# The product the linears' decision times: LINEAR_ROWS x LINEAR_WIDTH -> LINEAR_WIDTH, a point of
# the GEMM grid.
LINEAR_ROWS, LINEAR_WIDTH = 8, 512


def freeze(torch, module, example_inputs):
    """`module` traced on `example_inputs`, frozen and optimized for inference. torch 2.x
    warns on each call that TorchScript is deprecated: the runtime is what is measured, so the
    warning is silenced. The trace is not checked by a second run of the module (check_trace):
    the graph is the same, and the check takes most of a small module's trace time."""
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        traced = torch.jit.trace(module.eval(), example_inputs, check_trace=False)
        return torch.jit.optimize_for_inference(torch.jit.freeze(traced))


def prepare(module, example_inputs, dtype=None, linears_as_convolutions=True):
    """`module` run as torch-jit runs it: a copy in f32 (with `linears_as_convolutions`, as
    the runtime's record says, every nn.Linear as the same 1x1 convolution), traced on
    `example_inputs` (a tuple), frozen and optimized for inference. Returns a callable(*inputs)
    that runs it without autograd. `dtype`: None or torch.float32 (the runtime's only dtype)."""
    torch = torch_common.require_torch(RUNTIME, MINIMUM_TORCH)
    if dtype not in (None, torch.float32):
        raise ValueError(f"{RUNTIME} runs in f32, not {dtype}")
    model = copy.deepcopy(module)
    if linears_as_convolutions:
        model = torch_common.linears_as_convolutions(model)
    model = model.float().eval()
    graph = freeze(torch, model, tuple(example_inputs))

    def run(*inputs):
        with torch.no_grad():
            return graph(*inputs)
    return run


def linears_run_as_convolutions(torch, budget, progress):
    """Whether a frozen graph runs a product faster as a 1x1 convolution (oneDNN, weights
    prepacked at freezing) than as nn.Linear (PyTorch's BLAS): a linear of LINEAR_ROWS x
    LINEAR_WIDTH both ways, each output checked, timed interleaved. Debian's torch 1.13 sends
    f32 linears to a reference BLAS (8 x 512 x 512 on the 2-core Zen 5 VM: 525 us as a linear,
    58 us as a convolution); PyPI's 2.15 to MKL (55 and 93 us). Returns (bool, probe points)."""
    from torch import nn
    torch.manual_seed(harness.SEED)
    layer = nn.Sequential(nn.Linear(LINEAR_WIDTH, LINEAR_WIDTH)).eval()
    x = harness.random_input("torch", (LINEAR_ROWS, LINEAR_WIDTH))
    graphs = {"linear": freeze(torch, copy.deepcopy(layer), (x,)),
              "conv1x1": freeze(torch, torch_common.linears_as_convolutions(copy.deepcopy(layer)), (x,))}
    want = torch.nn.functional.linear(x.double(), layer[0].weight.double(), layer[0].bias.double())
    with torch.no_grad():
        for name, graph in graphs.items():
            harness.check_close(f"frozen {name} {LINEAR_ROWS}x{LINEAR_WIDTH}", graph(x), want,
                                *torch_common.tolerance(torch, torch.float32))
        timings = harness.time_calls({name: (lambda g=graph: g(x)) for name, graph in graphs.items()}, budget)
    as_convs = timings["conv1x1"].time_s < timings["linear"].time_s
    shape = f"{LINEAR_ROWS}x{LINEAR_WIDTH}x{LINEAR_WIDTH}"
    progress(f"a frozen linear of {shape} takes {timings['linear'].time_s * 1e6:.0f} us, as a 1x1 convolution "
             f"{timings['conv1x1'].time_s * 1e6:.0f} us: linears run as " + ("convolutions" if as_convs else "linears"))
    return as_convs, [record.probe_point(f"frozen {name} f32", shape, timings[name]) for name in graphs]


def layout_probe(torch, progress):
    """(findings, layout, probe points) of the layout probe (runtimes/torch_layout.py), run in
    this process on the runtime's threads: oneDNN may choose an implementation, and with it a
    layout, by the thread count. RuntimeError, one line, when its lines cannot be read;
    harness.FrameworkMissing where this PyTorch cannot switch oneDNN's verbose lines on."""
    if not hasattr(torch.backends.mkldnn, "verbose"):
        raise harness.FrameworkMissing(f"{RUNTIME} reads oneDNN's verbose lines through torch.backends.mkldnn."
                                       f"verbose, which torch {torch.__version__} lacks: "
                                       f"{torch_common.install_hint()}")
    findings, runs = torch_layout.probe(torch)
    progress(f"running {len(runs)} layout nets under oneDNN's verbose log")
    try:
        layout, counts = frozen_graph.layout_of(findings, torch_layout.verbose_lines(torch, runs),
                                                grids.GROUP_REORDER_WIDTHS)
    except ValueError as error:
        raise RuntimeError(f"the layout probe failed: {error}") from None
    except AssertionError:  # torch.backends.mkldnn.verbose's own check
        raise RuntimeError("the layout probe failed: oneDNN's verbose lines did not switch on") from None
    probes = [record.probe_point(f"layout reorders {name}", "to plain, to blocked", to_plain=c[0], to_blocked=c[1])
              for name, c in counts.items()]
    probes.append(record.probe_point("layout to_dense per conv-OP-conv graph", "16ch 16x16",
                                     to_dense=findings["to_dense"], cross=findings.get("cross") or ""))
    return findings, layout, probes


def conv_chain(torch, links):
    """A frozen chain of `links` 1x1 convolutions (CHAIN_CHANNELS channels, CHAIN_SIDE square)."""
    from torch import nn
    x = harness.random_input("torch", (1, CHAIN_CHANNELS, CHAIN_SIDE, CHAIN_SIDE))
    chain = nn.Sequential(*[nn.Conv2d(CHAIN_CHANNELS, CHAIN_CHANNELS, 1) for _ in range(links)]).eval()
    return chain, x


def kind_chain(torch, module, operands, links):
    """A chain of `links` links of a 1x1 convolution and the op (on the convolution's output;
    a binary op on the link's input too)."""
    from torch import nn

    class Link(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.op = nn.Conv2d(CHAIN_CHANNELS, CHAIN_CHANNELS, 1), copy.deepcopy(module)

        def forward(self, x):
            y = self.conv(x)
            return self.op(y, x) if operands == 2 else self.op(y)

    x = harness.random_input("torch", (1, CHAIN_CHANNELS, CHAIN_SIDE, CHAIN_SIDE))
    return nn.Sequential(*[Link() for _ in range(links)]).eval(), x


def frozen_checked(torch, name, chain, x):
    """The chain frozen, its output checked against the eager module's; a callable."""
    graph = freeze(torch, chain, x)
    with torch.no_grad():
        harness.check_close(name, graph(x), chain(x), rtol=1e-4, atol=1e-4)
    return lambda: graph(x)


def build_chains(torch, links, kinds):
    """The frozen chains, each output checked: 1 and `links` 1x1 convolutions, and `links`
    conv+op links of each kind of `kinds`. Returns name -> callable."""
    modules = torch_common.elementwise_modules()
    runs = {"conv x1": frozen_checked(torch, "conv chain x1", *conv_chain(torch, 1)),
            f"conv x{links}": frozen_checked(torch, f"conv chain x{links}", *conv_chain(torch, links))}
    for kind in kinds:
        module, operands = modules[kind]
        runs[kind] = frozen_checked(torch, f"{kind} chain", *kind_chain(torch, module, operands, links))
    return runs


def chain_costs(torch, runs, links, kinds, budget, progress):
    """op_s from the convolution chains of `runs` (build_chains), and each kind's own cost beside
    a convolution: (time of `links` conv+op links - time of `links` convolutions) / links. One
    interleaved group, so that a busy spell slows every chain alike. Returns (op_s, kind_op_s
    entries, probe points)."""
    runs = {name: run for name, run in runs.items() if name.startswith("conv x") or name in kinds}
    progress(f"timing {len(runs)} frozen chains of up to {links} links")
    with torch.no_grad():
        timings = harness.time_calls(runs, budget, weight=2.0)
    conv_1, conv_n = timings["conv x1"].time_s, timings[f"conv x{links}"].time_s
    op_s = harness.chain_cost(conv_1, conv_n, links)
    shape = f"1x{CHAIN_CHANNELS}x{CHAIN_SIDE}x{CHAIN_SIDE}"
    probes = [record.probe_point(f"op chain conv1x1 {CHAIN_CHANNELS}ch {CHAIN_SIDE}x{CHAIN_SIDE} x{n}", shape,
                                 timings[f"conv x{n}"], links=n) for n in (1, links)]
    kind_op_s = []
    for kind in kinds:
        cost = max(0.0, (timings[kind].time_s - conv_n) / links)
        kind_op_s.append({"kind": kind, "dtype": None, "op_s": cost})
        probes.append(record.probe_point(f"kind chain conv1x1+{kind} x{links}", shape, timings[kind], links=links,
                                         op_s=cost))
    progress(f"op_s {op_s * 1e6:.2f} us; " + ", ".join(f"{k['kind']} {k['op_s'] * 1e6:.2f} us" for k in kind_op_s))
    return op_s, kind_op_s, probes


def cold_op_cost(torch, links, quick, progress):
    """What each op of a frozen graph costs inside a model whose pass outgrows the caches: two
    rings of harness.COLD_RING frozen chains, of 1 and of `links` 1x1 convolutions (each chain of
    channels of its own, CHAIN_SIDE square), called in turn, each call after a write of
    1/(2 COLD_RING) of the last-level cache (harness.time_cold_rings). A chain's graph, weights
    and primitives so come back after a cache's worth of other traffic, as a model's layers do a
    pass later. The op's cost is the slope between the two rings' medians, as op_s is between
    the warm chains'; `links` is --quick's chain length in both runs, since each chain of a ring
    is traced and frozen anew. Returns (seconds, probe points)."""
    from torch import nn
    ring_size = harness.COLD_RING
    size = harness.eviction_bytes(harness.last_level_cache_bytes())
    buffers = [torch.empty(size // (2 * ring_size) // 4, dtype=torch.float32) for _ in range(2 * ring_size)]
    rings = {}
    for n in (1, links):
        rings[n] = []
        for i in range(ring_size):
            channels = CHAIN_CHANNELS + 4 * i
            torch.manual_seed(harness.SEED + i)
            chain = nn.Sequential(*[nn.Conv2d(channels, channels, 1) for _ in range(n)]).eval()
            x = harness.random_input("torch", (1, channels, CHAIN_SIDE, CHAIN_SIDE), seed=i)
            rings[n].append(frozen_checked(torch, f"cold chain {channels}ch x{n}", chain, x))
    writes = [lambda b=b: b.fill_(1.0) for b in buffers]
    rounds = harness.COLD_CALL_ROUNDS_QUICK if quick else harness.COLD_CALL_ROUNDS
    with torch.no_grad():
        for n in rings:  # a first call of each chain
            for run in rings[n]:
                run()
        timings = harness.time_cold_rings(rings, writes, rounds * ring_size)
    cost = harness.chain_cost(timings[1].median_s, timings[links].median_s, links)
    probes = [record.probe_point(f"cold op chain conv1x1 x{n}",
                                 f"ring of {ring_size}, {CHAIN_CHANNELS}-{CHAIN_CHANNELS + 4 * (ring_size - 1)}ch "
                                 f"{CHAIN_SIDE}x{CHAIN_SIDE}, {size // (2 * ring_size)} bytes written between calls",
                                 timings[n], links=n) for n in rings]
    progress(f"cold calls: op_s {cost * 1e6:.2f} us")
    return cost, probes


def conv_pair(torch, shape, seed):
    """A convolution point's frozen graphs: the point then its follower (grids.follower), and
    the follower alone; each with its input, and the pair's eager module (for its check)."""
    from torch import nn

    def conv(s):
        return nn.Conv2d(s["c"], s["k"], (s["r"], s["s"]), s["stride"], s["pad"], groups=s["groups"])
    second = grids.follower(shape)
    torch.manual_seed(harness.SEED + seed)
    pair = nn.Sequential(conv(shape), conv(second)).eval()
    x = harness.random_input("torch", (shape["n"], shape["c"], shape["h"], shape["w"]), seed=seed)
    x2 = harness.random_input("torch", (second["n"], second["c"], second["h"], second["w"]), seed=seed + 1)
    alone = nn.Sequential(pair[1]).eval()
    return (freeze(torch, pair, x), x), (freeze(torch, alone, x2), x2), pair


def check_conv_class(torch, shape, seed):
    """Checks the frozen pair of a small convolution of the same class as `shape` (kernel,
    stride, channels per group; two groups at most, few channels, a small image) against the
    pair in float64."""
    small = grids.class_check_shape(shape)
    (graph, x), _, module = conv_pair(torch, small, seed)
    with torch.no_grad():
        harness.check_close(f"frozen conv pair {grids.conv_name(small)}", graph(x),
                            copy.deepcopy(module).double()(x.double()), 1e-4, 1e-3)


def pair_kernels(pairs, op_s):
    """Kernel times of convolution points from their frozen pairs: [(FLOPs, class, pair's time,
    follower's time)] -> [(seconds, fit)]. A point's kernel is the pair's time less the
    follower's and one op ("difference"). A difference under one op's cost is within the noise
    of two graphs' timings, whose calls and layout changes cost several ops: such a point runs
    at the median rate of its class's timed points (grids.conv_class; of every class's where its
    own has none), as a kernel too small to time beside its graph ("class median")."""
    fitted = [(p - a - op_s, flops, cls) for flops, cls, p, a in pairs]
    rates = {}
    for kernel_s, flops, cls in fitted:
        if kernel_s >= op_s and kernel_s > 0:
            rates.setdefault(cls, []).append(flops / kernel_s)
    every = [r for class_rates in rates.values() for r in class_rates]
    out = []
    for (kernel_s, flops, cls), (_, _, p, _) in zip(fitted, pairs):
        if kernel_s >= op_s and kernel_s > 0:
            out.append((kernel_s, "difference"))
        elif rates.get(cls) or every:
            out.append((flops / statistics.median(rates.get(cls) or every), "class median"))
        else:  # no point timed above the noise: the pair's half, the most either kernel can take
            out.append((p / 2, "pair half"))
    return out


def conv_points(torch, op_s, onednn, budget, progress, quick):
    """The runtime's own f32 convolution points over the dense shapes of grids.conv_grid, for a
    PyTorch whose oneDNN is not the one the profile measured (its kernels, and so their rates, are
    its own; the estimate keeps the library's grouped and depthwise points, since a frozen pair of
    small ones is mostly its graph's call and layout changes, and their layout changes are
    charged apart): each point
    a frozen graph of the point's convolution and its follower, less the follower's graph alone
    and one op (pair_kernels), so that the graph's call and the layout changes at its ends drop
    out, as they do inside a network; both graphs timed in sweeps over the grid. Each
    kernel/stride/grouping class is checked once. Returns (points, probe points)."""
    shapes = [shape for shape in grids.conv_grid(quick) if grids.conv_class(shape) == "dense"]
    progress(f"building {2 * len(shapes)} frozen convolution graphs (oneDNN {onednn})")
    calls, checked = {}, set()
    for i, shape in enumerate(shapes):
        key = (shape["r"], shape["stride"])  # dense shapes only
        if key not in checked:
            check_conv_class(torch, shape, 100 + i)
            checked.add(key)
        (pair, x), (alone, x2), _ = conv_pair(torch, shape, 10 * i)
        calls[(i, "pair")] = lambda g=pair, x=x: g(x)
        calls[(i, "alone")] = lambda g=alone, x=x2: g(x)
    with torch.no_grad():
        timings = harness.time_in_sweeps(calls, budget, weight=CONV_POINT_WEIGHT)
    pairs = [(grids.conv_flops(shape), grids.conv_class(shape), timings[(i, "pair")], timings[(i, "alone")])
             for i, shape in enumerate(shapes)]
    fits = pair_kernels([(f, c, p.time_s, a.time_s) for f, c, p, a in pairs], op_s)
    median_fits = pair_kernels([(f, c, p.median_s, a.median_s) for f, c, p, a in pairs], op_s)
    points, probes = [], []
    for shape, (flops, _, pair, alone), (kernel_s, method), (median_s, _) in zip(shapes, pairs, fits, median_fits):
        point = dict(dtype="f32", **shape, layout="blocked")
        point.update({"time_s": kernel_s, "median_s": max(median_s, kernel_s), "flops_per_s": flops / kernel_s,
                      "cv": pair.cv, "samples": pair.count, "impl": f"onednn {onednn}", "cold_weights": False,
                      "pair_s": pair.time_s, "follower_s": alone.time_s, "fit": method})
        points.append(point)
        probes += [record.probe_point(f"conv frozen {which} f32", grids.conv_name(shape), t)
                   for which, t in (("pair", pair), ("follower", alone))]
    best = max(points, key=lambda p: p["flops_per_s"])
    progress(f"{len(points)} conv points, best {best['flops_per_s'] / 1e9:.1f} GFLOP/s")
    return points, probes


def calibrate(options):
    torch = torch_common.require_torch(RUNTIME, MINIMUM_TORCH)
    torch.manual_seed(harness.SEED)
    progress, budget = options.progress, options.budget
    torch_common.set_threads(torch, options.threads)
    host = torch_common.host_probe(torch, options.started)
    host()
    findings, layout, layout_probes = layout_probe(torch, progress)
    candidates = [k for k in torch_common.elementwise_modules() if not options.quick or k in QUICK_KINDS]
    links = grids.chain_links(options.quick)
    progress(f"building {len(candidates) + 2} frozen chains")
    runs = build_chains(torch, links, candidates)
    progress(f"layout: {len(layout['blocked_ops'])} kinds blocked, copies {layout['to_plain_copies']}/"
             f"{layout['to_blocked_copies']}, group widths {layout['group_reorder_widths']}")
    # An elementwise op that runs plain pays its layout changes (charged by the layout rules) and
    # its kernel (own_kernels) beside the convolutions: only the blocked ones have a cost of their own.
    blocked = [k for k in candidates if k in layout["blocked_ops"]]
    op_s, kind_op_s, probes = chain_costs(torch, runs, links, blocked, budget, progress)
    cold_s, cold_probes = cold_op_cost(torch, grids.chain_links(quick=True), options.quick, progress)
    host()

    # A PyTorch that bundles another oneDNN than the profile's runs its own convolution kernels.
    onednn = torch_common.versions(torch).get("onednn")
    library = options.libraries.get("onednn")
    conv, conv_probes = [], []
    if onednn and library and onednn != library:
        conv, conv_probes = conv_points(torch, op_s, onednn, budget, progress, options.quick)
        host()

    image_kinds = QUICK_IMAGE_KINDS if options.quick else None
    row_kinds = QUICK_ROW_KINDS if options.quick else ROW_KINDS
    kernels = torch_common.image_kernels(image_kinds)
    own, own_probes = torch_common.own_kernel_rates(torch, kernels, grids.image_shapes(options.quick), torch.float32,
                                                    budget, progress)
    rows = {k: v for k, v in torch_common.row_kernels(torch.float32, mixed_norm=False).items() if k in row_kinds}
    own_rows, row_probes = torch_common.own_kernel_rates(torch, rows, grids.row_shapes(options.quick),
                                                         torch.float32, budget, progress)
    host()
    level, memory_probe = torch_common.dram_level(torch, torch.float32, budget, progress)
    batchnorm_apart = torch_common.conv_batchnorm_apart(torch, prepare, torch.float32, progress)
    as_convs, linear_probes = linears_run_as_convolutions(torch, budget, progress)

    return record.build_record(
        runtime=RUNTIME, device="cpu", framework=torch_common.framework(torch),
        versions=torch_common.versions(torch), threads=torch.get_num_threads(), dtypes=["f32"],
        settings={"linears_as_convolutions": as_convs, "conv_layout": findings["conv_layout"],
                  "freeze": "torch.jit.trace, torch.jit.freeze, torch.jit.optimize_for_inference"},
        op_s=op_s, kind_op_s=kind_op_s, own_kernels=own + own_rows, layout=layout,
        conv_layout=findings["conv_layout"], linears_as_convolutions=as_convs, in_place=findings["in_place"],
        fuse_activations=findings["fuse_activations"], conv_batchnorm_apart=batchnorm_apart, memory_levels=[level],
        probes=probes + cold_probes + layout_probes + conv_probes + own_probes + row_probes + [memory_probe] +
        linear_probes + host.points(), conv=conv, calibration_s=0.0, cold_op_s=max(cold_s, op_s))
