"""The graphs of the importer's tests: op mapping and fusions (a CNN, a transformer block, GELU's
tanh form, transposes, convolution variants), input binding (dynamic, fixed and summed
dimensions, a broadcast table), ops without a schema, and a graph that reads an undefined tensor."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from .base import RNG, const_i64, model_of, scalar, weight


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
