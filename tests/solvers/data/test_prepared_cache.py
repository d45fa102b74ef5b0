"""solvers.prepared_cache: a kept Prepared is reused only for the same table content and prepare fields, the spec's
other checks still run on a hit, the byte bound holds, and solves on a shared entry neither change it nor differ
from solves that prepared the table themselves."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from solvers import ProblemSpec, SpecError, prepare, run
from solvers.prepared_cache import PreparedCache, prepared_bytes
from bench.common.datagen import planted_table

TABLE = planted_table(1200, seed=4)


def spec(**overrides) -> ProblemSpec:
    fields = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
              "constraints": [{"type": "demographic_parity", "tolerance": 0.05}], "solver": {"name": "erm"},
              "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "max_iterations": 40, "device": "cpu"}
    return ProblemSpec.model_validate({**fields, **overrides})


def digest(data) -> str:
    h = hashlib.sha256()
    for a in (data.X, data.y, data.group, data.order, *data.splits.values()):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def test_hits_only_for_the_same_table_and_prepare_fields():
    cache = PreparedCache(1 << 30)
    first = cache.prepared("table-a", TABLE, spec())
    # other solver, model, tolerance, seed of the model: the same rows, encoder and X
    assert cache.prepared("table-a", TABLE, spec(solver={"name": "plada"}, seed=3, model={"type": "mlp", "hidden": [4]},
                                                 constraints=[{"type": "demographic_parity", "tolerance": 0.01}])) \
        is first
    changed = [spec(split={"test": 0.2, "validation": 0.2, "seed": 1}), spec(features=["age", "workclass", "sex"]),
               spec(sensitive=["race"]), spec(split={"test": 0.3, "validation": 0.1, "seed": 0})]
    for other in changed:
        got = cache.prepared("table-a", TABLE, other)
        assert got is not first
        fresh = prepare(TABLE, other)
        np.testing.assert_array_equal(got.X, fresh.X)
        np.testing.assert_array_equal(got.order, fresh.order)
    assert cache.prepared("table-b", TABLE, spec()) is not first  # other content (the worker: another SHA-256)
    assert len(cache) == 6


def test_a_hit_still_checks_the_rest_of_the_spec():
    cache = PreparedCache(1 << 30)
    cache.prepared("t", TABLE, spec())
    too_big = spec(model={"type": "mlp", "hidden": [4096, 2438]})  # ≤ 10⁷ parameters on 1 input, not on the table's
    with pytest.raises(SpecError) as refused:
        cache.prepared("t", TABLE, too_big)
    assert refused.value.loc == ("model", "hidden")


def test_the_byte_bound_evicts_the_least_recently_used():
    one = prepared_bytes(prepare(TABLE, spec()))
    cache = PreparedCache(2 * one + one // 2)  # room for two entries of this size
    a = cache.prepared("t", TABLE, spec())
    b = cache.prepared("t", TABLE, spec(split={"test": 0.2, "validation": 0.2, "seed": 1}))
    assert cache.prepared("t", TABLE, spec()) is a  # a is now the most recent
    cache.prepared("t", TABLE, spec(split={"test": 0.2, "validation": 0.2, "seed": 2}))  # evicts b
    assert len(cache) == 2 and cache.nbytes <= cache.max_bytes
    assert cache.prepared("t", TABLE, spec()) is a
    assert cache.prepared("t", TABLE, spec(split={"test": 0.2, "validation": 0.2, "seed": 1})) is not b
    tiny = PreparedCache(one - 1)  # an entry larger than the bound is not kept
    assert tiny.prepared("t", TABLE, spec()) is not tiny.prepared("t", TABLE, spec()) and len(tiny) == 0


@pytest.mark.parametrize("model, solver", [
    ({"type": "gbdt", "n_estimators": 15, "num_leaves": 7}, {"name": "erm"}),
    ({"type": "gbdt", "n_estimators": 15, "num_leaves": 7}, {"name": "group_thresholds"}),
    ({"type": "gbdt", "n_estimators": 15, "num_leaves": 7}, {"name": "fair_boosting"}),
    ({"type": "linear"}, {"name": "plada"}),
    ({"type": "mlp", "hidden": [8]}, {"name": "ssg"}),
])
def test_solves_on_a_shared_entry_leave_it_unchanged_and_match_a_fresh_prepare(model, solver):
    cache = PreparedCache(1 << 30)
    job = spec(model=model, solver=solver)
    kept = cache.prepared("t", TABLE, job)
    before = digest(kept)
    shared = [run(TABLE, job, prepare_with=lambda t, s: cache.prepared("t", t, s)) for _ in range(2)]
    assert digest(kept) == before
    alone = run(TABLE, job)
    for out in shared:
        np.testing.assert_array_equal(out.predictions["score"].to_numpy(), alone.predictions["score"].to_numpy())
        assert out.metrics == alone.metrics
