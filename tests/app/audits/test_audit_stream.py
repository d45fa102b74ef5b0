"""A streamed prediction log (:mod:`app.audits.log_stream`) against the same log read whole: the same cell counts,
group names and order, the same report for the rate metrics, score summaries within the sorted blocks' rank
bound; CSV and Parquet; a missing column named before any row is read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.audits.drift import Q, summarise
from app.audits.log_stream import BLOCK_POINTS, log_frames, tally
from app.audits.logs import PredictionLog
from app.audits.metrics import MetricSpec
from app.audits.model_file import ModelError
from app.audits.report import evaluate, evaluate_counts

LOG = PredictionLog(score_column="score", label_column="outcome", positive_label="yes", sensitive=["race", "sex"])
SPECS = [MetricSpec(type="demographic_parity", threshold=0.05), MetricSpec(type="equal_opportunity"),
         MetricSpec(type="accuracy", threshold=0.5), MetricSpec(type="equalized_odds", threshold=0.1),
         MetricSpec(type="minority_rate")]


def log_table(n: int, seed: int) -> pd.DataFrame:
    """A log whose rare groups appear late (the first rows are all race "b") and with a missing race."""
    rng = np.random.default_rng(seed)
    race = rng.choice(["c", "a", "b"], n, p=[0.1, 0.3, 0.6]).astype(object)
    race[: n // 3] = "b"
    race[rng.random(n) < 0.01] = None
    sex = rng.choice([2, 1], n)
    y = rng.random(n) < 0.3
    y[: n // 4] = False  # the first batches have no positive label
    score = 1 / (1 + np.exp(-rng.normal(1.2 * y - 0.6 + 0.3 * (sex == 2), 1.0)))
    return pd.DataFrame({"race": race, "sex": sex, "outcome": np.where(y, "yes", "no"), "score": score,
                         "unused": rng.random(n)})


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_streaming_equals_the_table_read_whole(tmp_path, fmt):
    table = log_table(30_000, seed=4)
    path = tmp_path / f"log.{fmt}"
    table.to_parquet(path, index=False) if fmt == "parquet" else table.to_csv(path, index=False)
    whole = LOG.score(pd.read_parquet(path) if fmt == "parquet" else pd.read_csv(path))
    frames = list(log_frames(path, LOG.columns(), batch_rows=4_000))
    assert len(frames) >= 7 and "unused" not in frames[0].columns
    streamed = tally(frames, LOG)
    assert streamed.group_names == whole.group_names and "__missing__ & 1" in whole.group_names
    expected = np.bincount(4 * whole.group + 2 * whole.y + whole.pred, minlength=4 * whole.n_groups)
    assert np.array_equal(streamed.counts.reshape(-1), expected) and streamed.n_rows == len(table)
    assert evaluate_counts(SPECS, streamed.counts, streamed.group_names) == evaluate(SPECS, whole)

    exact = summarise(whole)
    assert streamed.summary["sizes"] == exact["sizes"]
    f = np.asarray(whole.logits)
    for k, name in enumerate(whole.group_names):
        scores = np.sort(f[whole.group == k])
        n = scores.size
        target = np.floor((np.arange(Q) + 0.5) / Q * n)
        rank = np.searchsorted(scores, streamed.summary["groups"][name], side="left")
        assert np.all(np.abs(rank - target) <= n / BLOCK_POINTS + 1), name  # Σ_b n_gb / S rows


def test_a_missing_column_is_named_before_reading(tmp_path):
    path = tmp_path / "log.parquet"
    log_table(100, seed=1).drop(columns=["outcome"]).to_parquet(path, index=False)
    with pytest.raises(ModelError, match="'outcome'"):
        next(log_frames(path, LOG.columns()))
    log_table(100, seed=1).drop(columns=["sex"]).to_csv(tmp_path / "log.csv", index=False)
    with pytest.raises(ModelError, match="'sex'"):
        next(log_frames(tmp_path / "log.csv", LOG.columns()))
    with pytest.raises(ModelError, match="never occurs"):
        tally([log_table(100, seed=1).assign(outcome="no")], LOG)
    with pytest.raises(ValueError, match="roc_auc"):
        evaluate_counts([MetricSpec(type="roc_auc")], np.ones((2, 2, 2), np.int64), ["a", "b"])


def test_the_group_cap_stops_the_stream_at_the_first_batch_past_it():
    """Groups past ``max_groups`` fail at the batch that brings them, before that batch is summarised (the
    batches after it are never read); a probability of exactly 0 or 1 is summarised finite (the report leaves the
    run's child as JSON with no non-finite number: :mod:`app.core.sandbox`)."""
    import json

    read = []

    def batches():
        for k in range(3):
            read.append(k)
            frame = pd.DataFrame({"race": [f"r{k * 10 + i}" for i in range(10)], "sex": 1,
                                  "outcome": "yes", "score": 0.5})
            yield frame
    with pytest.raises(ModelError, match="at least 20 groups .more than 15, FAIRSOLVE_AUDIT_MAX_GROUPS"):
        tally(batches(), LOG, max_groups=15)
    assert read == [0, 1]
    edge = pd.DataFrame({"race": ["a", "a", "b", "b"], "sex": 1, "outcome": ["yes", "no", "yes", "no"],
                         "score": [1.0, 0.0, 1.0, 0.0]})
    json.dumps(tally([edge], LOG, max_groups=15).summary, allow_nan=False)
