"""validate's estimate: the command line is the user's, and nothing else; its output is read
(no torch, no build: a fake truepeak answers)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from validate import estimate  # noqa: E402
import validate_fakes as fakes  # noqa: E402


class CommandTest(unittest.TestCase):
    def test_a_cnn_in_f32(self):
        self.assertEqual(estimate.estimate_command("tp", "p.json", "torch-jit", "m.onnx", 8),
                         ["tp", "estimate", "--profile", "p.json", "--runtime", "torch-jit", "--model", "m.onnx",
                          "--batch", "8", "--format", "json"])

    def test_an_encoder_in_bf16(self):
        self.assertEqual(estimate.estimate_command("tp", "p.json", "torch-eager", "bert.onnx", 1, "bf16", seq=128),
                         ["tp", "estimate", "--profile", "p.json", "--runtime", "torch-eager", "--model", "bert.onnx",
                          "--batch", "1", "--seq", "128", "--dtype", "bf16", "--format", "json"])

    def test_a_decode_step(self):
        self.assertEqual(estimate.estimate_command("tp", "p.json", "onnxruntime", "d.onnx", 1, "f32", context=256),
                         ["tp", "estimate", "--profile", "p.json", "--runtime", "onnxruntime", "--model", "d.onnx",
                          "--batch", "1", "--context", "256", "--format", "json"])

    def test_no_expert_flag_ever(self):
        cmd = estimate.estimate_command("tp", "p", "torch-jit", "m.onnx", 1, "bf16", 128, 128)
        flags = {a for a in cmd if a.startswith("--")}
        self.assertEqual(flags, {"--profile", "--runtime", "--model", "--batch", "--seq", "--context", "--dtype",
                                 "--format"})


class ParseTest(unittest.TestCase):
    def test_one_batch_object_or_list(self):
        doc = {"latency_s": 0.02, "naive_latency_s": 0.01}
        self.assertEqual(estimate.parse_estimate(json.dumps(doc)), (0.02, 0.01))
        self.assertEqual(estimate.parse_estimate(json.dumps([doc])), (0.02, 0.01))

    def test_no_naive_is_none(self):
        self.assertEqual(estimate.parse_estimate('{"latency_s": 0.02}'), (0.02, None))

    def test_what_is_not_an_estimate(self):
        for text in ('{"latency_s": 0}', "{}", "[]", '[{"latency_s": 1}, {"latency_s": 2}]'):
            with self.assertRaises(ValueError, msg=text):
                estimate.parse_estimate(text)
        with self.assertRaises(ValueError):
            estimate.parse_estimate("not json")


class RunTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="validate-estimate-test-")
        self.truepeak, _, log = fakes.make(self.dir)
        os.environ["FAKE_LOG"] = log

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_latency_naive_and_warnings(self):
        got = estimate.run_estimate(estimate.estimate_command(self.truepeak, "p", "torch-jit", "m.onnx", 2))
        self.assertAlmostEqual(got["predicted_s"], 0.022)
        self.assertAlmostEqual(got["naive_s"], 0.010)
        self.assertEqual(got["warnings"], ["m.onnx: a warning"])

    def test_a_failed_estimate_is_its_last_line(self):
        got = estimate.run_estimate(estimate.estimate_command(self.truepeak, "p", "torch-jit", "broken.onnx", 1))
        self.assertEqual(got, {"error": "broken.onnx: cannot read it"})

    def test_a_missing_executable(self):
        got = estimate.run_estimate(estimate.estimate_command(os.path.join(self.dir, "none"), "p", "r", "m", 1))
        self.assertIn("did not run", got["error"])


if __name__ == "__main__":
    unittest.main()
