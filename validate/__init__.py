"""Validation of truepeak's estimates against real framework runs on this machine.

The parent process (`python3 -m validate`, standard library only) orchestrates; everything that
needs a framework runs in a child process: the ONNX export under a torch interpreter, and each
runtime's timings under the interpreter its profile record names. Estimates come only from
`truepeak estimate --profile P --runtime R --model FILE.onnx ...`, the command a user runs."""
