"""fairsolve.Client against the real running service (API + Celery worker on PostgreSQL + Redis):
upload a DataFrame, a job with progress, metrics as DataFrames, charts, the model on raw data, a
sweep, an audit; the API's validation messages; and FairClassifier's predictions equal the job's."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from fairsolve import Client, FairClassifier, FairSolveError
from solvers.encoding import build_groups
from solvers.splitting import split_indices
from bench.common.datagen import compas_like_table, planted_table

DP = {"type": "demographic_parity", "tolerance": 0.05}
SPEC = dict(target="income", positive_label=">50K", sensitive=["sex"], constraints=[DP], solver="ssg",
            max_iterations=200, device="cpu", seed=3)


@pytest.fixture(scope="module")
def client(postgres_stack):
    with Client(postgres_stack.url, postgres_stack.new_key("python-client"), poll_s=0.2) as fs:
        yield fs


@pytest.fixture(scope="module")
def frame():
    return planted_table(1500, seed=11)


@pytest.fixture(scope="module")
def dataset(client, frame):
    return client.upload(frame, name="planted")


def test_bad_keyword_arguments_raise_the_apis_message(client, dataset):
    with pytest.raises(FairSolveError, match=r"body\.constraints\.0\.tolerance") as err:
        client.submit(dataset, **(SPEC | {"constraints": [{"type": "demographic_parity", "tolerance": -1}]}))
    assert err.value.status_code == 422 and err.value.detail[0]["loc"] == ["body", "constraints", 0, "tolerance"]
    with pytest.raises(FairSolveError, match=r"body\.sensitive\.0: unknown column 'gender'"):
        client.submit(dataset, **(SPEC | {"sensitive": ["gender"]}))
    with pytest.raises(FairSolveError, match=r"body\.solver\.name"):
        client.submit(dataset, **(SPEC | {"solver": "nope"}))


def test_job_metrics_charts_model_and_the_estimator(client, dataset, frame, capsys):
    assert dataset["n_rows"] == len(frame) and {c["name"] for c in dataset["columns"]} == set(frame.columns)
    job = client.submit(dataset, **SPEC).wait()
    done = job.data["progress"]["iteration"]  # 200, or more after the exact enforcement's continuation
    assert job.status == "succeeded" and f"{done}/{done}" in capsys.readouterr().err  # tqdm's bar reached the end

    metrics = job.metrics()
    assert list(metrics.index) == ["train", "validation", "test"] and 0.5 < metrics.loc["test", "accuracy"] <= 1
    groups = job.group_metrics("test")
    assert set(groups.index) == {"Male", "Female"} and groups["n"].sum() == metrics.loc["test", "n"]
    rates = groups["demographic_parity"]
    assert rates.max() - rates.min() == pytest.approx(metrics.loc["test", "demographic_parity"])
    assert {"equalized_odds.tpr", "equalized_odds.fpr"} <= set(groups.columns)
    assert isinstance(job.chart("trajectory"), go.Figure) and len(job.trajectory()) >= 200

    predictions = job.predictions()
    model = job.model()
    rows = frame.loc[predictions["row"]]
    assert np.allclose(model.predict_proba(rows)[:, 1], predictions["score"], atol=1e-6)
    assert (model.predict(rows) == predictions["prediction"].to_numpy()).all()

    # the same spec and seed in-process: FairClassifier on the job's train split predicts what the job does
    group, _ = build_groups(frame, ["sex"])
    y = (frame["income"] == ">50K").to_numpy().astype(int)
    train, _, _ = split_indices(2 * group + y, 0.2, 0.2, 0)
    features = frame.drop(columns=["income"])
    clf = FairClassifier(constraints=[DP], solver="ssg", max_iter=200, random_state=3)
    clf.fit(features.iloc[train], frame["income"].iloc[train], sensitive_features=frame["sex"].iloc[train])
    assert np.allclose(clf.predict_proba(rows.drop(columns=["income"]))[:, 1], predictions["score"], atol=1e-5)

    audit = client.audit(job, dataset=dataset, metrics=[{"type": "demographic_parity", "threshold": 0.9}])
    run = client.run_audit(audit, timeout=120)
    assert run["status"] == "succeeded" and run["passed"] is True and run["n_rows"] == len(frame)
    with pytest.raises(FairSolveError, match=r"body\.metrics\.0\.type"):
        client.audit(job, dataset=dataset, metrics=[{"type": "vibes", "threshold": 1}])
    log = client.audit(dataset=dataset, metrics=[{"type": "demographic_parity"}, {"type": "score_psi",
                                                                                   "against": "baseline"}],
                       predictions={"score_column": "hours-per-week", "score_scale": "raw", "threshold": 40,
                                    "sensitive": ["sex"]})
    first = client.run_audit(log, timeout=120)
    assert client.pin_baseline(log, first)["baseline_run_id"] == first["id"]
    second = client.run_audit(log, timeout=120)
    assert second["results"][1]["value"] == 0.0  # the same data as the baseline
    report = client.bias_report(second)
    assert report["summary"][0]["value"] == second["results"][0]["value"]
    assert "Bias report" in client.bias_report(second, "html")
    with pytest.raises(FairSolveError, match=r"body\.predictions\.label_column"):
        client.audit(dataset=dataset, metrics=[{"type": "accuracy"}],
                     predictions={"score_column": "age", "score_scale": "raw", "sensitive": ["sex"]})


def test_sweep(client, dataset):
    sweep = client.sweep(dataset, tolerances=[0.2, 0.05], seeds=[0], solvers=["ssg"],
                         **(SPEC | {"max_iterations": 60})).wait(progress=False, timeout=240)
    assert sweep.status == "succeeded", sweep.data["failures"]
    points = sweep.points()
    assert set(points["tolerance"].dropna()) == {0.2, 0.05} and "accuracy" in points.columns
    assert all(j.status == "succeeded" for j in sweep.jobs())
    assert isinstance(sweep.chart("pareto"), go.Figure)


def test_uploading_a_file(client, frame, tmp_path):
    path = tmp_path / "planted.csv"
    frame.to_csv(path, index=False)
    uploaded = client.upload(path)
    assert uploaded["format"] == "csv" and uploaded["n_rows"] == len(frame)
    assert client.dataset(uploaded)["summary"]
    with pytest.raises(FairSolveError) as err:
        client.dataset("nope")
    assert err.value.status_code == 404


def test_upload_without_header_is_flagged_and_read_with_the_options(client, frame, tmp_path):
    path = tmp_path / "noheader.csv"
    frame.assign(workclass=frame["workclass"].fillna("?")).to_csv(path, index=False, header=False)
    flagged = client.upload(path)
    assert flagged["n_rows"] == len(frame) and flagged["read_options"]["warnings"][0]["field"] == "header"
    suggestion = flagged["read_options"]["warnings"][0]["suggestion"]
    assert suggestion["header"] is False and len(suggestion["column_names"]) == frame.shape[1]

    fixed = client.upload(path, header=False, column_names=list(frame.columns))
    assert fixed["n_rows"] == len(frame) and [c["name"] for c in fixed["columns"]] == list(frame.columns)
    assert "warnings" not in fixed["read_options"] and "?" in fixed["read_options"]["missing_values"]
    assert {c["name"]: c for c in fixed["columns"]}["workclass"]["n_missing"] == frame["workclass"].isna().sum()
    job = client.submit(fixed, **(SPEC | {"max_iterations": 20})).wait(progress=False)
    assert job.metrics().loc["test", "n"] > 0

    with pytest.raises(FairSolveError, match=r"column_names: 2 names; the file has 6 columns"):
        client.upload(path, header=False, column_names=["a", "b"])
    with pytest.raises(FairSolveError, match=r"body\.missing_values"):
        client.upload(path, missing_values=["x" * 60])


def test_features_null_leaves_out_ids_dates_text_and_leaks(client):
    table = compas_like_table(1200, seed=4)
    dataset = client.upload(table, name="compas-like")
    preview = client.feature_screen(dataset, "two_year_recid", 1, ["race"])
    assert set(preview["column"]) == {"id", "name", "dob", "compas_screening_date", "c_charge_desc",
                                      "type_of_assessment", "is_recid"}
    assert preview.attrs["kept"] == ["sex", "age", "race", "priors_count"]
    job = client.submit(dataset, target="two_year_recid", positive_label=1, sensitive=["race"], solver="ssg",
                        max_iterations=50, device="cpu")
    assert job.data["spec"]["features"] == ["sex", "age", "race", "priors_count"]
    notes = job.feature_screen().set_index("column")
    assert notes.loc["is_recid", "reason"] == "near_duplicate" and notes.loc["id", "reason"] == "identifier"
    assert "AUC" in notes.loc["is_recid", "detail"]
    job.wait(progress=False)
    assert job.data["result"]["n_features"] < 20  # one-hot of 3 races, 2 sexes, 2 numbers
    listed = client.submit(dataset, target="two_year_recid", positive_label=1, sensitive=["race"], solver="ssg",
                           max_iterations=5, device="cpu", features=["age", "is_recid"])
    assert listed.data["spec"]["features"] == ["age", "is_recid"] and "feature_screen" not in listed.data["spec"]
    with pytest.raises(FairSolveError, match=r"query\.target: unknown column 'nope'"):
        client.feature_screen(dataset, "nope", 1)
    with pytest.raises(FairSolveError, match=r"query\.target: field required; query\.positive_label: field required"):
        client.request("GET", f"/api/v1/datasets/{dataset['id']}/feature-screen")
