"""The probes' command line: arguments, exit statuses and their one-line messages (standard
library only: a fake runtime module stands in for the frameworks)."""
import contextlib
import io
import json
import os
import subprocess
import sys
import types
import unittest
from unittest import mock

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, ROOT)
from runtimes import cli, harness, record  # noqa: E402

FAKE = "truepeak_fake_runtime"


def fake_module(calibrate, devices=("cpu",), dtypes=None):
    module = types.ModuleType(FAKE)
    module.DEVICES = devices
    if dtypes is not None:
        module.DTYPES = dtypes
    module.calibrate = calibrate
    return module


def good_record(options):
    return record.build_record(runtime="fake", device=options.device, framework="fake 1.0", versions={},
                               threads=options.threads, dtypes=["f32"], settings={}, op_s=1e-6, probes=[],
                               calibration_s=0.0)


def run_main(argv, module):
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(cli.RUNTIMES, {"fake": FAKE}), mock.patch.dict(sys.modules, {FAKE: module}), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


class ParseArgsTest(unittest.TestCase):
    def test_defaults(self):
        args = cli.parse_args(["--runtime", "torch-jit"])
        self.assertEqual((args.device, args.threads, args.dtype, args.quick), ("cpu", harness.cpu_count(), None, False))
        self.assertEqual(cli.parse_args(["--runtime", "torch-eager", "--device", "cuda"]).device, "cuda:0")
        args = cli.parse_args(["--runtime", "onnxruntime", "--threads", "3", "--quick", "--device", "cuda:1"])
        self.assertEqual((args.device, args.threads, args.quick), ("cuda:1", 3, True))
        self.assertEqual(args.library, {})

    def test_libraries_by_name(self):
        args = cli.parse_args(["--runtime", "torch-jit", "--library", "onednn=2.6.3", "--library", "cudnn=9.1"])
        self.assertEqual(args.library, {"onednn": "2.6.3", "cudnn": "9.1"})

    def test_bad_arguments_are_one_line(self):
        for argv, text in ((["--runtime", "tvm"], "--runtime tvm: unknown"),
                           (["--runtime", "torch-jit", "--threads", "0"], "--threads 0"),
                           (["--runtime", "torch-jit", "--threads", "two"], "--threads two"),
                           (["--runtime", "torch-jit", "--device", "gpu"], "--device gpu"),
                           (["--runtime", "torch-jit", "--device", "cuda:x"], "--device cuda:x"),
                           ([], "--runtime"),
                           (["--runtime", "torch-jit", "--library", "onednn"], "--library onednn"),
                           (["--runtime", "torch-jit", "--library", "=2.6"], "--library =2.6"),
                           (["--runtime", "torch-jit", "--fast"], "--fast")):
            with self.assertRaises(harness.UsageError, msg=argv) as caught:
                cli.parse_args(argv)
            self.assertIn(text, str(caught.exception))
            self.assertNotIn("\n", str(caught.exception))


class MainTest(unittest.TestCase):
    def test_a_record_goes_to_stdout_with_its_calibration_time(self):
        status, out, err = run_main(["--runtime", "fake", "--threads", "2"], fake_module(good_record))
        self.assertEqual(status, 0, err)
        doc = json.loads(out)
        self.assertEqual((doc["runtime"], doc["threads"]), ("fake", 2))
        self.assertGreater(doc["calibration_s"], 0)

    def test_the_dtype_asked_reaches_the_runtime(self):
        seen = []

        def keep(options):
            seen.append(options.dtype)
            return good_record(options)
        for argv, expected in (([], None), (["--dtype", "bf16"], "bf16")):
            status, _, err = run_main(["--runtime", "fake"] + argv, fake_module(keep, dtypes=("f32", "bf16")))
            self.assertEqual(status, 0, err)
            self.assertEqual(seen[-1], expected)

    def test_a_dtype_the_runtime_does_not_take_is_a_usage_error(self):
        for dtypes, text in ((("f32", "bf16"), "expected one of f32, bf16"), (None, "this runtime picks its dtype itself")):
            status, out, err = run_main(["--runtime", "fake", "--dtype", "f16"], fake_module(good_record, dtypes=dtypes))
            self.assertEqual((status, out), (2, ""))
            self.assertIn("fake --dtype f16: " + text, err)
            self.assertEqual(len(err.strip().splitlines()), 1)

    def test_a_missing_framework_is_exit_3_and_one_line(self):
        def missing(options):
            raise harness.FrameworkMissing("fake needs fakelib: scripts/setup-venv.sh fake")
        status, out, err = run_main(["--runtime", "fake"], fake_module(missing))
        self.assertEqual((status, out), (3, ""))
        self.assertEqual(err.strip(), "fake needs fakelib: scripts/setup-venv.sh fake")

    def test_a_device_the_runtime_lacks_is_a_usage_error(self):
        status, _, err = run_main(["--runtime", "fake", "--device", "cuda:0"], fake_module(good_record))
        self.assertEqual(status, 2)
        self.assertIn("not --device cuda:0", err)

    def test_a_failed_output_check_is_exit_1(self):
        def wrong(options):
            raise harness.CheckFailed("relu: element 3 is 2.0, the reference 1.0")
        status, out, err = run_main(["--runtime", "fake"], fake_module(wrong))
        self.assertEqual((status, out), (1, ""))
        self.assertIn("output check failed: relu", err)

    def test_a_record_that_fails_its_checks_is_never_printed(self):
        def bad(options):
            doc = good_record(options)
            doc["op_s"] = float("nan")
            return doc
        status, out, err = run_main(["--runtime", "fake"], fake_module(bad))
        self.assertEqual((status, out), (1, ""))
        self.assertIn("fails its checks: op_s", err)

    def test_any_other_failure_is_exit_1_and_one_line(self):
        def broken(options):
            raise RuntimeError("the layout probe failed: boom\nsecond line")
        status, out, err = run_main(["--runtime", "fake"], fake_module(broken))
        self.assertEqual((status, out), (1, ""))
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("RuntimeError: the layout probe failed: boom", err)

    def test_the_module_runs_as_a_program(self):
        env = dict(os.environ, PYTHONPATH=ROOT)
        done = subprocess.run([sys.executable, "-m", "runtimes", "--runtime", "nothing"], env=env,
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stdout, "")
        self.assertIn("--runtime nothing: unknown", done.stderr)


if __name__ == "__main__":
    unittest.main()
