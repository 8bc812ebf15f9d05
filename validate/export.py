"""Child process, under a torch interpreter: exports each model to ONNX with PyTorch's exporter
(batch axis dynamic) and writes each batch's random inputs beside it, for the runtimes that run
the ONNX file. Prints the manifest, one JSON list, on stdout (a model the exporter fails on is an
entry with its error); progress on stderr.

    PYTHON -m validate.export --dir DIR --batches 1,8 [--seq S] [--context C] [--reuse] MODEL..."""
import argparse
import json
import os
import sys
import warnings

from validate import models
from validate.errors import usage_error
from validate.sets import file_slug, row_name

OPSET = 17  # the opset the estimator's ONNX import is tested with (LayerNormalization is one node)
# What the export keeps of the module: each op as the module computes it, a batch norm after a
# convolution included (TrainingMode.PRESERVE on a module in eval mode: inference, without the
# folding of batch norms into convolutions that TrainingMode.EVAL adds). Whether a runtime folds
# it is the runtime's (its record's conv_batchnorm_apart), as the estimator decides. An export
# of another form is made again, not reused.
EXPORT_FORM = "ops as the module computes them (batch norms kept)"


def replace_atomic(write, path):
    """write(tmp) then a rename: a file that exists is whole."""
    tmp = path + ".tmp"
    write(tmp)
    os.replace(tmp, path)


def write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


def export_onnx(built, path):
    import torch
    dynamic = {name: {0: "batch"} for name in built.input_names}
    with torch.no_grad(), warnings.catch_warnings():
        # The exporter advises against constant folding in a training-amenable mode; the module
        # is in eval mode, where folding constants changes no parameter.
        warnings.filterwarnings("ignore", message=".*constant folding.*", category=UserWarning)
        replace_atomic(lambda tmp: torch.onnx.export(
            built.module, built.inputs, tmp, opset_version=OPSET, input_names=built.input_names,
            dynamic_axes=dynamic, do_constant_folding=True, training=torch.onnx.TrainingMode.PRESERVE), path)


def save_inputs(built, path):
    import numpy
    arrays = {name: t.numpy() for name, t in zip(built.input_names, built.inputs)}

    def write(tmp):
        with open(tmp, "wb") as f:
            numpy.savez(f, **arrays)
    replace_atomic(write, path)


def entry_path(folder, name):
    return os.path.join(folder, file_slug(name) + ".json")


def reusable(folder, name, batches, seq, context):
    """The manifest entry of an earlier export of the same model, batches and lengths, or None."""
    try:
        with open(entry_path(folder, name)) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    same = (entry.get("model") == name and entry.get("form") == EXPORT_FORM and entry.get("asked_seq") == seq and entry.get("asked_context") == context
            and os.path.isfile(entry.get("onnx", ""))
            and all(os.path.isfile(entry.get("inputs", {}).get(str(b), "")) for b in batches))
    return entry if same else None


def export_model(folder, name, batches, seq, context):
    entry = None
    for batch in sorted(batches):
        built = models.build(name, batch, seq, context)
        if entry is None:
            onnx_path = os.path.join(folder, file_slug(name) + ".onnx")
            print(f"validate: exporting {row_name(name)} to {onnx_path}", file=sys.stderr, flush=True)
            export_onnx(built, onnx_path)
            entry = {"model": name, "row": row_name(name), "onnx": onnx_path, "kind": built.kind,
                     "seq": built.seq, "context": built.context, "input_names": built.input_names,
                     "asked_seq": seq, "asked_context": context, "form": EXPORT_FORM, "inputs": {}}
        inputs_path = os.path.join(folder, f"{file_slug(name)}.b{batch}.npz")
        save_inputs(built, inputs_path)
        entry["inputs"][str(batch)] = inputs_path
    replace_atomic(lambda tmp: write_text(tmp, json.dumps(entry, indent=1) + "\n"), entry_path(folder, name))
    return entry


def main(argv=None):
    parser = argparse.ArgumentParser(prog="validate.export")
    parser.add_argument("--dir", required=True)
    parser.add_argument("--batches", required=True)
    parser.add_argument("--seq", type=int, default=models.SEQ)
    parser.add_argument("--context", type=int, default=models.CONTEXT)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as error:
        usage_error(f"the export needs PyTorch and torchvision in {sys.executable} ({error})")
    for name in args.models:
        if not models.known_model(name):
            models.build(name, 1)  # says which names it knows, in one line
    os.makedirs(args.dir, exist_ok=True)
    manifest = []
    for name in args.models:
        entry = args.reuse and reusable(args.dir, name, batches, args.seq, args.context)
        try:
            entry = entry or export_model(args.dir, name, batches, args.seq, args.context)
        except Exception as error:  # PyTorch's exporter: this model is left out, the others go on
            message = f"{type(error).__name__}: {error}".splitlines()[0]
            print(f"validate: {row_name(name)}: the export failed: {message}", file=sys.stderr, flush=True)
            entry = {"model": name, "row": row_name(name), "error": message}
        manifest.append(entry)
    print(json.dumps(manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
