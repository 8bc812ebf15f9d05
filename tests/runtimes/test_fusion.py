"""torch-compile's fusion rules from its probes' times (no PyTorch needed)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import torch_compile  # noqa: E402

PASS = 1e-3  # one elementwise pass over the probe's tensor


def times(**changes):
    """Times of a compiler that fuses everything: each chain costs what its first op does."""
    t = {"relu": PASS, "chain": PASS, "layernorm": 1.5 * PASS, "layernorm+relu": 1.5 * PASS, "softmax": 2 * PASS,
         "scale+softmax": 2 * PASS, "add+layernorm": 2.0 * PASS, "linear": 4 * PASS, "linear+relu": 4 * PASS}
    t.update(changes)
    return t


class DecideFusionTest(unittest.TestCase):
    def test_a_compiler_that_fuses_everything(self):
        self.assertEqual(torch_compile.decide_fusion(times(**{"linear+relu": 4.1 * PASS})),
                         {"pointwise": True, "into_reductions": True, "into_products": True})

    def test_ops_run_apart_each_cost_a_pass(self):
        apart = times(chain=torch_compile.CHAIN_OPS * PASS, **{
            "layernorm+relu": 2.5 * PASS, "scale+softmax": 3 * PASS, "add+layernorm": 3.0 * PASS,
            "linear+relu": 5 * PASS})
        self.assertEqual(torch_compile.decide_fusion(apart),
                         {"pointwise": False, "into_reductions": False, "into_products": False})

    def test_a_product_epilogue_apart_from_fused_elementwise_chains(self):
        rules = torch_compile.decide_fusion(times(**{"linear+relu": 5 * PASS}))
        self.assertEqual(rules, {"pointwise": True, "into_reductions": True, "into_products": False})

    def test_reductions_fuse_only_where_every_probe_says_so(self):
        # The residual add ran as a kernel of its own: two operands read and one written more.
        rules = torch_compile.decide_fusion(times(**{"add+layernorm": 3.0 * PASS}))
        self.assertFalse(rules["into_reductions"])
        self.assertTrue(rules["pointwise"])

    def test_the_residual_add_may_read_its_extra_operand(self):
        # Half a pass more (one more tensor read) still counts as fused.
        self.assertTrue(torch_compile.decide_fusion(times(**{"add+layernorm": 2.0 * PASS}))["into_reductions"])


if __name__ == "__main__":
    unittest.main()
