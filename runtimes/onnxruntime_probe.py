"""onnxruntime: a model as onnxruntime.InferenceSession runs it on the CPU execution provider,
default session options (graph optimizations on; the thread count set only where --threads asks
for fewer threads than the cores this process may use), in f32.

Probes, each a tiny ONNX graph built in memory with onnx.helper: the fixed cost of one node
(chains of Add and Relu nodes on a tiny tensor) and of a session call; MLAS's own GEMM points
(MatMul with constant weights), each less the fixed costs the estimator charges per call and
per op; its layout rules (its NCHWc transformer runs convolutions channel-blocked:
runtimes/onnxruntime_layout.py); its convolution points, timed in chains so that the reorders
at a graph's ends drop out; the rates of its own kernels (elementwise, pools, norms, softmax,
concat, transposes) over the size grids; whether it folds an activation into the convolution
before it (no Relu left in the graph it optimizes from Conv+Relu); the main-memory bandwidth of
its Add. All grids are generic (runtimes/grids.py)."""
import math
import os
import tempfile

from runtimes import grids, harness, onnxruntime_layout, record

RUNTIME = "onnxruntime"
DEVICES = ("cpu",)
MINIMUM_ORT = (1, 10)
OPSET = 17  # LayerNormalization; onnxruntime runs it from 1.14
MS_DOMAIN = "com.microsoft"  # onnxruntime's own ops (Gelu, FusedConv)
PROVIDERS = ["CPUExecutionProvider"]
TINY_WIDTH = 16  # the op chain's tensor: 1 x TINY_WIDTH
KERNEL_FLOOR = 0.5  # a GEMM point's kernel time is at least this fraction of its measured time
QUICK_KINDS = ("elementwise:relu", "elementwise:add", "elementwise:gelu", "pool:max", "softmax", "norm:layernorm")
INSTALL = "scripts/setup-venv.sh onnxruntime (then --python .venv/bin/python)"


def require():
    """(onnxruntime, onnx, numpy), or harness.FrameworkMissing naming the install command."""
    import sys
    try:
        import numpy
        import onnx
        import onnxruntime
    except ImportError as error:
        raise harness.FrameworkMissing(f"{RUNTIME} needs onnxruntime, onnx and numpy, which {sys.executable} cannot "
                                       f"import ({error}): {INSTALL}") from None
    from runtimes.torch_common import version_tuple
    if version_tuple(onnxruntime.__version__) < MINIMUM_ORT:
        raise harness.FrameworkMissing(f"{RUNTIME} needs onnxruntime >= {MINIMUM_ORT[0]}.{MINIMUM_ORT[1]}, "
                                       f"{sys.executable} has {onnxruntime.__version__}: {INSTALL}")
    return onnxruntime, onnx, numpy


def session_options(ort, threads=None):
    """Default session options; the intra-op thread count only where `threads` asks for fewer
    than the cores this process may use (onnxruntime's default is every physical core)."""
    options = ort.SessionOptions()
    if threads and threads < harness.cpu_count():
        options.intra_op_num_threads = threads
    return options


def prepare(onnx_path, threads=None):
    """The model at `onnx_path` run as the onnxruntime probes run theirs: an InferenceSession on
    the CPU execution provider with default session options (session_options). Returns
    (session, run), run(feeds) -> the list of outputs, feeds a dict of input name -> array."""
    ort, _, _ = require()
    session = ort.InferenceSession(onnx_path, sess_options=session_options(ort, threads), providers=PROVIDERS)
    names = [o.name for o in session.get_outputs()]
    return session, lambda feeds: session.run(names, feeds)


class Graphs:
    """Builds tiny ONNX models in memory and sessions over them."""

    def __init__(self, ort, onnx, np, threads):
        self.ort, self.onnx, self.np, self.threads = ort, onnx, np, threads
        self.helper = onnx.helper

    def tensor(self, name, shape):
        return self.helper.make_tensor_value_info(name, self.onnx.TensorProto.FLOAT, list(shape))

    def constant(self, name, array):
        return self.onnx.numpy_helper.from_array(self.np.ascontiguousarray(array, dtype=self.np.float32), name)

    def model(self, nodes, inputs, outputs, constants=(), ms_domain=False):
        """The serialized model: `inputs` and `outputs` [(name, shape)], `constants` [(name, array)]."""
        graph = self.helper.make_graph(list(nodes), "truepeak_probe", [self.tensor(n, s) for n, s in inputs],
                                       [self.tensor(n, s) for n, s in outputs],
                                       [self.constant(n, a) for n, a in constants])
        opsets = [self.helper.make_opsetid("", OPSET)] + ([self.helper.make_opsetid(MS_DOMAIN, 1)] if ms_domain else [])
        model = self.helper.make_model(graph, opset_imports=opsets)
        model.ir_version = min(model.ir_version, 8)  # readable by every onnxruntime from 1.10
        return model.SerializeToString()

    def session(self, model_bytes, optimized_path=None):
        options = session_options(self.ort, self.threads)
        if optimized_path:
            options.optimized_model_filepath = optimized_path
            options.log_severity_level = 3  # its warning that a saved NCHWc graph is machine-specific
        return self.ort.InferenceSession(model_bytes, sess_options=options, providers=PROVIDERS)

    def runner(self, model_bytes, feeds):
        """A callable running the model on `feeds`, and its session."""
        session = self.session(model_bytes)
        return self.caller(session, feeds), session

    @staticmethod
    def caller(session, feeds):
        """A callable running `session` on `feeds` (the call keeps its session)."""
        names = [o.name for o in session.get_outputs()]
        return lambda: session.run(names, feeds)

    def optimized_node_types(self, model_bytes):
        """The op types of the graph onnxruntime runs after its optimizations."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "optimized.onnx")
            self.session(model_bytes, optimized_path=path)
            return [node.op_type for node in self.onnx.load(path).graph.node]


def time_sessions(makers, budget, weight=1.0):
    """Each session of `makers` (key -> a callable that opens a session and returns a call of
    it) opened right before it is timed and closed after, one after another, where the other
    probes interleave theirs (harness.time_calls): a session's thread pool spins a while after
    each run before its threads sleep, and while another session runs those threads take its
    cores. A pool also spins for tens of milliseconds after its session opens: a pair of 3x3
    convolutions of 16 channels on four 112x112 images took 8 ms a call for nine calls after
    a second session opened, against 3.7 ms on its own, on the 2-core Zen 3 VM. Interleaved,
    two sessions' convolutions on the 2-core Zen 5 VM ran at half the rate each gets alone.
    Returns key -> Timing."""
    timings = {}
    for key, make in makers.items():
        call = make()
        timings[key] = harness.time_call(call, budget, weight)
        del call  # the session closes before the next one opens
    return timings


def checked_call(g, model, feeds, check=None):
    """A maker for time_sessions: opens a session over `model`, runs `check(outputs)` once
    where given, and returns the call."""
    def make():
        run, _ = g.runner(model, feeds)
        if check is not None:
            check(run())
        return run
    return make


# ---- the fixed costs ---------------------------------------------------------------------------

def relu_add_chain(g, links):
    """`links` links of Add(a constant) and Relu on a 1 x TINY_WIDTH tensor; the model, its
    feeds and the reference output."""
    np = g.np
    x = harness.random_input("numpy", (1, TINY_WIDTH))
    bias = harness.random_input("numpy", (TINY_WIDTH,), seed=1) * 0.1
    nodes, name = [], "x"
    for i in range(links):
        nodes.append(g.helper.make_node("Add", [name, "bias"], [f"s{i}"]))
        name = f"r{i}" if i < links - 1 else "y"
        nodes.append(g.helper.make_node("Relu", [f"s{i}"], [name]))
    want = x.astype(np.float64)
    for _ in range(links):
        want = np.maximum(want + bias, 0)
    model = g.model(nodes, [("x", (1, TINY_WIDTH))], [("y", (1, TINY_WIDTH))], [("bias", bias)])
    return model, {"x": x}, want


def fixed_costs(g, budget, progress, quick):
    """op_s from chains of 1 and of n Add+Relu links: (time of n - time of 1) / ((n - 1) x the
    nodes a link keeps after optimization); and the fixed cost of a session call, the 1-link
    chain less its nodes. Returns (op_s, call_s, probe points)."""
    links = grids.chain_links(quick)
    makers, nodes = {}, {}
    for n in (1, links):
        model, feeds, want = relu_add_chain(g, n)
        makers[n] = checked_call(g, model, feeds,
                                 lambda out, n=n, want=want: harness.check_close(f"Add+Relu chain x{n}", out[0], want))
        nodes[n] = len(g.optimized_node_types(model))
    timings = time_sessions(makers, budget, weight=3.0)
    per_link = nodes[links] / links
    op_s = harness.chain_cost(timings[1].time_s, timings[links].time_s, links, per_link)
    call_s = max(0.0, timings[1].time_s - nodes[1] * op_s)
    probes = [record.probe_point(f"op chain Add+Relu 1x{TINY_WIDTH} x{n}", f"1x{TINY_WIDTH}", timings[n], links=n,
                                 nodes=nodes[n]) for n in (1, links)]
    progress(f"op_s {op_s * 1e6:.2f} us, session call {call_s * 1e6:.2f} us")
    return op_s, call_s, probes


# ---- GEMM and convolution points ---------------------------------------------------------------

def product_point(timing, fixed_s, flops, fields, links=1, chain_s=0.0, cold=False):
    """A point in the profile's format. A timed call runs `links` products one after another
    (each with weights of its own where `cold`) beside a fixed `chain_s`; a product's kernel time
    is its share of the call less `fixed_s` (the fixed costs the estimator charges per op: a
    session call and an op for a call of one product), at least KERNEL_FLOOR of that share."""
    def share(measured_s):
        return max(measured_s - chain_s, 0.0) / links
    kernel_s = harness.kernel_time_s(share(timing.time_s), fixed_s, KERNEL_FLOOR)
    median_s = harness.kernel_time_s(share(timing.median_s), fixed_s, KERNEL_FLOOR)
    point = dict(fields)
    point.update({"time_s": kernel_s, "median_s": median_s, "flops_per_s": flops / kernel_s, "cv": timing.cv,
                  "samples": timing.count, "impl": "mlas", "cold_weights": cold, "measured_s": timing.time_s,
                  "fixed_s_taken_off": share(timing.time_s) - kernel_s})
    if links != 1:
        point["links"] = links
    return point


def gemm_points(g, fixed_s, budget, progress, quick):
    """MatMul of X [m, k] by constant weights [k, n] (onnxruntime prepacks them) over
    grids.gemm_grid, f32. Returns (points, probe points)."""
    np = g.np
    points, probes = [], []
    grid = grids.gemm_grid(quick)
    checked = grids.checked_products(grid)
    for i, (m, n, k) in enumerate(grid):
        x = harness.random_input("numpy", (m, k), seed=2 * i)
        b = harness.random_input("numpy", (k, n), seed=2 * i + 1)
        model = g.model([g.helper.make_node("MatMul", ["x", "b"], ["y"])], [("x", (m, k))], [("y", (m, n))],
                        [("b", b)])
        run, _ = g.runner(model, {"x": x})
        if (m, n, k) in checked:
            harness.check_close(f"MatMul {m}x{n}x{k}", run()[0], x.astype(np.float64) @ b, 1e-4, 1e-3 * (k / 64) ** 0.5)
        timing = harness.time_call(run, budget)
        points.append(product_point(timing, fixed_s, 2.0 * m * n * k,
                                    {"dtype": "f32", "m": m, "n": n, "k": k, "batch": 1,
                                     "layout": "row-major, weights [k][n]"}))
        probes.append(record.probe_point("gemm MatMul f32", f"{m}x{n}x{k}", timing))
    best = max(points, key=lambda p: p["flops_per_s"])
    progress(f"{len(points)} gemm points, best {best['flops_per_s'] / 1e9:.1f} GFLOP/s "
             f"({best['m']}x{best['n']}x{best['k']})")
    return points, probes


def cold_chain(g, width, links):
    """A chain of `links` MatMuls of [rows, width] (rows a dimension of the model's input, so
    that one session serves every row count) by constant weights [width, width], each of its own
    (scaled to keep the values near 1). Returns (model bytes, weights). One random matrix is
    drawn; each copy is it with its columns rotated by the copy's index, a buffer of its own at
    the cost of a copy (drawing hundreds of MB of normal values takes seconds); past `width`
    copies the rotations repeat, still each in a buffer of its own."""
    np = g.np
    base = harness.random_input("numpy", (width, width), seed=grids.COLD_SEED) * width ** -0.5
    weights = [np.roll(base, j, axis=1) for j in range(links)]
    names = ["x"] + [f"h{j}" for j in range(1, links)] + ["y"]
    nodes = [g.helper.make_node("MatMul", [names[j], f"b{j}"], [names[j + 1]]) for j in range(links)]
    model = g.model(nodes, [("x", ("rows", width))], [("y", ("rows", width))],
                    [(f"b{j}", w) for j, w in enumerate(weights)])
    return model, weights


class ColdGemm:
    """The skinny MatMuls of grids.gemm_grid again with their weights read from main memory
    (grids.cold_product), as a model whose weights outgrow the caches reads each layer's: one
    session a width runs a chain of copies of the layer spanning grids.cold_span_bytes, each
    copy with weights of its own, for each of the width's row counts. Their sweeps run between
    the other probes, seconds apart: main memory's bandwidth on a shared host comes in spells (on
    the Zen 5 VM a triad got 60-74 or 141-157 GB/s, in spells of up to 40 s), and a point takes
    its fastest sweep."""

    def __init__(self, g, quick):
        np = g.np
        span = grids.cold_span_bytes(harness.last_level_cache_bytes(), quick)
        self.shapes, calls, chains = {}, {}, {}
        for m, n, w in grids.gemm_grid(quick):
            # A chain runs square weights only: each link's output is the next one's input.
            if n != w or not grids.cold_product(m, n, w):
                continue
            links = grids.cold_copy_count(4 * w * w, span)
            if w not in chains:  # one session a width, for each of its row counts
                model, weights = cold_chain(g, w, links)
                chains[w] = (g.session(model), weights)
            session, weights = chains[w]
            x = harness.random_input("numpy", (m, w), seed=grids.COLD_SEED - 1)
            run = g.caller(session, {"x": x})
            want = x.astype(np.float64)
            for b in weights:
                want = want @ b
            harness.check_close(f"MatMul chain of {links} {m}x{w}x{w}", run()[0], want, 1e-3, 1e-3)
            self.shapes[(m, w)] = links
            calls[(m, w)] = run
        self.sweeps = harness.Sweeps(calls)

    def finish(self, op_s, call_s, budget, progress):
        """(points, probe points): a link's kernel time is the chain's less the session call,
        over the links, less one op."""
        points, probes = [], []
        for (m, w), timing in self.sweeps.finish(budget).items():
            links = self.shapes[(m, w)]
            points.append(product_point(timing, op_s, 2.0 * m * w * w,
                                        {"dtype": "f32", "m": m, "n": w, "k": w, "batch": 1,
                                         "layout": "row-major, weights [k][n]"},
                                        links=links, chain_s=call_s, cold=True))
            probes.append(record.probe_point("gemm MatMul cold weights f32", f"{links}x{m}x{w}x{w}", timing))
        self.sweeps = None
        if points:
            progress(f"{len(points)} gemm points with cold weights, weights read at "
                     + ", ".join(f"{4 * p['n'] * p['k'] / p['time_s'] / 1e9:.0f}" for p in points) + " GB/s")
        return points, probes


def conv_reference(np, x, w, b, stride, pad, groups):
    """A grouped 2-D convolution in float64 (NCHW), for the output checks."""
    from numpy.lib.stride_tricks import sliding_window_view
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    k, per_group, r, s = w.shape
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    windows = sliding_window_view(padded, (r, s), axis=(2, 3))[:, :, ::stride, ::stride]
    out_h, out_w = windows.shape[2:4]
    windows = windows.reshape(n, groups, per_group, out_h, out_w, r, s)
    weights = w.reshape(groups, k // groups, per_group, r, s)
    out = np.einsum("ngchwrs,gkcrs->ngkhw", windows, weights).reshape(n, k, out_h, out_w)
    return out + b[None, :, None, None]


def conv_layer(g, shape, source, target, prefix, seed, consts=None):
    """A Conv node (with bias) of `shape` (grids.conv_shape's fields) and its constants, drawn
    from `seed` unless `consts` (an earlier call's) are given."""
    if consts is None:
        w = harness.random_input("numpy", (shape["k"], shape["c"] // shape["groups"], shape["r"], shape["s"]),
                                 seed=seed + 1) * (shape["r"] * shape["s"] * shape["c"] // shape["groups"]) ** -0.5
        consts = [(f"{prefix}w", w), (f"{prefix}b", harness.random_input("numpy", (shape["k"],), seed=seed + 2))]
    node = g.helper.make_node("Conv", [source, f"{prefix}w", f"{prefix}b"], [target],
                              kernel_shape=[shape["r"], shape["s"]], strides=[shape["stride"]] * 2,
                              pads=[shape["pad"]] * 4, group=shape["groups"], dilations=[1, 1])
    return node, consts


def conv_models(g, shape, seed, pool=None):
    """The models that time a convolution point: the point followed by its follower, and the
    follower alone; and the input of each. onnxruntime reorders a blocked region's input and
    output at the graph's ends: the difference of the two is the point's kernel and one op, in
    the layout onnxruntime runs it in inside a network. With `pool` (a flat random array at
    least as large as each input) the inputs are views of it instead of arrays of their own."""
    second = grids.follower(shape)
    in_shape, in2_shape = [(s["n"], s["c"], s["h"], s["w"]) for s in (shape, second)]
    if pool is None:
        x = harness.random_input("numpy", in_shape, seed=seed)
        x2 = harness.random_input("numpy", in2_shape, seed=seed + 5)
    else:
        x, x2 = [pool[:math.prod(s)].reshape(s) for s in (in_shape, in2_shape)]
    out = (shape["n"], shape["k"], grids.out_side(shape), grids.out_side(shape))
    a, a_consts = conv_layer(g, shape, "x", "h", "a", seed)
    b, b_consts = conv_layer(g, second, "h", "y", "b", seed + 3)
    pair = g.model([a, b], [("x", x.shape)], [("y", out)], a_consts + b_consts)
    b_alone, _ = conv_layer(g, second, "x", "y", "b", seed + 3, b_consts)
    alone = g.model([b_alone], [("x", x2.shape)], [("y", out)], b_consts)
    return (pair, x, a_consts + b_consts), (alone, x2)


def check_conv_class(g, shape, seed):
    """Checks the chain of a small convolution of the same class as `shape` (kernel, stride,
    channels per group; two groups at most, few channels, a small image) against numpy."""
    small = grids.class_check_shape(shape)
    (pair, x, consts), _ = conv_models(g, small, seed)
    run, _ = g.runner(pair, {"x": x})
    c = dict(consts)
    second = grids.follower(small)
    want = conv_reference(g.np, x, c["aw"], c["ab"], small["stride"], small["pad"], small["groups"])
    want = conv_reference(g.np, want, c["bw"], c["bb"], 1, second["pad"], second["groups"])
    harness.check_close(f"Conv {grids.conv_name(small)} and its follower", run()[0], want, 1e-4, 1e-3)


# A convolution point's sessions are timed in this many sweeps over the grid, seconds apart.
CONV_SWEEPS = 2


class ConvGrid:
    """Conv over grids.conv_grid, f32, timed in a chain (conv_models) and fitted by
    pair_kernel_s. Each point's two sessions are opened, timed and closed once a sweep
    (harness.Sweeps over time_sessions), and the caller starts the sweeps (`sweeps`) between
    other probes: a point's fastest
    time comes from the best of CONV_SWEEPS moments seconds apart, so that a slow spell of a
    shared host takes no point's rate with it (on the 2-core Zen 3 VM one dense 3x3 point came
    to 116-161 GFLOP/s over three moments a few seconds apart, each of them at 5 or more samples
    within 3%). Each point's layout is that of its optimized graph (blocked where onnxruntime
    reorders around it, else nchw); each class's output is checked once, before any timing."""

    def __init__(self, g, quick, sweeps=CONV_SWEEPS, unaligned=False):
        """`unaligned`: grids.unaligned_conv_grid too (onnxruntime runs them plain: their
        `layout` says so), where the layout's channel rule leaves some convolutions plain."""
        self.points, makers, checked = [], {}, set()
        shapes = grids.conv_grid(quick) + (grids.unaligned_conv_grid(quick) if unaligned else [])
        # The inputs are views of one random array: the grid's own would hold hundreds of MB.
        largest = max(math.prod((s["n"], s["c"], s["h"], s["w"])) for shape in shapes
                      for s in (shape, grids.follower(shape)))
        pool = harness.random_input("numpy", (largest,), seed=harness.SEED + 7)
        for i, shape in enumerate(shapes):
            # An odd channel count is a class of its own: onnxruntime runs it outside its blocked
            # layout, in other kernels.
            key = (shape["r"], shape["stride"], shape["c"] // shape["groups"] if shape["groups"] > 1 else 0,
                   shape["c"] % 2)
            if key not in checked:
                check_conv_class(g, shape, 100 + i)
                checked.add(key)
            (pair, x, _), (alone, x2) = conv_models(g, shape, 10 * i, pool)
            # Blocked where the graph holds a reorder: a dense convolution of few input channels
            # reads a plain input directly, and only its output is reordered.
            blocked = sum(onnxruntime_layout.reorders(g.optimized_node_types(alone))) > 0
            self.points.append((shape, blocked))
            makers[(i, "pair")] = checked_call(g, pair, {"x": x})
            makers[(i, "alone")] = checked_call(g, alone, {"x": x2})
        # Each key's session on its own, one after another (time_sessions), once a sweep.
        self.sweeps = harness.Sweeps(makers, time_group=time_sessions, sweeps=sweeps)

    def finish(self, op_s, call_s, budget, progress):
        """The sweeps not yet run, then (points, probe points)."""
        timed = self.sweeps.finish(budget)
        points, probes = [], []
        for i, (shape, blocked) in enumerate(self.points):
            timings = {name: timed[(i, name)] for name in ("pair", "alone")}
            kernel_s, method = harness.pair_kernel_s(timings["pair"].time_s, timings["alone"].time_s, op_s, call_s)
            median_s, _ = harness.pair_kernel_s(timings["pair"].median_s, timings["alone"].median_s, op_s, call_s)
            flops = grids.conv_flops(shape)
            point = dict(dtype="f32", **shape, layout="blocked" if blocked else "nchw")
            point.update({"time_s": kernel_s, "median_s": max(median_s, kernel_s), "flops_per_s": flops / kernel_s,
                          "cv": timings["pair"].cv, "samples": timings["pair"].count, "impl": "mlas",
                          "cold_weights": False, "pair_s": timings["pair"].time_s,
                          "follower_s": timings["alone"].time_s, "fit": method})
            points.append(point)
            probes += [record.probe_point(f"conv Conv f32 {name}", grids.conv_name(shape), timings[name])
                       for name in timings]
        sweeps, self.sweeps = self.sweeps.sweeps, None  # the models' weights
        best = max(points, key=lambda p: p["flops_per_s"])
        progress(f"{len(points)} conv points in {sweeps} sweeps, best {best['flops_per_s'] / 1e9:.1f} GFLOP/s "
                 f"({grids.conv_name(best)})")
        return points, probes


# ---- own kernels -------------------------------------------------------------------------------

def own_kernel_table(g):
    """Estimator row kind -> (grid, build, reference): grid "image" or "rows" (grids.py);
    build(shape) -> (nodes on inputs x0, x1 to output y, the number of inputs, the output shape,
    constants [(name, array)], whether onnxruntime's own domain is used); reference(inputs,
    *constants) -> the output in numpy."""
    np, make = g.np, g.helper.make_node
    erf = np.vectorize(__import__("math").erf)

    def unary(op, ref, **attrs):
        return lambda s: ([make(op, ["x0"], ["y"], **attrs)], 1, s, [], False), ref

    def ms_unary(op, ref):
        return lambda s: ([make(op, ["x0"], ["y"], domain=MS_DOMAIN)], 1, s, [], True), ref

    def binary(op, ref):
        return lambda s: ([make(op, ["x0", "x1"], ["y"])], 2, s, [], False), ref

    def sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def pool(op, ref):
        return (lambda s: ([make(op, ["x0"], ["y"], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                                 **({"count_include_pad": 1} if op == "AveragePool" else {}))], 1, s, [], False), ref)

    def pool_ref(reduce):
        def ref(x):
            from numpy.lib.stride_tricks import sliding_window_view
            fill = -np.inf if reduce is np.max else 0
            padded = np.pad(x[0], ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=fill)
            return reduce(sliding_window_view(padded, (3, 3), axis=(2, 3)), axis=(-2, -1))
        return ref

    def batchnorm(s):
        c = s[1]
        consts = [("scale", harness.random_input("numpy", (c,), seed=11)),
                  ("bias", harness.random_input("numpy", (c,), seed=12)),
                  ("mean", harness.random_input("numpy", (c,), seed=13) * 0.1),
                  ("var", np.abs(harness.random_input("numpy", (c,), seed=14)) + 0.5)]
        return [make("BatchNormalization", ["x0", "scale", "bias", "mean", "var"], ["y"])], 1, s, consts, False

    def batchnorm_ref(x, scale, bias, mean, var):
        e = lambda v: v[None, :, None, None]  # noqa: E731
        return (x[0] - e(mean)) / np.sqrt(e(var) + 1e-5) * e(scale) + e(bias)

    def layernorm(s):
        consts = [("scale", harness.random_input("numpy", (s[1],), seed=15)),
                  ("bias", harness.random_input("numpy", (s[1],), seed=16))]
        return [make("LayerNormalization", ["x0", "scale", "bias"], ["y"], axis=-1)], 1, s, consts, False

    def layernorm_ref(x, scale, bias):
        mean = x[0].mean(-1, keepdims=True)
        var = x[0].var(-1, keepdims=True)
        return (x[0] - mean) / np.sqrt(var + 1e-5) * scale + bias

    def divide(s):
        return [make("Div", ["x0", "d"], ["y"])], 1, s, [("d", np.array(3.0))], False

    def clip(s):
        return [make("Clip", ["x0", "lo", "hi"], ["y"])], 1, s, [("lo", np.array(0.0)), ("hi", np.array(6.0))], False

    def silu(s):
        return [make("Sigmoid", ["x0"], ["g"]), make("Mul", ["x0", "g"], ["y"])], 1, s, [], False

    def concat(s):
        return [make("Concat", ["x0", "x1"], ["y"], axis=1)], 2, (s[0], 2 * s[1], *s[2:]), [], False

    def global_avg(s):
        return [make("GlobalAveragePool", ["x0"], ["y"])], 1, (s[0], s[1], 1, 1), [], False

    g_ = grids.TRANSPOSE_GROUPS

    def transpose(perm):
        def build(s):
            shape3 = (s[0], g_, s[1] // g_)
            return [make("Transpose", ["x0"], ["y"], perm=list(perm))], 1, tuple(shape3[p] for p in perm), [], False
        return build

    image, rows = "image", "rows"
    table = {
        "elementwise:relu": (image, *unary("Relu", lambda x: np.maximum(x[0], 0))),
        "elementwise:clip": (image, clip, lambda x, lo, hi: np.clip(x[0], 0, 6)),
        "elementwise:sigmoid": (image, *unary("Sigmoid", lambda x: sigmoid(x[0]))),
        "elementwise:tanh": (image, *unary("Tanh", lambda x: np.tanh(x[0]))),
        "elementwise:gelu": (image, *ms_unary("Gelu", lambda x: 0.5 * x[0] * (1 + erf(x[0] / 2 ** 0.5)))),
        "elementwise:silu": (image, silu, lambda x: x[0] * sigmoid(x[0])),
        "elementwise:hardswish": (image, *unary("HardSwish", lambda x: x[0] * np.clip(x[0] / 6 + 0.5, 0, 1))),
        "elementwise:hardsigmoid": (image, *unary("HardSigmoid", lambda x: np.clip(x[0] / 6 + 0.5, 0, 1),
                                                  alpha=1 / 6, beta=0.5)),
        "elementwise:add": (image, *binary("Add", lambda x: x[0] + x[1])),
        "elementwise:mul": (image, *binary("Mul", lambda x: x[0] * x[1])),
        "elementwise:div": (rows, divide, lambda x, d: x[0] / 3.0),
        "pool:max": (image, *pool("MaxPool", pool_ref(np.max))),
        "pool:avg": (image, *pool("AveragePool", pool_ref(np.mean))),
        "pool:global_avg": (image, global_avg, lambda x: x[0].mean(axis=(2, 3), keepdims=True)),
        "norm:batchnorm": (image, batchnorm, batchnorm_ref),
        "norm:layernorm": (rows, layernorm, layernorm_ref),
        "softmax": (rows, *unary("Softmax", lambda x: np.exp(x[0]) / np.exp(x[0]).sum(-1, keepdims=True), axis=-1)),
        "concat": (image, concat, lambda x: np.concatenate([x[0], x[1]], axis=1)),
        "transpose": (rows, transpose((1, 0, 2)), lambda x: x[0].transpose(1, 0, 2)),
        "transpose:inner": (rows, transpose((1, 2, 0)), lambda x: x[0].transpose(1, 2, 0)),
    }
    return table


def grids_elements(shape):
    count = 1
    for d in shape:
        count *= d
    return count


def own_kernel_rates(g, budget, progress, quick):
    """Elements per second of onnxruntime's own kernels over the size grids, as the slope
    between sizes (harness.slope_rate); an op's elements are its outputs, a pool's its window
    elements. Each kind's output is checked once against numpy, at the smallest size."""
    np = g.np
    entries, probes = [], []
    shapes = {"image": grids.image_shapes(quick), "rows": grids.row_shapes(quick)}
    cache_bytes = harness.last_level_cache_bytes()
    for kind, (grid, build, reference) in own_kernel_table(g).items():
        if quick and kind not in QUICK_KINDS:
            continue
        runs, work, moved = {}, {}, {}
        for i, shape in enumerate(shapes[grid]):
            nodes, operands, out_shape, consts, ms = build(shape)
            in_shape = (shape[0], grids.TRANSPOSE_GROUPS, shape[1] // grids.TRANSPOSE_GROUPS) \
                if kind.startswith("transpose") else shape
            xs = {f"x{j}": harness.random_input("numpy", in_shape, seed=j) for j in range(operands)}
            model = g.model(nodes, [(name, in_shape) for name in xs], [("y", out_shape)], consts, ms_domain=ms)
            check = None
            if i == 0:
                ins = [xs[f"x{j}"].astype(np.float64) for j in range(operands)]
                const_values = [np.asarray(a, dtype=np.float64) for _, a in consts]
                want = reference(ins, *const_values)
                check = lambda out, kind=kind, shape=shape, want=want: harness.check_close(  # noqa: E731
                    f"{kind} {shape}", out[0], want, 1e-4, 1e-4)
            elements = 1
            for d in out_shape:
                elements *= d
            window = shape[2] * shape[3] if kind == "pool:global_avg" else 9 if kind.startswith("pool:") else 1
            work[i] = elements * window
            moved[i] = 4 * (elements + operands * grids_elements(in_shape))  # f32 in and out
            runs[i] = checked_call(g, model, xs, check)
        timings = time_sessions(runs, budget, 0.5)
        rate, method = harness.slope_rate(
            harness.within_cache([(work[i], timings[i].time_s, moved[i]) for i in runs], cache_bytes))
        entries.append({"kind": kind, "dtype": "f32", "elements_per_s": rate})
        probes += [record.probe_point(f"own {kind} f32", "x".join(map(str, shapes[grid][i])), timings[i],
                                      elements=work[i], fit=method) for i in runs]
        progress(f"own kernel {kind}: {rate:.3g} elements/s ({method})")
    return entries, probes


# ---- fusions and memory ------------------------------------------------------------------------

def activation_nodes(g, name, source, target):
    """The ONNX nodes of activation `name` (one of ACTIVATIONS, the estimator's names) from
    `source` to `target`, as an exporter writes them, and their constants."""
    make, np = g.helper.make_node, g.np
    single = {"relu": ("Relu", {}), "sigmoid": ("Sigmoid", {}), "tanh": ("Tanh", {}),
              "leakyrelu": ("LeakyRelu", {"alpha": 0.01}), "elu": ("Elu", {"alpha": 1.0}),
              "hardswish": ("HardSwish", {})}
    if name in single:
        op, attrs = single[name]
        return [make(op, [source], [target], **attrs)], []
    if name == "clip":  # ReLU6
        return [make("Clip", [source, "clip_lo", "clip_hi"], [target])], \
            [("clip_lo", np.array(0.0)), ("clip_hi", np.array(6.0))]
    if name == "silu":  # x * sigmoid(x)
        return [make("Sigmoid", [source], ["act_s"]), make("Mul", [source, "act_s"], [target])], []
    if name == "gelu":  # 0.5 x (1 + erf(x / sqrt 2))
        return [make("Div", [source, "gelu_root2"], ["act_d"]), make("Erf", ["act_d"], ["act_e"]),
                make("Add", ["act_e", "gelu_one"], ["act_p"]), make("Mul", [source, "act_p"], ["act_m"]),
                make("Mul", ["act_m", "gelu_half"], [target])], \
            [("gelu_root2", np.array(2.0 ** 0.5)), ("gelu_one", np.array(1.0)), ("gelu_half", np.array(0.5))]
    raise ValueError(name)


def activation_reference(np, name, x):
    """Activation `name` of the numpy array `x`, in float64."""
    import math
    if name == "relu":
        return np.maximum(x, 0)
    if name == "clip":
        return np.clip(x, 0, 6)
    if name == "sigmoid":
        return 1 / (1 + np.exp(-x))
    if name == "tanh":
        return np.tanh(x)
    if name == "leakyrelu":
        return np.where(x > 0, x, 0.01 * x)
    if name == "elu":
        return np.where(x > 0, x, np.expm1(x))
    if name == "hardswish":
        return x * np.clip(x + 3, 0, 6) / 6
    if name == "silu":
        return x / (1 + np.exp(-x))
    if name == "gelu":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / 2 ** 0.5))
    raise ValueError(name)


# The activations whose folding into a convolution is probed, by the estimator's names.
ACTIVATIONS = ("relu", "clip", "sigmoid", "tanh", "leakyrelu", "elu", "hardswish", "silu", "gelu")
# What an optimized graph may hold besides the activation's own nodes: the convolution, fused
# or not, and the reorders of the blocked layout around it.
CONV_NODES = {"Conv", "FusedConv", "NchwcConv", "ReorderInput", "ReorderOutput"}


def folded(node_types):
    """Whether the optimized graph of a convolution and an activation holds nothing but the
    convolution: the activation runs inside it."""
    return bool(node_types) and all(t in CONV_NODES for t in node_types)


def fused_activations(g):
    """The activations onnxruntime folds into the Conv before them: each Conv+activation graph
    optimized, its output checked against numpy. Returns (names, probe points)."""
    np = g.np
    x = harness.random_input("numpy", (1, 16, 8, 8))
    w = harness.random_input("numpy", (16, 16, 3, 3), seed=1) * (16 * 9) ** -0.5
    b = harness.random_input("numpy", (16,), seed=2)
    conv = conv_reference(np, x.astype(np.float64), w, b, 1, 1, 1)
    names, probes = [], []
    for name in ACTIVATIONS:
        nodes, consts = activation_nodes(g, name, "c", "y")
        nodes = [g.helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])] + nodes
        model = g.model(nodes, [("x", x.shape)], [("y", x.shape)], [("w", w), ("b", b)] + consts)
        run, _ = g.runner(model, {"x": x})
        harness.check_close(f"Conv+{name}", run()[0], activation_reference(np, name, conv), 1e-4, 1e-3)
        types = g.optimized_node_types(model)
        fused = folded(types)
        if fused:
            names.append(name)
        probes.append(record.probe_point(f"fusion Conv+{name}", "1x16x8x8 3x3", optimized_nodes=" ".join(types),
                                         fused=int(fused)))
    return names, probes


def dram_level(g, budget, progress):
    """Main-memory bandwidth of onnxruntime's Add with plain stores: a, b and the output
    together 4x the last-level cache (from the OS), bound once (io_binding) so that no call
    allocates; bytes = two read + one written."""
    np, ort = g.np, g.ort
    llc = harness.last_level_cache_bytes()
    n = harness.dram_working_set_bytes(llc) // (3 * 4)
    a = harness.random_input("numpy", (n,), seed=4, positive=True)
    b = harness.random_input("numpy", (n,), seed=5, positive=True)
    out = np.empty(n, dtype=np.float32)
    model = g.model([g.helper.make_node("Add", ["a", "b"], ["y"])], [("a", (n,)), ("b", (n,))], [("y", (n,))])
    session = g.session(model)
    binding = session.io_binding()
    for name, array in (("a", a), ("b", b)):
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(array))
    binding.bind_ortvalue_output("y", ort.OrtValue.ortvalue_from_numpy(out))
    session.run_with_iobinding(binding)
    for part in (slice(0, 4096), slice(n - 4096, n)):
        harness.check_close("memory Add", out[part], a[part].astype(np.float64) + b[part], 1e-6, 1e-6)
    timing = harness.time_call(lambda: session.run_with_iobinding(binding), budget, weight=2)
    moved = 3 * n * 4
    bps = moved / timing.time_s
    progress(f"main memory, Add: {bps / 1e9:.1f} GB/s over {moved / 2 ** 20:.0f} MiB")
    probe = record.probe_point("memory Add f32", f"3x{n}", timing, bytes=moved, last_level_cache_bytes=llc or 0)
    return {"name": "DRAM", "bytes": None, "Bps": bps}, probe


def host_probe(g, started):
    """harness.HostProbe over a harness.HOST_PROBE_SIDE^3 f32 MatMul, its session opened for each
    moment and closed after it, as time_sessions does (a pool spins a while after its session
    opens and after each run; the moment's warm-up call takes the first)."""
    side = harness.HOST_PROBE_SIDE
    a = harness.random_input("numpy", (side, side), seed=harness.SEED + 91)
    b = harness.random_input("numpy", (side, side), seed=harness.SEED + 92)
    model = g.model([g.helper.make_node("MatMul", ["a", "b"], ["y"])], [("a", (side, side))],
                    [("y", (side, side))], constants=[("b", b)])
    want = a.astype("float64") @ b.astype("float64")
    checked_call(g, model, {"a": a},
                 lambda out: harness.check_close("host probe MatMul", out[0], want, 1e-4, 1e-5 * side ** 0.5))()
    return harness.HostProbe("MatMul f32", f"{side}x{side}x{side}", make=checked_call(g, model, {"a": a}),
                             started=started)


def calibrate(options):
    ort, onnx, np = require()
    progress, budget = options.progress, options.budget
    g = Graphs(ort, onnx, np, options.threads)
    host = host_probe(g, options.started)
    host()
    op_s, call_s, probes = fixed_costs(g, budget, progress, options.quick)
    host()
    fixed_s = call_s + op_s
    gemm, gemm_probes = gemm_points(g, fixed_s, budget, progress, options.quick)
    host()
    cold = ColdGemm(g, options.quick)
    cold.sweeps.sweep(budget)
    layout, conv_layout, layout_probes = onnxruntime_layout.probe(g, own_kernel_table(g))
    progress(f"layout: convolutions {conv_layout}" + (f", {len(layout['blocked_ops'])} kinds blocked, copies "
             f"{layout['to_plain_copies']}/{layout['to_blocked_copies']}, group widths "
             f"{layout['group_reorder_widths']}" if layout else "")
             + (f", channels a multiple of {layout['conv_channel_multiple']} (or at most "
                f"{layout['conv_small_input_channels']} in)" if layout and layout.get("conv_channel_multiple", 1) > 1
                else ""))
    conv = ConvGrid(g, options.quick, unaligned=bool(layout) and layout.get("conv_channel_multiple", 1) > 1)
    progress(f"timing {len(conv.points)} conv points in {conv.sweeps.sweeps} sweeps, the second after the own "
             "kernels")
    conv.sweeps.sweep(budget)
    host()
    cold.sweeps.sweep(budget)
    own, own_probes = own_kernel_rates(g, budget, progress, options.quick)
    fused, fusion_probes = fused_activations(g)
    progress("activations folded into a convolution: " + (", ".join(fused) or "none"))
    conv, conv_probes = conv.finish(op_s, call_s, budget, progress)
    host()
    cold_gemm, cold_probes = cold.finish(op_s, call_s, budget, progress)
    gemm, gemm_probes = gemm + cold_gemm, gemm_probes + cold_probes
    level, memory_probe = dram_level(g, budget, progress)
    host()
    settings = {"execution_provider": PROVIDERS[0], "session_options": "default"}
    # onnxruntime's default: one intra-op thread per physical core.
    threads = options.threads if options.threads < harness.cpu_count() else harness.physical_core_count()
    if options.threads < harness.cpu_count():
        settings["intra_op_num_threads"] = options.threads
    probes.append(record.probe_point("session call", f"1x{TINY_WIDTH}", fixed_s=call_s))
    return record.build_record(
        runtime=RUNTIME, device="cpu", framework=f"onnxruntime {ort.__version__}",
        versions={"onnxruntime": ort.__version__, "onnx": onnx.__version__, "numpy": np.__version__},
        threads=threads, dtypes=["f32"], settings=settings, op_s=op_s, own_kernels=own, layout=layout,
        conv_layout=conv_layout, linears_as_convolutions=False, in_place=[], fuse_activations=bool(fused),
        fused_activations=fused, memory_levels=[level], gemm=gemm, conv=conv,
        probes=probes + gemm_probes + layout_probes + conv_probes + own_probes + fusion_probes + [memory_probe] +
        host.points(),
        calibration_s=0.0)
