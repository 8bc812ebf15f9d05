#!/usr/bin/python3
"""Writes the small ONNX files the importer's unit tests read (tests/estimate/data/onnx/).

Run with an interpreter that has the onnx package:  python3 scripts/make_onnx_fixtures.py
(--only NAME.onnx ... writes just those files).
The graphs (the package onnx_fixtures/ beside this script) are built node by node with
onnx.helper, so each test knows exactly which ops, shapes and fusions to expect. Weights are
random (the importer reads only their shapes, but the files should look like real models). Malformed files cover what users actually hand in:
a truncated download, a file that is not ONNX at all, an empty file, a model without a graph,
and a graph that reads a tensor nothing defines.
"""
import argparse
import os

import onnx
from onnx import helper

from onnx_fixtures.importer_graphs import (broadcast_table, conv_variants, dangling, fixed_batch, gelu_tanh,
                                           kv_cache, no_schema, shuffle_chain, tiny_cnn, tiny_transformer,
                                           transposes, unnamed_dynamic)
from onnx_fixtures.shape_code import (computed_reshape, computed_resize, data_dependent, if_constant,
                                      loop_constant, loop_on_data, unevaluated_shape)


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
