"""validate.py --reestimate: an earlier validation's estimates run again with another truepeak and
profile against the times it measured (standard library and the truepeak executable only)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
VALIDATE = os.path.join(ROOT, "scripts", "validate.py")
TRUEPEAK = os.environ.get("TRUEPEAK", os.path.join(ROOT, "build", "truepeak"))
FIXTURE = os.path.join(ROOT, "tests", "estimate", "data", "fixture_cpu.json")
MODEL = os.path.join(ROOT, "tests", "estimate", "data", "onnx", "tiny_cnn.onnx")


def validation(rows):
    meta = {"date_utc": "2026-12-03 12:00 UTC", "machine": "test machine", "device": "cpu",
            "profile": "old.json", "threads": 2, "rounds": 8, "runs": 3, "command": "scripts/validate.py"}
    return {"meta": meta, "rows": rows, "summary": {}}


def row(measured_ms, command):
    return {"model": "tiny_cnn", "batch": 1, "dtype": "f32", "measured_ms": measured_ms,
            "median_ms": measured_ms * 1.1, "spread": 1.3, "runs": 24, "rounds": 8,
            "predicted_ms": 1e9, "error_pct": 1e9, "naive_ms": None, "naive_error_pct": None,
            "library": "oneDNN 2.6.3: convolution 2", "reorders": 0, "predicted_reorders": 0,
            "estimate_error": None, "estimate_command": command}


def command(batch):
    return ["/old/truepeak", "estimate", "--profile", "/old/profile.json", "--model", MODEL, "--format", "json",
            "--batch", str(batch), "--dtype", "f32"]


@unittest.skipUnless(os.access(TRUEPEAK, os.X_OK), f"no truepeak executable at {TRUEPEAK}")
class ReestimateTest(unittest.TestCase):
    def run_validate(self, doc, *extra):
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "before.json")
            with open(source, "w") as f:
                json.dump(doc, f)
            out = os.path.join(tmp, "after")
            run = subprocess.run([sys.executable, VALIDATE, "--reestimate", source, "--truepeak", TRUEPEAK,
                                  "--profile", FIXTURE, "--out", out, *extra], capture_output=True, text=True)
            report = None
            if os.path.exists(out + ".json"):
                with open(out + ".json") as f:
                    report = json.load(f)
                with open(out + ".md") as f:
                    report["md"] = f.read()
            return run, report

    def test_the_estimates_run_again_against_the_measured_times(self):
        # What the fixture predicts for each batch, straight from truepeak.
        expected = {}
        for batch in (1, 8):
            cmd = command(batch)
            cmd[0], cmd[3] = TRUEPEAK, FIXTURE
            expected[batch] = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        rows = [row(2.0, command(1)), row(10.0, command(8))]
        rows[1]["batch"] = 8
        run, report = self.run_validate(validation(rows))
        self.assertEqual(run.returncode, 0, run.stderr)
        for r, batch, measured in zip(report["rows"], (1, 8), (2.0, 10.0)):
            predicted = validate_key(expected[batch], "latency_s") * 1e3
            self.assertAlmostEqual(r["predicted_ms"], predicted, places=9)
            self.assertAlmostEqual(r["error_pct"], (predicted - measured) / measured * 100, places=9)
            self.assertEqual(r["estimate_command"][0], TRUEPEAK)
            self.assertEqual(r["measured_ms"], measured)  # the times are the earlier run's
        self.assertEqual(report["summary"]["rows"], 2)
        self.assertIn("only the estimates ran again", report["md"])

    def test_pytorchs_own_figures_can_be_left_out(self):
        # Recorded with PyTorch's per-op cost and its kernels' rates; re-estimated on the profile alone.
        recorded = command(1) + ["--op-overhead-us", "500", "--kind-overhead-us", "conv2d=700",
                                 "--own-rates", "elementwise:relu=1e3", "--typical-times"]
        alone = command(1)
        alone[0], alone[3] = TRUEPEAK, FIXTURE
        expected = json.loads(subprocess.run(alone + ["--typical-times"], capture_output=True, text=True,
                                             check=True).stdout)
        run, report = self.run_validate(validation([row(2.0, recorded)]), "--library-overhead", "--profile-rates")
        self.assertEqual(run.returncode, 0, run.stderr)
        r = report["rows"][0]
        for gone in ("--op-overhead-us", "--kind-overhead-us", "--own-rates", "500", "conv2d=700"):
            self.assertNotIn(gone, r["estimate_command"])
        self.assertIn("--typical-times", r["estimate_command"])
        self.assertAlmostEqual(r["predicted_ms"], validate_key(expected, "latency_s") * 1e3, places=9)
        # Without the two flags the recorded figures stay, and the prediction is much longer.
        run, report = self.run_validate(validation([row(2.0, recorded)]))
        self.assertGreater(report["rows"][0]["predicted_ms"], r["predicted_ms"] + 0.4)

    def test_a_validation_without_estimate_commands_is_refused(self):
        rows = [row(2.0, None)]
        run, report = self.run_validate(validation(rows))
        self.assertEqual(run.returncode, 2)
        self.assertIn("records no estimate command", run.stderr)
        self.assertIsNone(report)

    def test_a_file_that_is_no_validation_is_refused(self):
        run, report = self.run_validate({"rows": "nothing"})
        self.assertEqual(run.returncode, 2)
        self.assertIn("--reestimate", run.stderr)
        self.assertIsNone(report)


def validate_key(doc, key):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import validate  # noqa: E402
    return validate.find_key(doc, key)


if __name__ == "__main__":
    unittest.main()
