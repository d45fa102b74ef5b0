"""ONNX graphs the tests score: a model trained elsewhere on raw values (with the table it reads), and hostile
graphs whose cost the bounds must catch before a session runs them."""

from __future__ import annotations

import numpy as np
import onnx
import pandas as pd
from onnx import TensorProto, helper, numpy_helper

CATEGORIES = ["?", "Private", "Self-emp", "State-gov"]  # "?" a category of its own, as pandas reads UCI Adult


def census(n: int = 1200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["Male", "Female"], n)
    workclass = rng.choice(CATEGORIES, n, p=[0.15, 0.55, 0.2, 0.1])
    score = 0.8 * (sex == "Male") + np.select([workclass == "?", workclass == "Self-emp"], [-1.5, 0.7], 0.0)
    income = np.where(rng.random(n) < 1 / (1 + np.exp(-(score - 0.3))), ">50K", "<=50K")
    return pd.DataFrame({"age": rng.integers(18, 70, n), "workclass": workclass, "sex": sex, "income": income})


def external_model() -> onnx.ModelProto:
    """logit = w[one-hot of workclass over CATEGORIES] − 0.2: a linear model trained elsewhere on the raw values."""
    nodes = [helper.make_node("Equal", ["workclass", "cats"], ["hit"]),
             helper.make_node("Cast", ["hit"], ["hit_f"], to=TensorProto.FLOAT),
             helper.make_node("MatMul", ["hit_f", "w"], ["f"]),
             helper.make_node("Add", ["f", "b"], ["logit"])]
    inits = [helper.make_tensor("cats", TensorProto.STRING, [1, 4], [c.encode() for c in CATEGORIES]),
             helper.make_tensor("w", TensorProto.FLOAT, [4, 1], [1.0, 0.1, 0.9, 0.3]),
             helper.make_tensor("b", TensorProto.FLOAT, [1], [-0.2])]
    graph = helper.make_graph(nodes, "elsewhere", [helper.make_tensor_value_info("workclass", TensorProto.STRING,
                                                                                 ["N", 1])],
                              [helper.make_tensor_value_info("logit", TensorProto.FLOAT, ["N", 1])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9,
                             producer_name="skl2onnx")


IN = helper.make_tensor_value_info("age", TensorProto.DOUBLE, ["N", 1])


def model_of(nodes, output: str, shape, initializers=(), ml: bool = False) -> onnx.ModelProto:
    axis = [numpy_helper.from_array(np.array([1], np.int64), "axis1")]  # ReduceMean's axes (an input since opset 18)
    graph = helper.make_graph(nodes, "g", [IN], [helper.make_tensor_value_info(output, TensorProto.DOUBLE, shape)],
                              initializer=list(initializers) + axis)
    opsets = [helper.make_opsetid("", 19)] + ([helper.make_opsetid("ai.onnx.ml", 3)] if ml else [])
    return helper.make_model(graph, opset_imports=opsets, ir_version=9)


def outer_product_chain(layers: int = 400) -> onnx.ModelProto:
    """age · ageᵀ (N × N), then ``layers`` × (MatMul with itself, Tanh): the review's 19 KB graph."""
    nodes = [helper.make_node("Transpose", ["age"], ["row"], perm=[1, 0]),
             helper.make_node("MatMul", ["age", "row"], ["h0"])]
    for i in range(layers):
        nodes += [helper.make_node("MatMul", [f"h{i}", f"h{i}"], [f"m{i}"]),
                  helper.make_node("Tanh", [f"m{i}"], [f"h{i + 1}"])]
    nodes.append(helper.make_node("ReduceMean", [f"h{layers}", "axis1"], ["logit"], keepdims=1))
    return model_of(nodes, "logit", ["N", 1])


def concat_doubling(depth: int = 16) -> onnx.ModelProto:
    """``depth`` chained Concat(x, x, axis=1): the column count doubles at each node (the review's 711 bytes)."""
    nodes = [helper.make_node("Concat", [f"c{i}" if i else "age"] * 2, [f"c{i + 1}"], axis=1) for i in range(depth)]
    nodes.append(helper.make_node("ReduceMean", [f"c{depth}", "axis1"], ["logit"], keepdims=1))
    return model_of(nodes, "logit", ["N", 1])


def wide_matmuls(width: int, layers: int) -> onnx.ModelProto:
    """age → [N, width], then ``layers`` products with one stored width × width matrix: N·width² each."""
    w0 = numpy_helper.from_array(np.ones((1, width)), "w0")
    w = numpy_helper.from_array(np.eye(width), "w")
    nodes = [helper.make_node("MatMul", ["age", "w0"], ["h0"])]
    nodes += [helper.make_node("MatMul", [f"h{i}", "w"], [f"h{i + 1}"]) for i in range(layers)]
    nodes.append(helper.make_node("ReduceMean", [f"h{layers}", "axis1"], ["logit"], keepdims=1))
    return model_of(nodes, "logit", ["N", 1], [w0, w])
