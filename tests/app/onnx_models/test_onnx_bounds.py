"""ONNX graphs that would hold a worker for hours or take gigabytes are refused from their inferred shapes
before any session exists (app.onnx_models.bounds); stored tensors hold exactly prod(dims) × itemsize bytes;
a model onnxruntime cannot load is refused quoting onnxruntime. Each hostile graph is a few hundred bytes,
built with onnx.helper."""
from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from app.audits.model_file import ModelError
from app.onnx_models.bounds import GraphLimits, graph_cost
from app.onnx_models.check import describe, load_checked
from app.onnx_models.scorer import BLOCK_ROWS
from app.api.routes.models import probe_session
from app.core.settings import Settings
from tests.support.onnx_graphs import concat_doubling, model_of, outer_product_chain, wide_matmuls


LIMITS = GraphLimits.from_settings(Settings())



def written(tmp_path, model: onnx.ModelProto):
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def test_the_hostile_graphs_are_small_and_pass_the_operator_checks(tmp_path):
    for model in (outer_product_chain(), concat_doubling()):
        assert len(model.SerializeToString()) < 20_000
        load_checked(written(tmp_path, model), 1 << 20)  # allowed operators, valid graph: only the bounds catch it


@pytest.mark.parametrize("make, message", [
    (outer_product_chain, "tensor 'h0' (output of MatMul node"),           # N × N = 32 GiB at N = 65,536
    (concat_doubling, "tensor 'c"),                                        # N × 2^k doubles past 256 MiB
    (lambda: wide_matmuls(256, 20), "multiply-adds"),                      # 20 × N·256² = 8.6·10^10 > 5·10^10
])
def test_graphs_past_the_tensor_or_work_cap_are_refused(make, message):
    with pytest.raises(ModelError) as caught:
        graph_cost(make(), BLOCK_ROWS, LIMITS)
    assert message in str(caught.value), str(caught.value)


def test_concat_is_refused_at_the_first_tensor_past_the_cap():
    with pytest.raises(ModelError) as caught:
        graph_cost(concat_doubling(16), BLOCK_ROWS, LIMITS)
    assert "tensor 'c10'" in str(caught.value)  # N · 2^10 doubles = 512 MiB; c9 (256 MiB) was allowed


def test_the_cost_of_an_allowed_graph_is_its_products_and_outputs():
    cost = graph_cost(wide_matmuls(8, 3), 1000, LIMITS)
    # [N,1]·[1,8]: 8N·1; three [N,8]·[8,8]: 3 · 8N·8; the mean: N
    assert cost.ops == 1000 * (8 + 3 * 64 + 1) and cost.ops_per_row == 8 + 3 * 64 + 1
    assert cost.largest_bytes == 1000 * 8 * 8


def test_a_shape_read_from_the_data_is_refused():
    nodes = [helper.make_node("Cast", ["age"], ["as_int"], to=TensorProto.INT64),
             helper.make_node("Reshape", ["age", "dims"], ["r"]),
             helper.make_node("ReduceMean", ["r", "axis1"], ["logit"], keepdims=1)]
    model = model_of(nodes, "logit", ["N", 1])
    model.graph.input.append(helper.make_tensor_value_info("dims", TensorProto.INT64, [2]))
    with pytest.raises(ModelError, match="cannot be inferred from the batch size"):
        graph_cost(model, BLOCK_ROWS, LIMITS)


def test_a_small_tensor_storing_many_bytes_is_refused(tmp_path):
    """The review's [1] tensor holding 60 MB passed the weight count; here 4,000 bytes for one double."""
    bias = helper.make_tensor("bias", TensorProto.DOUBLE, [1], b"\x00" * 8, raw=True)
    bias.raw_data = b"\x00" * 4000  # onnx.helper checks the size; a hand-made file need not
    model = model_of([helper.make_node("Add", ["age", "bias"], ["logit"])], "logit", ["N", 1], [bias])
    with pytest.raises(ModelError, match=r"tensor 'bias' of dims \[1\] stores 4000 bytes; .* = 8"):
        load_checked(written(tmp_path, model), 1 << 20)
    typed = helper.make_tensor("bias", TensorProto.DOUBLE, [1], [0.0])
    typed.double_data.extend([0.0] * 49)
    model = model_of([helper.make_node("Add", ["age", "bias"], ["logit"])], "logit", ["N", 1], [typed])
    with pytest.raises(ModelError, match="stores 50 values"):
        load_checked(written(tmp_path, model), 1 << 20)
    honest = helper.make_tensor("bias", TensorProto.DOUBLE, [1], b"\x00" * 8, raw=True)
    model = model_of([helper.make_node("Add", ["age", "bias"], ["logit"])], "logit", ["N", 1], [honest])
    load_checked(written(tmp_path, model), 1 << 20)


def test_a_model_onnxruntime_cannot_load_is_refused_quoting_it(tmp_path):
    node = helper.make_node("LabelEncoder", ["s"], ["y"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                            values_int64s=[1])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("s", TensorProto.STRING, ["N"])],
                              [helper.make_tensor_value_info("y", TensorProto.INT64, ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19), helper.make_opsetid("ai.onnx.ml", 3)],
                              ir_version=9)
    load_checked(written(tmp_path, model), 1 << 20)  # onnx's checker lets it through
    describe(model)
    with pytest.raises(ModelError) as caught:
        probe_session(model, Settings())
    assert "onnxruntime cannot load the model" in str(caught.value) and "same length" in str(caught.value)
    ok = model_of([helper.make_node("Sigmoid", ["age"], ["logit"])], "logit", ["N", 1])
    probe_session(ok, Settings())
