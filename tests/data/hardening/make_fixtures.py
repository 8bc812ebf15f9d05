#!/usr/bin/python3
"""Writes the malformed inputs of the hardening tests (tests/data/hardening/): each one once
crashed truepeak or passed an absurd figure as a result, and stays as a regression case (the
CLI tests and the fuzz seed corpus read them).

Run with Debian's python3-onnx:  /usr/bin/python3 tests/data/hardening/make_fixtures.py
The ONNX files are not checked (the checker refuses most of them, which is the point); each is a
small valid protobuf whose graph breaks one operator rule.
"""
import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(7)
F = TensorProto.FLOAT


def weight(name, *dims):
    return numpy_helper.from_array(RNG.standard_normal(dims).astype(np.float32), name)


def model(nodes, inputs, outputs, inits, opset=13):
    graph = helper.make_graph(nodes, "hardening", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="truepeak-hardening", ir_version=8)


def conv(name="conv", x_dims=("batch", 4, 8, 8), w_dims=(8, 4, 3, 3), **attrs):
    """One Conv over 'x' with weight 'w'."""
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name=name, **attrs)],
                 [helper.make_tensor_value_info("x", F, list(x_dims))],
                 [helper.make_tensor_value_info("y", F, None)],
                 [weight("w", *w_dims)])


def conv_qdq_input_rank2(op="DequantizeLinear"):
    """A Conv on a 2-D input whose weight is an `op` (DequantizeLinear; an op without a schema,
    whose output's shape the import assumes) of an int8 initializer, no kernel_shape."""
    w = helper.make_tensor("wq", onnx.TensorProto.INT8, [8, 4, 3, 3], [1] * (8 * 4 * 3 * 3))
    scale = helper.make_tensor("scale", F, [], [0.1])
    return model([helper.make_node(op, ["wq", "scale"], ["w"], name="dq"),
                  helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                 [helper.make_tensor_value_info("x", F, ["batch", 113])],
                 [helper.make_tensor_value_info("y", F, None)], [w, scale])


def conv_constant_input_rank2():
    """A Conv on a 2-D input whose weight is a Constant node, no kernel_shape."""
    value = helper.make_tensor("wv", F, [8, 4, 3, 3], [0.5] * (8 * 4 * 3 * 3))
    return model([helper.make_node("Constant", [], ["w"], name="const", value=value),
                  helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                 [helper.make_tensor_value_info("x", F, ["batch", 113])],
                 [helper.make_tensor_value_info("y", F, None)], [])


def pool(op="MaxPool", **attrs):
    return model([helper.make_node(op, ["x"], ["y"], name="pool", **attrs)],
                 [helper.make_tensor_value_info("x", F, ["batch", 4, 8, 8])],
                 [helper.make_tensor_value_info("y", F, None)], [])


def matmul_negative_dim():
    """A MatMul whose weight initializer says dims [64, -64] (and holds no data)."""
    w = onnx.TensorProto()
    w.name = "w"
    w.data_type = F
    w.dims.extend([64, -64])
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
                 [helper.make_tensor_value_info("x", F, ["batch", 64])],
                 [helper.make_tensor_value_info("y", F, None)], [w])


def gemm_huge():
    """A Gemm whose weight says [2^40, 2^40]: the products of its shapes overflow 64 bits."""
    w = onnx.TensorProto()
    w.name = "w"
    w.data_type = F
    w.dims.extend([1 << 40, 1 << 40])
    return model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
                 [helper.make_tensor_value_info("x", F, ["batch", 1 << 40])],
                 [helper.make_tensor_value_info("y", F, None)], [w])


ONNX = {
    "conv_strides0": lambda: conv(kernel_shape=[3, 3], strides=[0, 0]),
    "maxpool_strides0": lambda: pool(kernel_shape=[2, 2], strides=[0, 0]),
    "avgpool_strides0_same": lambda: pool("AveragePool", kernel_shape=[2, 2], strides=[0, 0], auto_pad="SAME_UPPER"),
    "conv_same_strides0": lambda: conv(kernel_shape=[3, 3], strides=[0, 0], auto_pad="SAME_UPPER"),
    "conv_kernel_too_big": lambda: conv(x_dims=("batch", 4, 4, 4), w_dims=(8, 4, 9, 9), kernel_shape=[9, 9]),
    "conv_pads_negative": lambda: conv(kernel_shape=[3, 3], pads=[-5, -5, -5, -5]),
    "conv_strides_negative": lambda: conv(kernel_shape=[3, 3], strides=[-1, -1]),
    "conv_group0": lambda: conv(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=0),
    "conv_group_mismatch": lambda: conv(kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=3),
    "conv_dilations0": lambda: conv(kernel_shape=[3, 3], dilations=[0, 0]),
    "conv_input_rank2": lambda: conv(x_dims=("batch", 113), group=2, pads=[1, 1, 1, 1]),
    "conv_qdq_input_rank2": conv_qdq_input_rank2,
    "conv_unknown_op_input_rank2": lambda: conv_qdq_input_rank2("NoSuchOp"),
    "conv_constant_input_rank2": conv_constant_input_rank2,
    "maxpool_kernel0": lambda: pool(kernel_shape=[0, 0]),
    "maxpool_no_kernel": lambda: pool(),
    "matmul_negative_dim": matmul_negative_dim,
    "matmul_huge": gemm_huge,
}

# Model JSON files: a graph with one bad field each.
IMAGE = [{"name": "image", "shape": ["N", 3, 32, 32]}]
JSON = {
    "maxpool_stride0": {"format": "truepeak-model", "name": "maxpool_stride0", "inputs": IMAGE,
                        "ops": [{"name": "pool", "op": "maxpool", "in": ["image"], "kernel": 2, "stride": 0}]},
    "maxpool_pad_negative": {"format": "truepeak-model", "name": "maxpool_pad_negative", "inputs": IMAGE,
                             "ops": [{"name": "pool", "op": "maxpool", "in": ["image"], "kernel": 2, "pad": -3}]},
    "conv_kernel0": {"format": "truepeak-model", "name": "conv_kernel0", "inputs": IMAGE,
                     "ops": [{"name": "conv", "op": "conv", "in": ["image"], "out_channels": 8, "kernel": 0}]},
    "huge_dim": {"format": "truepeak-model", "name": "huge_dim",
                 "inputs": [{"name": "x", "shape": ["N", 9223372036854775000]}],
                 "ops": [{"name": "fc", "op": "linear", "in": ["x"], "out_features": 16}]},
    "huge_product": {"format": "truepeak-model", "name": "huge_product",
                     "inputs": [{"name": "x", "shape": ["N", 3037000500, 3037000500]}],
                     "ops": [{"name": "act", "op": "relu", "in": ["x"]}]},
    "huge_symbolic": {"format": "truepeak-model", "name": "huge_symbolic",
                      "inputs": [{"name": "x", "shape": ["N", "4294967296*4294967296"]}],
                      "ops": [{"name": "act", "op": "relu", "in": ["x"]}]},
    "unknown_fn": {"format": "truepeak-model", "name": "unknown_fn", "inputs": IMAGE,
                   "ops": [{"name": "act", "op": "elementwise", "fn": "frobnicate", "in": ["image"]}]},
    "transformer_heads0": {"format": "truepeak-model", "name": "transformer_heads0",
                           "transformer": {"architecture": "encoder", "layers": 2, "hidden": 64, "heads": 0,
                                           "vocab": 100, "seq_len": 16}},
}

# Written as text: a number past the range of a double, which no JSON writer emits.
RAW = {
    "number_overflow.json": '{"format": "truepeak-model", "name": "m", "reference": {"macs": 7.6e915}, '
                            '"inputs": [{"name": "x", "shape": ["N", 4]}], "ops": [{"name": "a", "op": "relu", '
                            '"in": ["x"]}]}\n',
    "profile_number_overflow.json": '{"schema_version": "1.0", "machine": {"memory_bytes": 1e999}}\n',
}


def main():
    for name, make in ONNX.items():
        with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
            f.write(make().SerializeToString())
    for name, doc in JSON.items():
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    for name, text in RAW.items():
        with open(os.path.join(HERE, name), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
