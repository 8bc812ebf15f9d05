"""torch-compile's fusion rules from its probes' times and generated code (no PyTorch needed)."""
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

    def test_an_op_with_a_launch_of_its_own_has_not_joined_whatever_the_times(self):
        # Times within noise of a fusion, but the generated code runs the relu as a kernel apart.
        launches = {name: 1 for name in times()}
        launches["linear+relu"] = 2
        rules = torch_compile.decide_fusion(times(), launches)
        self.assertEqual(rules, {"pointwise": True, "into_reductions": True, "into_products": False})

    def test_a_fusion_in_the_code_still_needs_the_time_saved(self):
        # One kernel for the chain, but one that costs a pass per op (a scalar loop).
        launches = {name: 1 for name in times()}
        slow = times(chain=torch_compile.CHAIN_OPS * PASS)
        self.assertFalse(torch_compile.decide_fusion(slow, launches)["pointwise"])
        self.assertTrue(torch_compile.decide_fusion(times(), launches)["pointwise"])

    def test_unknown_launches_leave_the_times_to_decide(self):
        launches = {"linear": None, "linear+relu": 2}
        self.assertTrue(torch_compile.decide_fusion(times(), launches)["into_products"])


# The module a compiler generates for a graph: a library call and a kernel of its own in `call`
# (a function at the top level, or a method), and code outside `call` that launches nothing.
TOP_LEVEL_CALL = """
def call(args):
    buf0 = empty_strided_cpu((64, 512), (512, 1), torch.float32)
    extern_kernels.addmm(arg1_1, arg2_1, reinterpret_tensor(arg0_1, (512, 512), (1, 512), 0), out=buf0)

    cpp_fused_relu_0(buf1)
    return (buf1, )


def benchmark_compiled_module(times=10, repeat=10):
    cpp_fused_relu_0(buf1)
"""
METHOD_CALL = """
class Runner:
    def call(self, args):
        arg0_1, = args
        buf0 = empty_strided_cpu((512, 1024), (1024, 1), torch.float32)
        cpp_fused_add_mul_relu_tanh_0(arg0_1, buf0)
        return (buf0, )

runner = Runner(partitions=[])
call = runner.call
"""
TRITON_CALL = """
def call(args):
    with torch.cuda._DeviceGuard(0):
        triton_poi_fused_relu_0.run(arg0_1, buf0, 524288, stream=stream0)
        triton_red_fused_native_layer_norm_1.run(buf0, buf1, 512, 1024, stream=stream0)
    return (buf1, )
"""
PARTITIONED_CALL = """
def partition_0(args):
    with torch.cuda._DeviceGuard(0):
        triton_poi_fused_relu_0.run(arg0_1, buf0, 524288, stream=stream0)
        extern_kernels.mm(buf0, arg1_1, out=buf1)
    return (buf1, )


class Runner:
    def call(self, args):
        (buf1, ) = self.partitions[0](args)
        return (buf1, )
"""


class KernelLaunchesTest(unittest.TestCase):
    def test_the_partitions_a_call_runs_count(self):
        self.assertEqual(torch_compile.kernel_launches([PARTITIONED_CALL]), 2)

    def test_launches_in_call_only(self):
        self.assertEqual(torch_compile.kernel_launches([TOP_LEVEL_CALL]), 2)
        self.assertEqual(torch_compile.kernel_launches([METHOD_CALL]), 1)
        self.assertEqual(torch_compile.kernel_launches([TRITON_CALL]), 2)

    def test_every_module_of_a_graph_counts(self):
        self.assertEqual(torch_compile.kernel_launches([TOP_LEVEL_CALL, METHOD_CALL]), 3)

    def test_code_without_a_call_is_unknown(self):
        self.assertIsNone(torch_compile.kernel_launches([]))
        self.assertIsNone(torch_compile.kernel_launches(["x = 1\n"]))
        self.assertIsNone(torch_compile.kernel_launches(None))



class CompileEveryCallTest(unittest.TestCase):
    """The calibration's and validation's compiler settings, on a stand-in for torch._dynamo."""

    @staticmethod
    def fake_torch(**config):
        import types
        return types.SimpleNamespace(_dynamo=types.SimpleNamespace(config=types.SimpleNamespace(**config)))

    def test_the_limit_rises_and_hitting_it_fails(self):
        torch = self.fake_torch(recompile_limit=8, cache_size_limit=8, fail_on_recompile_limit_hit=False)
        torch_compile.compile_every_call(torch, 64)
        config = torch._dynamo.config
        self.assertEqual((config.recompile_limit, config.cache_size_limit), (64, 64))
        self.assertTrue(config.fail_on_recompile_limit_hit)
        self.assertFalse(hasattr(config, "fail_on_cache_limit_hit"))

    def test_a_higher_limit_stays(self):
        torch = self.fake_torch(cache_size_limit=100, fail_on_cache_limit_hit=False)
        torch_compile.compile_every_call(torch, 64)
        self.assertEqual(torch._dynamo.config.cache_size_limit, 100)
        self.assertTrue(torch._dynamo.config.fail_on_cache_limit_hit)
        self.assertFalse(hasattr(torch._dynamo.config, "recompile_limit"))


if __name__ == "__main__":
    unittest.main()
