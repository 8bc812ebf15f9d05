"""validate end to end on one tiny case: a runtime calibrated into a copy of a profile by
`truepeak calibrate --runtime torch-jit --quick --add-to`, then a small CNN of the user's own
exported, timed in frozen TorchScript and estimated with the user's command. Exits 77 (skipped)
saying why where this interpreter has no PyTorch, TRUEPEAK is not an executable, or that truepeak
refuses to calibrate the runtime (exit 2: no such option, or no framework for it)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SKIP = 77

USER_MODEL = """
import torch


def tiny(batch):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(16, 10))
    return net, torch.randn(batch, 3, 32, 32)
"""


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(SKIP)


def prepare(folder):
    """(truepeak, the profile copy with torch-jit calibrated into it), or exit 77 saying why."""
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as error:
        skip(f"{sys.executable} has no PyTorch and torchvision ({error})")
    truepeak = os.environ.get("TRUEPEAK", "")
    if not (os.path.isfile(truepeak) and os.access(truepeak, os.X_OK)):
        skip("TRUEPEAK does not name a truepeak executable")
    source = os.environ.get("TRUEPEAK_PROFILE", "")
    if not os.path.isfile(source):
        skip("TRUEPEAK_PROFILE does not name a profile")
    profile = os.path.join(folder, "profile.json")
    shutil.copy(source, profile)
    calibrate = [truepeak, "calibrate", "--runtime", "torch-jit", "--quick", "--add-to", profile]
    done = subprocess.run(calibrate, capture_output=True, text=True)
    last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
    if done.returncode == 2:
        skip(f"truepeak {' '.join(calibrate[1:])}: {last}")
    if done.returncode != 0:
        raise SystemExit(f"truepeak {' '.join(calibrate[1:])} failed: {last}")
    return truepeak, profile


FOLDER = tempfile.mkdtemp(prefix="validate-smoke-")


class SmokeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = FOLDER
        cls.model = os.path.join(cls.dir, "mine.py")
        with open(cls.model, "w") as f:
            f.write(USER_MODEL)
        cls.out = os.path.join(cls.dir, "out")
        cls.done = subprocess.run(
            [sys.executable, "-m", "validate", "--profile", cls.profile, "--runtimes", "torch-jit", "--models",
             cls.model + ":tiny", "--batches", "1", "--rounds", "2", "--runs", "2", "--visit-ms", "0",
             "--truepeak", cls.truepeak, "--export-python", sys.executable, "--out", cls.out],
            cwd=ROOT, capture_output=True, text=True)

    def test_one_row_measured_and_predicted_through_the_user_command(self):
        self.assertEqual(self.done.returncode, 0, self.done.stderr[-3000:])
        with open(os.path.join(self.out, "validation-models-torch-jit.json")) as f:
            doc = json.load(f)
        [row] = doc["rows"]
        self.assertEqual((row["model"], row["batch"], row["dtype"], row["runtime"]), ("tiny", 1, "f32", "torch-jit"))
        self.assertIsNone(row["measure_error"])
        self.assertIsNone(row["estimate_error"])
        self.assertGreater(row["measured_ms"], 0)
        self.assertGreaterEqual(row["median_ms"], row["measured_ms"])
        self.assertGreater(row["predicted_ms"], 0)
        self.assertEqual(row["runs"], 4)
        words = row["command"].split()
        self.assertEqual(words[1:6], ["estimate", "--profile", self.profile, "--runtime", "torch-jit"])
        self.assertEqual(words[-4:], ["--batch", "1", "--format", "json"])
        with open(self.profile) as f:
            calibrated = json.load(f)
        record = [d for d in calibrated["devices"] if d["kind"] == "cpu"][0]["runtimes"]["torch-jit"]
        self.assertEqual(doc["meta"]["runtime"]["python"], record["python"])
        self.assertEqual(doc["meta"]["runtime"]["threads"], record["threads"])
        self.assertTrue(os.path.exists(os.path.join(self.out, "validation-models-torch-jit.md")))


if __name__ == "__main__":
    try:
        SmokeTest.truepeak, SmokeTest.profile = prepare(FOLDER)
        unittest.main()
    finally:
        shutil.rmtree(FOLDER, ignore_errors=True)
