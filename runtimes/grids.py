"""The sizes every probe runs at: grids over the shape space, log-spaced, chosen by rule and never
after a model (docs/runtimes.md, "How the probes choose sizes"). Standard library only."""

# Elements of one operand of an own-kernel point: 2^13 to 2^22 in steps of 8x, from tensors an L1
# cache holds (32 KiB in f32) to tensors that spill the last-level cache of small machines (16 MiB),
# the span a model's activations cover. --quick keeps the two middle steps.
ELEMENT_STEPS = (2 ** 13, 2 ** 16, 2 ** 19, 2 ** 22)
QUICK_ELEMENT_STEPS = (2 ** 16, 2 ** 19)

# Channels and spatial side of an image-shaped (N, C, H, W) operand, one pair per element step:
# channels double and the side doubles with every step, from few channels on a small image to
# many on a large one.
IMAGE_SHAPES = {2 ** 13: (1, 32, 16, 16), 2 ** 16: (1, 64, 32, 32), 2 ** 19: (1, 128, 64, 64),
                2 ** 22: (1, 256, 128, 128)}

# Rows and row length of a row-shaped (rows, cols) operand, one pair per element step: the row
# length (a softmax's or a layer norm's reduced axis) runs 64 to 4096 in steps of 4x, the rows
# make up the rest.
ROW_SHAPES = {2 ** 13: (128, 64), 2 ** 16: (256, 256), 2 ** 19: (512, 1024), 2 ** 22: (1024, 4096)}

# Groups a row is split into by the transpose probes (the outer axes moved, or the innermost).
TRANSPOSE_GROUPS = 8


def element_steps(quick):
    return QUICK_ELEMENT_STEPS if quick else ELEMENT_STEPS


def image_shapes(quick):
    return [IMAGE_SHAPES[e] for e in element_steps(quick)]


def row_shapes(quick):
    return [ROW_SHAPES[e] for e in element_steps(quick)]


# GEMM points: rows 1 to 2048 (8x steps, then 4x) against square weights of width 64 to 4096 (8x
# steps), skinny (one row: a weight-bound product) to square; a point above GEMM_MAX_FLOPS is left
# out to keep the grid within the time budget (the large end of the grid is square enough).
GEMM_ROWS = (1, 8, 64, 512, 2048)
GEMM_WIDTHS = (64, 512, 4096)
GEMM_MAX_FLOPS = 1.1e9
# Wide weights, n x k = WIDE_WEIGHTS (32 outputs for each input, 2^23 elements: 32 MiB in f32,
# past the last-level cache of a small machine), at rows WIDE_ROWS. A product that writes many
# outputs for a short depth (an output layer over many classes or tokens) packs and streams far
# more weights for each row than a square one: on a Zen 3 VM, MKL ran 64 rows through these
# weights at 0.41 of the rate of 512^3 and 512 rows at 0.6, and one row read them from memory at
# 0.55 of the bandwidth 4096 x 4096 weights get; square points alone would lend such a product
# the square ones' rates. The rate keeps rising with the rows past 64, so the family runs to
# 512 rows past GEMM_MAX_FLOPS (8.6 GFLOP, under 0.1 s a call at 100 GFLOP/s).
WIDE_WEIGHTS = (16384, 512)
WIDE_ROWS = (1, 8, 64, 512)
QUICK_GEMM = ((1, 512, 512), (64, 512, 512), (512, 512, 512))


def gemm_grid(quick):
    """[(rows, n, k)] of the products rows x k by weights k -> n: square weights, then wide ones
    (outside --quick)."""
    if quick:
        return list(QUICK_GEMM)
    square = [(m, w, w) for m in GEMM_ROWS for w in GEMM_WIDTHS if 2 * m * w * w <= GEMM_MAX_FLOPS]
    return square + [(m, *WIDE_WEIGHTS) for m in WIDE_ROWS]


def checked_products(grid):
    """The products of `grid` (gemm_grid's) whose output a probe checks: the first of each
    weights' shape, since each shape is blocked anew."""
    first = {}
    for m, n, k in grid:
        first.setdefault((n, k), (m, n, k))
    return set(first.values())


# Cold weights: the skinny products (at most COLD_ROWS rows) whose weights have at least
# COLD_MIN_WEIGHTS elements again, each call on the next of enough copies of its layer to span
# COLD_SPAN_CACHES times the last-level cache, at most COLD_SPAN_MAX bytes but never under twice
# the cache (twice the cache still leaves some of a layer's weights there for its next call; four
# leave none to speak of, and each byte of the copies is built and packed anew): a model whose
# weights outgrow the caches streams each layer's weights from memory, at whatever rate the
# product reads them.
COLD_ROWS, COLD_MIN_WEIGHTS = 8, 2 ** 18
COLD_SPAN_CACHES, COLD_SPAN_MAX = 4, 2 ** 30
# Without a cache size from the OS, the copies' span.
COLD_FALLBACK_BYTES = 128 * 2 ** 20
# The first copy's seed, past the grid's.
COLD_SEED = 1000


def cold_product(rows, n, k):
    """Whether the product rows x k -> n of gemm_grid is timed again with cold weights."""
    return rows <= COLD_ROWS and n * k >= COLD_MIN_WEIGHTS


def cold_span_bytes(cache_bytes, quick=False):
    """The bytes the copies of a cold-weights point span, from the last-level cache's bytes
    (None: COLD_FALLBACK_BYTES); with `quick`, twice the cache, the least that leaves most of a
    layer's weights out of it for its next call (a probe that builds its copies anew pays for
    every byte of them)."""
    cache_bytes = cache_bytes or COLD_FALLBACK_BYTES // COLD_SPAN_CACHES
    if quick:
        return 2 * cache_bytes
    return max(2 * cache_bytes, min(COLD_SPAN_CACHES * cache_bytes, COLD_SPAN_MAX))


def cold_copy_count(weight_bytes, span_bytes):
    """Copies of a layer of `weight_bytes` that span `span_bytes`: at least 2."""
    return max(2, -(-span_bytes // weight_bytes))


# Batched products between activations: [batch, s, s] x [batch, s, s], batch 2 and 16, side 64 and
# 256.
BATCHED_MATMULS = ((2, 64), (2, 256), (16, 64), (16, 256))
QUICK_BATCHED_MATMULS = ((16, 64),)


def batched_matmul_grid(quick):
    """[(batch, side)]."""
    return list(QUICK_BATCHED_MATMULS if quick else BATCHED_MATMULS)


# Convolution points (batch 1, NCHW): channels 16 to 2048 (2x steps) paired with a spatial side
# log-spaced from 112 down to 7 (about 1.75x steps), many channels on small images and few on
# large ones, as the work of a layer stays within reach of the budget along that diagonal. The
# estimator never extrapolates past the grid's box, so its channel range is the range covered: a
# 1x1 of 2048 channels on 7x7 ran at 63-74 GFLOP/s here, one of 1024 at 109.
CONV_DIAGONAL = ((16, 112), (32, 64), (64, 37), (128, 21), (256, 12), (512, 7), (1024, 7), (2048, 7))
CONV_MAX_FLOPS = 5.0e8
CONV_BATCH = 4
# The batched points' cap: a larger batch exists to reach the work of layers at batch 4 to 16,
# several times a batch-1 point's.
CONV_BATCH_MAX_FLOPS = 2.0e9
# Small work at every channel count: the dense 1x1 and the depthwise 3x3 kernels (stride 1) again
# with each channel count on the diagonal's next smaller side (CONV_BELOW_SIDE past its end), a
# third of the work, where a call's fixed costs weigh most and a rate interpolated along the
# diagonal would come out too high.
CONV_BELOW_SIDE = 4
# Pointwise products on a 1x1 image (a squeeze layer, a classifier run as a convolution): a call
# of a few thousand FLOPs, all fixed cost.
CONV_SQUEEZE_CHANNELS = (16, 64, 256, 1024)
# Channels per group of the grouped (not depthwise) points, in 2x steps: a group's kernel changes
# in kind with its width (a 3x3 over groups of 4 and of 16 channels ran at 10-19 and 94-101 GFLOP/s
# under PyTorch here, where a curve through widths 4 and 32 alone puts 16 near 50).
CONV_GROUP_WIDTHS = (4, 8, 16, 32, 64)
# A depthwise kernel does a few FLOPs per element it reads, so a call's fixed costs (the call, a
# library's reorders) hold most of its time at batch 1, and its rate grows about tenfold with the
# images of a call (a 3x3 on 64 channels of 37x37 ran at 10, 27 and 41 GFLOP/s at batch 1, 4 and
# 16 under PyTorch here). The depthwise 3x3 diagonal, whole at both strides, is measured again
# at these batches, so that a batch's depthwise layers fall between points of their own size.
CONV_DEPTHWISE_BATCHES = (4, 16)


# Image inputs: the first layer of an image model reads the few channels of a picture (3: RGB)
# through a large strided window and writes many. Its GEMM depth (3 x the window) is below every
# dense point's and oneDNN runs it in kernels of their own, so the grid measures it rather than
# interpolate it: kernels 3 and 7 at stride 2, 16 and 64 outputs, on images of 128 and 256 pixels
# a side (a factor of two around the sides such inputs have).
IMAGE_INPUT_CHANNELS = 3
IMAGE_INPUT_KERNELS = (3, 7)
IMAGE_INPUT_OUTPUTS = (16, 64)
IMAGE_INPUT_SIDES = (128, 256)


def conv_shape(c, side, kernel, stride, groups, batch=1, k=None):
    """A conv point's shape: c in channels, k out (default c), a square image and kernel, 'same'
    padding."""
    return {"n": batch, "c": c, "h": side, "w": side, "k": c if k is None else k, "r": kernel, "s": kernel,
            "stride": stride, "pad": kernel // 2, "dilation": 1, "groups": groups}


def image_input_grid(quick):
    """Dense convolutions of IMAGE_INPUT_CHANNELS in to IMAGE_INPUT_OUTPUTS out; --quick keeps
    the smallest kernel at its largest output on the smaller image."""
    if quick:
        return [conv_shape(IMAGE_INPUT_CHANNELS, IMAGE_INPUT_SIDES[0], IMAGE_INPUT_KERNELS[0], 2, 1,
                           k=IMAGE_INPUT_OUTPUTS[-1])]
    return [conv_shape(IMAGE_INPUT_CHANNELS, side, kernel, 2, 1, k=out) for kernel in IMAGE_INPUT_KERNELS
            for side in IMAGE_INPUT_SIDES for out in IMAGE_INPUT_OUTPUTS]


def conv_flops(shape):
    out_h = (shape["h"] + 2 * shape["pad"] - shape["dilation"] * (shape["r"] - 1) - 1) // shape["stride"] + 1
    out_w = (shape["w"] + 2 * shape["pad"] - shape["dilation"] * (shape["s"] - 1) - 1) // shape["stride"] + 1
    return 2 * shape["n"] * shape["k"] * (shape["c"] // shape["groups"]) * shape["r"] * shape["s"] * out_h * out_w


def strided_side(side, stride):
    """The input side of a diagonal point at `stride`: the one whose output (at 'same' padding)
    has the diagonal's side, as a strided layer reads an image `stride` times its output's. On the
    diagonal's own side a stride-2 point's output would be a quarter of any stride-1 point's (4x4
    at its small end, where networks end at 7x7), and a strided layer would take its rate from the
    smallest calls of the grid."""
    return stride * side - (stride - 1)


def _diagonal_ends(kernel, stride, groups_of, whole=False):
    """The two ends of the diagonal that fit CONV_MAX_FLOPS (few channels on a large image, the
    most channels that fit on a small one) for one kernel, stride and grouping; with `whole`,
    every point of the diagonal that fits."""
    fitting = []
    for c, side in CONV_DIAGONAL:
        groups = groups_of(c)
        if groups is None:
            continue
        shape = conv_shape(c, strided_side(side, stride), kernel, stride, groups)
        if conv_flops(shape) <= CONV_MAX_FLOPS:
            fitting.append(shape)
    if not fitting:
        return []
    if whole:
        return fitting
    return [fitting[0]] if len(fitting) == 1 else [fitting[0], fitting[-1]]


def conv_grid(quick):
    """Convolution shapes over kernel 1/3/5/7, stride 1/2, dense, grouped and depthwise."""
    if quick:
        return [conv_shape(64, 37, 3, 1, 1), conv_shape(256, 12, 1, 1, 1), conv_shape(128, 21, 3, 2, 128),
                conv_shape(128, 21, 3, 1, 128 // 32)]
    shapes = []
    # The dense 1x1 and 3x3 kernels, the bulk of a CNN's work, take the whole diagonal: a kernel's
    # rate changes most between a few channels on a large image and many on a small one, and
    # interpolating across the whole range from its two ends misses that curve.
    for kernel in (1, 3, 5, 7):
        for stride in (1, 2):
            shapes += _diagonal_ends(kernel, stride, lambda c: 1, whole=kernel in (1, 3))
    for width in CONV_GROUP_WIDTHS:
        groups_of = lambda c, w=width: c // w if c > w else None  # noqa: E731
        for stride in (1, 2):
            shapes += _diagonal_ends(3, stride, groups_of)
        # A grouped layer's call holds all its groups: at batch 1 a call of few groups is small
        # enough for its fixed costs to weigh, and the layers of a batch do several times its
        # work (a 3x3 over 10 groups of 16 channels on 14x14 at batch 8 ran at 98 GFLOP/s, the
        # batch-1 points of that width at 55-91). The ends again at CONV_BATCH, stride 1.
        shapes += [dict(shape, n=CONV_BATCH) for shape in _diagonal_ends(3, 1, groups_of)]
    # Depthwise: the 3x3 diagonal whole, and the 5x5 and 7x7 ones whole at stride 1. A depthwise
    # kernel's rate bends along the diagonal, and from two ends the curve overshot: a 5x5 over 240
    # channels on 28x28 came out at 103 GFLOP/s from ends at 68 and 37 (onnxruntime, Zen 3).
    for kernel in (3, 5, 7):
        for stride in (1, 2):
            shapes += _diagonal_ends(kernel, stride, lambda c: c, whole=kernel == 3 or stride == 1)
    sides = sorted({side for _, side in CONV_DIAGONAL}, reverse=True)
    for c, side in CONV_DIAGONAL:
        below = next((s for s in sides if s < side), CONV_BELOW_SIDE)
        shapes += [conv_shape(c, below, 1, 1, 1), conv_shape(c, below, 3, 1, c)]
    shapes += [conv_shape(c, 1, 1, 1, 1) for c in CONV_SQUEEZE_CHANNELS]
    # A larger batch runs a kernel with more work per call: the dense 1x1 and 3x3 diagonals again
    # at CONV_BATCH, up to CONV_BATCH_MAX_FLOPS, so that the batch is interpolated, not
    # extrapolated, and the many-channel layers of a batch, whose rows (batch x pixels) are
    # several times a batch-1 point's, have points of their own.
    for kernel in (1, 3):
        batched = [conv_shape(c, side, kernel, 1, 1, CONV_BATCH) for c, side in CONV_DIAGONAL]
        shapes += [shape for shape in batched if conv_flops(shape) <= CONV_BATCH_MAX_FLOPS]
    for batch in CONV_DEPTHWISE_BATCHES:
        for stride in (1, 2):
            shapes += [conv_shape(c, strided_side(side, stride), 3, stride, c, batch) for c, side in CONV_DIAGONAL]
    return shapes


def unaligned_conv_grid(quick=False):
    """Convolutions whose channel counts are odd (one under each diagonal point's), for a runtime
    that runs a convolution outside its channel-blocked layout when its channels are not a
    multiple of some number (onnxruntime on AVX2: 58 channels plain, 60 blocked; a 3x3
    depthwise over 58 channels on 28x28 took 100 us there against 14 us over 56 or 60): the
    depthwise 3x3 at stride 1 and 2 and the dense 1x1 and 3x3 at stride 1, over the diagonal
    (--quick: the depthwise 3x3 and the dense 1x1 on its middle)."""
    if quick:
        return [conv_shape(63, 37, 3, 1, 63), conv_shape(63, 37, 1, 1, 1)]
    shapes = []
    for c, side in CONV_DIAGONAL:
        odd = c - 1
        shapes += [conv_shape(odd, side, 3, 1, odd), conv_shape(odd, strided_side(side, 2), 3, 2, odd)]
        for kernel in (1, 3):
            shape = conv_shape(odd, side, kernel, 1, 1)
            if conv_flops(shape) <= CONV_MAX_FLOPS:
                shapes.append(shape)
    return shapes


def conv_class(shape):
    """"dense", "grouped" or "depthwise" (a group a channel): the estimator fits each apart."""
    if shape["groups"] == 1:
        return "dense"
    return "depthwise" if shape["groups"] == shape["c"] == shape["k"] else "grouped"


def class_check_shape(shape):
    """A small convolution of the same class as `shape` (kernel, stride, channels per group; two
    groups at most, few channels, an image of twice the kernel and three), whose output a probe
    checks once for the class. A depthwise or dense one keeps up to 16 of its channels (15 of an
    odd count), so that the check runs the kernel its point does (a runtime may run few or
    unaligned channels apart: onnxruntime runs a depthwise convolution over 2 channels outside
    its blocked layout)."""
    side = 2 * shape["r"] + 3
    c = shape["c"] if shape["c"] <= 16 else 16 - shape["c"] % 2  # an odd count stays odd
    if conv_class(shape) == "depthwise":
        return conv_shape(c, side, shape["r"], shape["stride"], c)
    if shape["groups"] == 1:
        return conv_shape(c, side, shape["r"], shape["stride"], 1)
    width = shape["c"] // shape["groups"]
    groups = min(shape["groups"], 2)
    return conv_shape(width * groups, side, shape["r"], shape["stride"], groups)


def conv_name(shape):
    """oneDNN's benchdnn-style name of a convolution shape."""
    return (f"mb{shape['n']}g{shape['groups']}ic{shape['c']}oc{shape['k']}_ih{shape['h']}kh{shape['r']}"
            f"sh{shape['stride']}ph{shape['pad']}")


def out_side(shape):
    return (shape["h"] + 2 * shape["pad"] - shape["r"]) // shape["stride"] + 1


def follower(shape):
    """The convolution after a point's in its chain: the same, stride 1, on the point's output
    (as many FLOPs as the point, whatever its stride)."""
    side = out_side(shape)
    return dict(shape, c=shape["k"], h=side, w=side, stride=1)


# The dispatch probe (torch_common.conv_dispatch): a dense 1x1 of DISPATCH_CHANNELS channels on a
# DISPATCH_SIDE image, small enough for any framework's path for small calls; the input-element
# bound bisected over channels on that image up to DISPATCH_MAX_CHANNELS (about half a million
# elements); windows and batches tried up to the largest a model uses, the batch's images of
# DISPATCH_BATCH_CHANNELS channels, so that the batch stays below the element bound.
DISPATCH_CHANNELS, DISPATCH_SIDE, DISPATCH_MAX_CHANNELS = 16, 16, 2048
DISPATCH_WINDOWS = (3, 5, 7)
DISPATCH_BATCHES = (2, 4, 8, 16)
DISPATCH_BATCH_CHANNELS = 4
# The per-call cost of each dispatch path (torch_common.dispatch_path_costs): chains of a 1x1
# convolution of PATH_CHANNELS channels on a PATH_SIDE image, a few thousand FLOPs, so that the
# call is all there is to time.
PATH_CHANNELS, PATH_SIDE = 16, 4


# Channels per group tried by the grouped-convolution layout probe, over 128 channels in all.
GROUP_REORDER_WIDTHS = (1, 2, 4, 8, 16, 32, 64)
GROUP_PROBE_CHANNELS = 128

# Links of the chains that time a fixed cost per op.
CHAIN_LINKS = 32
QUICK_CHAIN_LINKS = 8


def chain_links(quick):
    return QUICK_CHAIN_LINKS if quick else CHAIN_LINKS
