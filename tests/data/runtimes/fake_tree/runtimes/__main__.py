"""Stands in for truepeak's runtime probes in the command-line tests: prints the fixed record
beside it (tests/data/runtimes/torch_jit_record.json) for the runtime and device asked for."""
import argparse
import json
import pathlib

parser = argparse.ArgumentParser()
parser.add_argument("--runtime", required=True)
parser.add_argument("--device", required=True)
parser.add_argument("--threads", type=int, required=True)
parser.add_argument("--quick", action="store_true")
args = parser.parse_args()
record = json.loads((pathlib.Path(__file__).parents[2] / "torch_jit_record.json").read_text())
record.update(runtime=args.runtime, device=args.device, threads=args.threads)
print(json.dumps(record))
