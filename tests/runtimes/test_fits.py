"""The runtime modules' own fits, standard library only (the modules import their frameworks
only where they run them)."""
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import harness, onnxruntime_probe, torch_jit  # noqa: E402


class FrozenPairKernelsTest(unittest.TestCase):
    def test_a_difference_above_an_op_is_the_kernel(self):
        # op 40 us; the pair 1,000 us, its follower 500: the point's kernel 460 us.
        [(kernel, fit)] = torch_jit.pair_kernels([(46e6, "dense", 1000e-6, 500e-6)], 40e-6)
        self.assertAlmostEqual(kernel, 460e-6)
        self.assertEqual(fit, "difference")

    def test_a_difference_within_the_noise_runs_at_its_class_median_rate(self):
        pairs = [(10e6, "depthwise", 600e-6, 400e-6),   # 160 us: 62.5 GFLOP/s
                 (10e6, "depthwise", 500e-6, 400e-6),   # 60 us: 167 GFLOP/s
                 (10e6, "depthwise", 900e-6, 500e-6),   # 360 us: 27.8 GFLOP/s
                 (1e6, "depthwise", 232e-6, 190e-6),    # 2 us, under an op: its class's median
                 (100e6, "dense", 2000e-6, 1000e-6),    # 960 us: 104 GFLOP/s
                 (512, "grouped", 161e-6, 119e-6)]      # no grouped point: the median of every class's
        fits = torch_jit.pair_kernels(pairs, 40e-6)
        self.assertEqual([f for _, f in fits], ["difference"] * 3 + ["class median", "difference", "class median"])
        self.assertAlmostEqual(fits[3][0], 1e6 / (10e6 / 160e-6))
        self.assertAlmostEqual(fits[5][0], 512 / ((10e6 / 160e-6 + 100e6 / 960e-6) / 2))

    def test_nothing_above_the_noise_leaves_half_the_pair(self):
        self.assertEqual(torch_jit.pair_kernels([(512, "dense", 160e-6, 150e-6)], 40e-6), [(80e-6, "pair half")])


class PairKernelTest(unittest.TestCase):
    def test_the_difference_of_the_chains_is_the_kernel(self):
        # Call 5 us, op 0.25 us; the point 100 us, its follower 80 us.
        call, op = 5e-6, 0.25e-6
        pair, alone = call + 2 * op + 180e-6, call + op + 80e-6
        kernel, method = harness.pair_kernel_s(pair, alone, op, call)
        self.assertEqual(method, "difference")
        self.assertAlmostEqual(kernel, 100e-6)

    def test_a_follower_slowed_by_noise_gives_the_pairs_mean(self):
        kernel, method = harness.pair_kernel_s(306e-6, 275e-6, 0.25e-6, 5e-6)
        self.assertEqual(method, "pair mean")
        self.assertAlmostEqual(kernel, (306e-6 - 5e-6 - 0.5e-6) / 2)

    def test_a_strided_point_slower_than_its_follower_keeps_the_difference(self):
        kernel, method = harness.pair_kernel_s(728e-6, 207e-6, 0.25e-6, 5e-6)
        self.assertEqual(method, "difference")
        self.assertAlmostEqual(kernel, 728e-6 - 207e-6 - 0.25e-6)

    def test_a_pair_under_its_fixed_costs_is_halved(self):
        self.assertEqual(harness.pair_kernel_s(4e-6, 3e-6, 1e-6, 5e-6), (2e-6, "pair mean"))


class TimeSessionsTest(unittest.TestCase):
    def makers(self, order):
        def maker(key):
            def make():
                order.append(f"open {key}")
                return lambda: order.append(key)
            return make
        return {"pair": maker("pair"), "alone": maker("alone")}

    def test_each_session_runs_all_its_calls_before_the_next_starts(self):
        # One session's thread pool spins after its runs: interleaved, it slows the other's.
        order = []
        timings = onnxruntime_probe.time_sessions(self.makers(order), onnxruntime_probe.harness.Budget(quick=True))
        self.assertEqual(set(timings), {"pair", "alone"})
        first_alone = order.index("alone")
        self.assertGreater(first_alone, 1)
        self.assertNotIn("pair", order[first_alone:])
        self.assertEqual(timings["pair"].count + 1, order.index("open alone") - 1)  # one warm-up call untimed

    def test_a_session_opens_only_once_the_one_before_is_timed(self):
        # A pool spins for a while after its session opens: one opened early slows the first timed.
        order = []
        onnxruntime_probe.time_sessions(self.makers(order), onnxruntime_probe.harness.Budget(quick=True))
        self.assertEqual(order[0], "open pair")
        self.assertEqual(order[order.index("open alone") - 1], "pair")
        self.assertNotIn("pair", order[order.index("open alone"):])


class FoldedTest(unittest.TestCase):
    def test_an_activation_is_folded_when_only_the_convolution_and_its_reorders_are_left(self):
        self.assertTrue(onnxruntime_probe.folded(["ReorderInput", "Conv", "ReorderOutput"]))
        self.assertTrue(onnxruntime_probe.folded(["FusedConv"]))
        self.assertFalse(onnxruntime_probe.folded(["ReorderInput", "Conv", "QuickGelu", "ReorderOutput"]))
        self.assertFalse(onnxruntime_probe.folded(["Conv", "HardSigmoid", "Mul"]))
        self.assertFalse(onnxruntime_probe.folded([]))

    def test_every_probed_activation_has_nodes_from_the_convolution_to_the_output(self):
        def make_node(op, inputs, outputs, **attrs):
            return (op, tuple(inputs), tuple(outputs))
        graphs = types.SimpleNamespace(helper=types.SimpleNamespace(make_node=make_node),
                                       np=types.SimpleNamespace(array=lambda value: value))
        for name in onnxruntime_probe.ACTIVATIONS:
            nodes, _ = onnxruntime_probe.activation_nodes(graphs, name, "c", "y")
            self.assertEqual(nodes[-1][2], ("y",), name)
            self.assertIn("c", nodes[0][1], name)


if __name__ == "__main__":
    unittest.main()
