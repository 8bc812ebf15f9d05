"""validate.py's reading of PyTorch's layout changes from ONEDNN_VERBOSE lines and the estimate's
flags for them (standard library only)."""
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
import validate  # noqa: E402  (stdlib only at import time; torch is imported where it is used)


def reorder(src, dst, impl="jit:blk"):
    return (f"onednn_verbose,exec,cpu,reorder,{impl},undef,src_f32::blocked:{src}:f0 "
            f"dst_f32::blocked:{dst}:f0,attr-scratchpad:user ,,1x16x16x16,0.003")


CONV = ("onednn_verbose,exec,cpu,convolution,jit:avx512_core,forward_inference,src_f32::blocked:aBcd16b:f0 "
        "wei_f32::blocked:ABcd16b16a:f0 dst_f32::blocked:aBcd16b:f0,,alg:convolution_direct,mb1_ic16oc16,0.01")


class ReorderDirectionsTest(unittest.TestCase):
    def test_a_blocked_source_is_a_change_to_plain(self):
        self.assertEqual(validate.reorder_directions([reorder("aBcd16b", "abcd")]), (1, 0))
        self.assertEqual(validate.reorder_directions([reorder("aBcd8b", "abcd")]), (1, 0))

    def test_a_plain_source_is_a_change_to_blocked_whatever_its_target(self):
        lines = [reorder("abcd", "abcd", "simple:any"), reorder("abcd", "aBcd16b"), CONV]
        self.assertEqual(validate.reorder_directions(lines), (0, 2))

    def test_oneDNN_3x_lines_read_alike(self):
        line = ("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:aBcd16b::f0 "
                "dst:f32::blocked:abcd::f0,,,1x16x16x16,0.003")
        self.assertEqual(validate.reorder_directions([line]), (1, 0))
        self.assertEqual(validate.reorder_directions([line.replace("aBcd16b", "abcd").replace("dst:f32::blocked:abcd",
                                                                                           "dst:f32::blocked:aBcd16b")]),
                         (0, 1))

    def test_other_primitives_and_lines_do_not_count(self):
        self.assertEqual(validate.reorder_directions([CONV, "truepeak-layout-end", ""]), (0, 0))


class OwnKernelRatesTest(unittest.TestCase):
    def rates(self, small_s, large_s):
        own = validate.OwnKernelRates.__new__(validate.OwnKernelRates)
        small, large = "small", "large"
        own.runs = {("pool:max", small): None, ("pool:max", large): None}
        own.elements = {("pool:max", small): 1e5, ("pool:max", large): 4e5}
        own.best = {("pool:max", small): small_s, ("pool:max", large): large_s}
        own.device_s = {}  # a CPU: no device times
        return own.rates()["pool:max"]

    def test_the_rate_is_the_slope_between_the_two_sizes(self):
        # 3e5 more elements in 1.5 ms more: the fixed cost of a call drops out.
        self.assertAlmostEqual(self.rates(0.6e-3, 2.1e-3), 2e8)

    def test_without_a_clear_slope_the_larger_size_alone_counts(self):
        self.assertAlmostEqual(self.rates(1.9e-3, 2.0e-3), 2e8)


class LayoutFlagsTest(unittest.TestCase):
    def case(self, runtime, dtype="f32"):
        return validate.Case("resnet18", 1, dtype, None, None, None, runtime, conv_layout="blocked")

    def flags(self, case, layout, own_rates=None):
        seen = {}

        def run(cmd, **_):
            seen["cmd"] = cmd
            return types.SimpleNamespace(returncode=0, stdout='{"latency_s": 0.01, "ops": []}', stderr="")
        saved = validate.subprocess.run
        validate.subprocess.run = run
        try:
            args = types.SimpleNamespace(truepeak="tp", profile="p.json", device="cpu")
            validate.estimate(args, case, "m.onnx", layout=layout, own_rates=own_rates)
        finally:
            validate.subprocess.run = saved
        return seen["cmd"]

    def test_linears_are_convolutions_in_frozen_graphs_and_f32_eager_runs_only(self):
        self.assertIn("--linears-as-convs", self.flags(self.case("frozen"), None))
        # bf16 eager linears are oneDNN matmuls; f32 ones its inner products (torch.utils.mkldnn).
        self.assertNotIn("--linears-as-convs", self.flags(self.case("eager", "bf16"), None))
        self.assertIn("--linears-as-convs", self.flags(self.case("eager", "f32"), None))

    def test_the_eager_dtype_follows_the_profiles_bf16_matmuls(self):
        def doc(*dtypes):
            return {"devices": [{"kind": "cpu", "gemm": [{"dtype": d} for d in dtypes]}]}
        self.assertEqual(validate.cpu_eager_dtype(doc("f32", "bf16", "int8")), "bf16")
        self.assertEqual(validate.cpu_eager_dtype(doc("f32", "int8")), "f32")
        # No profile (a GPU machine measuring only): the CPU default.
        self.assertEqual(validate.cpu_eager_dtype(None), "bf16")

    def test_a_frozen_graph_is_estimated_with_the_probed_layout(self):
        cmd = self.flags(self.case("frozen"), {"blocked_ops": ["elementwise:relu", "pool"], "copies": [1, 2]})
        self.assertEqual(cmd[cmd.index("--blocked-ops") + 1], "elementwise:relu,pool")
        self.assertEqual(cmd[cmd.index("--layout-copies") + 1], "1,2")

    def test_expansion_and_own_rates_go_with_the_layout(self):
        layout = {"blocked_ops": ["pool"], "copies": [1, 2], "expand_broadcast": True}
        cmd = self.flags(self.case("frozen"), layout, {"pool:max": 4.6e8, "elementwise:silu": 1.83e9})
        self.assertIn("--expand-broadcast", cmd)
        self.assertEqual(cmd[cmd.index("--own-rates") + 1], "pool:max=4.6e+08,elementwise:silu=1.83e+09")
        layout["expand_broadcast"] = False
        cmd = self.flags(self.case("frozen"), layout)
        self.assertNotIn("--expand-broadcast", cmd)
        self.assertNotIn("--own-rates", cmd)
        # A frozen graph's own rates are those of the ops its layout runs plain: none without it.
        self.assertNotIn("--own-rates", self.flags(self.case("frozen"), None, {"pool:max": 4.6e8}))

    def test_an_eager_run_takes_its_own_rates_without_a_layout(self):
        layout = {"blocked_ops": ["pool"], "copies": [1, 2], "expand_broadcast": True}
        cmd = self.flags(self.case("eager"), layout, {"elementwise:gelu_tanh": 2.6e8, "softmax": 1.7e9})
        self.assertNotIn("--expand-broadcast", cmd)
        self.assertNotIn("--blocked-ops", cmd)
        self.assertEqual(cmd.count("--own-rates"), 1)
        self.assertEqual(cmd[cmd.index("--own-rates") + 1], "elementwise:gelu_tanh=2.6e+08,softmax=1.7e+09")
        self.assertNotIn("--own-rates", self.flags(self.case("eager"), None))

    def test_the_rates_text_names_each_runtime(self):
        text = validate.rates_text({"frozen": {"pool:max": 6.1e8}, "eager": {"softmax": 1.66e9}})
        self.assertIn("frozen graphs, f32, for the ops that run plain: pool:max 0.61", text)
        self.assertIn("eager mode, bf16, for the ops outside oneDNN, each timed after a 768 -> 3072 linear "
                      "over 128 tokens: softmax 1.66", text)

    def test_group_widths_go_with_the_layout(self):
        layout = {"blocked_ops": ["pool"], "copies": [1, 2], "group_reorders": [2, 4, 8]}
        cmd = self.flags(self.case("frozen"), layout)
        self.assertEqual(cmd[cmd.index("--group-reorders") + 1], "2,4,8")
        self.assertNotIn("--group-reorders", self.flags(self.case("frozen"), dict(layout, group_reorders=[])))
        self.assertNotIn("--group-reorders", self.flags(self.case("eager"), layout))

    def test_a_width_counts_when_its_convolution_adds_two_reorders(self):
        # conv-ReLU-conv made 3 reorders; groups of 2 and 4 added theirs, groups of 8 one only.
        self.assertEqual(validate.group_reorder_widths(3, {2: 5, 4: 5, 8: 4}), [2, 4])
        self.assertEqual(validate.group_reorder_widths(3, {2: 3, 4: 3, 8: 3}), [])

    def test_eager_runs_and_failed_probes_add_no_layout(self):
        self.assertNotIn("--blocked-ops", self.flags(self.case("eager"), {"blocked_ops": ["pool"], "copies": [1, 1]}))
        self.assertNotIn("--blocked-ops", self.flags(self.case("frozen"), {"error": "no torch"}))
        self.assertNotIn("--blocked-ops", self.flags(self.case("frozen"), None))


if __name__ == "__main__":
    unittest.main()
