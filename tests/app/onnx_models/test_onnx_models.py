"""ONNX models in and out, without a service: a fitted pipeline exported as one graph scores the test split as
the job stored it (linear, MLP, gbdt, the reductions' randomised classifier over linear models and trees, group
thresholds (randomised or not) over MLP, gbdt and linear models, the GroupShift post-processing); the exported
graph, read back as an uploaded model, audits to the same values as the job's model; uploads that are malformed,
too large, use an operator or domain outside the allowlist or refer to external data are refused before any
session exists; inputs are matched to columns by name and type."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from app.audits.metrics import MetricSpec
from app.audits.model import AuditModel
from app.audits.model_file import ModelError
from app.audits.report import evaluate
from app.onnx_models import is_onnx_bytes
from app.onnx_models.check import describe, input_problems, load_checked
from app.onnx_models.export import META_KEY, pipeline_model
from app.onnx_models.scorer import OnnxModel, audit_spec, column_kinds
from solvers import ProblemSpec, run
from bench.common.datagen import planted_table

AUDIT = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"]}


@pytest.fixture(scope="module")
def table():
    frame = planted_table(900, seed=3)
    frame.loc[frame.index[::29], "hours-per-week"] = np.nan  # a numeric column with missing values
    frame["married"] = (np.arange(len(frame)) % 3 == 0).astype(np.int64)  # a binary integer column
    return frame


def solved(table, model, **spec):
    body = {**AUDIT, "model": model, "constraints": [{"type": "demographic_parity", "tolerance": 0.05}],
            "solver": {"name": "plada", "params": {"eta": 0.05}}, "split": {"test": 0.25, "validation": 0.2, "seed": 0},
            "max_iterations": 60, "device": "cpu", **spec}
    spec = ProblemSpec.model_validate(body)
    out = run(table, spec)
    state = {k: v.numpy() for k, v in out.state_dict.items()}
    return spec, out, pipeline_model(out.encoder, state, spec.model.model_dump(mode="json"),
                                     {**AUDIT, "groups": out.groups, "job_id": "j"})


def session_of(model: onnx.ModelProto, tmp_path, max_bytes: int = 1 << 26) -> OnnxModel:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return OnnxModel.from_file(path, {**AUDIT, **describe(model)}, max_bytes)


CASES = {
    "linear": ({"type": "linear"}, {}),
    "mlp": ({"type": "mlp", "hidden": [16, 8], "activation": "tanh"}, {}),
    "gbdt": ({"type": "gbdt", "n_estimators": 20, "num_leaves": 7}, {"solver": {"name": "erm"}}),
    "reductions_linear": ({"type": "linear"}, {"solver": {"name": "reductions"}, "max_iterations": 50}),
    "reductions_draw": ({"type": "linear"}, {"solver": {"name": "reductions", "params": {"decision": "draw"}},
                                             "max_iterations": 50}),
    "reductions_gbdt": ({"type": "gbdt", "n_estimators": 10, "num_leaves": 7},
                        {"solver": {"name": "reductions"}, "max_iterations": 100,
                         "constraints": [{"type": "demographic_parity", "tolerance": 0.01}]}),
    # randomised (a mixture per group; for DP the default is one threshold per group)
    "thresholds_mlp": ({"type": "mlp", "hidden": [8]},
                       {"solver": {"name": "group_thresholds", "params": {"randomized": True}}}),
    "thresholds_gbdt": ({"type": "gbdt", "n_estimators": 10, "num_leaves": 7},
                        {"solver": {"name": "group_thresholds", "params": {"randomized": True}}, "max_iterations": 10}),
    "thresholds_fixed": ({"type": "linear"}, {"solver": {"name": "group_thresholds", "params": {"randomized": False}},
                                              "constraints": [{"type": "equalized_odds", "tolerance": 0.05}]}),
    "group_shift": ({"type": "linear"}, {
        "objective": "auc_square", "solver": {"name": "auc_postprocess"},
        "constraints": [{"type": "auc_parity", "tolerance": 0.02, "variant": "group"}]}),
}


@pytest.mark.parametrize("case", CASES)
def test_exported_pipeline_scores_the_test_split_as_the_job(table, case, tmp_path):
    model_spec, extra = CASES[case]
    spec, out, model = solved(table, model_spec, **extra)
    if case == "group_shift":
        assert "net.omega" in out.state_dict and out.state_dict["net.omega"].tolist() != [1.0, 0.0]
    if case.startswith("thresholds"):
        cumulative = out.state_dict["cumulative" if "gbdt" in case else "net.cumulative"]
        assert cumulative.shape[1] > 1 if case != "thresholds_fixed" else cumulative.shape[1] == 1
    if case.startswith("reductions"):
        assert len(out.state_dict["mix"]) > 1  # a real mixture
    scorer = session_of(model, tmp_path)
    rows = table.loc[out.predictions["row"]]
    feeds = {i["name"]: scorer_feed(rows, i) for i in scorer.graph["inputs"]}
    logit, score, decision = scorer.session.run(["logit", "score", "decision"], feeds)
    np.testing.assert_allclose(score, out.predictions["score"].to_numpy(), rtol=0, atol=1e-5)
    np.testing.assert_array_equal(decision, out.predictions["prediction"].to_numpy())
    assert {i["name"]: i["type"] for i in scorer.graph["inputs"]} == {
        "age": "double", "workclass": "string", "hours-per-week": "double", "race": "string", "sex": "string",
        "married": "double"}
    assert scorer.graph["output"] == {"name": "logit", "column": None, "kind": "logit"}


def scorer_feed(rows, spec):
    from app.onnx_models.scorer import _feed
    return _feed(rows[spec["name"]], spec)


def test_exported_model_audits_like_the_job_model(table, tmp_path):
    spec, out, model = solved(table, {"type": "mlp", "hidden": [8]})
    from solvers.encoding import TableEncoder
    import torch
    job_model = AuditModel(spec, TableEncoder.from_dict(out.encoder), {k: torch.as_tensor(v) for k, v in
                                                                      out.state_dict.items()}, out.groups)
    fresh = planted_table(400, seed=9)
    fresh["married"] = (np.arange(400) % 2).astype(np.int64)
    metrics = [MetricSpec.model_validate(m) for m in (
        {"type": "demographic_parity", "threshold": 1.0}, {"type": "accuracy"}, {"type": "auc"}, {"type": "log_loss"})]
    by_job = evaluate(metrics, job_model.score(fresh), None)
    by_onnx = evaluate(metrics, session_of(model, tmp_path).score(fresh), None)
    assert [r["value"] for r in by_onnx["results"]] == pytest.approx([r["value"] for r in by_job["results"]], abs=1e-6)
    assert by_onnx["group_sizes"] == by_job["group_sizes"]


def tiny(op: str = "Sigmoid", domain: str = "", opset: int = 19, output: str = "p", out_type=TensorProto.FLOAT,
         **kw) -> onnx.ModelProto:
    """x (float [N, 1]) → op → output [N, 1]."""
    node = helper.make_node(op, ["x"], [output], domain=domain, **kw)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
                              [helper.make_tensor_value_info(output, out_type, ["N", 1])])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(graph, opset_imports=imports, ir_version=9)


def written(tmp_path, data: bytes):
    path = tmp_path / "upload.onnx"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda: b"\x08\x07garbage that is no protobuf \xff\xff\xff", "neither an audit model file"),
    (lambda: b"\x00" * 5000, "more than 4096"),  # oversized: refused from its size, before it is parsed
    (lambda: tiny("Exec", domain="com.evil").SerializeToString(), "custom operators are not allowed"),
    (lambda: tiny("Loop").SerializeToString(), "operator 'Loop'"),
    (lambda: tiny("RandomNormalLike").SerializeToString(), "operator 'RandomNormalLike'"),
    (lambda: tiny("ConstantOfShape").SerializeToString(), "operator 'ConstantOfShape'"),  # a size read from data
    (lambda: tiny(opset=99).SerializeToString(), "opset 99"),
])
def test_bad_uploads_are_refused_before_any_session(tmp_path, monkeypatch, make, message):
    import onnxruntime

    def no_session(*args, **kwargs):
        raise AssertionError("an inference session was created")

    monkeypatch.setattr(onnxruntime, "InferenceSession", no_session)
    path = written(tmp_path, make())
    with pytest.raises(ModelError, match=message):
        OnnxModel.from_file(path, AUDIT, 4096)


def test_external_data_is_refused(tmp_path):
    model = tiny("Add")
    model.graph.node[0].input.append("w")
    weight = helper.make_tensor("w", TensorProto.FLOAT, [1], [1.0])
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="../../etc/passwd")
    weight.ClearField("float_data")
    model.graph.initializer.append(weight)
    with pytest.raises(ModelError, match="external data"):
        load_checked(written(tmp_path, model.SerializeToString()), 1 << 20)


def test_outputs_read_as_probability_or_label(tmp_path):
    fresh = planted_table(300, seed=1)
    fresh["x"] = np.linspace(-3, 3, 300)
    prob = session_of(tiny("Sigmoid"), tmp_path)
    assert prob.graph["output"]["kind"] == "probability"
    np.testing.assert_allclose(prob.logits(fresh), fresh["x"].to_numpy(), atol=1e-5)  # log p - log(1 - p) = x
    label = tiny("Greater", output="y", out_type=TensorProto.BOOL)
    label.graph.node[0].input.append("zero")
    label.graph.initializer.append(helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]))
    scorer = session_of(label, tmp_path)
    assert scorer.graph["output"]["kind"] == "label"
    np.testing.assert_array_equal(scorer.score(fresh).pred, (fresh["x"] > 0).astype(int))


def test_inputs_are_matched_by_name_and_type(tmp_path, table):
    _, _, model = solved(table, {"type": "linear"}, max_iterations=5)
    inputs = describe(model)["inputs"]
    kinds = column_kinds(table)
    assert input_problems(inputs, kinds) is None
    assert "'race'" in input_problems(inputs, {k: v for k, v in kinds.items() if k != "race"})
    assert "input 'age' takes double" in input_problems(inputs, {**kinds, "age": "string"})
    scorer = session_of(model, tmp_path)
    with pytest.raises(ModelError, match="'workclass'"):
        scorer.score(table.drop(columns="workclass"))
    with pytest.raises(ModelError, match="input 'age'"):
        scorer.score(table.assign(age=table["age"].astype(str) + " years"))


def test_export_metadata_and_sniffing(table):
    _, out, model = solved(table, {"type": "linear"}, max_iterations=5)
    meta = {p.key: p.value for p in model.metadata_props}
    assert audit_spec(__import__("json").loads(meta[META_KEY])).target == "income"
    assert is_onnx_bytes(model.SerializeToString()[:16])
    assert not is_onnx_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}")


def test_the_export_reproduces_the_library_constants_and_loads_no_torch(table, tmp_path):
    """The graph's copies of the library's constants agree with them, and the API's export path (weights file →
    graph) imports neither torch nor the solver modules that load it."""
    import json
    import subprocess
    import sys

    from safetensors.torch import save_file

    from app.onnx_models import export
    from solvers.algorithms import group_thresholds
    from solvers import randomized

    assert export.THRESHOLD_BUFFERS == group_thresholds._BUFFERS and export.THRESHOLD_HASH == group_thresholds._HASH
    assert export.RANDOMIZED_CLIP == randomized.CLIP
    spec, out, _ = solved(table, {"type": "gbdt", "n_estimators": 5, "num_leaves": 4},
                          solver={"name": "group_thresholds"}, max_iterations=5)
    path = tmp_path / "weights.safetensors"
    save_file(dict(out.state_dict), str(path), metadata={"encoder": json.dumps(out.encoder), "groups": "[]"})
    code = ("import sys, json; from app.onnx_models.export import job_model; "
            f"m = job_model('j', json.loads({json.dumps(spec.model_dump_json())}), {str(path)!r}); "
            "print(len(m.graph.node), 'torch' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    nodes, torch_loaded = done.stdout.split()
    assert int(nodes) > 20 and torch_loaded == "False"
