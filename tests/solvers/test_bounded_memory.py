"""The memory-bounding parts of a solve's set-up: float32 X encoded block by block, the splits as views of it,
scores computed block by block; each must give what the whole-table computation gives."""
import numpy as np
import pandas as pd
import pytest
import torch

import solvers.api as api
import solvers.models as models
import solvers.encoding as encoding
from solvers import ProblemSpec, TableEncoder, prepare
from solvers.models import mlp


def table(n: int = 1000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.nan
    color = rng.choice(["red", " blue", "green", None], size=n).astype(object)
    return pd.DataFrame({
        "x": x, "age": rng.integers(18, 90, n), "flag": rng.integers(0, 2, n), "color": color,
        "kind": pd.Categorical(rng.choice(["a", "b"], size=n)), "sex": rng.choice(["F", "M"], size=n),
        "label": rng.choice(["yes", "no"], size=n),
    })


def test_chunked_transform_is_float32_and_equals_the_whole_table_encoding(monkeypatch):
    df = table()
    enc = TableEncoder(["x", "age", "flag", "color", "kind"]).fit(df)
    whole = enc.transform(df)
    monkeypatch.setattr(encoding, "ENCODE_ROWS", 7)  # 143 blocks, the last one short
    chunked = enc.transform(df)
    assert chunked.dtype == np.float32 and chunked.shape == (len(df), enc.n_features)
    np.testing.assert_array_equal(chunked, whole)
    # the reference: each column encoded on its own over the whole table, by hand
    assert enc.feature_names[:4] == ["x", "x__missing", "age", "flag"]
    cats = enc.plan[3]["categories"]
    assert cats == ["__missing__", "blue", "green", "red"]
    normalised = df["color"].map(lambda v: v.strip() if isinstance(v, str) else "__missing__")
    np.testing.assert_array_equal(whole[:, 4:8], (normalised.to_numpy()[:, None] == np.array(cats)).astype(np.float32))
    np.testing.assert_array_equal(whole[:, 3], df["flag"].to_numpy(np.float32))


def test_rows_argument_equals_taking_the_rows_first(monkeypatch):
    df = table()
    rows = np.random.default_rng(1).permutation(len(df))[:600]
    enc = TableEncoder(["x", "age", "flag", "color", "kind"]).fit(df, rows=rows)
    assert enc.plan == TableEncoder(enc.columns).fit(df.iloc[rows]).plan
    monkeypatch.setattr(encoding, "ENCODE_ROWS", 64)
    np.testing.assert_array_equal(enc.transform(df, rows=rows), enc.transform(df.iloc[rows]))


def test_prepare_splits_are_views_of_one_float32_x_in_table_correspondence():
    df = table()
    spec = ProblemSpec(target="label", positive_label="yes", sensitive=["sex"],
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}],
                       split={"test": 0.2, "validation": 0.2, "seed": 3})
    data = prepare(df, spec)
    assert data.X.dtype == np.float32
    reference = data.encoder.transform(df)  # the table's own order
    for name in ("train", "validation", "test"):
        view = data.features(name)
        assert np.shares_memory(view, data.X) and view.base is not None  # a view, not a copy
        rows = data.table_rows(name)
        np.testing.assert_array_equal(view, reference[rows])
        np.testing.assert_array_equal(data.y[data.splits[name]], (df["label"].to_numpy()[rows] == "yes"))
        np.testing.assert_array_equal(np.asarray(data.group_names)[data.group[data.splits[name]]],
                                      df["sex"].to_numpy()[rows])
    assert sorted(np.concatenate([data.table_rows(n) for n in data.splits]).tolist()) == list(range(len(df)))


def test_predict_scores_by_blocks_equals_one_pass(monkeypatch):
    torch.manual_seed(0)
    model = mlp(5, (8,))
    X = np.random.default_rng(0).normal(size=(1000, 5)).astype(np.float32)
    whole = api.predict_scores(model, X, torch.device("cpu"))
    monkeypatch.setattr(models, "SCORE_ROWS", 97)
    np.testing.assert_allclose(api.predict_scores(model, X, torch.device("cpu")), whole, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("value", ["yes", " yes"])
def test_labels_without_an_array_of_strings(value):
    s = pd.Series(["yes", " yes ", None, "no", 1.0])
    np.testing.assert_array_equal(encoding.encode_labels(s, value), [1, 1, 0, 0, 0])


def test_full_batch_evaluation_outside_autograd_is_by_blocks_and_equal(monkeypatch):
    from solvers import Problem
    from solvers.spec import ConstraintSpec

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)).astype(np.float32)
    y, group = (rng.random(500) < 0.4).astype(np.float32), rng.integers(0, 2, 500)
    problem = Problem(X, y, group, ["a", "b"], model_factory=lambda d: mlp(d, (6,)), model_type="mlp",
                      constraints=[ConstraintSpec(type="demographic_parity", tolerance=0.05).build()], device="cpu")
    torch.manual_seed(0)
    model = problem.make_model()
    whole = problem.evaluate(model)
    calls = []
    monkeypatch.setattr(models, "SCORE_ROWS", 64)
    model.register_forward_hook(lambda _m, inputs, _o: calls.append(inputs[0].shape[0]))
    with torch.no_grad():
        blocks = problem.evaluate(model)
    assert max(calls) == 64 and sum(calls) == 500
    torch.testing.assert_close(blocks.scores, whole.scores.detach())
    torch.testing.assert_close(blocks.constraints, whole.constraints.detach())
    torch.testing.assert_close(blocks.objective, whole.objective.detach())


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_text_as_categories_reads_the_same_table_and_prepares_the_same_problem(tmp_path, monkeypatch, fmt):
    import app.datasets.storage as storage

    df = table(600, seed=2)
    df["kind"] = df["kind"].astype(object)
    df["note"] = ["7"] * 300 + ["x", "y"] * 150  # CSV: numbers in the first chunks, so not categorical in every one
    path = tmp_path / f"t.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path, index=False)
    monkeypatch.setattr(storage, "CHUNK_ROWS", 100)  # six chunks with different categories each
    options = {"delimiter": ","} if fmt == "csv" else {}
    plain = storage.read_table(path, fmt, options)
    compact = storage.read_table(path, fmt, options, text_as_categories=True)
    text = ["color", "kind", "sex", "label"]
    assert all(isinstance(compact[c].dtype, pd.CategoricalDtype) for c in text)
    assert list(compact["sex"].cat.categories) == ["F", "M"]
    assert isinstance(compact["note"].dtype, pd.CategoricalDtype) == (fmt == "parquet")
    text += ["note"] if fmt == "parquet" else []
    pd.testing.assert_frame_equal(compact.astype({c: plain[c].dtype for c in text}), plain)
    spec = ProblemSpec(target="label", positive_label="yes", sensitive=["sex", "color"],
                       constraints=[{"type": "demographic_parity", "tolerance": 0.05}])
    a, b = prepare(plain, spec), prepare(compact, spec)
    assert a.group_names == b.group_names and a.encoder.plan == b.encoder.plan
    for field in ("X", "y", "group", "order"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_linear_offset_by_row_blocks_equals_one_block(monkeypatch):
    import solvers.fairness.enforce as enforce

    rng = np.random.default_rng(4)
    group = rng.integers(0, 3, 1000)
    X = np.column_stack([rng.normal(size=(1000, 3)), np.eye(3)[group]]).astype(np.float32)  # one-hot group columns
    offsets = np.array([0.5, -1.0, 0.25])
    whole = enforce.linear_offset(X, group, offsets)
    monkeypatch.setattr(enforce, "OFFSET_ROWS", 37)
    blocks = enforce.linear_offset(X, group, offsets)
    assert whole is not None and blocks is not None
    np.testing.assert_allclose(X @ blocks[:-1] + blocks[-1], offsets[group], atol=1e-6)
    np.testing.assert_allclose(blocks, whole, atol=1e-9)
    assert enforce.linear_offset(X[:, :3], group, offsets) is None  # without the one-hot columns: not linear


_SCORING = """
import sys, torch
from solvers.models import mlp, scores_in_blocks
if sys.argv[1] == "fixed":
    from worker.heap import fix_mmap_threshold
    assert fix_mmap_threshold()
torch.set_num_threads(1)
def rss():
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]) / 1024
X, model = torch.randn(1_000_000, 108), mlp(108, [64, 64])
with torch.no_grad():
    model(X[:100_000])  # a job's earlier work: glibc has raised its mmap threshold by now
    before = rss()
    for _ in range(2):
        scores_in_blocks(model, X)
print(rss() - before)
"""


def _scoring_growth_mib(policy: str) -> float:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _SCORING, policy], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="glibc's malloc policy")
def test_a_pool_processs_heap_does_not_keep_an_mlps_scoring_blocks():
    """The worker's pool processes fix glibc's mmap threshold (worker.heap, at worker_process_init): scoring a 64-64
    MLP over 1M rows by blocks leaves the process where it was, where the default policy kept up to n · 64 · 4
    bytes of freed 16 MiB activation buffers in the heap (the MLP job's extra 1.6 GiB at 10M rows; how much the
    default keeps varies with the process's earlier allocations, so only the fixed policy's bound is asserted)."""
    from celery.signals import worker_process_init

    import worker.celery_app as celery_app

    assert any(getattr(r[1](), "__name__", "") == "_bounded_heap" for r in worker_process_init.receivers)
    assert celery_app._bounded_heap
    assert _scoring_growth_mib("fixed") < 40  # the default policy: 284 MiB here at 1M rows, 520 MiB at 2M
