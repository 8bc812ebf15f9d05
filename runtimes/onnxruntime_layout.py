"""onnxruntime's layout rules on the CPU, read from the graphs it optimizes (no timing): its NCHWc
transformer runs eligible convolutions on channel-blocked tensors and puts a ReorderInput
before and a ReorderOutput after each blocked region. For each op kind, the optimized graph of
conv-OP-conv (16 channels, 16x16): the op runs blocked when the graph has no more ReorderOutput
nodes than conv-conv's (the one at the graph's end). The copies of one layout change are the
reorder nodes that an op running plain adds; the group widths run in a layout of their own are
those whose grouped 3x3 convolution, between 1x1 convolutions over 128 channels, adds reorder
nodes to the same net with a dense one. Which channel counts a convolution needs to run blocked
comes from single convolutions over 1 to 24 channels (conv_channel_probe)."""
from runtimes import grids, harness, record

CHANNELS, SIDE = 16, 16
# Op types of the reorders (domain com.microsoft.nchwc).
TO_PLAIN, TO_BLOCKED = "ReorderOutput", "ReorderInput"
# Kinds tried, in order, as the op that runs plain (the copies of a layout change).
CROSS_CANDIDATES = ("elementwise:silu", "elementwise:gelu", "elementwise:tanh", "elementwise:sigmoid",
                    "elementwise:hardswish", "norm:batchnorm", "concat")


def reorders(node_types):
    """(to plain, to blocked) reorder nodes among an optimized graph's op types."""
    return node_types.count(TO_PLAIN), node_types.count(TO_BLOCKED)


def conv_node(g, name, source, target, c_in, c_out, kernel, groups=1, seed=0):
    """A Conv node with its weights and bias as constants: (node, [(name, array)])."""
    w = harness.random_input("numpy", (c_out, c_in // groups, kernel, kernel), seed=seed) * 0.2
    b = harness.random_input("numpy", (c_out,), seed=seed + 1)
    node = g.helper.make_node("Conv", [source, f"{name}_w", f"{name}_b"], [target], kernel_shape=[kernel, kernel],
                              pads=[kernel // 2] * 4, group=groups)
    return node, [(f"{name}_w", w), (f"{name}_b", b)]


def rename(nodes, mapping):
    for node in nodes:
        for i, name in enumerate(node.input):
            node.input[i] = mapping.get(name, name)
        for i, name in enumerate(node.output):
            node.output[i] = mapping.get(name, name)
    return nodes


def conv_op_conv(g, build):
    """The model of conv-OP-conv for an own-kernel builder `build` (onnxruntime_probe's table),
    or conv-conv with build None."""
    shape = (1, CHANNELS, SIDE, SIDE)
    a, consts = conv_node(g, "a", "x", "ca", CHANNELS, CHANNELS, 3, seed=1)
    nodes = [a]
    if build is None:
        middle, out_channels, ms = "ca", CHANNELS, False
    else:
        op_nodes, operands, out_shape, op_consts, ms = build(shape)
        if operands == 2:
            b, b_consts = conv_node(g, "b", "x", "cb", CHANNELS, CHANNELS, 3, seed=3)
            nodes.append(b)
            consts += b_consts
        nodes += rename(op_nodes, {"x0": "ca", "x1": "cb", "y": "m"})
        consts += op_consts
        middle, out_channels = "m", out_shape[1]
    out, out_consts = conv_node(g, "o", middle, "y", out_channels, CHANNELS, 1, seed=5)
    return g.model(nodes + [out], [("x", shape)], [("y", shape)], consts + out_consts, ms_domain=ms)


def squeeze_excitation(g, shape):
    """x times Sigmoid(1x1 Conv(GlobalAveragePool(x))): a broadcast [N, C, 1, 1] operand."""
    make = g.helper.make_node
    conv, consts = conv_node(g, "se", "p", "q", shape[1], shape[1], 1, seed=7)
    nodes = [make("GlobalAveragePool", ["x0"], ["p"]), conv, make("Sigmoid", ["q"], ["s"]),
             make("Mul", ["x0", "s"], ["y"])]
    return nodes, 1, shape, consts, False


def grouped_net(g, groups):
    """1x1 conv, Relu, grouped 3x3 conv, Relu, 1x1 conv over GROUP_PROBE_CHANNELS channels, 8x8."""
    c = grids.GROUP_PROBE_CHANNELS
    make = g.helper.make_node
    a, consts = conv_node(g, "a", "x", "ca", c, c, 1, seed=1)
    b, b_consts = conv_node(g, "b", "ra", "cb", c, c, 3, groups=groups, seed=3)
    o, o_consts = conv_node(g, "o", "rb", "y", c, c, 1, seed=5)
    nodes = [a, make("Relu", ["ca"], ["ra"]), b, make("Relu", ["cb"], ["rb"]), o]
    shape = (1, c, 8, 8)
    return g.model(nodes, [("x", shape)], [("y", shape)], consts + b_consts + o_consts)


# Channel counts tried for the channel rule (channel_rule, conv_channel_probe): enough for a
# multiple up to 8 to show, and for the counts a small image's input may have.
RULE_CHANNELS = range(1, 25)
RULE_MULTIPLES = (2, 4, 8)


def channel_rule(dense, depthwise):
    """Which convolutions run blocked, from whether each tried channel count did (`dense`: input
    channels -> blocked, a dense 3x3 to 16 channels; `depthwise`: channels -> blocked, a 3x3
    over that many): (small, multiple), a dense convolution of at most `small` input channels
    running blocked whatever they are (an image's), every other dense or depthwise one running
    blocked where its channels are a multiple of `multiple`. (0, 1) where every one ran blocked;
    None where no multiple explains what ran, or where every dense count ran blocked and the
    depthwise ones did not (past the counts tried, the dense ones are not known)."""
    if all(dense.values()) and all(depthwise.values()):
        return 0, 1
    if all(dense.values()):
        return None
    small = 0
    for c in sorted(dense):
        if not dense[c]:
            break
        small = c
    for m in RULE_MULTIPLES:
        if all(ok == (c <= small or c % m == 0) for c, ok in dense.items()) and \
                all(ok == (c % m == 0) for c, ok in depthwise.items() if c > 1):
            return small, m
    return None


def conv_channel_probe(g):
    """(small, multiple) of channel_rule from the graphs onnxruntime optimizes (or None), and the
    probe points: a dense 3x3 of each of RULE_CHANNELS input channels to CHANNELS, and a depthwise
    3x3 over each, on an 8x8 image; a convolution runs blocked where its graph holds a reorder."""
    def blocked(c_in, c_out, groups):
        node, consts = conv_node(g, "a", "x", "y", c_in, c_out, 3, groups=groups, seed=11)
        shape = (1, c_in, 8, 8)
        types = g.optimized_node_types(g.model([node], [("x", shape)], [("y", (1, c_out, 8, 8))], consts))
        return sum(reorders(types)) > 0
    dense = {c: blocked(c, CHANNELS, 1) for c in RULE_CHANNELS}
    depthwise = {c: blocked(c, c, c) for c in RULE_CHANNELS}
    points = [record.probe_point("layout conv channels", f"{name} 3x3 on 8x8",
                                 blocked=" ".join(str(c) for c, ok in runs.items() if ok),
                                 plain=" ".join(str(c) for c, ok in runs.items() if not ok))
              for name, runs in (("dense to 16", dense), ("depthwise", depthwise))]
    return channel_rule(dense, depthwise), points


def probe(g, table):
    """(layout or None, conv_layout, probe points). `table`: onnxruntime_probe's own-kernel
    table (kind -> (grid, build, reference)); its image-shaped kinds are tried. layout is None
    where no convolution runs blocked (every activation stays plain)."""
    base_types = g.optimized_node_types(conv_op_conv(g, None))
    base = reorders(base_types)
    blocked_convs = base[0] > 0
    probes = [record.probe_point("layout conv-conv", f"1x{CHANNELS}x{SIDE}x{SIDE}",
                                 optimized_nodes=" ".join(base_types), to_plain=base[0], to_blocked=base[1])]
    if not blocked_convs:
        return None, "nchw", probes
    counts, blocked = {}, []
    for kind, (grid, build, _) in table.items():
        if grid != "image":
            continue
        types = g.optimized_node_types(conv_op_conv(g, build))
        counts[kind] = reorders(types)
        if counts[kind][0] <= base[0]:
            blocked.append(kind)
        probes.append(record.probe_point(f"layout conv-{kind}-conv", f"1x{CHANNELS}x{SIDE}x{SIDE}",
                                         optimized_nodes=" ".join(types), to_plain=counts[kind][0],
                                         to_blocked=counts[kind][1]))
    cross = next((k for k in CROSS_CANDIDATES if k in counts and k not in blocked), None)
    copies = [1, 1]
    if cross:
        copies = [max(1, counts[cross][0] - base[0]), max(1, counts[cross][1] - base[1])]
    broadcast_types = g.optimized_node_types(conv_op_conv(g, lambda shape: squeeze_excitation(g, shape)))
    broadcast = reorders(broadcast_types)
    # onnxruntime reorders a broadcast operand at its own size, never expanded to the full one; a
    # multiply between more reorders than conv-conv's runs plain (broadcast_plain).
    probes.append(record.probe_point("layout broadcast Mul", f"1x{CHANNELS}x{SIDE}x{SIDE} by 1x{CHANNELS}x1x1",
                                     optimized_nodes=" ".join(broadcast_types), to_plain=broadcast[0],
                                     to_blocked=broadcast[1]))
    dense = sum(reorders(g.optimized_node_types(grouped_net(g, 1))))
    widths = []
    for width in grids.GROUP_REORDER_WIDTHS:
        n = sum(reorders(g.optimized_node_types(grouped_net(g, grids.GROUP_PROBE_CHANNELS // width))))
        if width > 1 and n >= dense + 2:  # depthwise apart, as frozen_graph.group_reorder_widths
            widths.append(width)
        probes.append(record.probe_point(f"layout grouped conv width {width}", f"1x{grids.GROUP_PROBE_CHANNELS}x8x8",
                                         reorders=n, dense_reorders=dense))
    layout = {"blocked_ops": sorted(blocked), "to_plain_copies": copies[0], "to_blocked_copies": copies[1],
              "expand_broadcast": False, "group_reorder_widths": widths}
    if broadcast[0] > base[0]:
        layout["broadcast_plain"] = True
    rule, rule_points = conv_channel_probe(g)
    probes += rule_points
    if rule is not None:
        layout["conv_small_input_channels"], layout["conv_channel_multiple"] = rule
    return layout, "blocked", probes
