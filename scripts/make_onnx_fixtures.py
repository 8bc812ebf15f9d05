#!/usr/bin/python3
"""Writes the small ONNX files the importer's unit tests read (tests/estimate/data/onnx/).

Run with an interpreter that has the onnx package:  python3 scripts/make_onnx_fixtures.py
(--only NAME.onnx ... writes just those files).
The graphs are built node by node with onnx.helper, so each test knows exactly which ops,
shapes and fusions to expect. Weights are random (the importer reads only their shapes, but
the files should look like real models). Malformed files cover what users actually hand in:
a truncated download, a file that is not ONNX at all, an empty file, a model without a graph,
and a graph that reads a tensor nothing defines.
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(5)


def weight(name, *dims):
    return numpy_helper.from_array(RNG.standard_normal(dims).astype(np.float32), name)


def const_i64(name, values):
    return numpy_helper.from_array(np.asarray(values, dtype=np.int64), name)


def scalar(name, value):
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def model_of(graph, opset):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="truepeak-fixtures")
    onnx.checker.check_model(model)
    return model


def tiny_cnn():
    """Conv+BN+ReLU, max pool, depthwise strided conv, ReLU6 (Clip), global pool, Gemm.
    Input 'image' [batch, 3, 32, 32] with a named dynamic batch."""
    n = helper.make_node
    nodes = [
        n("Conv", ["image", "c1.w"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", "bn.s", "bn.b", "bn.m", "bn.v"], ["b1"], name="bn1"),
        n("Relu", ["b1"], ["r1"], name="relu1"),
        n("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        n("Conv", ["p1", "c2.w", "c2.b"], ["c2"], name="dwconv", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          strides=[2, 2], group=8),
        n("Clip", ["c2", "zero", "six"], ["r2"], name="relu6"),
        n("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten", axis=1),
        n("Gemm", ["f", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    inits = [weight("c1.w", 8, 3, 3, 3), weight("bn.s", 8), weight("bn.b", 8), weight("bn.m", 8),
             numpy_helper.from_array(np.abs(RNG.standard_normal(8)).astype(np.float32) + 0.5, "bn.v"),
             weight("c2.w", 8, 1, 3, 3), weight("c2.b", 8), scalar("zero", 0.0), scalar("six", 6.0),
             weight("fc.w", 10, 8), weight("fc.b", 10)]
    graph = helper.make_graph(
        nodes, "tiny_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], inits)
    return model_of(graph, 13)


def tiny_transformer():
    """One pre-norm transformer block as exporters write it at opset 13: embedding Gather,
    LayerNorm decomposed into ReduceMean/Sub/Pow/Sqrt/Div, MatMul+Add linears, heads split by a
    Reshape whose shape comes from a Shape->Gather->Concat chain, K transposed for Q.K^T, erf
    GELU decomposed, and one Einsum (a node type the importer does not map).
    Inputs: 'input_ids' [batch, sequence] int64."""
    d, h, hd, ff, vocab = 16, 2, 8, 32, 100
    n = helper.make_node
    nodes = [
        n("Gather", ["wte", "input_ids"], ["x0"], name="embed"),
        # LayerNorm, decomposed
        n("ReduceMean", ["x0"], ["mu"], name="ln/mean", axes=[-1]),
        n("Sub", ["x0", "mu"], ["xc"], name="ln/sub"),
        n("Pow", ["xc", "two"], ["xc2"], name="ln/pow"),
        n("ReduceMean", ["xc2"], ["var"], name="ln/var", axes=[-1]),
        n("Add", ["var", "eps"], ["var_eps"], name="ln/add_eps"),
        n("Sqrt", ["var_eps"], ["std"], name="ln/sqrt"),
        n("Div", ["xc", "std"], ["xn"], name="ln/div"),
        n("Mul", ["xn", "ln.g"], ["xg"], name="ln/mul"),
        n("Add", ["xg", "ln.b"], ["x1"], name="ln/add"),
        # QKV projection with a bias epilogue
        n("MatMul", ["x1", "qkv.w"], ["qkv0"], name="qkv"),
        n("Add", ["qkv0", "qkv.b"], ["qkv1"], name="qkv/bias"),
        n("Split", ["qkv1"], ["q0", "k0", "v0"], name="split", axis=-1),
        # [B, S, H, hd] from a shape computed in the graph
        n("Shape", ["input_ids"], ["ids_shape"], name="shape"),
        n("Gather", ["ids_shape", "idx0"], ["b_dim"], name="shape/batch", axis=0),
        n("Gather", ["ids_shape", "idx1"], ["s_dim"], name="shape/seq", axis=0),
        n("Unsqueeze", ["b_dim", "axes0"], ["b_1"], name="shape/unsq_b"),
        n("Unsqueeze", ["s_dim", "axes0"], ["s_1"], name="shape/unsq_s"),
        n("Concat", ["b_1", "s_1", "heads"], ["split_shape"], name="shape/concat", axis=0),
        n("Reshape", ["q0", "split_shape"], ["q1"], name="q/reshape"),
        n("Reshape", ["k0", "split_shape"], ["k1"], name="k/reshape"),
        n("Reshape", ["v0", "split_shape"], ["v1"], name="v/reshape"),
        n("Transpose", ["q1"], ["q"], name="q/transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["k1"], ["k"], name="k/transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["v1"], ["v"], name="v/transpose", perm=[0, 2, 1, 3]),
        n("Transpose", ["k"], ["kt"], name="k/transpose_last", perm=[0, 1, 3, 2]),
        n("MatMul", ["q", "kt"], ["scores0"], name="scores"),
        n("Div", ["scores0", "sqrt_hd"], ["scores"], name="scale"),
        n("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "v"], ["ctx0"], name="context"),
        n("Transpose", ["ctx0"], ["ctx1"], name="ctx/transpose", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merge_shape"], ["ctx"], name="ctx/reshape"),
        n("MatMul", ["ctx", "proj.w"], ["proj0"], name="proj"),
        n("Add", ["proj0", "proj.b"], ["proj1"], name="proj/bias"),
        n("Add", ["x0", "proj1"], ["x2"], name="residual"),
        # MLP with erf GELU, decomposed
        n("MatMul", ["x2", "fc1.w"], ["f0"], name="fc1"),
        n("Add", ["f0", "fc1.b"], ["f1"], name="fc1/bias"),
        n("Div", ["f1", "sqrt2"], ["g0"], name="gelu/div"),
        n("Erf", ["g0"], ["g1"], name="gelu/erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu/add"),
        n("Mul", ["f1", "g2"], ["g3"], name="gelu/mul"),
        n("Mul", ["g3", "half"], ["g4"], name="gelu/mul_half"),
        n("MatMul", ["g4", "fc2.w"], ["f2"], name="fc2"),
        n("Add", ["f2", "fc2.b"], ["f3"], name="fc2/bias"),
        n("Add", ["x2", "f3"], ["x3"], name="residual2"),
        n("Einsum", ["x3", "mix.w"], ["out"], name="mix", equation="bsd,de->bse"),
    ]
    inits = [weight("wte", vocab, d), scalar("two", 2.0), scalar("eps", 1e-5), weight("ln.g", d),
             weight("ln.b", d), weight("qkv.w", d, 3 * d), weight("qkv.b", 3 * d),
             const_i64("idx0", 0), const_i64("idx1", 1), const_i64("axes0", [0]), const_i64("heads", [h, hd]),
             scalar("sqrt_hd", np.sqrt(hd)), const_i64("merge_shape", [0, 0, d]), weight("proj.w", d, d),
             weight("proj.b", d), weight("fc1.w", d, ff), weight("fc1.b", ff), scalar("sqrt2", np.sqrt(2.0)),
             scalar("one", 1.0), scalar("half", 0.5), weight("fc2.w", ff, d), weight("fc2.b", d),
             weight("mix.w", d, d)]
    graph = helper.make_graph(
        nodes, "tiny_transformer",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", "sequence", d])], inits)
    return model_of(graph, 13)


def unnamed_dynamic():
    """An image input whose height and width are dynamic without a name: needs --input-shape."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[1, 1]), n("Relu", ["y"], ["z"], name="relu")],
        "unnamed_dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, None, None])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 4, None, None])], [weight("w", 4, 4, 1, 1)])
    return model_of(graph, 13)


def fixed_batch(batch=1):
    """Exported for one batch: the batch is a number in the file."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[1, 1])], "fixed_batch",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 4, 8, 8])], [weight("w", 4, 4, 1, 1)])
    return model_of(graph, 13)


def broadcast_table():
    """A position table given as an input of batch 1, added to every sample. Inputs 'x'
    [batch, 16, 8] and 'pos' [1, 16, 8]."""
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "pos"], ["y"], name="add_pos")], "broadcast_table",
        [helper.make_tensor_value_info("x", f, ["batch", 16, 8]), helper.make_tensor_value_info("pos", f, [1, 16, 8])],
        [helper.make_tensor_value_info("y", f, ["batch", 16, 8])])
    return model_of(graph, 13)


def dangling():
    """A node reads a tensor that nothing defines (skips the checker on purpose)."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Relu", ["missing"], ["y"], name="relu")], "dangling",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def shuffle_chain(blocks=12):
    """ShuffleNet's channel shuffles, `blocks` in a row: each block's Reshape targets come from the
    Shape of the block before (channels // groups through Div and Cast), so each becomes known
    only once the block before it is folded. Input 'x' [batch, 8, 4, 4]."""
    n = helper.make_node
    nodes, inits = [], [const_i64("i0", 0), const_i64("i1", 1), const_i64("i2", 2), const_i64("i3", 3),
                        const_i64("two", 2), const_i64("two_1", [2]), const_i64("axes0", [0]),
                        weight("w", 8, 8, 1, 1)]
    x = "x"
    for b in range(blocks):
        p = f"s{b}/"
        nodes += [n("Conv", [x, "w"], [p + "conv"], name=p + "conv", kernel_shape=[1, 1]),
                  n("Shape", [p + "conv"], [p + "shape"], name=p + "shape")]
        for i, dim in enumerate(("n", "c", "h", "w")):
            nodes += [n("Gather", [p + "shape", f"i{i}"], [p + dim], name=p + "gather_" + dim, axis=0),
                      n("Unsqueeze", [p + dim, "axes0"], [p + dim + "_1"], name=p + "unsq_" + dim)]
        nodes += [n("Div", [p + "c", "two"], [p + "cg_div"], name=p + "div"),
                  n("Cast", [p + "cg_div"], [p + "cg"], name=p + "cast", to=TensorProto.INT64),
                  n("Unsqueeze", [p + "cg", "axes0"], [p + "cg_1"], name=p + "unsq_cg"),
                  n("Concat", [p + "n_1", "two_1", p + "cg_1", p + "h_1", p + "w_1"], [p + "shape5"],
                    name=p + "concat5", axis=0),
                  n("Reshape", [p + "conv", p + "shape5"], [p + "r5"], name=p + "reshape5"),
                  n("Transpose", [p + "r5"], [p + "t"], name=p + "transpose", perm=[0, 2, 1, 3, 4]),
                  n("Concat", [p + "n_1", p + "c_1", p + "h_1", p + "w_1"], [p + "shape4"], name=p + "concat4",
                    axis=0),
                  n("Reshape", [p + "t", p + "shape4"], [p + "r4"], name=p + "reshape4"),
                  n("Relu", [p + "r4"], [p + "out"], name=p + "relu")]
        x = p + "out"
    graph = helper.make_graph(
        nodes, "shuffle_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 4, 4])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", 8, 4, 4])], inits)
    return model_of(graph, 13)


def gelu_tanh():
    """A linear and GELU's tanh approximation as PyTorch exports it (GPT-2's), decomposed into
    Pow, Mul, Add and Tanh nodes. Input 'x' [batch, 8]."""
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w"], ["h"], name="fc"),
        n("Pow", ["h", "three"], ["h3"], name="gelu/pow"),
        n("Mul", ["h3", "c"], ["h3c"], name="gelu/mul_c"),
        n("Add", ["h", "h3c"], ["inner"], name="gelu/add_inner"),
        n("Mul", ["inner", "k"], ["scaled"], name="gelu/mul_k"),
        n("Tanh", ["scaled"], ["t"], name="gelu/tanh"),
        n("Add", ["t", "one"], ["t1"], name="gelu/add_one"),
        n("Mul", ["h", "t1"], ["ht"], name="gelu/mul_x"),
        n("Mul", ["ht", "half"], ["y"], name="gelu/mul_half"),
    ]
    inits = [weight("w", 8, 8), scalar("three", 3.0), scalar("c", 0.044715), scalar("k", 0.7978845608),
             scalar("one", 1.0), scalar("half", 0.5)]
    graph = helper.make_graph(
        nodes, "gelu_tanh",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], inits)
    return model_of(graph, 13)


def transposes():
    """Transposes that keep the innermost axis (heads split apart) and that move it (a key laid out
    [heads, 8, tokens], and the axes reversed by a Transpose without perm)."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Transpose", ["x"], ["heads"], name="heads", perm=[0, 2, 1, 3]),
         n("Transpose", ["x"], ["key"], name="key", perm=[0, 2, 3, 1]),
         n("Transpose", ["x"], ["reversed"], name="reversed")],
        "transposes",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 5, 2, 8])],
        [helper.make_tensor_value_info("heads", TensorProto.FLOAT, ["batch", 2, 5, 8]),
         helper.make_tensor_value_info("key", TensorProto.FLOAT, ["batch", 2, 8, 5]),
         helper.make_tensor_value_info("reversed", TensorProto.FLOAT, [8, 2, 5, "batch"])])
    return model_of(graph, 13)


def no_schema():
    """Nodes this ONNX library has no schema for, so no shape inference: an op of a custom domain
    feeding a Conv, Gelu (opset 20, newer than the library) feeding a ReLU, a custom op that
    reads token ids before an activation, and one that reads the indices NonZero finds (a shape
    known only at run time). Inputs 'x' [batch, 8, 16, 16] and 'ids' [batch, 5]."""
    n = helper.make_node
    graph = helper.make_graph(
        [n("Foo", ["x"], ["f"], name="custom", domain="custom.ops"),
         n("Conv", ["f", "w"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         n("Gelu", ["c"], ["g"], name="gelu"),
         n("Relu", ["g"], ["r"], name="relu"),
         n("Add", ["r", "shift"], ["y"], name="shift"),
         n("Mix", ["ids", "r"], ["m"], name="mix", domain="custom.ops"),
         n("Sigmoid", ["m"], ["s"], name="after_mix"),
         n("NonZero", ["x"], ["nz"], name="nonzero"),
         n("Pick", ["x", "nz"], ["p"], name="pick", domain="custom.ops"),
         n("Relu", ["p"], ["pr"], name="after_pick")],
        "no_schema",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 16, 16]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("pr", TensorProto.FLOAT, None)],
        [weight("w", 8, 8, 3, 3), weight("shift", 8, 1, 1)])
    # Not checked: the checker of this ONNX library knows neither op.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("custom.ops", 1)],
                             producer_name="truepeak-fixtures", ir_version=9)


def conv_variants():
    """Convolutions and pools with the attributes that change their cost: dilations, asymmetric
    pads, auto_pad, a 1-D convolution, a bias added by its own node; and Sigmoid, AveragePool, a
    standalone BatchNormalization, LayerNormalization, a Constant node and Slice. Inputs 'image'
    [batch, 4, 16, 16] and 'signal' [batch, 4, 32]."""
    n = helper.make_node
    nodes = [
        n("Conv", ["image", "d.w"], ["d"], name="dilated", kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2]),
        n("Add", ["d", "d.b"], ["db"], name="dilated_bias"),
        n("Sigmoid", ["db"], ["s"], name="sigmoid"),
        n("BatchNormalization", ["s", "bn.s", "bn.b", "bn.m", "bn.v"], ["bn"], name="bn"),
        n("AveragePool", ["bn"], ["a"], name="avgpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("Conv", ["a", "same.w"], ["same"], name="same", kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
        n("Conv", ["a", "asym.w"], ["asym"], name="asym", kernel_shape=[2, 2], pads=[0, 0, 1, 1]),
        n("Constant", [], ["starts"], name="starts", value=const_i64("starts_value", [0])),
        n("Slice", ["asym", "starts", "ends", "axes"], ["sliced"], name="slice"),
        n("Conv", ["signal", "c1d.w", "c1d.b"], ["c1d"], name="conv1d", kernel_shape=[5], pads=[2, 2], strides=[2]),
        n("LayerNormalization", ["c1d", "ln.s", "ln.b"], ["ln"], name="layernorm", axis=-1),
    ]
    inits = [weight("d.w", 8, 4, 3, 3), weight("d.b", 1, 8, 1, 1), weight("bn.s", 8), weight("bn.b", 8),
             weight("bn.m", 8), numpy_helper.from_array(np.abs(RNG.standard_normal(8)).astype(np.float32) + 0.5, "bn.v"),
             weight("same.w", 8, 8, 3, 3), weight("asym.w", 8, 8, 2, 2), const_i64("ends", [4]), const_i64("axes", [1]),
             weight("c1d.w", 6, 4, 5), weight("c1d.b", 6), weight("ln.s", 16), weight("ln.b", 16)]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes, "conv_variants",
        [helper.make_tensor_value_info("image", f, ["batch", 4, 16, 16]),
         helper.make_tensor_value_info("signal", f, ["batch", 4, 32])],
        [helper.make_tensor_value_info("same", f, ["batch", 8, 4, 4]),
         helper.make_tensor_value_info("sliced", f, ["batch", 4, 8, 8]),
         helper.make_tensor_value_info("ln", f, ["batch", 6, 16])], inits)
    return model_of(graph, 17)


def kv_cache():
    """One decode step's cache update: the new token's keys appended to the cached ones, and a mask
    over the cache and the new token. Inputs 'key' [batch, 2, 1, 4], 'past_key' [batch, 2,
    past_sequence_length, 4] and 'mask' [batch, past_sequence_length + 1]."""
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("Concat", ["past_key", "key"], ["present_key"], name="append", axis=2),
         helper.make_node("Sigmoid", ["mask"], ["gate"], name="gate")],
        "kv_cache",
        [helper.make_tensor_value_info("key", f, ["batch", 2, 1, 4]),
         helper.make_tensor_value_info("past_key", f, ["batch", 2, "past_sequence_length", 4]),
         helper.make_tensor_value_info("mask", f, ["batch", "past_sequence_length + 1"])],
        [helper.make_tensor_value_info("present_key", f, ["batch", 2, "total_sequence_length", 4]),
         helper.make_tensor_value_info("gate", f, ["batch", "past_sequence_length + 1"])])
    return model_of(graph, 13)


# Shape code as exporters write it (issue #40): each graph below computes a shape inside the
# graph or from its data, as a pattern of the torchvision exports does.

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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "estimate",
                                                      "data", "onnx"))
    parser.add_argument("--only", nargs="*", default=None, metavar="FILE",
                        help="write only these files (e.g. computed_resize.onnx); the others are left as they are")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    def write(name, data):
        if args.only is not None and name not in args.only:
            return
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)

    cnn = tiny_cnn().SerializeToString()
    write("tiny_cnn.onnx", cnn)
    write("tiny_transformer.onnx", tiny_transformer().SerializeToString())
    write("unnamed_dynamic.onnx", unnamed_dynamic().SerializeToString())
    write("fixed_batch.onnx", fixed_batch().SerializeToString())
    write("dangling.onnx", dangling().SerializeToString())
    write("shuffle_chain.onnx", shuffle_chain().SerializeToString())
    write("gelu_tanh.onnx", gelu_tanh().SerializeToString())
    write("transposes.onnx", transposes().SerializeToString())
    write("no_schema.onnx", no_schema().SerializeToString())
    write("conv_variants.onnx", conv_variants().SerializeToString())
    write("kv_cache.onnx", kv_cache().SerializeToString())
    write("fixed_batch4.onnx", fixed_batch(4).SerializeToString())
    write("broadcast_table.onnx", broadcast_table().SerializeToString())
    write("truncated.onnx", cnn[: len(cnn) * 2 // 3])
    write("not_onnx.onnx", b"# a text file someone renamed to .onnx\nlayers: 3\n")
    write("empty.onnx", b"")
    for name, build in (("computed_reshape.onnx", computed_reshape), ("computed_resize.onnx", computed_resize),
                        ("data_dependent.onnx", data_dependent), ("if_constant.onnx", if_constant),
                        ("loop_constant.onnx", loop_constant), ("loop_on_data.onnx", loop_on_data),
                        ("unevaluated_shape.onnx", unevaluated_shape)):
        if args.only is None or name in args.only:
            write(name, build().SerializeToString())
    no_graph = onnx.ModelProto()
    no_graph.ir_version = 8
    no_graph.opset_import.append(helper.make_opsetid("", 13))
    write("no_graph.onnx", no_graph.SerializeToString())


if __name__ == "__main__":
    main()
