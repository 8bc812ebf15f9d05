"""validate's model sets, runtime keys, dtypes and machine folders (no torch)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from validate import profile, sets  # noqa: E402


class SetsTest(unittest.TestCase):
    def test_the_sets(self):
        self.assertEqual(sets.SETS["public"],
                         ["resnet18", "resnet50", "mobilenet_v2", "bert_base", "gpt2_prefill", "gpt2_decode"])
        self.assertEqual(len(sets.SETS["torchvision"]), 10)
        self.assertFalse(set(sets.SETS["public"]) & set(sets.SETS["torchvision"]))

    def test_runtime_keys_and_kinds(self):
        self.assertEqual(sets.runtime_name("torch-eager:torch2"), "torch-eager")
        self.assertEqual(sets.kinds_of("torch-jit"), ("cnn",))
        self.assertEqual(sets.kinds_of("torch-eager:x"), ("transformer",))
        self.assertEqual(sets.kinds_of("torch-eager", eager_cnns=True), ("transformer", "cnn"))
        self.assertEqual(sets.kinds_of("onnxruntime"), ("cnn", "transformer"))

    def test_user_models(self):
        self.assertEqual(sets.user_model_spec("dir/m.py:make"), ("dir/m.py", "make"))
        self.assertIsNone(sets.user_model_spec("resnet18"))
        self.assertIsNone(sets.user_model_spec("m.py:"))
        self.assertEqual(sets.row_name("dir/m.py:make"), "make")
        self.assertEqual(sets.file_slug("a b/m.py:make"), "make")

    def test_model_list_checks(self):
        self.assertIsNone(sets.check_models(["resnet18", __file__ + ":f"]))
        self.assertIn("no model", sets.check_models([]))
        self.assertIn("rows named 'resnet18'", sets.check_models(["resnet18", __file__ + ":resnet18"]))
        self.assertIn("no such file", sets.check_models(["/nonexistent/m.py:f"]))


class DtypeTest(unittest.TestCase):
    def test_jit_and_onnxruntime_run_f32(self):
        self.assertEqual(sets.case_dtype("torch-jit", {"dtypes": ["bf16"]}), "f32")
        self.assertEqual(sets.case_dtype("onnxruntime", {"dtype": "bf16"}), "f32")

    def test_the_others_run_their_own(self):
        self.assertEqual(sets.case_dtype("torch-eager", {"dtype": "bf16", "dtypes": ["f32"]}), "bf16")
        self.assertEqual(sets.case_dtype("torch-eager:t2", {"dtypes": ["bf16", "f32"]}), "bf16")
        self.assertEqual(sets.case_dtype("torch-compile", {}), "f32")


class ProfileTest(unittest.TestCase):
    DOC = {"machine": {"label": "My Box #2", "cpu_model": "AMD EPYC 9B14"},
           "devices": [{"kind": "gpu", "runtimes": {"torch-eager": {}}},
                       {"kind": "cpu", "runtimes": {"torch-jit": {"python": "/p", "threads": 4}}}]}

    def test_records_are_the_cpus(self):
        self.assertEqual(profile.runtime_record(self.DOC, "torch-jit"), {"python": "/p", "threads": 4})
        self.assertEqual(profile.missing_runtimes(self.DOC, ["torch-jit", "torch-eager"]), ["torch-eager"])
        self.assertEqual(profile.record_fields("torch-jit", {"python": "/p", "threads": 4}), ("/p", 4))

    def test_machine_folder(self):
        self.assertEqual(profile.machine_slug(self.DOC), "my-box-2")
        self.assertEqual(profile.machine_slug({"machine": {"cpu_model": "AMD EPYC 9B14"}}), "amd-epyc-9b14")
        self.assertEqual(profile.machine_slug({}), "machine")
        self.assertLessEqual(len(profile.slug("x" * 100)), 40)


if __name__ == "__main__":
    unittest.main()
