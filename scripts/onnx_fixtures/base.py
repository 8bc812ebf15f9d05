"""What every fixture graph is built from: the one random generator (its draws, in the order the
files are built, make the weights, so the files come out the same on every run), weights,
constants and the model wrapper."""
import numpy as np
import onnx
from onnx import helper, numpy_helper

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
