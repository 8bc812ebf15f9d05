"""Framework probes: what a runtime (frozen TorchScript, eager PyTorch, torch.compile, a CUDA
graph, onnxruntime) adds to the library's figures, measured with generic probes and printed as
one JSON record for `truepeak calibrate --runtime` (docs/runtimes.md).

    python -m runtimes --runtime NAME --device cpu --threads N [--quick]

One module per runtime over one harness (harness.py: timing and fits; record.py: the record;
cli.py: the command line). Each runtime module has calibrate(options) -> record and a prepare()
that runs a model the way its probes ran theirs, for validation."""
