"""validate's export bookkeeping without torch: an earlier export is reused only where it was made
for the same model, lengths and batches, and every file it names is there."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))
from validate import export  # noqa: E402


class ReuseTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="validate-export-test-")
        self.entry = {"model": "resnet18", "row": "resnet18", "onnx": self.touch("resnet18.onnx"), "kind": "cnn",
                      "asked_seq": 128, "asked_context": 128, "form": export.EXPORT_FORM,
                      "inputs": {"1": self.touch("resnet18.b1.npz"), "8": self.touch("resnet18.b8.npz")}}
        export.replace_atomic(lambda tmp: export.write_text(tmp, json.dumps(self.entry)),
                              export.entry_path(self.dir, "resnet18"))

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def touch(self, name):
        path = os.path.join(self.dir, name)
        open(path, "w").close()
        return path

    def test_the_same_export_is_reused(self):
        self.assertEqual(export.reusable(self.dir, "resnet18", [1, 8], 128, 128), self.entry)
        self.assertEqual(export.reusable(self.dir, "resnet18", [8], 128, 128), self.entry)

    def test_another_batch_length_or_a_missing_file_is_exported_again(self):
        self.assertIsNone(export.reusable(self.dir, "resnet18", [1, 2], 128, 128))
        self.assertIsNone(export.reusable(self.dir, "resnet18", [1], 64, 128))
        self.assertIsNone(export.reusable(self.dir, "resnet50", [1], 128, 128))
        os.remove(self.entry["onnx"])
        self.assertIsNone(export.reusable(self.dir, "resnet18", [1], 128, 128))

    def test_an_export_of_another_form_is_made_again(self):
        for form in (None, "batch norms folded"):
            entry = dict(self.entry)
            if form is None:
                del entry["form"]
            else:
                entry["form"] = form
            export.replace_atomic(lambda tmp, e=entry: export.write_text(tmp, json.dumps(e)),
                                  export.entry_path(self.dir, "resnet18"))
            self.assertIsNone(export.reusable(self.dir, "resnet18", [1], 128, 128))

    def test_writes_leave_no_temporary_file(self):
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if n.endswith(".tmp")), [])


if __name__ == "__main__":
    unittest.main()
