"""Every constraint family (rates, losses, minority, AUC and partial parity) answers the one base protocol of
solvers.constraints.base.ConstraintFamily: its exact value is its own (``exact_value``), and ``exact_gaps`` is
that value family by family."""
import numpy as np
import pytest

from solvers.catalog import CONSTRAINTS
from solvers.constraints.base import ConstraintFamily
from solvers.data.spec import ConstraintSpec
from solvers.fairness.exact import exact_gaps

SPECS = [{"type": "demographic_parity", "tolerance": 0.05}, {"type": "equal_opportunity", "tolerance": 0.05},
         {"type": "equalized_odds", "tolerance": 0.05},
         {"type": "demographic_parity", "tolerance": 0.05, "reference": "overall"},
         {"type": "loss_gap", "tolerance": 0.05}, {"type": "intersectional", "tolerance": 0.05},
         {"type": "minority_rate", "tolerance": 0.0, "c": 0.3}, {"type": "auc_parity", "tolerance": 0.02},
         {"type": "partial_statistical_parity", "tolerance": 0.05, "interval": [0.2, 0.6]},
         {"type": "partial_demographic_parity", "tolerance": 0.05, "interval": [0.2, 0.6]}]


@pytest.fixture
def split():
    rng = np.random.default_rng(8)
    group = np.repeat([0, 1, 2], [300, 500, 200])
    y = (rng.random(1000) < 0.3 + 0.2 * (group == 1)).astype(int)
    logits = rng.normal(size=1000) + 0.8 * y + 0.6 * (group == 2)
    return y, logits, group, ["a", "b", "c"]


def test_the_catalog_covers_every_family_here():
    assert {s["type"] for s in SPECS} == set(CONSTRAINTS.names())


@pytest.mark.parametrize("spec", SPECS, ids=[s["type"] + ("/overall" if "reference" in s else "") for s in SPECS])
def test_exact_gaps_is_each_familys_own_exact_value(spec, split):
    y, logits, group, names = split
    family = ConstraintSpec(**spec).build().bind(names, np.bincount(group))
    assert type(family).exact_value is not ConstraintFamily.exact_value or spec["type"] not in (
        "demographic_parity", "loss_gap", "auc_parity", "minority_rate", "partial_statistical_parity")
    own = family.exact_value(y, logits, group, names)
    assert np.isfinite(own) and own > 0  # the planted disparity shows
    assert exact_gaps([family], y, logits, group, names)[0] == pytest.approx(own, abs=1e-12)
    shifted = family.exact_value(y, np.where(group == 0, logits - 5.0, logits + 5.0), group, names)
    assert shifted != own  # the value reads the scores


def test_a_family_without_its_own_value_reports_its_exact_metric(split):
    y, logits, group, names = split

    class Counted(ConstraintFamily):
        name = "counted"

        def exact_metrics(self, y, logits, group, group_names):
            return {"counted": float(np.mean(logits > 0))}

    assert Counted(0.1).exact_value(y, logits, group, names) == pytest.approx(np.mean(logits > 0))
    assert np.isnan(type("Silent", (ConstraintFamily,), {"name": "silent"})(0.1).exact_value(y, logits, group, names))
