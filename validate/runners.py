"""A case made runnable the way its runtime runs a model: through the runtime module's own
`prepare` (runtimes/), the function its calibration probes use, so the models run with the
settings the profile records. Imported only in the timing child."""
import importlib

# The module of each runtime under runtimes/ (onnxruntime's is named apart from the package).
MODULES = {"torch-jit": "runtimes.torch_jit", "torch-eager": "runtimes.torch_eager",
           "torch-compile": "runtimes.torch_compile", "onnxruntime": "runtimes.onnxruntime_probe"}
TORCH_DTYPES = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}


def runtime_module(name):
    return importlib.import_module(MODULES[name])


def uses_torch(name):
    return name != "onnxruntime"


def set_threads(name, threads):
    """Torch runtimes take their threads from the process; onnxruntime's are a session option,
    given to its prepare()."""
    if uses_torch(name):
        import torch
        torch.set_num_threads(threads)


def framework_version(name):
    if uses_torch(name):
        import torch
        return f"torch {torch.__version__}"
    import onnxruntime
    return f"onnxruntime {onnxruntime.__version__}"


def prepare_case(name, case, dtype, threads, linears_as_convolutions):
    """A callable that runs one whole inference of `case` (a dict of the timing plan): the
    runtime's prepare() on the model, called on the case's inputs (floating ones in `dtype`);
    torch-jit's with the record's `linears_as_convolutions`."""
    module = runtime_module(name)
    if not uses_torch(name):
        import numpy
        with numpy.load(case["inputs"]) as arrays:
            feeds = {k: arrays[k] for k in arrays.files}
        _, run = module.prepare(case["onnx"], threads)
        return lambda: run(feeds)
    import torch
    from validate import models
    if name == "torch-compile":
        _room_for_every_case(torch)
    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    built = models.build(case["model"], case["batch"], case.get("seq") or models.SEQ,
                         case.get("context") or models.CONTEXT)
    inputs = tuple(t.to(torch_dtype) if t.is_floating_point() else t for t in built.inputs)
    if name == "torch-jit":
        run = module.prepare(built.module, inputs, torch_dtype, linears_as_convolutions=linears_as_convolutions)
    else:
        run = module.prepare(built.module, inputs, torch_dtype)
    return lambda: run(*inputs)


# Compiled graphs a frame may keep in one process: one per model and batch of a validation.
GRAPHS_PER_FRAME = 64


def _room_for_every_case(torch):
    """A user's process compiles one model; the validation compiles every model of a set at each
    batch in one process, and one architecture's forward (ResNet's, shared by resnet18 to 50) at
    several shapes: each case runs compiled, as it would alone, or fails."""
    from runtimes import torch_compile
    torch_compile.compile_every_call(torch, GRAPHS_PER_FRAME)
