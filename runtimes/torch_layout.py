"""The layout probe of frozen TorchScript graphs, read from oneDNN's verbose lines, which
torch.backends.mkldnn.verbose switches on for the runs that count only.

For each op kind, a frozen, inference-optimized graph of conv-OP-conv (16 channels, 16x16): the
op runs on channel-blocked tensors when its graph has no aten::to_dense beyond the one at the
graph's end, as conv-ReLU-conv has. The graph's nodes say which kinds run in place and whether
the ReLU folds into the convolution. Then one run each, between marks on stdout, of the nets
whose oneDNN reorders give the copies of a layout change (conv-ReLU-conv against conv-X-conv
with an op X that runs plain), the expansion of a broadcast operand (a squeeze-excitation scale)
and the group widths run in a layout of their own (grouped 3x3 convolutions over 128 channels
against the same net with a dense one). runtimes/frozen_graph.py reads the lines."""
import ctypes
import os
import sys
import tempfile

from runtimes import frozen_graph, grids, harness, torch_common

# Elementwise kinds tried, in order, as the op that runs plain (the copies of a layout change).
CROSS_CANDIDATES = ("elementwise:silu", "elementwise:gelu", "elementwise:hardswish", "elementwise:tanh",
                    "elementwise:sigmoid", "elementwise:hardsigmoid")
CHANNELS, SIDE = 16, 16


def freeze(torch, module, x):
    from runtimes import torch_jit
    return torch_jit.freeze(torch, module, x)


def conv_op_conv(torch, middle, operands, out_channels_in=CHANNELS):
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)
            self.b = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)
            self.middle = middle
            self.out = nn.Conv2d(out_channels_in, CHANNELS, 1)

        def forward(self, x):
            y = self.middle(self.a(x), self.b(x)) if operands == 2 else self.middle(self.a(x))
            return self.out(y)

    x = harness.random_input("torch", (1, CHANNELS, SIDE, SIDE))
    return freeze(torch, Net(), x), x


def squeeze_excitation(torch):
    """x times sigmoid(1x1 convolution(global average of x)): a broadcast [N, C, 1, 1] operand."""
    from torch import nn

    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.pool, self.conv = nn.AdaptiveAvgPool2d(1), nn.Conv2d(CHANNELS, CHANNELS, 1)

        def forward(self, x):
            return x * self.conv(self.pool(x)).sigmoid()
    return Scale()


def grouped_net(torch, groups):
    from torch import nn
    c = grids.GROUP_PROBE_CHANNELS
    net = nn.Sequential(nn.Conv2d(c, c, 1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1, groups=groups), nn.ReLU(),
                        nn.Conv2d(c, c, 1))
    x = harness.random_input("torch", (1, c, 8, 8))
    return freeze(torch, net, x), x


def node_kinds(graph):
    return [node.kind() for node in graph.graph.nodes()]


def probe(torch):
    """Builds the nets; returns (findings, nets to run under the verbose log by mark name)."""
    from torch import nn
    modules = dict(torch_common.elementwise_modules())
    modules.update(torch_common.image_modules(CHANNELS))
    # A batch norm right after a convolution folds into it: a ReLU between keeps it apart.
    modules["norm:batchnorm"] = (nn.Sequential(nn.ReLU(), modules["norm:batchnorm"][0]), 1)
    nets = {kind: conv_op_conv(torch, module, operands, 2 * CHANNELS if kind == "concat" else CHANNELS)
            for kind, (module, operands) in modules.items()}
    dense = {kind: node_kinds(graph).count("aten::to_dense") for kind, (graph, _) in nets.items()}
    base = dense["elementwise:relu"]
    if base != 1:
        raise RuntimeError(f"conv-ReLU-conv's frozen graph has {base} aten::to_dense, not 1 at its end: this "
                           "PyTorch does not keep ReLU blocked, and the probe cannot tell the layouts apart")
    blocked = sorted(kind for kind in modules if dense[kind] <= base)
    cross = next((k for k in CROSS_CANDIDATES if k not in blocked), None)
    broadcast = conv_op_conv(torch, squeeze_excitation(torch), 1)
    in_place = sorted(kind for kind, (graph, _) in nets.items()
                      if kind.startswith("elementwise:") and kind in frozen_graph.in_place_kinds(node_kinds(graph)))
    relu_nodes = node_kinds(nets["elementwise:relu"][0])
    findings = {
        "blocked_ops": blocked,
        "to_dense": dense,
        "cross": cross,
        "broadcast_blocked": node_kinds(broadcast[0]).count("aten::to_dense") <= base,
        "in_place": in_place,
        "fuse_activations": not any("relu" in k.lower() for k in relu_nodes),
        "conv_layout": "blocked" if any("mkldnn" in k.lower() for k in relu_nodes) else "nchw",
    }
    runs = {"base": nets["elementwise:relu"], "broadcast": broadcast,
            "group-dense": grouped_net(torch, 1)}
    for width in grids.GROUP_REORDER_WIDTHS:
        runs[f"group-{width}"] = grouped_net(torch, grids.GROUP_PROBE_CHANNELS // width)
    if cross:
        runs["cross"] = nets[cross]
    return findings, runs


def verbose_lines(torch, runs):
    """oneDNN's verbose lines of one run of each net of `runs` (name -> (graph, input)), each
    run between its mark and an end mark. oneDNN writes them to the process's standard output,
    which goes to a temporary file meanwhile: this process's own output is its record."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    with tempfile.TemporaryFile() as log:
        saved = os.dup(1)
        try:
            os.dup2(log.fileno(), 1)
            with torch.no_grad():
                for name, (graph, x) in runs.items():
                    graph(x)  # the first runs make the primitives and their weights' layouts
                    graph(x)
                    os.write(1, f"{frozen_graph.mark(name)}\n".encode())
                    with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
                        graph(x)
                    libc.fflush(None)
                    os.write(1, b"truepeak-layout-end\n")
        finally:
            sys.stdout.flush()
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return log.read().decode(errors="replace").splitlines()
