"""Reading the runtimes' layout rules: oneDNN's verbose reorder lines and the findings of the
frozen-graph layout probe, onnxruntime's reorder nodes, in-place node names (standard library
only)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import frozen_graph, onednn_verbose, onnxruntime_layout  # noqa: E402


def reorder(src, dst, impl="jit:blk"):
    return (f"onednn_verbose,exec,cpu,reorder,{impl},undef,src_f32::blocked:{src}:f0 "
            f"dst_f32::blocked:{dst}:f0,attr-scratchpad:user ,,1x16x16x16,0.003")


TO_PLAIN, TO_BLOCKED = reorder("aBcd16b", "abcd"), reorder("abcd", "aBcd16b")
CONV = ("onednn_verbose,exec,cpu,convolution,jit:avx512_core,forward_inference,src_f32::blocked:aBcd16b:f0 "
        "wei_f32::blocked:ABcd16b16a:f0 dst_f32::blocked:aBcd16b:f0,,alg:convolution_direct,mb1_ic16oc16,0.01")


class ReorderDirectionsTest(unittest.TestCase):
    def test_a_blocked_source_changes_to_plain(self):
        self.assertEqual(onednn_verbose.reorder_directions([TO_PLAIN, reorder("aBcd8b", "abcd")]), (2, 0))

    def test_a_plain_source_changes_to_blocked_whatever_its_target(self):
        self.assertEqual(onednn_verbose.reorder_directions([reorder("abcd", "abcd", "simple:any"), TO_BLOCKED, CONV]),
                         (0, 2))

    def test_onednn_3_lines_read_alike(self):
        line = ("onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:aBcd16b::f0 "
                "dst:f32::blocked:abcd::f0,,,1x16x16x16,0.003")
        self.assertEqual(onednn_verbose.reorder_directions([line]), (1, 0))
        stamped = "onednn_verbose,1733456789.123," + line.split(",", 1)[1]
        self.assertEqual(onednn_verbose.reorder_directions([stamped]), (1, 0))

    def test_other_lines_do_not_count(self):
        self.assertEqual(onednn_verbose.reorder_directions([CONV, "truepeak-layout-end", "", "info,cpu"]), (0, 0))


def probe_output(runs):
    """The layout probe's stdout for `runs` (name -> verbose lines)."""
    lines = []
    for name, body in runs.items():
        lines += [frozen_graph.mark(name), *body, "truepeak-layout-end"]
    return lines


def runs(cross=(), broadcast=(), groups=None):
    groups = groups or {}
    out = {"base": [TO_BLOCKED, TO_PLAIN], "broadcast": [TO_BLOCKED, TO_PLAIN, *broadcast],
           "group-dense": [TO_BLOCKED, TO_PLAIN]}
    for w in (1, 2, 4):
        out[f"group-{w}"] = [TO_BLOCKED, TO_PLAIN] + groups.get(w, [])
    if cross is not None:
        out["cross"] = [TO_BLOCKED, TO_PLAIN, *cross]
    return out


FOUND = {"blocked_ops": ["pool:max", "elementwise:relu"], "cross": "elementwise:silu", "broadcast_blocked": True}


class LayoutOfTest(unittest.TestCase):
    def test_copies_by_direction_beyond_the_base_net(self):
        lines = probe_output(runs(cross=[TO_PLAIN, TO_BLOCKED, TO_BLOCKED]))
        layout, counts = frozen_graph.layout_of(FOUND, lines, (1, 2, 4))
        self.assertEqual((layout["to_plain_copies"], layout["to_blocked_copies"]), (1, 2))
        self.assertEqual(layout["blocked_ops"], ["elementwise:relu", "pool:max"])
        self.assertEqual(counts["cross"], (2, 3))

    def test_a_change_copies_at_least_once(self):
        layout, _ = frozen_graph.layout_of(FOUND, probe_output(runs(cross=[])), (1, 2, 4))
        self.assertEqual((layout["to_plain_copies"], layout["to_blocked_copies"]), (1, 1))

    def test_every_kind_blocked_leaves_the_copies_at_one(self):
        found = dict(FOUND, cross=None)
        layout, _ = frozen_graph.layout_of(found, probe_output(runs(cross=None)), (1, 2, 4))
        self.assertEqual((layout["to_plain_copies"], layout["to_blocked_copies"]), (1, 1))

    def test_a_broadcast_operand_is_expanded_when_its_blocked_op_reorders_more(self):
        layout, _ = frozen_graph.layout_of(FOUND, probe_output(runs(broadcast=[TO_BLOCKED])), (1, 2, 4))
        self.assertTrue(layout["expand_broadcast"])
        layout, _ = frozen_graph.layout_of(FOUND, probe_output(runs()), (1, 2, 4))
        self.assertFalse(layout["expand_broadcast"])
        found = dict(FOUND, broadcast_blocked=False)
        layout, _ = frozen_graph.layout_of(found, probe_output(runs(broadcast=[TO_BLOCKED])), (1, 2, 4))
        self.assertFalse(layout["expand_broadcast"])

    def test_group_widths_with_two_more_reorders_run_a_layout_of_their_own(self):
        lines = probe_output(runs(groups={2: [TO_PLAIN, TO_BLOCKED], 4: [TO_PLAIN]}))
        layout, _ = frozen_graph.layout_of(FOUND, lines, (1, 2, 4))
        self.assertEqual(layout["group_reorder_widths"], [2])

    def test_depthwise_is_never_listed(self):
        lines = probe_output(runs(groups={1: [TO_PLAIN, TO_BLOCKED], 2: [TO_PLAIN, TO_BLOCKED]}))
        layout, counts = frozen_graph.layout_of(FOUND, lines, (1, 2, 4))
        self.assertEqual(layout["group_reorder_widths"], [2])
        self.assertEqual(counts["group-1"], (2, 2))

    def test_a_missing_mark_or_end_is_an_error(self):
        lines = probe_output(runs())
        with self.assertRaises(ValueError):
            frozen_graph.layout_of(FOUND, [line for line in lines if line != frozen_graph.mark("group-2")], (1, 2, 4))
        with self.assertRaises(ValueError):
            frozen_graph.sections(["truepeak-layout-base", TO_PLAIN], ["truepeak-layout-base"])

    def test_too_many_copies_is_a_misreading(self):
        with self.assertRaises(ValueError):
            frozen_graph.layout_of(FOUND, probe_output(runs(cross=[TO_PLAIN] * 10)), (1, 2, 4))


class InPlaceTest(unittest.TestCase):
    def test_in_place_node_names(self):
        kinds = ["aten::relu_", "aten::add_", "prim::MKLDNNHardTanh_", "aten::sigmoid", "aten::to_dense",
                 "aten::__iand__", "prim::mkldnn_convolution", "aten::clamp_"]
        self.assertEqual(frozen_graph.in_place_kinds(kinds), ["elementwise:add", "elementwise:clip",
                                                             "elementwise:relu"])


class OnnxruntimeReordersTest(unittest.TestCase):
    def test_reorder_nodes_by_direction(self):
        types = ["ReorderInput", "Conv", "ReorderOutput", "Mul", "ReorderInput", "Conv", "ReorderOutput"]
        self.assertEqual(onnxruntime_layout.reorders(types), (2, 2))
        self.assertEqual(onnxruntime_layout.reorders(["MatMul"]), (0, 0))


class ChannelRuleTest(unittest.TestCase):
    CHANNELS = range(1, 25)

    def test_avx2s_rule_is_read_back(self):
        # What onnxruntime 1.32 did on the AVX2 Zen 3 VM: any input of up to 8 channels, else a
        # multiple of 4; a depthwise convolution over a multiple of 4.
        dense = {c: c <= 8 or c % 4 == 0 for c in self.CHANNELS}
        depthwise = {c: c % 4 == 0 or c == 1 for c in self.CHANNELS}
        self.assertEqual(onnxruntime_layout.channel_rule(dense, depthwise), (8, 4))

    def test_other_multiples_and_the_smallest_one(self):
        dense = {c: c <= 16 or c % 8 == 0 for c in self.CHANNELS}
        depthwise = {c: c % 8 == 0 for c in self.CHANNELS}
        self.assertEqual(onnxruntime_layout.channel_rule(dense, depthwise), (16, 8))
        # Every count a multiple of 2 runs blocked: 2, not 4.
        even = {c: c % 2 == 0 for c in self.CHANNELS}
        self.assertEqual(onnxruntime_layout.channel_rule(even, even), (0, 2))

    def test_everything_blocked_is_no_rule_and_nonsense_is_none(self):
        every = {c: True for c in self.CHANNELS}
        self.assertEqual(onnxruntime_layout.channel_rule(every, every), (0, 1))
        odd = {c: c % 2 == 1 for c in self.CHANNELS}
        self.assertIsNone(onnxruntime_layout.channel_rule(odd, odd))
        # Every dense count blocked but not every depthwise one: the dense counts past those tried
        # are not known, and no rule is claimed.
        self.assertIsNone(onnxruntime_layout.channel_rule(every, {c: c % 4 == 0 for c in self.CHANNELS}))


if __name__ == "__main__":
    unittest.main()
