"""The record a probe prints: its assembly and the checks calibrate applies again (standard
library only)."""
import io
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import record  # noqa: E402


def gemm_point(**fields):
    point = {"dtype": "f32", "m": 64, "n": 512, "k": 512, "batch": 1, "time_s": 1e-4, "median_s": 1.1e-4,
             "flops_per_s": 3.4e11, "cv": 0.02, "samples": 10, "impl": "mlas"}
    point.update(fields)
    return point


def conv_point(**fields):
    point = {"dtype": "f32", "n": 1, "c": 256, "h": 12, "w": 12, "k": 256, "r": 1, "s": 1, "stride": 1, "pad": 0,
             "dilation": 1, "groups": 1, "layout": "nchw", "time_s": 2e-4, "median_s": 2.2e-4,
             "flops_per_s": 1e11, "cv": 0.0, "samples": 5, "impl": "mlas"}
    point.update(fields)
    return point


def a_record(**changes):
    doc = record.build_record(
        runtime="onnxruntime", device="cpu", framework="onnxruntime 1.32.0", versions={"onnxruntime": "1.32.0"},
        threads=2, dtypes=["f32"], settings={"session_options": "default"}, op_s=2.5e-7,
        probes=[{"name": "op chain", "shape": "1x16", "time_s": 5e-6, "median_s": 6e-6, "cv": 0.0, "samples": 9,
                 "nodes": 0}],
        calibration_s=3.2, kind_op_s=[{"kind": "linear", "dtype": "bf16", "op_s": 0.0}],
        own_kernels=[{"kind": "pool:max", "dtype": "f32", "elements_per_s": 1.5e10}],
        layout={"blocked_ops": ["pool:max"], "to_plain_copies": 1, "to_blocked_copies": 1,
                "expand_broadcast": False, "group_reorder_widths": [2, 4]},
        conv_layout="blocked", fuse_activations=True, memory_levels=[{"name": "DRAM", "bytes": None, "Bps": 4e10}],
        gemm=[gemm_point()], conv=[conv_point()])
    doc.update(changes)
    return doc


class BuildRecordTest(unittest.TestCase):
    def test_fields_come_in_the_documented_order(self):
        self.assertEqual(list(a_record()), list(record.FIELDS))

    def test_the_allocator_interpreter_and_python_version_are_filled_in(self):
        doc = a_record()
        self.assertEqual(doc["settings"]["allocator"], "glibc default")
        self.assertEqual(doc["settings"]["session_options"], "default")
        self.assertEqual(doc["python"], sys.executable)
        self.assertIn("python", doc["versions"])
        self.assertEqual(doc["memory"], {"levels": [{"name": "DRAM", "bytes": None, "Bps": 4e10}]})

    def test_a_good_record_passes(self):
        self.assertEqual(record.problems(a_record()), [])

    def test_probe_points_carry_their_timing(self):
        class Timing:
            def fields(self):
                return {"time_s": 1.0, "median_s": 1.5, "cv": 0.1, "samples": 4}
        point = record.probe_point("own relu f32", "1x64x32x32", Timing(), elements=65536)
        self.assertEqual(point, {"name": "own relu f32", "shape": "1x64x32x32", "time_s": 1.0, "median_s": 1.5,
                                 "cv": 0.1, "samples": 4, "elements": 65536})


class ProblemsTest(unittest.TestCase):
    def assertProblem(self, doc, text):
        found = record.problems(doc)
        self.assertTrue(any(text in p for p in found), f"no problem with '{text}' in {found}")

    def test_numbers_must_be_finite(self):
        self.assertProblem(a_record(op_s=float("nan")), "op_s")
        self.assertProblem(a_record(gemm=[gemm_point(flops_per_s=float("inf"))]), "gemm[0].flops_per_s")

    def test_numbers_must_be_positive(self):
        self.assertProblem(a_record(gemm=[gemm_point(time_s=0.0)]), "gemm[0].time_s")
        self.assertProblem(a_record(own_kernels=[{"kind": "softmax", "dtype": "f32", "elements_per_s": -1.0}]),
                           "own_kernels[0].elements_per_s")
        self.assertProblem(a_record(op_s=-1e-6), "op_s")
        self.assertProblem(a_record(calibration_s=0.0), "calibration_s")

    def test_op_costs_cvs_padding_and_probe_counts_may_be_zero(self):
        doc = a_record(op_s=0.0)
        self.assertEqual(doc["kind_op_s"][0]["op_s"], 0.0)
        self.assertEqual(doc["conv"][0]["pad"], 0)
        self.assertEqual(doc["conv"][0]["cv"], 0.0)
        self.assertEqual(record.problems(doc), [])

    def test_cold_costs_are_kept_where_measured_and_must_be_finite(self):
        self.assertNotIn("cold_op_s", a_record())
        doc = record.build_record(runtime="torch-eager", device="cpu", framework="torch 2.15.0", versions={},
                                  threads=2, dtypes=["f32"], settings={}, op_s=5e-6, probes=[], calibration_s=1.0,
                                  kind_op_s=[{"kind": "conv2d", "dtype": "f32", "op_s": 1e-5, "cold_op_s": 4e-5}],
                                  cold_op_s=2.4e-5)
        self.assertEqual(doc["cold_op_s"], 2.4e-5)
        self.assertEqual(doc["kind_op_s"][0]["cold_op_s"], 4e-5)
        self.assertEqual(record.problems(doc), [])
        doc["cold_op_s"] = float("inf")
        doc["kind_op_s"][0]["cold_op_s"] = -1e-6
        self.assertEqual(sorted(record.problems(doc)), ["cold_op_s: inf is not finite",
                                                        "kind_op_s[0].cold_op_s: -1e-06 is not positive"])

    def test_a_point_may_have_had_nothing_taken_off(self):
        # A fixed cost that noise left at 0: the points' times are as measured.
        doc = a_record(op_s=0.0, gemm=[gemm_point(fixed_s_taken_off=0.0)], conv=[conv_point(fixed_s_taken_off=0.0)])
        self.assertEqual(record.problems(doc), [])
        self.assertProblem(a_record(gemm=[gemm_point(fixed_s_taken_off=-1e-6)]), "gemm[0].fixed_s_taken_off")

    def test_probe_times_may_not_be_zero(self):
        doc = a_record()
        doc["probes"][0]["time_s"] = 0.0
        self.assertProblem(doc, "probes[0].time_s")

    def test_missing_fields_are_named(self):
        doc = a_record()
        del doc["in_place"]
        self.assertEqual(record.problems(doc), ["missing field 'in_place'"])

    def test_types(self):
        self.assertProblem(a_record(dtypes=["float32"]), "dtypes")
        self.assertProblem(a_record(dtypes=[]), "dtypes")
        self.assertProblem(a_record(threads=0), "threads")
        self.assertProblem(a_record(fuse_activations="yes"), "fuse_activations")
        self.assertProblem(a_record(conv_batchnorm_apart=1), "conv_batchnorm_apart")
        self.assertProblem(dict(a_record(), fused_activations="relu"), "fused_activations")
        self.assertProblem(dict(a_record(), fused_activations=["Relu!"]), "fused_activations")
        self.assertEqual(record.problems(a_record(fuse_activations=True, fused_activations=["silu", "relu"])), [])
        built = record.build_record(runtime="onnxruntime", device="cpu", framework="onnxruntime 1.32.0", versions={},
                                    threads=2, dtypes=["f32"], settings={}, op_s=2.5e-7, probes=[], calibration_s=1.0,
                                    fuse_activations=True, fused_activations=["silu", "relu"])
        self.assertEqual(built["fused_activations"], ["relu", "silu"])
        self.assertEqual(record.problems(built), [])
        self.assertProblem(a_record(kind_op_s=[{"kind": "linear", "op_s": 1e-6}]), "kind_op_s[0]")
        self.assertProblem(a_record(kind_op_s=[{"kind": "linear", "dtype": "half", "op_s": 1e-6}]),
                           "kind_op_s[0].dtype")
        self.assertProblem(a_record(layout={"blocked_ops": []}), "layout: missing 'to_plain_copies'")
        self.assertProblem(a_record(gemm=[{"dtype": "f32", "m": 1}]), "gemm[0]: missing")
        self.assertProblem(a_record(conv=[conv_point(layout=None)]), "conv[0]")
        self.assertProblem(a_record(memory={"levels": [{"name": "DRAM", "Bps": 1e9}]}), "memory.levels[0]")

    def test_a_layouts_channel_rule_is_optional_and_checked(self):
        layout = {"blocked_ops": [], "to_plain_copies": 1, "to_blocked_copies": 1, "expand_broadcast": False,
                  "group_reorder_widths": []}
        self.assertEqual(record.problems(a_record(layout=dict(layout))), [])
        ruled = dict(layout, conv_channel_multiple=4, conv_small_input_channels=8)
        self.assertEqual(record.problems(a_record(layout=ruled)), [])
        self.assertProblem(a_record(layout=dict(ruled, conv_channel_multiple=0)), "layout.conv_channel_multiple")
        self.assertProblem(a_record(layout=dict(ruled, conv_small_input_channels=True)),
                           "layout.conv_small_input_channels")

    def test_a_plain_runtime_has_no_layout(self):
        self.assertEqual(record.problems(a_record(layout=None)), [])


class FusionFieldTest(unittest.TestCase):
    RULES = {"pointwise": True, "into_reductions": True, "into_products": False, "graph_s": 6e-5}

    def with_fusion(self, fusion):
        doc = a_record()
        doc["fusion"] = fusion
        return doc

    def test_written_only_where_given_after_the_other_fields(self):
        self.assertNotIn("fusion", a_record())
        doc = record.build_record(runtime="torch-compile", device="cpu", framework="torch 2.15.0", versions={},
                                  threads=2, dtypes=["f32"], settings={}, op_s=1e-6, probes=[], calibration_s=1.0,
                                  fusion=self.RULES)
        self.assertEqual(list(doc)[-1], "fusion")
        self.assertEqual(record.problems(doc), [])

    def test_rules_are_booleans_and_the_graph_call_a_time(self):
        self.assertEqual(record.problems(self.with_fusion(dict(self.RULES, graph_s=0.0))), [])
        self.assertIn("fusion.pointwise: not true or false",
                      record.problems(self.with_fusion(dict(self.RULES, pointwise="yes"))))
        self.assertIn("fusion: missing 'graph_s'",
                      record.problems(self.with_fusion({k: v for k, v in self.RULES.items() if k != "graph_s"})))
        self.assertIn("fusion.graph_s: -1e-06 is not positive",
                      record.problems(self.with_fusion(dict(self.RULES, graph_s=-1e-6))))
        self.assertIn("fusion: not an object", record.problems(self.with_fusion([True])))


class ConvDispatchFieldTest(unittest.TestCase):
    RULE = {"impl": "_slow_conv2d_forward", "max_input_elements": 20480, "max_batch": 1, "max_window": 3,
            "window_side": "smaller", "strided": True, "grouped": False, "depthwise": False}

    def with_rule(self, **changes):
        return a_record(conv_dispatch=dict(self.RULE, **changes))

    def test_written_only_where_given(self):
        self.assertNotIn("conv_dispatch", a_record())
        doc = record.build_record(runtime="torch-eager", device="cpu", framework="torch 2.15.0", versions={},
                                  threads=2, dtypes=["f32"], settings={}, op_s=1e-6, probes=[], calibration_s=1.0,
                                  conv_dispatch=self.RULE)
        self.assertEqual(doc["conv_dispatch"], self.RULE)
        self.assertEqual(record.problems(doc), [])

    def test_batchnorm_apart_written_only_where_given(self):
        self.assertNotIn("conv_batchnorm_apart", a_record())
        for apart in (True, False):
            doc = record.build_record(runtime="torch-eager", device="cpu", framework="torch 2.15.0", versions={},
                                      threads=2, dtypes=["f32"], settings={}, op_s=1e-6, probes=[],
                                      calibration_s=1.0, conv_batchnorm_apart=apart)
            self.assertIs(doc["conv_batchnorm_apart"], apart)
            self.assertEqual(record.problems(doc), [])

    def test_bounds_flags_and_the_window_side_are_checked(self):
        self.assertEqual(record.problems(self.with_rule(max_input_elements=None)), [])
        self.assertIn("conv_dispatch.max_batch: not a positive integer", record.problems(self.with_rule(max_batch=0)))
        self.assertIn("conv_dispatch.max_input_elements: not a positive integer or null",
                      record.problems(self.with_rule(max_input_elements=2.5)))
        self.assertIn("conv_dispatch.grouped: not true or false", record.problems(self.with_rule(grouped=1)))
        self.assertIn("conv_dispatch.window_side: not one of larger, smaller",
                      record.problems(self.with_rule(window_side="both")))
        self.assertIn("conv_dispatch.impl: not an implementation name", record.problems(self.with_rule(impl="")))
        self.assertIn("conv_dispatch: not an object", record.problems(a_record(conv_dispatch=[1])))

    def test_the_paths_call_costs_are_times(self):
        self.assertEqual(record.problems(self.with_rule(op_s=9e-6, others_op_s=8.5e-5)), [])
        self.assertEqual(record.problems(self.with_rule(op_s=0.0)), [])  # noise can leave it at 0
        for bad in (-1e-6, 1.5, True, "9us"):
            self.assertIn("conv_dispatch.others_op_s: not a time of at least 0 s and under 1 s",
                          record.problems(self.with_rule(others_op_s=bad)))


class WriteRecordTest(unittest.TestCase):
    def test_one_json_document(self):
        out = io.StringIO()
        record.write_record(a_record(), out)
        self.assertEqual(json.loads(out.getvalue())["runtime"], "onnxruntime")

    def test_a_non_finite_number_is_never_written(self):
        with self.assertRaises(ValueError):
            record.write_record(a_record(op_s=float("nan")), io.StringIO())


if __name__ == "__main__":
    unittest.main()
