"""validate's command line end to end with a fake truepeak and a fake interpreter (no torch, no
build): every estimate is exactly the user's command, the runs happen in the runtime's own
interpreter after any calibration, the tables land where they should; bad usage is one line."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import validate_fakes as fakes  # noqa: E402


class Fixture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="validate-cli-test-")
        self.truepeak, self.python, self.log = fakes.make(self.dir)
        self.profile = fakes.profile(os.path.join(self.dir, "box.json"), self.python)
        self.out = os.path.join(self.dir, "out")
        self.env = dict(os.environ, FAKE_LOG=self.log, FAKE_PYTHON=self.python)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def validate(self, *args, env=None, base=True):
        argv = [sys.executable, "-m", "validate"]
        if base:
            argv += ["--truepeak", self.truepeak, "--export-python", self.python, "--out", self.out]
        done = subprocess.run(argv + list(args), cwd=ROOT, capture_output=True, text=True,
                              env=dict(self.env, **(env or {})))
        return done.returncode, done.stdout, done.stderr

    def table(self, name):
        with open(os.path.join(self.out, name + ".json")) as f:
            return json.load(f)

    def entries(self, who):
        return [e for e in fakes.read_log(self.log) if e["who"] == who]

    def change_record(self, runtime, **fields):
        """Sets `fields` in the profile's record of `runtime`; returns the record before."""
        with open(self.profile) as f:
            doc = json.load(f)
        record = doc["devices"][0]["runtimes"][runtime]
        before = dict(record)
        record.update(fields)
        with open(self.profile, "w") as f:
            json.dump(doc, f)
        return before


class UserPathTest(Fixture):
    def test_every_estimate_is_exactly_the_user_command(self):
        rc, out, err = self.validate("--profile", self.profile)
        self.assertEqual(rc, 0, err)
        estimates = [e["argv"] for e in self.entries("truepeak") if e["argv"][0] == "estimate"]
        self.assertEqual(len(estimates), 3 * 2 + 3 * 2 + 6 * 2)  # jit CNNs, eager transformers, ort all
        for argv in estimates:
            model = os.path.basename(argv[argv.index("--model") + 1])
            runtime = argv[argv.index("--runtime") + 1]
            batch = argv[argv.index("--batch") + 1]
            want = ["estimate", "--profile", self.profile, "--runtime", runtime, "--model", argv[6], "--batch", batch]
            if model in ("bert_base.onnx", "gpt2_prefill.onnx"):
                want += ["--seq", "128"]
            if model == "gpt2_decode.onnx":
                want += ["--context", "128"]
            if runtime == "torch-eager":
                want += ["--dtype", "bf16"]
            self.assertEqual(argv, want + ["--format", "json"])

    def test_each_runtime_runs_its_models(self):
        rc, _, err = self.validate("--profile", self.profile, "--batches", "1")
        self.assertEqual(rc, 0, err)
        models = {e["plan"]["runtime"]: [c["model"] for c in e["plan"]["cases"]] for e in self.entries("plan")}
        self.assertEqual(models["torch-jit"], ["resnet18", "resnet50", "mobilenet_v2"])
        self.assertEqual(models["torch-eager"], ["bert_base", "gpt2_prefill", "gpt2_decode"])
        self.assertEqual(len(models["onnxruntime"]), 6)
        for e in self.entries("plan"):
            self.assertEqual(e["plan"]["threads"], 2)
        eager = [e["plan"] for e in self.entries("plan") if e["plan"]["runtime"] == "torch-eager"][0]
        self.assertEqual(eager["dtype"], "bf16")

    def test_torch_jit_runs_linears_as_its_record_says(self):
        for setting in (True, False):
            self.change_record("torch-jit", linears_as_convolutions=setting)
            rc, _, err = self.validate("--profile", self.profile, "--runtimes", "torch-jit", "--batches", "1")
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.entries("plan")[-1]["plan"]["linears_as_convolutions"], setting)

    def test_runs_use_the_interpreter_the_profile_records(self):
        other = fakes.executable(os.path.join(self.dir, "other-python"), fakes.PYTHON)
        self.change_record("onnxruntime", python=other)
        rc, _, err = self.validate("--profile", self.profile, "--batches", "1", "--runtimes", "torch-jit,onnxruntime")
        self.assertEqual(rc, 0, err)
        timing = [(e["path"], e["argv"][1]) for e in self.entries("python") if e["argv"][1] == "validate.timing"]
        self.assertEqual(timing, [(self.python, "validate.timing"), (other, "validate.timing")])

    def test_tables_rows_and_summary(self):
        rc, out, err = self.validate("--profile", self.profile, "--runtimes", "torch-jit")
        self.assertEqual(rc, 0, err)
        doc = self.table("validation-public-torch-jit")
        self.assertEqual([(r["model"], r["batch"]) for r in doc["rows"]],
                         [(m, b) for m in ("resnet18", "resnet50", "mobilenet_v2") for b in (1, 8)])
        r = doc["rows"][0]
        self.assertAlmostEqual(r["measured_ms"], 10.0)
        self.assertAlmostEqual(r["median_ms"], 12.0)
        self.assertAlmostEqual(r["spread"], 2.0)
        self.assertAlmostEqual(r["predicted_ms"], 11.0)
        self.assertAlmostEqual(r["error_pct"], 10.0)
        self.assertAlmostEqual(r["naive_error_pct"], -50.0)
        self.assertEqual(r["dtype"], "f32")
        self.assertEqual(r["runtime"], "torch-jit")
        self.assertTrue(r["command"].startswith(self.truepeak + " estimate --profile "))
        self.assertEqual(doc["summary"]["rows"], 6)
        self.assertEqual(doc["summary"]["rows_within_10_pct"], 6)
        meta = doc["meta"]
        self.assertEqual(meta["profile"]["created_utc"], "2030-01-01T00:00:00Z")
        self.assertEqual(meta["runtime"]["framework"], "torch 9.9")
        self.assertEqual(meta["runtime"]["threads"], 2)
        self.assertTrue(meta["command"].startswith("python3 -m validate --truepeak "))
        with open(os.path.join(self.out, "validation-public-torch-jit.md")) as f:
            md = f.read()
        for text in ("UTC", self.profile, "2030-01-01T00:00:00Z", "torch 9.9, 2 threads",
                     "| resnet18 | 1 | f32 | torch-jit | 10.00 | 12.00 | 2.00x | 11.00 | +10.0% | 5.00 | -50.0% |",
                     "Median |error| 10.0%", "6/6 rows within ±10%", "6/6 rows closer than the naive roofline"):
            self.assertIn(text, md)
        self.assertIn("validation-public-torch-jit.md: Median |error| 10.0%", out)
        self.assertEqual([n for n in os.listdir(self.out) if n.endswith(".tmp")], [])

    def test_sets_and_models_name_the_tables(self):
        rc, _, err = self.validate("--profile", self.profile, "--runtimes", "onnxruntime", "--sets",
                                   "public,torchvision", "--batches", "1")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(self.table("validation-torchvision-onnxruntime")["rows"]), 10)
        self.assertEqual(len(self.table("validation-public-onnxruntime")["rows"]), 6)
        user = os.path.join(self.dir, "mine.py")
        open(user, "w").close()
        rc, _, err = self.validate("--profile", self.profile, "--runtimes", "onnxruntime", "--models",
                                   f"{user}:tiny,resnet18", "--batches", "1")
        self.assertEqual(rc, 0, err)
        self.assertEqual([r["model"] for r in self.table("validation-models-onnxruntime")["rows"]],
                         ["tiny", "resnet18"])

    def test_a_model_the_exporter_fails_on_is_listed(self):
        rc, _, err = self.validate("--profile", self.profile, "--runtimes", "onnxruntime", "--models",
                                   "resnet18,broken_net", "--batches", "1")
        self.assertEqual(rc, 0, err)
        doc = self.table("validation-models-onnxruntime")
        self.assertEqual([r["model"] for r in doc["rows"]], ["resnet18"])
        self.assertEqual(doc["meta"]["export_failures"], {"broken_net": "RuntimeError: not exportable"})
        with open(os.path.join(self.out, "validation-models-onnxruntime.md")) as f:
            self.assertIn("- broken_net: the ONNX export failed: RuntimeError: not exportable", f.read())

    def test_a_model_file_is_passed_on_by_its_full_path(self):
        with open(os.path.join(self.dir, "mine.py"), "w"):
            pass
        done = subprocess.run([sys.executable, "-m", "validate", "--truepeak", self.truepeak, "--export-python",
                               self.python, "--out", "out", "--profile", "box.json", "--runtimes", "onnxruntime",
                               "--models", "mine.py:net", "--batches", "1"],
                              cwd=self.dir, capture_output=True, text=True,
                              env=dict(self.env, PYTHONPATH=ROOT))
        self.assertEqual(done.returncode, 0, done.stderr)
        export = [e["argv"] for e in self.entries("python") if e["argv"][1] == "validate.export"][0]
        self.assertEqual(export[-1], os.path.join(self.dir, "mine.py") + ":net")
        self.assertTrue(os.path.exists(os.path.join(self.out, "validation-models-onnxruntime.md")))

    def test_a_runtime_key_with_a_label(self):
        fakes.profile(self.profile, self.python, keys=("torch-eager:torch2",), eager_dtypes=("f32",))
        rc, _, err = self.validate("--profile", self.profile, "--runtimes", "torch-eager:torch2", "--batches", "1")
        self.assertEqual(rc, 0, err)
        rows = self.table("validation-public-torch-eager-torch2")["rows"]
        self.assertEqual([r["dtype"] for r in rows], ["f32"] * 3)
        self.assertIn("--runtime torch-eager:torch2 ", rows[0]["command"])
        self.assertNotIn("--dtype", rows[0]["command"])

    def test_failed_estimates_and_runs_are_rows_without_errors(self):
        rc, _, err = self.validate("--profile", self.profile, "--runtimes", "torch-jit", "--batches", "1",
                                   env={"FAKE_FAIL": "validate.timing", "FAKE_FAIL_STATUS": "1"})
        self.assertEqual(rc, 0, err)
        doc = self.table("validation-public-torch-jit")
        self.assertTrue(all(r["measure_error"] and r["error_pct"] is None for r in doc["rows"]))
        self.assertEqual(doc["summary"]["rows_compared"], 0)


class TimingsTest(Fixture):
    def timing_runs(self):
        return [e for e in self.entries("python") if e["argv"][1] == "validate.timing"]

    def test_kept_then_reused_with_the_same_cases_and_retimed_otherwise(self):
        timings = os.path.join(self.dir, "timings")
        os.mkdir(timings)
        args = ("--profile", self.profile, "--runtimes", "torch-jit", "--batches", "1", "--timings-dir", timings)
        rc, _, err = self.validate(*args)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(self.timing_runs()), 1)
        with open(os.path.join(timings, "timing-torch-jit.json")) as f:
            kept = json.load(f)
        self.assertEqual(kept["plan"]["cases"], ["resnet18 b1", "resnet50 b1", "mobilenet_v2 b1"])
        first = self.table("validation-public-torch-jit")["rows"]

        rc, _, err = self.validate(*args, "--reuse-timings")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(self.timing_runs()), 1, "the kept timings were timed again")
        self.assertIn("reusing the timings", err)
        self.assertEqual([r["measured_ms"] for r in self.table("validation-public-torch-jit")["rows"]],
                         [r["measured_ms"] for r in first])

        # Another setting of the record: timed anew.
        before = self.change_record("torch-jit", linears_as_convolutions=True)
        self.assertFalse(before.get("linears_as_convolutions"))
        rc, _, err = self.validate(*args, "--reuse-timings")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(self.timing_runs()), 2, "timings of another setting were reused")

        # Another batch is another case: timed anew.
        rc, _, err = self.validate(*args[:-4], "--batches", "1,8", "--timings-dir", timings, "--reuse-timings")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(self.timing_runs()), 3)

    def test_reuse_needs_the_folder(self):
        rc, _, err = self.validate("--profile", self.profile, "--reuse-timings")
        self.assertEqual(rc, 2)
        self.assertIn("--reuse-timings: name the folder", err)
        rc, _, err = self.validate("--profile", self.profile, "--timings-dir", os.path.join(self.dir, "none"))
        self.assertEqual(rc, 2)
        self.assertIn("not a folder", err)


class CalibrateTest(Fixture):
    def test_calibration_ends_before_any_model_runs(self):
        rc, _, err = self.validate("--profile", self.profile, "--runtimes", "torch-jit,onnxruntime",
                                   "--batches", "1", "--calibrate-runtimes")
        self.assertEqual(rc, 0, err)
        log = fakes.read_log(self.log)
        self.assertEqual(log[0], {"who": "truepeak", "argv": ["calibrate", "--runtime", "torch-jit,onnxruntime",
                                                              "--add-to", self.profile]})
        self.assertTrue(all(e["who"] != "truepeak" or e["argv"][0] == "estimate" for e in log[1:]))

    def test_a_new_profile(self):
        fresh = os.path.join(self.dir, "new-box.json")
        rc, _, err = self.validate("--profile", fresh, "--runtimes", "torch-jit", "--batches", "1", "--calibrate",
                                   "--quick")
        self.assertEqual(rc, 0, err)
        first = fakes.read_log(self.log)[0]["argv"]
        self.assertEqual(first, ["calibrate", "--runtime", "torch-jit", "--label", "new-box", "--out", fresh,
                                 "--quick"])
        self.assertTrue(os.path.exists(os.path.join(self.out, "validation-public-torch-jit.md")))


    def test_a_failed_calibration_ends_it_before_any_model(self):
        for status in (1, 2):
            rc, _, err = self.validate("--profile", self.profile, "--calibrate-runtimes",
                                       env={"FAKE_CALIBRATE_STATUS": str(status)})
            self.assertEqual(rc, status, err)
            self.assertEqual(self.entries("python"), [])
            self.assertEqual(err.count("validate: --calibrate"), 1 if status == 1 else 0, err)


class UsageTest(Fixture):
    def refused(self, *args, env=None, says=None):
        rc, out, err = self.validate(*args, env=env)
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        if says:
            self.assertIn(says, err)
        self.assertFalse(os.path.exists(self.log) and self.entries("plan"), "nothing runs after a refusal")
        return err

    def test_bad_flags(self):
        self.refused(says="--profile")  # required
        self.refused("--profile", self.profile, "--batches", "1,x", says="--batches 1,x")
        self.refused("--profile", self.profile, "--rounds", "0", says="--rounds 0")
        self.refused("--profile", self.profile, "--runtimes", "torch-cudagraph", says="--runtimes torch-cudagraph")
        self.refused("--profile", self.profile, "--sets", "zoo", says="--sets zoo")
        self.refused("--profile", self.profile, "--reuse-onnx", says="--onnx-dir")
        self.refused("--profile", self.profile, "--quick", says="--calibrate")
        self.refused("--profile", self.profile, "--models", "nowhere.py:f", says="no such file nowhere.py")
        self.refused("--profile", self.profile, "--models", "a.py:f,b.py:f", says="rows named 'f'")
        self.refused("--profile", self.profile, "--truepeak", "/nonexistent/truepeak", says="not an executable")
        self.refused("--profile", self.profile, "--calibrate", "--calibrate-runtimes", says="not allowed with")

    def test_a_runtime_the_profile_lacks_names_the_calibration(self):
        fakes.profile(self.profile, self.python, keys=("torch-jit",))
        err = self.refused("--profile", self.profile, "--runtimes", "torch-jit,onnxruntime")
        self.assertIn(f"truepeak calibrate --runtime onnxruntime --add-to {self.profile}", err)

    def test_a_record_without_its_interpreter(self):
        self.change_record("torch-jit", python=None)
        self.refused("--profile", self.profile, "--runtimes", "torch-jit", says="names no interpreter")

    def test_unreadable_profile(self):
        self.refused("--profile", os.path.join(self.dir, "none.json"), says="cannot read it")

    def test_the_export_refusing_is_its_one_line(self):
        err = self.refused("--profile", self.profile, env={"FAKE_FAIL": "validate.export"})
        self.assertEqual(err.strip(), "validate: fake refusal")


class OutDirTest(unittest.TestCase):
    def test_beside_a_results_profile_else_by_machine(self):
        sys.path.insert(0, ROOT)
        from validate import cli
        doc = {"machine": {"label": "Box"}}
        args = type("Args", (), {"out": None, "profile": os.path.join(ROOT, "results", "zen9", "dev-cpu.json")})
        self.assertEqual(cli.out_dir(args, doc), os.path.join(ROOT, "results", "zen9"))
        args.profile = "/elsewhere/p.json"
        self.assertEqual(cli.out_dir(args, doc), os.path.join(ROOT, "results", "box"))
        args.out = "/tables"
        self.assertEqual(cli.out_dir(args, doc), "/tables")


if __name__ == "__main__":
    unittest.main()
