"""app.audits.caps: an audit run's groups, metric work and ONNX work are refused before the work, naming the cap."""
from __future__ import annotations

import time

import pytest

from app.audits.caps import check_metrics, check_scoring, metric_work
from app.audits.metrics import N_BOOT, MetricSpec
from app.audits.model_file import ModelError
from app.onnx_models.bounds import GraphCost

METRICS = [MetricSpec.model_validate(m) for m in ({"type": "demographic_parity"}, {"type": "accuracy"},
                                                  {"type": "score_ks"})]


def test_one_group_per_row_is_refused_at_once():
    started = time.perf_counter()
    with pytest.raises(ModelError, match=r"20000 groups \(more than 1000, FAIRSOLVE_AUDIT_MAX_GROUPS\)"):
        check_metrics(20_000, 20_000, METRICS, 1000, 1e12)
    assert time.perf_counter() - started < 1
    with pytest.raises(ModelError, match="more than 10000"):  # the noise floor's own cap bounds the setting
        check_metrics(20_000, 10_001, METRICS, 50_000, 1e15)
    check_metrics(20_000, 1000, METRICS, 1000, 1e12)


def test_metric_work_counts_row_metrics_resamples_rows_and_groups():
    assert metric_work(2, 1000, 10) == 2 * (N_BOOT + 1) * (1000 + 100 * 10)
    limit = metric_work(2, 1000, 10)  # score_ks reads summaries: two metrics read the rows
    check_metrics(1000, 10, METRICS, 1000, limit)
    with pytest.raises(ModelError, match="FAIRSOLVE_AUDIT_MAX_WORK"):
        check_metrics(1000, 10, METRICS, 1000, limit - 1)


def test_onnx_work_is_checked_against_the_rows():
    class Model:
        cost = GraphCost(block_rows=1000, ops=5e6, largest_bytes=0)  # 5,000 per row

    check_scoring(Model(), 200_000, 1e9)
    with pytest.raises(ModelError, match=r"5e\+09 multiply-adds .* on 1000000 rows .*FAIRSOLVE_AUDIT_MAX_ONNX_OPS"):
        check_scoring(Model(), 1_000_000, 1e9)
    check_scoring(object(), 10**9, 1.0)  # models without a graph cost: nothing to check
