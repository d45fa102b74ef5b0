"""``auto``'s time budget (issue 30, item 7): proportional to the data, and no candidate takes most of it."""
from __future__ import annotations

import time

import solvers.auto as auto
from solvers import solve
from solvers.auto import CANDIDATE_SHARE, default_budget_s
from tests.support.problems import train_validation_problems


def test_the_default_budget_grows_with_the_training_cells_and_stays_within_the_time_limit():
    assert default_budget_s(19_500, 105, 600) == auto.BUDGET_BASE_S + auto.BUDGET_PER_MCELL_S * 19_500 * 105 / 1e6
    assert default_budget_s(19_500, 105, 600) < 20  # Adult's training split: seconds, not minutes
    assert default_budget_s(10_000_000, 100, 600) == 600


def test_a_slow_candidate_gets_a_third_of_the_budget_and_the_next_ones_still_run(monkeypatch):
    """The first candidate uses every second it is given (as fairlearn's reductions did on Adult by race)."""
    spent: dict[str, float] = {}
    real = auto._Portfolio._solve

    def _solve(self, name, params, model, iterations, tolerance):
        if name == "lagrangian":
            began = time.perf_counter()
            time.sleep(max(self.deadline - began, 0.0))
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - began
        return real(self, name, params, model, iterations, tolerance)

    monkeypatch.setattr(auto._Portfolio, "_solve", _solve)
    train, val, _ = train_validation_problems()
    budget = 3.0
    began = time.perf_counter()
    result = solve(train, {"name": "auto", "params": {"portfolio": ["ssg", "lagrangian", "penalty"],
                                                      "exhaustive": True, "budget_s": budget, "iterations": 50}},
                   max_iterations=400, seed=0, validation=val)
    elapsed = time.perf_counter() - began
    assert spent["lagrangian"] <= CANDIDATE_SHARE * budget + 0.3
    assert "penalty" in {t["solver"] for t in result.tried}  # the next candidate ran
    assert elapsed < budget + 5  # the whole portfolio within its budget (judging and copies beside)


def test_the_first_candidate_runs_to_its_own_stopping_rule_however_short_the_budget():
    """A wall-clock budget would make the lead's model depend on the machine's load; it bounds the later ones."""
    train, val, _ = train_validation_problems()
    spec = {"name": "auto", "params": {"portfolio": ["ssg", "penalty"], "iterations": 120, "refinements": 0,
                                       "exhaustive": True}}
    full = solve(train, spec, max_iterations=400, seed=0, validation=val).tried
    spec["params"]["budget_s"] = 1e-3
    cut = solve(train, spec, max_iterations=400, seed=0, validation=val).tried
    assert [t["solver"] for t in full] == ["ssg", "penalty"]
    assert [t["solver"] for t in cut] == ["ssg"]   # the budget was spent: no later candidate
    assert cut[0]["iterations"] == full[0]["iterations"] == 120
    assert cut[0]["gaps"] == full[0]["gaps"]      # the same model as with time to spare
