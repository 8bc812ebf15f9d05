"""The probes' command line: python -m runtimes --runtime NAME --device DEV --threads N [--dtype D]
[--quick] [--library NAME=VERSION ...].

Exit status: 0 with the record on stdout; 2 on bad arguments; 3 when the runtime's framework is
missing or too old (or its device absent), the last line of stderr naming the command that
installs it; 1 on any other failure, or a record that fails its checks. Progress on stderr."""
import argparse
import importlib
import os
import sys
import time
import traceback
import types

from runtimes import harness, record

# Runtime name -> its module.
RUNTIMES = {
    "torch-jit": "runtimes.torch_jit",
    "torch-eager": "runtimes.torch_eager",
    "torch-compile": "runtimes.torch_compile",
    "torch-cudagraph": "runtimes.torch_cudagraph",
    "onnxruntime": "runtimes.onnxruntime_probe",
}

EXIT_FAILURE, EXIT_USAGE, EXIT_MISSING = 1, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise harness.UsageError(f"runtimes: {message}")


def parse_args(argv):
    """The options as a namespace (runtime, device, threads, dtype, quick, library: name ->
    version); harness.UsageError, one line, on bad arguments."""
    parser = _Parser(prog="python -m runtimes", description="Measures what a framework runtime adds "
                     "to the machine's figures and prints one JSON record (docs/runtimes.md).")
    parser.add_argument("--runtime", required=True, help=f"one of {', '.join(RUNTIMES)}")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda:N")
    parser.add_argument("--threads", default=None, help="threads the runtime may use (default: every core "
                        "this process may run on)")
    parser.add_argument("--dtype", default=None, help="the dtype the runtime runs a model in, where it takes "
                        "one (torch-eager: f32, bf16 or f16; default: its own choice)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter points (a few seconds)")
    parser.add_argument("--library", action="append", default=[], metavar="NAME=VERSION",
                        help="a library the profile measured the device with (onednn=2.6.3): a runtime "
                        "that bundles another version of it measures its own kernels' rates")
    args = parser.parse_args(argv)
    libraries = {}
    for entry in args.library:
        name, _, version = entry.partition("=")
        if not name or not version:
            raise harness.UsageError(f"runtimes: --library {entry}: expected NAME=VERSION")
        libraries[name] = version
    args.library = libraries
    if args.runtime not in RUNTIMES:
        raise harness.UsageError(f"runtimes: --runtime {args.runtime}: unknown (known: {', '.join(RUNTIMES)})")
    if args.device != "cpu" and not (args.device == "cuda" or (args.device.startswith("cuda:")
                                                               and args.device[5:].isdigit())):
        raise harness.UsageError(f"runtimes: --device {args.device}: expected cpu or cuda:N")
    if args.device == "cuda":
        args.device = "cuda:0"
    if args.threads is None:
        args.threads = harness.cpu_count()
    else:
        text = args.threads
        try:
            args.threads = int(text)
        except ValueError:
            args.threads = 0
        if args.threads < 1:
            raise harness.UsageError(f"runtimes: --threads {text}: expected a whole number of 1 or more")
    return args


def options_for(args, started):
    """What a runtime module's calibrate() gets: the arguments, the budget and progress."""
    return types.SimpleNamespace(runtime=args.runtime, device=args.device, threads=args.threads,
                                 dtype=args.dtype, quick=args.quick, libraries=args.library,
                                 started=started, budget=harness.Budget(args.quick, started=started),
                                 progress=harness.Progress(args.runtime, started))


def _where(error):
    """file:line of the innermost frame of `error`'s traceback."""
    frames = traceback.extract_tb(error.__traceback__)
    return f"{os.path.basename(frames[-1].filename)}:{frames[-1].lineno}" if frames else "?"


def main(argv, started=None):
    started = time.perf_counter() if started is None else started
    try:
        args = parse_args(argv)
    except harness.UsageError as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    name = args.runtime
    try:
        module = importlib.import_module(RUNTIMES[name])
        device_kind = args.device.split(":")[0]
        if device_kind not in module.DEVICES:
            raise harness.UsageError(f"runtimes: {name} runs on {' or '.join(module.DEVICES)}, "
                                     f"not --device {args.device}")
        dtypes = getattr(module, "DTYPES", ())
        if args.dtype is not None and args.dtype not in dtypes:
            raise harness.UsageError(
                f"runtimes: {name} --dtype {args.dtype}: " + (f"expected one of {', '.join(dtypes)}" if dtypes else
                                                              "this runtime picks its dtype itself"))
        options = options_for(args, started)
        doc = module.calibrate(options)
        doc["calibration_s"] = time.perf_counter() - started
        wrong = record.problems(doc)
        if wrong:
            print(f"runtimes: {name}: the record fails its checks: {'; '.join(wrong[:5])}"
                  + (f" (and {len(wrong) - 5} more)" if len(wrong) > 5 else ""), file=sys.stderr)
            return EXIT_FAILURE
        spread = harness.host_spread(doc["probes"])
        record.write_record(doc)
        options.progress(f"done in {doc['calibration_s']:.1f} s" + (f"; host speed: {spread}" if spread else ""))
        return 0
    except harness.UsageError as error:
        print(error, file=sys.stderr)
        return EXIT_USAGE
    except harness.FrameworkMissing as error:
        print(error, file=sys.stderr)
        return EXIT_MISSING
    except harness.CheckFailed as error:
        print(f"runtimes: {name}: output check failed: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except Exception as error:  # one clear line for calibrate; the traceback on request
        if os.environ.get("TRUEPEAK_RUNTIMES_TRACEBACK"):
            traceback.print_exc()
        print(f"runtimes: {name} failed at {_where(error)}: {type(error).__name__}: {error}".splitlines()[0],
              file=sys.stderr)
        return EXIT_FAILURE
