"""Overlapping groups in the app: a model trained on them is not audited (an audit needs a partition of groups),
the per-group charts of such a job show the group list, and its baseline key counts the groups (partition jobs'
keys unchanged)."""
from __future__ import annotations

import pandas as pd
import pytest

from app.audits.model_file import ModelError, labelled_groups
from app.render.charts.group_list import group_list_figure
from app.render.charts.registry import ChartUnavailable
from solvers import ProblemSpec


def test_an_overlapping_groups_model_is_not_audited():
    spec = ProblemSpec(target="y", positive_label=1, overlapping_groups={"thresholds": {"a": [0.5]}})
    table = pd.DataFrame({"a": [0.1, 0.9], "y": [0, 1]})
    with pytest.raises(ModelError, match="overlapping groups"):
        labelled_groups(spec, ["y", "a"], table)
    partition = spec.model_copy(update={"overlapping_groups": None, "sensitive": ["a"]})
    y, group, names = labelled_groups(partition, ["y", "a"], table)
    assert y.tolist() == [0, 1] and len(names) == 2


def test_group_list_figure_lists_the_groups_largest_first():
    metrics = {"group_sizes": {"a>=0.5": 40, "c=x": 70, "c=y": 70}, "demographic_parity_by_group": {"c=x": 0.25},
               "equal_opportunity_by_group": {"a>=0.5": 0.5}}
    cells = group_list_figure(metrics, "t").data[0].cells.values
    assert list(cells[0]) == ["c=x", "c=y", "a>=0.5"] and list(cells[1]) == [70, 70, 40]
    assert list(cells[2]) == ["0.2500", "", ""] and list(cells[3]) == ["", "", "0.5000"]
    with pytest.raises(ChartUnavailable):
        group_list_figure({}, "t")


def test_baseline_keys_of_partition_jobs_are_unchanged_and_overlapping_groups_count():
    from app.jobs.baselines import baseline_key

    spec = {"dataset_id": "d", "target": "y", "positive_label": 1, "sensitive": ["a"],
            "constraints": [{"type": "demographic_parity", "tolerance": 0.1}]}
    assert baseline_key({**spec, "overlapping_groups": None}) == baseline_key(spec)  # stored keys still match
    first = {**spec, "sensitive": [], "overlapping_groups": {"thresholds": {"a": [0.5]}}}
    second = {**first, "overlapping_groups": {"thresholds": {"a": [0.6]}}}
    assert len({baseline_key(spec), baseline_key(first), baseline_key(second)}) == 3


def test_a_sweep_grid_solver_that_needs_a_partition_is_refused():
    from app.sweeps.grid import GridError, SweepCreate, expand

    base = {"dataset_id": "d", "target": "y", "positive_label": 1, "overlapping_groups": {"columns": ["a"]},
            "constraints": [{"type": "demographic_parity", "tolerance": 0.1}], "solver": {"name": "plada"}}
    planned = expand(SweepCreate.model_validate({"base": base, "grid": {"tolerances": [0.1, 0.2],
                                                                         "solvers": [{"name": "ssg"}]}}))
    assert len(planned) >= 2 and all(p.spec.overlapping_groups.columns == ["a"] for p in planned)
    with pytest.raises(GridError, match="needs a partition") as err:
        expand(SweepCreate.model_validate({"base": base, "grid": {
            "tolerances": [0.1], "solvers": [{"name": "ssg"}, {"name": "reductions"}]}}))
    assert err.value.loc == ("grid", "solvers", 1)
