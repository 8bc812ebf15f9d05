"""The convolution dispatch probe's search (torch_common.find_conv_dispatch) against frameworks
whose rules are known, and the name it reads from a profiler's ops (no PyTorch needed)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from runtimes import grids, torch_common  # noqa: E402


def torch_like(max_elements=20480):
    """A framework that runs a call natively when it is dense, of one image, of a window whose
    smaller side is at most 3, and of at most `max_elements` input elements; else in its library."""
    def impl_of(shape):
        elements = shape["n"] * shape["c"] * shape["h"] * shape["w"]
        native = (shape["groups"] == 1 and shape["n"] == 1 and min(shape["r"], shape["s"]) <= 3 and
                  elements <= max_elements)
        return "native" if native else "library"
    return impl_of


def single_threaded_torch(shape):
    """PyTorch's choice on one thread: native when the call is an unstrided 1x1 of under 16 images,
    or meets torch_like's conditions; a choice no rule of "every condition holds" describes."""
    pointwise = shape["stride"] == 1 and shape["r"] == shape["s"] == 1 and shape["n"] < 16
    return "native" if pointwise or torch_like()(shape) == "native" else "library"


def grid_of(impl_of):
    return [(shape, impl_of(shape)) for shape in grids.conv_grid(False)]


class FindConvDispatchTest(unittest.TestCase):
    def test_the_bound_and_every_condition_are_found(self):
        rule, tried = torch_common.find_conv_dispatch(torch_like(), grid_of(torch_like()))
        self.assertEqual(rule, {"impl": "native", "max_input_elements": 20480, "max_batch": 1, "max_window": 3,
                                "window_side": "smaller", "strided": True, "grouped": False, "depthwise": False})
        self.assertTrue(all(impl in ("native", "library") for _, impl in tried))
        self.assertLess(len(tried), 30)

    def test_a_bound_between_two_channel_counts_keeps_the_last_that_stays(self):
        # 20,000 elements: 78 channels of 16x16 stay (19,968), 79 do not.
        rule, _ = torch_common.find_conv_dispatch(torch_like(20000), grid_of(torch_like(20000)))
        self.assertEqual(rule["max_input_elements"], 78 * grids.DISPATCH_SIDE ** 2)

    def test_no_bound_within_the_probe_is_none(self):
        rule, _ = torch_common.find_conv_dispatch(torch_like(10 ** 12), grid_of(torch_like(10 ** 12)))
        self.assertIsNone(rule["max_input_elements"])

    def test_a_framework_of_one_implementation_has_no_rule(self):
        rule, tried = torch_common.find_conv_dispatch(lambda shape: "library", grid_of(lambda shape: "library"))
        self.assertIsNone(rule)
        self.assertEqual(len(tried), 1)

    def test_batches_and_windows_of_a_wider_path(self):
        def impl_of(shape):
            ok = shape["n"] <= 4 and max(shape["r"], shape["s"]) <= 5 and shape["groups"] in (1, shape["c"])
            return "small" if ok else "big"
        rule, _ = torch_common.find_conv_dispatch(impl_of, grid_of(impl_of))
        self.assertEqual((rule["max_batch"], rule["max_window"], rule["window_side"]), (4, 5, "larger"))
        self.assertEqual((rule["grouped"], rule["depthwise"], rule["max_input_elements"]), (False, True, None))


    def test_a_choice_no_such_rule_describes_has_none(self):
        rule, _ = torch_common.find_conv_dispatch(single_threaded_torch, grid_of(single_threaded_torch))
        self.assertIsNone(rule)

    def test_the_rule_places_every_point_where_it_ran(self):
        rule, _ = torch_common.find_conv_dispatch(torch_like(), grid_of(torch_like()))
        for shape, impl in grid_of(torch_like()):
            self.assertEqual(torch_common.meets_dispatch(rule, shape), impl == "native", shape)
        self.assertTrue(any(impl == "native" for _, impl in grid_of(torch_like())))


class PathCostTest(unittest.TestCase):
    def test_the_path_cost_calls_fall_either_side_of_the_rule_and_chain(self):
        rule, _ = torch_common.find_conv_dispatch(torch_like(), grid_of(torch_like()))
        small, others = torch_common.path_cost_shapes(rule)
        self.assertTrue(torch_common.meets_dispatch(rule, small))
        self.assertEqual(torch_like()(small), "native")
        self.assertTrue(others)
        for shape in [small] + others:
            self.assertFalse(shape in others and torch_common.meets_dispatch(rule, shape))
            # A call's output has its input's shape: the next call of a chain takes it.
            self.assertEqual((shape["c"], shape["stride"], 2 * shape["pad"] + 1), (shape["k"], 1, shape["r"]))
        self.assertEqual(torch_like()(others[0]), "library")
        # A rule that keeps batches, grouping and depthwise calls: a window past its bound is left.
        wide = dict(rule, max_batch=16, grouped=True, depthwise=True)
        _, rest = torch_common.path_cost_shapes(wide)
        self.assertEqual([(s["n"], s["r"], s["groups"]) for s in rest], [(17, 1, 1), (1, 5, 1)])


class InnermostConvOpTest(unittest.TestCase):
    def test_the_last_convolution_past_the_wrappers(self):
        self.assertEqual(torch_common.innermost_conv_op(
            ["aten::conv2d", "aten::convolution", "aten::_convolution", "aten::_nnpack_available",
             "aten::thnn_conv2d", "aten::_slow_conv2d_forward", "aten::empty", "aten::view"]), "_slow_conv2d_forward")
        self.assertEqual(torch_common.innermost_conv_op(
            ["aten::conv2d", "aten::convolution", "aten::_convolution", "aten::mkldnn_convolution", "aten::empty"]),
            "mkldnn_convolution")
        self.assertEqual(torch_common.innermost_conv_op(["aten::conv2d", "aten::convolution", "aten::add"]), "")


class HoldsBatchnormTest(unittest.TestCase):
    def test_a_batch_norm_of_its_own_and_none(self):
        # Eager PyTorch 2.x and 1.13: the batch norm and the ops it dispatches to.
        self.assertTrue(torch_common.holds_batchnorm(
            ["aten::conv2d", "aten::mkldnn_convolution", "aten::batch_norm", "aten::_batch_norm_impl_index",
             "aten::native_batch_norm", "aten::empty_like"]))
        self.assertTrue(torch_common.holds_batchnorm(["aten::_native_batch_norm_legit_no_training"]))
        # A frozen graph with the batch norm folded into the convolution's weights.
        self.assertFalse(torch_common.holds_batchnorm(
            ["forward", "aten::conv2d", "aten::convolution", "aten::_convolution", "aten::mkldnn_convolution"]))
        self.assertFalse(torch_common.holds_batchnorm(["aten::layer_norm", "aten::group_norm", "aten::add_"]))
        self.assertFalse(torch_common.holds_batchnorm([]))


if __name__ == "__main__":
    unittest.main()
