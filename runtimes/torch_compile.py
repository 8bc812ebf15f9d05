"""torch-compile: a model as torch.compile runs it (inductor, default options; on a GPU
mode="reduce-overhead"), under torch.inference_mode(), in f32 on the CPU and bf16 on a GPU that
supports it. Needs torch 2.x.

Probes (a first set): the fixed cost of one op in a compiled graph (chains of tiny linears,
which inductor leaves as separate library calls) and the rates of a few of its generated
kernels over the row grid."""
import copy

from runtimes import grids, harness, record, torch_common

RUNTIME = "torch-compile"
DEVICES = ("cpu", "cuda")
MINIMUM_TORCH = (2, 0)
TINY_WIDTH = 16
# Compiling costs seconds a graph: shorter chains and fewer kernels than the other runtimes.
LINKS, QUICK_LINKS = 16, 4
KINDS = ("elementwise:gelu", "elementwise:add", "softmax", "norm:layernorm")
QUICK_KINDS = ("elementwise:add",)


def require():
    return torch_common.require_torch(RUNTIME, MINIMUM_TORCH, need_2x=True)


def default_dtype(torch, device):
    if str(device).startswith("cuda") and torch.cuda.is_bf16_supported():
        return torch.bfloat16
    return torch.float32


def compile_module(torch, module, device):
    mode = "reduce-overhead" if str(device).startswith("cuda") else None
    return torch.compile(module, mode=mode) if mode else torch.compile(module)


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


def calibrate(options):
    torch = require()
    from torch import nn
    torch_common.set_threads(torch, options.threads)
    torch.manual_seed(harness.SEED)
    device, progress, budget = options.device, options.progress, options.budget
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise harness.FrameworkMissing(f"{RUNTIME} --device {device}: this PyTorch ({torch.__version__}) sees no "
                                       "CUDA device")
    dtype = default_dtype(torch, device)
    label = torch_common.dtype_label(torch, dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else None
    links = QUICK_LINKS if options.quick else LINKS
    x = harness.random_input("torch", (1, TINY_WIDTH), dtype, device)

    def make_chain(n):
        chain = nn.Sequential(*[nn.Linear(TINY_WIDTH, TINY_WIDTH) for _ in range(n)]).to(device, dtype).eval()
        compiled = compile_module(torch, chain, device)
        with torch.inference_mode():
            harness.check_close(f"compiled linear chain x{n}", compiled(x), chain(x),
                                *torch_common.tolerance(torch, dtype))

        def run():
            with torch.inference_mode():
                compiled(x)
            if sync:
                sync()
        return run

    progress(f"compiling linear chains of 1 and {links}")
    op_s, probes = torch_common.chain_probe(torch, f"op chain linear 1x{TINY_WIDTH} {label}", make_chain, links, 1,
                                            budget)
    progress(f"op_s {op_s * 1e6:.2f} us")

    kinds = QUICK_KINDS if options.quick else KINDS
    table = torch_common.row_kernels(dtype, mixed_norm=False)
    kernels = {}
    for kind in kinds:
        make, operands = table[kind]
        kernels[kind] = ((lambda s, make=make: torch.compile(make(s), dynamic=False)), operands)
    shapes = grids.row_shapes(True)  # two sizes: each compiles its own kernel
    own, own_probes = torch_common.own_kernel_rates(torch, kernels, shapes, dtype, budget, progress, device, sync)

    return record.build_record(
        runtime=RUNTIME, device=device, framework=torch_common.framework(torch), versions=torch_common.versions(torch),
        threads=torch.get_num_threads(), dtypes=[label],
        settings={"compile": "torch.compile, inductor, default options" +
                  (", mode=reduce-overhead" if device.startswith("cuda") else ""),
                  "fusion_rules": "not probed"},
        op_s=op_s, own_kernels=own, layout=None, conv_layout="", probes=probes + own_probes, calibration_s=0.0)
