"""PLADA's Communities & Crime setting as a job spec (Sec. 5.3): threshold groups on deciles of the three race
columns over the whole table (591 of the 1,000 hold more than 1 % of the 105-column copy's rows), the same groups
as ``threshold_membership`` builds in-process, and a short run reports the exact intersectional value on every
split."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.common.datasets import data_dir

CC = data_dir() / "communities_crime.csv"
GROUP_COLUMNS = ["racepctblack", "racePctHisp", "racePctAsian"]


@pytest.mark.skipif(not CC.exists(), reason="the shared Communities & Crime file is not there")
def test_communities_crime_as_a_job_spec():
    from solvers import ProblemSpec, run
    from solvers.api import prepare
    from solvers.membership import threshold_membership

    table = pd.read_csv(CC)
    cuts = {c: sorted({round(float(q), 6) for q in np.quantile(table[c], np.arange(1, 11) / 10)})
            for c in GROUP_COLUMNS}
    groups = {"thresholds": cuts, "min_group_fraction": 0.01}
    features = [c for c in table.columns if c not in ("class", "ViolentCrimesPerPop", "Black", "fold", "state",
                                                      "communityname")]
    spec = ProblemSpec(target="class", positive_label=1, overlapping_groups=groups, features=features,
                       constraints=[{"type": "intersectional", "tolerance": 0.05}],
                       solver={"name": "plada", "params": {"eta": 0.01}}, objective="hinge", max_iterations=5,
                       split={"test": 0.2, "validation": 0.2, "seed": 0}, device="cpu")
    data = prepare(table, spec)
    direct = threshold_membership(table, groups)
    assert data.group_names == direct.names and len(direct.names) == 591
    np.testing.assert_array_equal(data.membership.counts, direct.counts)  # the same pairs, in split order
    out = run(table, spec)
    (entry,) = out.fairness
    assert entry["type"] == "intersectional" and all(entry[s]["value"] is not None for s in ("train", "test"))
    assert 500 < len(out.constraint_names) <= 591  # groups above 1 % of the training rows
