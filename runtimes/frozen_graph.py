"""What a frozen TorchScript graph's structure says about the runtime: the op kinds it runs in
place, and its layout rules from the layout probe's findings (runtimes/torch_layout.py).
Standard library only."""
from runtimes import onednn_verbose

# The elementwise functions PyTorch names in place (aten::relu_, prim::MKLDNNHardTanh_), by the
# estimator's name where it differs.
IN_PLACE_NAMES = {"hardtanh": "clip", "clamp": "clip", "relu6": "clip"}
ELEMENTWISE_FNS = {"relu", "clip", "sigmoid", "tanh", "gelu", "silu", "hardswish", "hardsigmoid", "add",
                   "sub", "mul", "div"}

# A layout change making more copies than this is a misreading of the verbose lines.
MAX_COPIES = 8


def in_place_kinds(node_kinds):
    """The estimator's elementwise kinds that nodes of these kinds (aten::relu_, aten::add_,
    prim::MKLDNNHardTanh_, ...) run in place: an in-place node's name ends in one underscore."""
    kinds = set()
    for node_kind in node_kinds:
        name = node_kind.split("::")[-1]
        if not name.endswith("_") or name.endswith("__"):
            continue
        name = name[:-1].lower()
        if name.startswith("mkldnn"):
            name = name[len("mkldnn"):]
        name = IN_PLACE_NAMES.get(name, name)
        if name in ELEMENTWISE_FNS:
            kinds.add(f"elementwise:{name}")
    return sorted(kinds)


def sections(lines, marks, end="truepeak-layout-end"):
    """The lines between each mark of `marks` and the end mark after it: mark -> lines. Raises
    ValueError when a mark or its end is missing."""
    out = {}
    for mark in marks:
        if mark not in lines:
            raise ValueError(f"the layout probe's output lacks '{mark}'")
        start = lines.index(mark) + 1
        if end not in lines[start:]:
            raise ValueError(f"the layout probe's output lacks the end of '{mark}'")
        out[mark] = lines[start:lines.index(end, start)]
    return out


def group_reorder_widths(base_reorders, reorders_by_width):
    """The channels per group whose grouped convolution runs in a layout of its own: its net
    makes at least two reorders beyond the same net with a dense convolution (its input out of
    the blocked layout and its output back). A depthwise convolution (width 1) is probed, and
    its count kept in the probes, but never listed: the estimator treats depthwise
    convolutions apart, and the profile's schema takes widths of 2 and up."""
    return sorted(w for w, n in reorders_by_width.items() if w > 1 and n >= base_reorders + 2)


def mark(name):
    return f"truepeak-layout-{name}"


def layout_of(found, lines, group_widths):
    """The record's `layout` from the layout probe: `found` its findings (torch_layout.probe),
    `lines` oneDNN's verbose lines of one run of each net between marks
    (torch_layout.verbose_lines). Returns (layout, counts):
    counts, the reorders by direction of each net, go into the probes."""
    names = ["base", "broadcast", "group-dense"] + [f"group-{w}" for w in group_widths]
    if found.get("cross"):
        names.append("cross")
    runs = sections(lines, [mark(n) for n in names])
    counts = {n: onednn_verbose.reorder_directions(runs[mark(n)]) for n in names}
    base = counts["base"]
    if found.get("cross"):
        cross = counts["cross"]
        # A change makes at least one copy, whatever oneDNN logs of it.
        copies = [max(1, cross[0] - base[0]), max(1, cross[1] - base[1])]
    else:
        copies = [1, 1]  # every kind runs blocked: no change to count, none to charge
    if max(copies) > MAX_COPIES:
        raise ValueError(f"the layout probe counted {copies} copies per layout change (more than {MAX_COPIES})")
    # A broadcast multiply between blocked tensors that makes reorders to blocked beyond
    # conv-ReLU-conv's expands its broadcast operand (to_dense, expand, to_mkldnn).
    expand = bool(found.get("broadcast_blocked")) and counts["broadcast"][1] > base[1]
    widths = group_reorder_widths(sum(counts["group-dense"]),
                                  {w: sum(counts[f"group-{w}"]) for w in group_widths})
    layout = {"blocked_ops": sorted(found["blocked_ops"]), "to_plain_copies": copies[0],
              "to_blocked_copies": copies[1], "expand_broadcast": expand, "group_reorder_widths": widths}
    return layout, counts
