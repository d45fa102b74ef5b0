"""Issue 30 item 4: an ONNX model is audited on the file's own values. A model trained elsewhere with ``?`` as a
category is fed ``?`` (the service used to feed FairSolve's ``__missing__``: DP 0.17759 audited against the model's
0.17621); a model FairSolve exported reads the training file's missing-value markers inside its graph, so the raw
cells and FairSolve's tokens score alike."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest

from app.audits.metrics import MetricSpec
from app.audits.report import evaluate
from app.onnx_models.check import describe
from app.onnx_models.export import pipeline_model
from app.onnx_models.raw_values import as_written, file_text, speaks_fairsolve
from app.onnx_models.scorer import OnnxModel
from app.datasets.read_options import upload_options
from app.datasets.storage import read_table
from solvers import ProblemSpec, run
from tests.support.onnx_graphs import census, external_model


AUDIT = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"]}



@pytest.fixture
def stored(tmp_path):
    """The file as uploaded (``?`` in it) and the table the service reads from it (``?`` missing by default)."""
    path = tmp_path / "census.csv"
    census().to_csv(path, index=False)
    options = upload_options()
    assert "?" in options["missing_values"]
    table = read_table(path, "csv", options)
    assert table["workclass"].isna().any()
    return path, options, table


def session_of(model: onnx.ModelProto, tmp_path, text=None) -> OnnxModel:
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    return OnnxModel.from_file(path, {**AUDIT, **describe(model)}, 1 << 26, text)


DP = [MetricSpec.model_validate({"type": "demographic_parity", "threshold": 1.0})]


def test_a_model_from_elsewhere_is_audited_on_the_files_own_values(stored, tmp_path):
    path, options, table = stored
    model = external_model()
    raw = pd.read_csv(path, keep_default_na=False)  # how the model's author read the file
    truth = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        ["logit"], {"workclass": raw[["workclass"]].to_numpy(dtype=object)})[0][:, 0]

    scorer = session_of(model, tmp_path, file_text(path, "csv", options))
    assert not scorer.own_tokens
    np.testing.assert_allclose(scorer.logits(table), truth, rtol=0, atol=1e-6)
    audited = evaluate(DP, scorer.score(table), None)["results"][0]["value"]
    scored = scorer.score(table)
    pred = truth > 0
    true_dp = abs(pred[scored.group == 0].mean() - pred[scored.group == 1].mean())
    assert audited == pytest.approx(true_dp, abs=1e-12)

    fed_tokens = session_of(model, tmp_path)  # without the file: missing cells fed "", never "__missing__"
    logits = fed_tokens.logits(table)
    unknown = raw["workclass"].to_numpy() == "?"
    np.testing.assert_allclose(logits[~unknown], truth[~unknown], atol=1e-6)
    np.testing.assert_allclose(logits[unknown], -0.2, atol=1e-6)  # "" matches no category: the bias alone


def test_text_as_written():
    values = as_written(pd.Series(["a ", None, "?", np.nan], dtype=object))
    assert values.tolist() == ["a ", "", "?", ""]
    assert as_written(pd.Series([1.0, np.nan, 2.5])).tolist() == ["1", "", "2.5"]
    assert speaks_fairsolve("fairsolve", "... missing as __missing__ ...") and not speaks_fairsolve("skl2onnx", "")


def test_a_fairsolve_export_reads_the_files_markers_inside_the_graph(stored, tmp_path):
    path, options, table = stored
    spec = ProblemSpec.model_validate({**AUDIT, "model": {"type": "linear"}, "solver": {"name": "erm"},
                                       "split": {"test": 0.25, "validation": 0.0, "seed": 0}, "max_iterations": 80,
                                       "device": "cpu"})
    out = run(table, spec)
    state = {k: v.numpy() for k, v in out.state_dict.items()}
    model = pipeline_model(out.encoder, state, {"type": "linear"}, {**AUDIT, "groups": out.groups, "job_id": "j"},
                           options["missing_values"])
    assert "__missing__" in next(p for p in out.encoder["plan"] if p["column"] == "workclass")["categories"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    raw = pd.read_csv(path, keep_default_na=False)
    rows = out.predictions["row"].to_numpy()
    feeds = {"age": raw[["age"]].to_numpy(dtype=np.float64)[rows], "sex": raw[["sex"]].to_numpy(dtype=object)[rows]}
    as_file = session.run(["score"], {**feeds, "workclass": raw[["workclass"]].to_numpy(dtype=object)[rows]})[0]
    tokens = np.where(raw["workclass"].to_numpy() == "?", "__missing__", raw["workclass"].to_numpy())
    as_tokens = session.run(["score"], {**feeds, "workclass": tokens[rows].reshape(-1, 1).astype(object)})[0]
    assert (raw["workclass"].to_numpy()[rows] == "?").sum() > 20
    np.testing.assert_allclose(as_file, out.predictions["score"].to_numpy(), atol=1e-5)  # the job's own scores
    np.testing.assert_array_equal(as_file, as_tokens)
    scorer = session_of(model, tmp_path, file_text(path, "csv", options))
    assert scorer.own_tokens  # exported by FairSolve: fed its normalised values, which the graph reads too
    np.testing.assert_allclose(scorer.logits(table.iloc[rows]), np.log(as_file / (1 - as_file)), atol=1e-4)
