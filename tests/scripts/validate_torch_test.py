"""validate.py against a real PyTorch: a frozen CNN's oneDNN primitives, read from a verbose child
process, key to the same layers as the estimate of its ONNX export. Skipped (exit 77) where this
interpreter has no PyTorch and torchvision, or no truepeak executable is given (TRUEPEAK)."""
import os
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import validate  # noqa: E402

SKIP = 77
MODEL, CONVOLUTIONS = "squeezenet1_1", 26


def truepeak_args(**more):
    """validate.py's arguments for `truepeak estimate` (and, with `more`, its probes)."""
    return types.SimpleNamespace(truepeak=os.environ["TRUEPEAK"], profile=os.environ["TRUEPEAK_PROFILE"],
                                 device="cpu", typical_times=False, **more)


def have_torch():
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        return False
    return True


class FrozenCnnLayersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.args = truepeak_args(threads=2, seq=128, context=128, system_malloc=False)
        cls.case = validate.build_case(MODEL, 1, 128, 128, runnable=False)
        cls.primitives = validate.measured_layers(cls.case, cls.args)

    def test_every_convolution_is_read_with_its_time(self):
        self.assertIsNotNone(self.primitives)
        convolutions = [p for p in self.primitives if p[0] == "convolution"]
        self.assertEqual(len(convolutions), CONVOLUTIONS)
        for kind, problem, ms in convolutions:
            self.assertIsNotNone(validate.primitive_layer(kind, problem), problem)
            self.assertGreater(ms, 0)

    def test_the_estimate_of_the_export_has_the_same_layers(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, MODEL + ".onnx")
            validate.export_onnx(self.case, path)
            case = types.SimpleNamespace(model=MODEL, batch=1, dtype="f32", seq=None, conv_layout="blocked",
                                         runtime="frozen")
            estimate = validate.estimate(self.args, case, path)
        self.assertNotIn("error", estimate)
        table = validate.layer_table(self.primitives, estimate["layer_ms"])
        for layer in table["layers"]:
            self.assertEqual(layer["measured"], layer["predicted"], layer["layer"])
        self.assertEqual(sum(l["measured"] for l in table["layers"]), CONVOLUTIONS)


class OwnKernelRatesTest(unittest.TestCase):
    def test_every_kernel_has_a_rate_that_truepeak_takes(self):
        for kernels in (validate.frozen_kernels(), validate.eager_kernels()):
            rates = validate.OwnKernelRates(kernels, repeats=1).rates()
            self.assertEqual(set(rates), set(kernels))
            for kind, rate in rates.items():
                self.assertGreater(rate, 0, kind)
                self.assertLess(rate, 1e13, kind)
            # The kinds are the estimate's row kinds: truepeak accepts every one of them.
            case = types.SimpleNamespace(model="resnet18", batch=1, dtype="f32", seq=None, conv_layout=None,
                                         runtime="eager")
            estimate = validate.estimate(truepeak_args(), case, "resnet18", own_rates=rates)
            self.assertNotIn("error", estimate, estimate.get("error"))


USER_MODELS = """
import torch


class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 32)
        self.out = torch.nn.Linear(32, 5)

    def forward(self, ids):
        return self.out(self.embed(ids))


def cnn(batch):
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    return net, torch.randn(batch, 3, 16, 16)


def tagger(batch):
    return Tagger(), (torch.randint(0, 100, (batch, 12)),)


def wrong_batch(batch):
    return Tagger(), torch.randint(0, 100, (batch + 1, 12))
"""


class UserModelTest(unittest.TestCase):
    def test_a_model_of_ones_own_runs_and_is_estimated(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "nets.py")
            with open(path, "w") as f:
                f.write(USER_MODELS)
            cnn = validate.build_case(f"{path}:cnn", 2, 128, 128)
            self.assertEqual((cnn.model, cnn.runtime, cnn.dtype, cnn.source), ("cnn", "frozen", "f32", f"{path}:cnn"))
            cnn.runner()
            tagger = validate.build_case(f"{path}:tagger", 3, 128, 128)
            self.assertEqual((tagger.model, tagger.runtime, tagger.seq), ("tagger", "eager", None))
            tagger.runner()
            for case in (cnn, tagger):
                onnx_path = os.path.join(folder, case.model + ".onnx")
                validate.export_onnx(case, onnx_path)
                estimate = validate.estimate(truepeak_args(), case, onnx_path)
                self.assertNotIn("error", estimate, estimate.get("error"))
                self.assertGreater(estimate["latency_s"], 0)
            with self.assertRaises(SystemExit):
                validate.build_case(f"{path}:wrong_batch", 2, 128, 128)


if __name__ == "__main__":
    if not have_torch():
        print("skipped: no PyTorch and torchvision for", sys.executable)
        sys.exit(SKIP)
    if not os.environ.get("TRUEPEAK") or not os.path.exists(os.environ["TRUEPEAK"]):
        print("skipped: no truepeak executable (TRUEPEAK)")
        sys.exit(SKIP)
    os.environ.setdefault("TRUEPEAK_PROFILE", os.path.join(os.path.dirname(__file__), "..", "..",
                                                           "results", "dev-cpu.json"))
    unittest.main()
