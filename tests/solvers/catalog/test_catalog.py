"""The catalog: every declared solver and constraint type is implemented, and nothing in it (nor the API)
loads torch, SciPy or scikit-learn."""
from __future__ import annotations

import pytest

from solvers.catalog import ALGORITHMS, CONSTRAINTS, list_constraints, list_solvers
from tests.support.imports import imported_after


def test_the_api_process_imports_no_torch_scipy_or_sklearn():
    assert imported_after("import app.main")["heavy"] == []


def test_specs_are_validated_and_the_catalog_listed_without_torch():
    result = imported_after(
        "from pydantic import ValidationError\n"
        "from solvers import ProblemSpec, list_solvers, list_constraints\n"
        "spec = dict(target='y', positive_label=1, sensitive=['s'], solver={'name': 'idca', 'params': {'inner_iterations': 3}},\n"
        "            constraints=[{'type': 'psp', 'tolerance': 0.1, 'interval': [0.05, 0.3]}])\n"
        "ProblemSpec.model_validate(spec)\n"
        "spec['constraints'][0]['interval'] = [0.5, 0.1]\n"
        "try:\n"
        "    ProblemSpec.model_validate(spec)\n"
        "except ValidationError as err:\n"
        "    print(err.errors()[0]['loc'])\n"
        "print(len(list_solvers()), len(list_constraints()))")
    assert result["heavy"] == []
    assert result["printed"][0].startswith("('constraints', 0")  # the bad interval is named
    assert result["printed"][1] == f"{len(ALGORITHMS.names())} {len(CONSTRAINTS.names())}"


@pytest.mark.parametrize("catalog", [ALGORITHMS, CONSTRAINTS], ids=["solvers", "constraints"])
def test_every_declaration_is_implemented_by_its_class(catalog):
    for entry in catalog.entries():
        cls = entry.load()
        assert cls.entry is entry and cls.name == entry.name and cls.Config is entry.Config
        for key, value in entry.metadata.items():
            assert getattr(cls, key) == value, (entry.name, key)
        for alias in entry.aliases:
            assert catalog.get(alias) is cls


def test_listing_matches_the_implementations():
    solvers = {s["name"]: s for s in list_solvers()}
    assert list(solvers) == ALGORITHMS.names() and len(solvers) >= 20
    for cls in ALGORITHMS.classes():
        supports = solvers[cls.name]["supports"]
        assert supports["models"] == list(cls.supported_models)
        assert supports["constraints"] == list(cls.supported_constraints or CONSTRAINTS.names())
    assert solvers["level_set"]["supports"] == {"models": ["linear"], "constraints": ["auc_parity"],
                                                "overlapping_groups": False}
    assert solvers["plada"]["supports"]["overlapping_groups"] and not solvers["reductions"]["supports"]["overlapping_groups"]
    assert [c["type"] for c in list_constraints()] == CONSTRAINTS.names()


def test_a_constraint_the_solver_refuses_at_start_is_refused_at_submission():
    """IQRC (like level_set) takes one auc_parity constraint or none: a job with demographic parity is a SpecError
    naming the constraint's type (it was accepted, then failed in the worker with a ValueError)."""
    from solvers.data.spec import ProblemSpec, SpecError, check_solver_supports

    spec = ProblemSpec.model_validate({"target": "y", "positive_label": 1, "sensitive": ["s"], "solver": {"name": "iqrc"},
                                       "constraints": [{"type": "demographic_parity", "tolerance": 0.05}]})
    with pytest.raises(SpecError) as err:
        check_solver_supports(spec)
    assert err.value.loc == ("constraints", 0, "type") and "auc_parity" in err.value.msg
    check_solver_supports(spec.model_copy(update={"constraints": []}))


def test_unknown_names_and_duplicates_are_errors():
    with pytest.raises(KeyError, match="unknown solver 'nope'"):
        ALGORITHMS.entry("nope")
    with pytest.raises(ValueError, match="already registered"):
        ALGORITHMS.declare("PLADA", implementation="x:y")(ALGORITHMS.entry("plada").Config)
    assert ALGORITHMS.entry("P-Lagrangian").name == "plada"
