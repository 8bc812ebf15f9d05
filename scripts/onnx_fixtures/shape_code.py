"""Shape code as exporters write it (issue #40): each graph below computes a shape inside the
graph or from its data, as a pattern of the torchvision exports does."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .base import const_i64, scalar, weight


def shape_fixture(graph, opset):
    """IR version 8: what the ONNX library the importer links (1.12) reads."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="truepeak-fixtures", ir_version=8)
    onnx.checker.check_model(model)
    return model


def floor_divide(n, prefix, a, b, out):
    """PyTorch's integer floor division of two int64 scalars: Div, then a correction for
    negative operands built from Less, Xor, Equal, Not, And and Where."""
    return [
        n("Div", [a, b], [prefix + "div"], name=prefix + "div"),
        n("Less", [a, "zero_i"], [prefix + "a_neg"], name=prefix + "a_neg"),
        n("Less", [b, "zero_i"], [prefix + "b_neg"], name=prefix + "b_neg"),
        n("Xor", [prefix + "a_neg", prefix + "b_neg"], [prefix + "neg"], name=prefix + "xor"),
        n("Mul", [prefix + "div", b], [prefix + "prod"], name=prefix + "prod"),
        n("Sub", [a, prefix + "prod"], [prefix + "mod"], name=prefix + "mod"),
        n("Equal", [prefix + "mod", "zero_i"], [prefix + "exact"], name=prefix + "exact"),
        n("Not", [prefix + "exact"], [prefix + "inexact"], name=prefix + "inexact"),
        n("And", [prefix + "neg", prefix + "inexact"], [prefix + "fix"], name=prefix + "fix"),
        n("Sub", [prefix + "div", "one_i"], [prefix + "down"], name=prefix + "down"),
        n("Where", [prefix + "fix", prefix + "down", prefix + "div"], [out], name=prefix + "where"),
    ]


def computed_reshape():
    """Swin's window partition: the feature map [batch, 7, 7, 4] padded to whole windows of 4
    (pads from Mod of its Shape), split into windows by a Reshape whose target is computed with
    PyTorch's floor division, and heads split by a Reshape whose head size goes through float
    arithmetic (Cast, Div, Floor, Cast back). Input 'x' [batch, 7, 7, 4]."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"], name="shape"),
        n("Gather", ["shape", "i1"], ["h"], name="h", axis=0),
        n("Gather", ["shape", "i2"], ["w"], name="w", axis=0),
        n("Mod", ["h", "ws"], ["h_mod"], name="h_mod"),
        n("Sub", ["ws", "h_mod"], ["h_rest"], name="h_rest"),
        n("Mod", ["h_rest", "ws"], ["pad_b"], name="pad_b"),
        n("Mod", ["w", "ws"], ["w_mod"], name="w_mod"),
        n("Sub", ["ws", "w_mod"], ["w_rest"], name="w_rest"),
        n("Mod", ["w_rest", "ws"], ["pad_r"], name="pad_r"),
        n("Unsqueeze", ["pad_b", "axes0"], ["pad_b1"], name="pad_b1"),
        n("Unsqueeze", ["pad_r", "axes0"], ["pad_r1"], name="pad_r1"),
        n("Concat", ["zeros5", "pad_b1", "pad_r1", "zero1"], ["pads"], name="pads", axis=0),
        n("Pad", ["x", "pads"], ["xp"], name="pad"),
        n("Shape", ["xp"], ["shape_p"], name="shape_p"),
        n("Gather", ["shape_p", "i0"], ["b"], name="b", axis=0),
        n("Gather", ["shape_p", "i1"], ["hp"], name="hp", axis=0),
        n("Gather", ["shape_p", "i2"], ["wp"], name="wp", axis=0),
        n("Gather", ["shape_p", "i3"], ["c"], name="c", axis=0),
    ]
    nodes += floor_divide(n, "nh/", "hp", "ws", "nh")
    nodes += floor_divide(n, "nw/", "wp", "ws", "nw")
    unsq = lambda t: n("Unsqueeze", [t, "axes0"], [t + "_1"], name=t + "_1")
    nodes += [unsq(t) for t in ("b", "nh", "nw", "c")]
    nodes += [
        n("Concat", ["b_1", "nh_1", "ws_1", "nw_1", "ws_1", "c_1"], ["split6"], name="split6", axis=0),
        n("Reshape", ["xp", "split6"], ["x6"], name="reshape6"),
        n("Transpose", ["x6"], ["x6t"], name="transpose6", perm=[0, 1, 3, 2, 4, 5]),
        n("Mul", ["nh", "nw"], ["windows"], name="windows"),
        n("Mul", ["b", "windows"], ["bw"], name="bw"),
        n("Mul", ["ws", "ws"], ["tokens"], name="tokens"),
        unsq("bw"), unsq("tokens"),
        n("Concat", ["bw_1", "tokens_1", "c_1"], ["win_shape"], name="win_shape", axis=0),
        n("Reshape", ["x6t", "win_shape"], ["win"], name="windows_reshape"),
        n("MatMul", ["win", "qkv.w"], ["qkv"], name="qkv"),
        # heads = floor(C / 2.0) through float, head size = C // heads
        n("Cast", ["c", ], ["c_f"], name="c_f", to=TensorProto.FLOAT),
        n("Div", ["c_f", "two_f"], ["heads_f"], name="heads_f"),
        n("Floor", ["heads_f"], ["heads_fl"], name="heads_fl"),
        n("Cast", ["heads_fl"], ["heads"], name="heads", to=TensorProto.INT64),
        n("Div", ["c", "heads"], ["head_dim"], name="head_dim"),
        unsq("heads"), unsq("head_dim"),
        n("Concat", ["bw_1", "tokens_1", "three_1", "heads_1", "head_dim_1"], ["qkv_shape"], name="qkv_shape", axis=0),
        n("Reshape", ["qkv", "qkv_shape"], ["qkv5"], name="qkv_reshape"),
        n("Transpose", ["qkv5"], ["qkv5t"], name="qkv_transpose", perm=[2, 0, 3, 1, 4]),
    ]
    inits = [const_i64("i0", 0), const_i64("i1", 1), const_i64("i2", 2), const_i64("i3", 3),
             const_i64("ws", 4), const_i64("ws_1", [4]), const_i64("axes0", [0]), const_i64("zero_i", 0),
             const_i64("one_i", 1), const_i64("zeros5", [0, 0, 0, 0, 0]), const_i64("zero1", [0]),
             const_i64("three_1", [3]), scalar("two_f", 2.0), weight("qkv.w", 4, 12)]
    graph = helper.make_graph(
        nodes, "computed_reshape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 7, 7, 4])],
        [helper.make_tensor_value_info("qkv5t", TensorProto.FLOAT, [None] * 5)], inits)
    return shape_fixture(graph, 13)


def computed_resize():
    """A detector's transform at opset 11: the image resized by a scale computed in float from
    its own shape (min(64 / shorter side, 100 / longer side), sizes floor(side x scale)), then
    padded to a multiple of 32 with pads computed through Ceil, then a convolution. Input 'image'
    [1, 3, 30, 40]: 64 / 30 is the scale, the sizes come to 64 x 85, padded to 64 x 96."""
    n = helper.make_node
    nodes = [
        n("Shape", ["image"], ["shape"], name="shape"),
        n("Slice", ["shape", "s2", "s4", "a0"], ["hw"], name="hw"),
        n("ReduceMin", ["hw"], ["short_i"], name="short", keepdims=0),
        n("ReduceMax", ["hw"], ["long_i"], name="long", keepdims=0),
        n("Cast", ["short_i"], ["short"], name="short_f", to=TensorProto.FLOAT),
        n("Cast", ["long_i"], ["long"], name="long_f", to=TensorProto.FLOAT),
        n("Div", ["min_size", "short"], ["s_short"], name="s_short"),
        n("Div", ["max_size", "long"], ["s_long"], name="s_long"),
        n("Min", ["s_short", "s_long"], ["scale"], name="scale"),
        n("Cast", ["hw"], ["hw_f"], name="hw_f", to=TensorProto.FLOAT),
        n("Mul", ["hw_f", "scale"], ["hw_scaled"], name="hw_scaled"),
        n("Floor", ["hw_scaled"], ["hw_floor"], name="hw_floor"),
        n("Cast", ["hw_floor"], ["hw_new"], name="hw_new", to=TensorProto.INT64),
        n("Slice", ["shape", "s0", "s2", "a0"], ["nc"], name="nc"),
        n("Concat", ["nc", "hw_new"], ["sizes"], name="sizes", axis=0),
        n("Resize", ["image", "roi", "no_scales", "sizes"], ["resized"], name="resize", mode="linear"),
        # padded to a multiple of 32: ceil(side / 32) * 32 - side at the end of each side
        n("Shape", ["resized"], ["r_shape"], name="r_shape"),
        n("Slice", ["r_shape", "s2", "s4", "a0"], ["r_hw"], name="r_hw"),
        n("Cast", ["r_hw"], ["r_hw_f"], name="r_hw_f", to=TensorProto.FLOAT),
        n("Div", ["r_hw_f", "stride"], ["blocks_f"], name="blocks_f"),
        n("Ceil", ["blocks_f"], ["blocks_c"], name="blocks_c"),
        n("Mul", ["blocks_c", "stride"], ["padded_f"], name="padded_f"),
        n("Cast", ["padded_f"], ["padded"], name="padded", to=TensorProto.INT64),
        n("Sub", ["padded", "r_hw"], ["extra"], name="extra"),
        n("Concat", ["zeros6", "extra"], ["pads"], name="pads", axis=0),
        n("Pad", ["resized", "pads"], ["batched"], name="pad"),
        n("Conv", ["batched", "w"], ["features"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    ]
    f = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype=np.float32), name)
    inits = [const_i64("s0", [0]), const_i64("s2", [2]), const_i64("s4", [4]), const_i64("a0", [0]),
             f("min_size", 64.0), f("max_size", 100.0), f("roi", np.zeros(0)), f("no_scales", np.zeros(0)),
             f("stride", 32.0), const_i64("zeros6", [0, 0, 0, 0, 0, 0]), weight("w", 8, 3, 3, 3)]
    graph = helper.make_graph(
        nodes, "computed_resize",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 30, 40])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [None] * 4)], inits)
    return shape_fixture(graph, 11)


def data_dependent():
    """A detector's head: the boxes whose score passes a threshold (NonZero), the boxes
    NonMaxSuppression keeps (at most INT64_MAX per class, as torchvision exports it), a TopK whose
    k = min(1000, boxes found) is computed from a data-dependent shape, a linear layer over each
    set of boxes, and an If on the data (the sum of the scores). Inputs 'scores' [1, 500] and
    'boxes' [1, 500, 4]."""
    n = helper.make_node
    then_branch = helper.make_graph(
        [n("Relu", ["feat"], ["t0"], name="relu"), n("Sigmoid", ["t0"], ["t_out"], name="sigmoid")], "then", [],
        [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [None] * 2)])
    else_branch = helper.make_graph(
        [n("Tanh", ["feat"], ["e_out"], name="tanh")], "else", [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [None] * 2)])
    nodes = [
        n("Greater", ["scores", "threshold"], ["passed"], name="passed"),
        n("NonZero", ["passed"], ["found"], name="nonzero"),
        n("Gather", ["found", "i1"], ["columns"], name="columns", axis=0),
        n("Gather", ["boxes", "i0"], ["boxes0"], name="boxes0", axis=0),
        n("Gather", ["boxes0", "columns"], ["picked"], name="picked", axis=0),
        n("MatMul", ["picked", "w"], ["feat"], name="box_linear"),
        n("Unsqueeze", ["scores", "axes0"], ["scores3"], name="scores3"),
        n("NonMaxSuppression", ["boxes", "scores3", "max_per_class", "iou"], ["selected"], name="nms"),
        n("Gather", ["selected", "i2"], ["kept"], name="kept", axis=1),
        n("Gather", ["boxes0", "kept"], ["kept_boxes"], name="kept_boxes", axis=0),
        n("MatMul", ["kept_boxes", "w"], ["kept_feat"], name="kept_linear"),
        n("Shape", ["picked"], ["picked_shape"], name="picked_shape"),
        n("Slice", ["picked_shape", "s0", "s1", "axes0"], ["picked_n"], name="picked_n"),
        n("Concat", ["k_max", "picked_n"], ["k_options"], name="k_options", axis=0),
        n("ReduceMin", ["k_options"], ["k"], name="k", keepdims=1),
        n("Gather", ["scores", "i0"], ["scores0"], name="scores0", axis=0),
        n("Gather", ["scores0", "columns"], ["picked_scores"], name="picked_scores", axis=0),
        n("TopK", ["picked_scores", "k"], ["top", "top_i"], name="topk"),
        n("ReduceSum", ["scores"], ["total"], name="total", keepdims=0),
        n("Greater", ["total", "zero_f"], ["positive"], name="positive"),
        n("If", ["positive"], ["gated"], name="if_data", then_branch=then_branch, else_branch=else_branch),
    ]
    f = lambda name, v: numpy_helper.from_array(np.asarray(v, dtype=np.float32), name)
    inits = [f("threshold", 0.5), const_i64("i0", 0), const_i64("i1", 1), const_i64("i2", 2),
             const_i64("axes0", [0]), const_i64("s0", [0]), const_i64("s1", [1]), const_i64("k_max", [1000]),
             const_i64("max_per_class", [np.iinfo(np.int64).max]), f("iou", [0.5]), f("zero_f", 0.0),
             weight("w", 4, 16)]
    graph = helper.make_graph(
        nodes, "data_dependent",
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 500]),
         helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, 500, 4])],
        [helper.make_tensor_value_info(t, TensorProto.FLOAT, [None] * r) for t, r in (("kept_feat", 2), ("top", 1), ("gated", 2))], inits)
    return shape_fixture(graph, 13)


def if_constant():
    """Scripted code's If on a shape: its condition (the batch, from Shape, equals the batch given
    in the graph's other input's Size) is known once the inputs are bound, and only the branch
    taken is costed. The then branch is a linear layer to 16 features, the else branch one to 4.
    Input 'x' [batch, 8]."""
    n = helper.make_node
    then_branch = helper.make_graph(
        [n("MatMul", ["x", "w16"], ["t0"], name="linear16"), n("Relu", ["t0"], ["t_out"], name="relu16")],
        "then", [], [helper.make_tensor_value_info("t_out", TensorProto.FLOAT, [None] * 2)])
    else_branch = helper.make_graph(
        [n("MatMul", ["x", "w4"], ["e_out"], name="linear4")],
        "else", [], [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, [None] * 2)])
    nodes = [
        n("Size", ["x"], ["count"], name="count"),
        n("Greater", ["count", "zero_i"], ["nonempty"], name="nonempty"),
        n("If", ["nonempty"], ["y"], name="if_nonempty", then_branch=then_branch, else_branch=else_branch),
        n("Sigmoid", ["y"], ["out"], name="after"),
    ]
    graph = helper.make_graph(
        nodes, "if_constant",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None] * 2)],
        [const_i64("zero_i", 0), weight("w16", 8, 16), weight("w4", 8, 4)])
    return shape_fixture(graph, 13)


def loop_constant():
    """Scripted code's Loop over a count known from shapes (the second input's length, 3): a
    recurrent state through a linear layer each iteration, its iteration number added, each
    iteration's state stacked as a scan output. Inputs 'h' [batch, 8] and 'steps' [batch, 3]."""
    n = helper.make_node
    body = helper.make_graph(
        [n("MatMul", ["h_in", "w"], ["z"], name="linear"),
         n("Relu", ["z"], ["r"], name="relu"),
         n("Cast", ["i"], ["i_f"], name="i_f", to=TensorProto.FLOAT),
         n("Add", ["r", "i_f"], ["h_out"], name="add_i"),
         n("Identity", ["cond_in"], ["cond_out"], name="cond"),
         n("Identity", ["h_out"], ["scan_out"], name="scan")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [None] * 2)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [None] * 2),
         helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [None] * 2)])
    nodes = [
        n("Shape", ["steps"], ["steps_shape"], name="steps_shape"),
        n("Gather", ["steps_shape", "i1"], ["trips"], name="trips", axis=0),
        n("Loop", ["trips", "true", "h"], ["h_last", "h_all"], name="loop", body=body),
        n("Tanh", ["h_last"], ["out"], name="after"),
    ]
    graph = helper.make_graph(
        nodes, "loop_constant",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, ["batch", 8]),
         helper.make_tensor_value_info("steps", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None] * 2),
         helper.make_tensor_value_info("h_all", TensorProto.FLOAT, [None] * 3)],
        [const_i64("i1", 1), numpy_helper.from_array(np.asarray(True), "true"), weight("w", 8, 8)])
    return shape_fixture(graph, 13)


def loop_on_data():
    """A Loop whose trip count is computed from the data (the scores above 0.5, counted): a
    recurrent state through a linear layer each iteration. Inputs 'h' [1, 8] and 'scores' [1, 50]."""
    n = helper.make_node
    body = helper.make_graph(
        [n("MatMul", ["h_in", "w"], ["z"], name="linear"),
         n("Relu", ["z"], ["h_out"], name="relu"),
         n("Identity", ["cond_in"], ["cond_out"], name="cond")],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [None] * 2)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [None] * 2)])
    nodes = [
        n("Greater", ["scores", "half"], ["passed"], name="passed"),
        n("Cast", ["passed"], ["passed_i"], name="passed_i", to=TensorProto.INT64),
        n("ReduceSum", ["passed_i"], ["trips"], name="trips", keepdims=0),
        n("Loop", ["trips", "", "h"], ["h_last"], name="loop", body=body),
        n("Tanh", ["h_last"], ["out"], name="after"),
    ]
    graph = helper.make_graph(
        nodes, "loop_on_data",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 8]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 50])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None] * 2)],
        [numpy_helper.from_array(np.asarray(0.5, dtype=np.float32), "half"), weight("w", 8, 8)])
    return shape_fixture(graph, 13)


def unevaluated_shape():
    """A Reshape whose target comes from an op the importer does not evaluate (CumSum over
    constants): not data-dependent, so the model is refused, naming the Reshape and what it read.
    Input 'x' [1, 6]."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("CumSum", ["parts", "axis0"], ["target"], name="cumsum"),
         n("Reshape", ["x", "target"], ["r"], name="reshape"),
         n("MatMul", ["r", "w"], ["y"], name="linear")],
        "unevaluated_shape",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 2)],
        [const_i64("parts", [2, 1]), const_i64("axis0", 0), weight("w", 3, 4)])
    return shape_fixture(graph, 13)
