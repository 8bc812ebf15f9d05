"""The model sets, and which runtime runs which model in which dtype."""
import os

PUBLIC = ["resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2_prefill", "gpt2_decode"]
TORCHVISION = ["resnet34", "resnext50_32x4d", "vgg11", "regnet_x_400mf", "densenet121", "googlenet",
               "squeezenet1_1", "shufflenet_v2_x1_0", "efficientnet_b0", "mobilenet_v3_large"]
SETS = {"public": PUBLIC, "torchvision": TORCHVISION}
TRANSFORMERS = ("bert_base", "gpt2_prefill", "gpt2_decode")
USER_SET = "models"  # the set name of a --models list

# What each CPU runtime validates: "cnn" (a floating-point first input, an image) and
# "transformer" (token ids). torch-jit is the project's CNN deployment; eager PyTorch is how
# transformers are usually served; onnxruntime and torch.compile take any model.
RUNTIME_KINDS = {
    "torch-jit": ("cnn",),
    "torch-eager": ("transformer",),
    "torch-compile": ("cnn", "transformer"),
    "onnxruntime": ("cnn", "transformer"),
}


def runtime_name(key):
    """The runtime of a profile key: NAME for NAME and NAME:LABEL."""
    return key.split(":", 1)[0]


def kinds_of(key, eager_cnns=False):
    kinds = RUNTIME_KINDS[runtime_name(key)]
    if eager_cnns and runtime_name(key) == "torch-eager":
        kinds = kinds + ("cnn",)
    return kinds


def user_model_spec(name):
    """(path, function) when `name` is FILE.py:FUNCTION, a model of the user's own, else None."""
    path, sep, function = name.rpartition(":")
    return (path, function) if sep and path.endswith(".py") and function else None


def row_name(name):
    """The rows of FILE.py:FUNCTION are named FUNCTION; other models by their name."""
    spec = user_model_spec(name)
    return spec[1] if spec else name


def file_slug(name):
    """A model's name as a file name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in row_name(name))


def check_models(names):
    """None, or the one-line reason a --models list cannot run (the torchvision names are checked
    where torchvision is, in the export)."""
    if not names:
        return "--models: no model named"
    rows = {}
    for name in names:
        row = row_name(name)
        if row in rows:
            return f"--models: {rows[row]} and {name} would both be rows named '{row}'"
        rows[row] = name
    for name in names:
        spec = user_model_spec(name)
        if spec and not os.path.isfile(spec[0]):
            return f"--models {name}: no such file {spec[0]}"
    return None


def case_dtype(key, record):
    """The dtype a runtime runs its cases in: f32 for torch-jit (CNNs) and onnxruntime (the ONNX
    files are f32); for the others the runtime's own, as its profile record gives it."""
    if runtime_name(key) in ("torch-jit", "onnxruntime"):
        return "f32"
    dtype = record.get("dtype")
    if isinstance(dtype, str) and dtype:
        return dtype
    dtypes = record.get("dtypes")
    if isinstance(dtypes, list) and dtypes and isinstance(dtypes[0], str):
        return dtypes[0]
    return "f32"
