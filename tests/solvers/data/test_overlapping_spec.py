"""Overlapping groups in the job spec: its bounds before anything is built, the 422 material naming the field
(against a table), which solvers and constraint types take them, and the group sizes computed without the pairs."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from solvers import ProblemSpec, SpecError, check_spec_against_table
from solvers import membership as membership_module
from solvers.membership import _grid_sizes, _passed, overlapping_membership
from solvers.spec import MAX_GROUPS, OverlappingGroups


def _table(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.random(n), "b": rng.random(n), "c": rng.choice(["x", "y", "z"], n),
                         "d": rng.choice(["u", "v"], n), "x1": rng.normal(size=n),
                         "label": rng.integers(0, 2, n)})


def _spec(**overrides) -> ProblemSpec:
    fields = {"target": "label", "positive_label": 1,
              "overlapping_groups": {"thresholds": {"a": [0.3, 0.6], "b": [0.5]}, "min_group_fraction": 0.01},
              "constraints": [{"type": "demographic_parity", "tolerance": 0.1, "reference": "overall"}],
              "solver": {"name": "plada"}}
    fields.update(overrides)
    return ProblemSpec(**fields)


def _loc_and_message(err: ValidationError) -> tuple[tuple, str]:
    first = err.errors()[0]
    return tuple(first["loc"]), first["msg"]


def test_sensitive_and_overlapping_groups_are_mutually_exclusive_and_one_is_needed():
    with pytest.raises(ValidationError) as both:
        _spec(sensitive=["c"])
    loc, msg = _loc_and_message(both.value)
    assert loc == ("sensitive",) and "mutually exclusive" in msg
    with pytest.raises(ValidationError) as neither:
        _spec(overlapping_groups=None)
    loc, msg = _loc_and_message(neither.value)
    assert loc == ("sensitive",) and "overlapping_groups" in msg
    with pytest.raises(ValidationError, match="group_rules"):
        _spec(group_rules={"c": {"values": {"X": ["x"]}}})
    assert _spec().sensitive == []


@pytest.mark.parametrize("groups, loc, message", [
    ({"thresholds": {"a": list(range(11)), "b": list(range(10)), "c": list(range(10))}}, ("thresholds",),
     "1100 groups"),
    ({"thresholds": {"a": []}}, ("thresholds",), "thresholds.a"),
    ({"thresholds": {"a": [0.1, 0.1]}}, ("thresholds",), "distinct"),
    ({"thresholds": {"a": [float("nan")]}}, ("thresholds",), "finite"),
    ({"thresholds": {f"c{i}": [0.5] for i in range(9)}}, ("thresholds",), "at most 8"),
    ({"thresholds": {}}, ("thresholds",), "at least 1"),
    ({"min_group_fraction": 0.1}, (), "'thresholds' or 'columns'"),
    ({"columns": ["c", "c"]}, (), "twice"),
    ({"columns": ["c"], "min_group_fraction": 1.0}, ("min_group_fraction",), "less than 1"),
    ({"columns": ["c"], "colums": ["d"]}, ("colums",), "Extra inputs"),
])
def test_spec_bounds_are_checked_before_anything_is_built(groups, loc, message):
    with pytest.raises(ValidationError) as err:
        _spec(overlapping_groups=groups)
    got, msg = _loc_and_message(err.value)
    assert got[:1 + len(loc)] == ("overlapping_groups", *loc) and message in msg


def _refusal(table: pd.DataFrame, **overrides) -> SpecError:
    with pytest.raises(SpecError) as err:
        check_spec_against_table(_spec(**overrides), table)
    return err.value


def test_table_checks_name_the_field():
    table = _table()
    assert _refusal(table, overlapping_groups={"thresholds": {"nope": [0.5]}}).loc == (
        "overlapping_groups", "thresholds", "nope")
    refused = _refusal(table, overlapping_groups={"thresholds": {"c": [0.5]}})
    assert refused.loc == ("overlapping_groups", "thresholds", "c") and "numeric" in refused.msg
    assert _refusal(table, overlapping_groups={"thresholds": {"label": [0.5]}}).loc == (
        "overlapping_groups", "thresholds", "label")
    assert _refusal(table, overlapping_groups={"columns": ["d", "nope"]}).loc == ("overlapping_groups", "columns", 1)
    refused = _refusal(table, overlapping_groups={"thresholds": {"a": [0.99], "b": [0.99]}, "min_group_fraction": 0.2})
    assert refused.loc == ("overlapping_groups", "min_group_fraction") and "no group holds more than 0.2" in refused.msg
    many = table.assign(id=np.arange(len(table)).astype(str))
    wide = pd.concat([many] * 6, ignore_index=True).assign(id=lambda t: np.arange(len(t)).astype(str))
    refused = _refusal(wide, overlapping_groups={"columns": ["id"]})
    assert refused.loc == ("overlapping_groups", "columns") and f"more than {MAX_GROUPS}" in refused.msg
    check_spec_against_table(_spec(overlapping_groups={"thresholds": {"a": [0.5]}, "columns": ["c", "d"]}), table)


def test_the_pair_count_is_bounded_before_the_pairs_exist(monkeypatch):
    table = _table(100)
    spec = _spec(overlapping_groups={"thresholds": {"a": [0.0, 0.5], "b": [0.0]}, "columns": ["c"]})
    pairs = int((table.a >= 0.0).sum() + (table.a >= 0.5).sum()) + len(table)  # b ≥ 0 everywhere
    monkeypatch.setattr(membership_module, "MAX_MEMBERSHIP_PAIRS", pairs - 1)
    with pytest.raises(SpecError, match=f"{pairs} \\(row, group\\) pairs") as err:
        check_spec_against_table(spec, table)
    assert err.value.loc == ("overlapping_groups",)
    monkeypatch.setattr(membership_module, "MAX_MEMBERSHIP_PAIRS", pairs)
    check_spec_against_table(spec, table)
    assert overlapping_membership(table, spec.overlapping_groups).rows.size == pairs


@pytest.mark.parametrize("solver, constraint, loc, message", [
    ("reductions", {"type": "demographic_parity", "tolerance": 0.1}, ("solver",), "needs a partition of groups"),
    ("group_thresholds", {"type": "demographic_parity", "tolerance": 0.1}, ("solver",), "needs a partition"),
    ("ssw", {"type": "loss_gap", "tolerance": 0.1}, ("solver",), "needs a partition"),
    ("plada", {"type": "equalized_odds", "tolerance": 0.1}, ("constraints", 0, "type"), "needs a partition"),
    ("ssg", {"type": "minority_rate", "tolerance": 0.1}, ("constraints", 0, "type"), "needs a partition"),
])
def test_solvers_and_families_without_overlapping_groups_are_refused(solver, constraint, loc, message):
    with pytest.raises(SpecError, match=message) as err:
        check_spec_against_table(_spec(solver={"name": solver}, constraints=[constraint]), _table())
    assert err.value.loc == loc


@pytest.mark.parametrize("solver", ["plada", "ssg", "lagrangian", "penalty", "erm", "auto"])
def test_generic_solvers_accept_overlapping_groups(solver):
    check_spec_against_table(_spec(solver={"name": solver}, constraints=[
        {"type": "demographic_parity", "tolerance": 0.1, "reference": "overall"},
        {"type": "equal_opportunity", "tolerance": 0.1}, {"type": "loss_gap", "tolerance": 0.1},
        {"type": "intersectional", "tolerance": 0.1}]), _table())


def test_per_group_rates_on_a_partition_need_a_generic_solver():
    table = _table()
    spec = ProblemSpec(target="label", positive_label=1, sensitive=["c"], solver={"name": "reductions"},
                       constraints=[{"type": "demographic_parity", "tolerance": 0.1, "reference": "overall"}])
    with pytest.raises(SpecError, match="reference 'overall'") as err:
        check_spec_against_table(spec, table)
    assert err.value.loc == ("constraints", 0, "reference")
    check_spec_against_table(spec.model_copy(update={"solver": spec.solver.model_copy(update={"name": "ssg"})}),
                             table)


def test_auto_keeps_only_generic_candidates():
    from solvers.catalog.auto import AutoConfig, portfolio_names

    generic = portfolio_names(AutoConfig(), "linear", ["demographic_parity"], generic=True)
    assert generic and set(generic) <= {"ssg", "plada", "lagrangian", "penalty"}
    assert "reductions" in portfolio_names(AutoConfig(), "linear", ["demographic_parity"])
    spec = _spec(solver={"name": "auto"}, model={"type": "gbdt"}, objective="logistic")
    with pytest.raises(SpecError, match="auto has no solver") as err:  # no generic solver boosts trees
        check_spec_against_table(spec, _table())
    assert err.value.loc == ("solver",)


def test_group_sizes_without_the_pairs_equal_the_membership_counts():
    table = _table(300, seed=3)
    table.loc[::7, "a"] = np.nan  # a missing value reaches no cut
    spec = OverlappingGroups(thresholds={"a": [0.7, 0.2, 0.5], "b": [0.1, 0.9]})
    columns, cuts, passed = _passed(table, spec)
    sizes = _grid_sizes(passed, cuts)
    m = overlapping_membership(table, spec)
    assert m.n_groups == len(sizes) == 6
    a = pd.to_numeric(table.a).to_numpy()
    loop = [int(((a >= ta) & (table.b.to_numpy() >= tb)).sum()) for ta in sorted([0.7, 0.2, 0.5]) for tb in [0.1, 0.9]]
    assert sizes.tolist() == loop == m.counts.tolist()
    assert int(np.prod(passed, axis=1).sum()) == m.rows.size == sum(loop)
    assert math.prod(len(t) for t in cuts) == 6


def test_column_groups_put_a_row_in_one_group_per_column():
    table = _table(50)
    m = overlapping_membership(table, OverlappingGroups(columns=["c", "d"], thresholds={"a": [0.5]}))
    assert m.names[0] == "a>=0.5" and set(m.names[1:]) == {"c=x", "c=y", "c=z", "d=u", "d=v"}
    dense = m.csr().toarray()
    assert (dense[:, 1:].sum(1) == 2).all()  # one group of c and one of d per row
    np.testing.assert_array_equal(dense[:, 0], (table.a >= 0.5).to_numpy())
    for j, name in enumerate(m.names[1:], start=1):
        column, value = name.split("=")
        np.testing.assert_array_equal(dense[:, j], (table[column] == value).to_numpy())
    assert np.all(np.diff(m.rows) >= 0)
