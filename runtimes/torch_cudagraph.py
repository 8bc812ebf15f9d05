"""torch-cudagraph: a model captured once as a CUDA graph (torch.cuda.graphs) and replayed, in
bf16 where the device supports it. Needs a CUDA device.

Probes (a first set): the cost of one op inside a replayed graph (graphs of chains of tiny
linears, each replay ended by a synchronize)."""
import copy

from runtimes import grids, harness, record, torch_common

RUNTIME = "torch-cudagraph"
DEVICES = ("cpu", "cuda")  # on the CPU: exit 3, no CUDA device
MINIMUM_TORCH = (1, 10)  # torch.cuda.graph
TINY_WIDTH = 16


def require(device="cuda:0"):
    torch = torch_common.require_torch(RUNTIME, MINIMUM_TORCH)
    if not str(device).startswith("cuda") or not torch.cuda.is_available():
        raise harness.FrameworkMissing(f"{RUNTIME} needs a CUDA device: --device {device} on a machine where "
                                       f"torch.cuda.is_available() is {torch.cuda.is_available()}")
    return torch


def capture(torch, model, static_inputs):
    """The CUDA graph of one call of `model` on `static_inputs`, after warm-up calls on a side
    stream (as torch.cuda.graphs asks); returns (graph, static output)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.inference_mode():
        for _ in range(3):
            model(*static_inputs)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        out = model(*static_inputs)
    return graph, out


def prepare(module, example_inputs, dtype=None):
    """`module` run as torch-cudagraph runs it: a copy in eval mode in `dtype` (None: bf16 where
    the device supports it, else f32) on the device of `example_inputs`, captured as one CUDA
    graph on static copies of them. Returns a callable(*inputs) that copies the inputs into
    the static ones, replays the graph and returns its (static) output."""
    device = example_inputs[0].device
    torch = require(device)
    dtype = dtype or (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32)
    model = copy.deepcopy(module).eval().to(device, dtype)
    static = [x.clone() for x in example_inputs]
    graph, out = capture(torch, model, static)

    def run(*inputs):
        for s, x in zip(static, inputs):
            s.copy_(x)
        graph.replay()
        return out
    return run


def calibrate(options):
    torch = require(options.device)
    from torch import nn
    torch.manual_seed(harness.SEED)
    device, progress, budget = options.device, options.progress, options.budget
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    label = torch_common.dtype_label(torch, dtype)
    links = grids.chain_links(options.quick)
    x = harness.random_input("torch", (1, TINY_WIDTH), dtype, device)

    def make_chain(n):
        chain = nn.Sequential(*[nn.Linear(TINY_WIDTH, TINY_WIDTH) for _ in range(n)]).to(device, dtype).eval()
        graph, out = capture(torch, chain, [x])
        graph.replay()
        with torch.inference_mode():
            harness.check_close(f"graph of linear chain x{n}", out, chain(x), *torch_common.tolerance(torch, dtype))

        def run():
            graph.replay()
            torch.cuda.synchronize()
        return run

    op_s, probes = torch_common.chain_probe(torch, f"op chain linear 1x{TINY_WIDTH} {label} in a CUDA graph",
                                            make_chain, links, 1, budget)
    progress(f"op_s {op_s * 1e6:.2f} us")
    return record.build_record(
        runtime=RUNTIME, device=device, framework=torch_common.framework(torch), versions=torch_common.versions(torch),
        threads=torch.get_num_threads(), dtypes=[label], settings={"capture": "torch.cuda.graph, replayed"},
        op_s=op_s, layout=None, conv_layout="", probes=probes, calibration_s=0.0)
