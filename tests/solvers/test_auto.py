"""``auto`` (issue 17, items 3 and 5): the default solver, a portfolio selected on validation that keeps the
tolerance, skips diverged and near-constant candidates and records what it tried."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from solvers import ConstraintSpec, ProblemSpec, RecordingObserver, SolverSpec, run, solve
from solvers.auto import SELECT_DELTA, TIE_SE, triviality
from solvers.catalog import ALGORITHMS
from solvers.metrics.classification import group_fairness
from solvers.observer import Observer
from solvers.problem import Problem
from tests.support.problems import planted_problem_data, train_validation_problems

TOL = 0.05
#: max_iterations bounds the whole portfolio: tests of the portfolio's logic give each candidate ``iterations`` and
#: leave the total out of the way
BUDGET = 100_000


def _dp(model, X, y, s) -> float:
    with torch.no_grad():
        pred = (model(torch.as_tensor(X)).reshape(-1) > 0).numpy().astype(int)
    return group_fairness(y, pred, s, ["a", "b"])["demographic_parity"]


def test_auto_is_the_default_solver_and_named_solvers_keep_their_defaults():
    assert SolverSpec().name == "auto"
    spec = ProblemSpec(target="income", positive_label=">50K", sensitive=["sex"])
    assert spec.solver.name == "auto" and spec.solver.entry.name == "auto"
    assert ALGORITHMS.entry("plada").Config().eta is None  # the paper's default, resolved per model type
    with pytest.raises(ValueError, match="unknown portfolio solver 'auto'"):
        SolverSpec(name="auto", params={"portfolio": ["auto"]})
    with pytest.raises(ValueError, match="'plada': invalid param 'eta'"):
        SolverSpec(name="auto", params={"settings": {"plada": [{"eta": -1}]}})


def test_selects_the_most_accurate_candidate_that_keeps_the_tolerance_on_validation():
    train, val, (Xv, yv, sv) = train_validation_problems()
    obs = RecordingObserver()
    result = solve(train, {"name": "auto", "params": {"exhaustive": True, "iterations": 300}}, obs,
                   max_iterations=BUDGET, seed=0, validation=val)
    tried = result.tried
    # the general-purpose four, then the dedicated solvers of DP (reductions, group_thresholds)
    assert {t["solver"] for t in tried} == {"ssg", "plada", "lagrangian", "penalty", "reductions", "group_thresholds"}
    for t in tried:
        assert {"solver", "params", "training_tolerances", "accuracy", "gaps", "train_gaps", "seconds",
                "outcome", "judged_on", "unseen_bound"} <= set(t) and t["judged_on"] == "validation"
    chosen = [t for t in tried if t.get("selected")]
    assert len(chosen) == 1 and chosen[0]["outcome"] == "meets"
    meeting = [t for t in tried if t["outcome"] == "meets"]
    # a row meets only when it keeps the tolerance on validation AND on its own training rows
    assert all((t["outcome"] == "meets") == (t["gaps"][0] <= TOL and t["train_gaps"][0] <= TOL)
               for t in tried if t["outcome"] in ("meets", "violates"))
    meeting = [t for t in meeting if t["unseen_bound"] <= SELECT_DELTA] or meeting   # margin first
    best = max(t["accuracy"] for t in meeting)  # ties: within half a standard error of the best, smallest gap
    ties = [t for t in meeting if t["accuracy"] >= best - TIE_SE * np.sqrt(best * (1 - best) / len(yv)) - 1e-12]
    worst = [max(t["gaps"][0], t["train_gaps"][0]) for t in ties]  # on validation or train, whichever is larger
    assert chosen[0] in ties and max(chosen[0]["gaps"][0], chosen[0]["train_gaps"][0]) == min(worst)
    # the returned model is the selected one: its exact validation gap is the row's, within the tolerance
    assert _dp(result.model, Xv, yv, sv) == pytest.approx(chosen[0]["gaps"][0], abs=1e-6)
    assert chosen[0]["gaps"][0] <= TOL
    # the user's tolerance is back on the family, whatever auto tightened it to while solving
    assert train.constraints[0].tolerance == TOL
    assert any(t["training_tolerances"][0] < TOL for t in tried)
    # the observer saw one continuous run: numbered 1..N, started once, G against the user's tolerance
    assert [r.iteration for r in obs.records] == list(range(1, len(obs.records) + 1))
    assert result.iterations == len(obs.records) == sum(t["iterations"] for t in tried)
    elapsed = [r.elapsed_s for r in obs.records]
    assert all(b >= a for a, b in zip(elapsed, elapsed[1:]))


def test_the_portfolio_ends_once_a_strong_candidate_keeps_every_tolerance_with_margin():
    from solvers.auto import KEEP

    train, val, _ = train_validation_problems()
    def rows(params: dict) -> list[dict]:
        tried = solve(train, {"name": "auto", "params": params | {"iterations": 300}}, max_iterations=BUDGET, seed=0,
                      validation=val).tried
        return [{k: v for k, v in t.items() if k not in ("seconds", "selected")} for t in tried]

    short, full = rows({"budget_s": 600}), rows({"exhaustive": True})   # no candidate cut by a loaded machine's clock
    assert len(short) < len(full) and short == full[:len(short)]  # the same solves, cut after a candidate
    last = short[-1]["solver"]
    assert full[len(short)]["solver"] != last  # ... at the end of the candidate's refinements
    margin = [t for t in short if t["outcome"] == "meets" and not t.get("weak")
              and max(*t["gaps"], *t["train_gaps"]) <= KEEP * TOL]
    assert margin  # the row that ended it
    earlier = [t for t in short if t["solver"] != last]  # no candidate before the last one had such a row
    assert not any(t in margin for t in earlier)


def test_the_exact_traces_reach_the_caller_through_the_portfolio():
    train, val, _ = train_validation_problems(1500)
    obs = RecordingObserver(exact_every=50)
    solve(train, {"name": "auto", "params": {"portfolio": ["ssg", "penalty"], "iterations": 150}}, obs,
          max_iterations=BUDGET, validation=val)
    traced = [r for r in obs.records if r.exact is not None]
    assert len(traced) >= 4 and all(set(r.exact) == {"train", "validation"} for r in traced)


def test_a_diverging_setting_is_detected_and_the_search_moves_on():
    train, val, _ = train_validation_problems(1500)
    params = {"portfolio": ["lagrangian"], "refinements": 0,
              "settings": {"lagrangian": [{"lr_primal": 1e38, "lr_dual": 1e38}, {}]}}  # the first overflows
    result = solve(train, {"name": "auto", "params": params}, max_iterations=100, validation=val)
    first, second = result.tried
    assert first["outcome"] == "diverged" and not first.get("selected")
    assert second["params"] == {} and second.get("selected")
    assert all(torch.isfinite(p).all() for p in result.model.parameters())
    params["settings"]["lagrangian"] = params["settings"]["lagrangian"][:1]
    with pytest.raises(ArithmeticError, match="no candidate gave a usable model.*diverged"):
        solve(train, {"name": "auto", "params": params}, max_iterations=100, validation=val)


def test_near_constant_and_weak_models_are_detected():
    y = np.array([0, 1] * 50)
    group = np.repeat([0, 1], 50)
    assert triviality(y, np.full(100, 3.0), group, 2) == "near_constant"  # everyone positive
    assert triviality(y, np.where(group == 0, -5.0, 2 * y - 1.0), group, 2) == "near_constant"  # group 0 never
    coin = np.where(np.arange(100) % 4 < 2, 1.0, -1.0)  # positive for half of each group, unrelated to y
    assert triviality(y, coin, group, 2) == "weak"  # balanced accuracy 0.5
    assert triviality(y, 2 * y - 1.0, group, 2) is None  # a perfect classifier


class _CancelAfter(Observer):
    def __init__(self, k: int) -> None:
        self.k, self.seen = k, 0

    def on_iteration(self, record) -> None:
        self.seen += 1

    def should_stop(self):
        return "cancelled" if self.seen >= self.k else None


def test_a_cancel_request_stops_the_whole_portfolio():
    train, val, _ = train_validation_problems(1500)
    result = solve(train, "auto", _CancelAfter(40), max_iterations=300, validation=val)
    assert result.status == "stopped" and result.stop_reason == "cancelled"
    assert len(result.tried) == 1 and result.iterations == 40
    assert train.constraints[0].tolerance == TOL


def test_without_a_validation_split_it_judges_on_train_and_keeps_the_exact_train_gap():
    train, _, _ = train_validation_problems(2000, tolerance=0.03)
    result = solve(train, {"name": "auto", "params": {"iterations": 300}}, max_iterations=BUDGET)
    chosen = next(t for t in result.tried if t.get("selected"))
    assert chosen["judged_on"] == "train" and chosen["outcome"] == "meets"
    X, y, s = (t.numpy() for t in (train.X, train.y.long(), train.group))
    assert _dp(result.model, X, y, s) <= 0.03


def _adult_cut(n: int):
    from bench.common.datasets import adult, data_dir

    if not (data_dir() / "adult.data").exists():
        pytest.skip("Adult is not in FAIRSOLVE_DATA_DIR")
    return adult().sample(n=n, random_state=0)


def test_the_readme_example_gives_a_good_model_that_keeps_the_tolerance():
    """The README's first job (auto, Adult, DP ≤ 0.02 on sex) on a 12,000-row cut of Adult."""
    spec = ProblemSpec.model_validate({
        "target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.02}],
        "split": {"test": 0.2, "validation": 0.2, "seed": 0}, "device": "cpu"})
    assert spec.solver.name == "auto"
    out = run(_adult_cut(12_000), spec)
    validation = out.metrics["validation"]
    assert validation["balanced_accuracy"] >= 0.70
    assert validation["demographic_parity"] <= 0.02
    assert out.tried and sum(bool(t.get("selected")) for t in out.tried) == 1
    assert out.tolerances == [0.02]


def _weak_signal(n: int, seed: int):
    """The label depends weakly on a feature shifted by group: scores sit near 0, where σ(f) measures mean
    scores and not rates, so the sigmoid surrogate of DP is loose."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 1.0 * s
    y = (rng.random(n) < 1 / (1 + np.exp(-(0.4 * X[:, 0] + 0.2 * X[:, 1] - 0.2)))).astype(int)
    return ((X - X.mean(0)) / X.std(0)).astype(np.float32), y, s


def test_where_the_surrogate_is_loose_auto_sharpens_it_until_the_exact_gap_is_kept():
    X, y, s = _weak_signal(4000, 1)
    family = ConstraintSpec(type="demographic_parity", tolerance=0.03).build()
    train = Problem(X=X[:2800], y=y[:2800], group=s[:2800], group_names=["a", "b"], constraints=[family],
                    device="cpu")
    val = Problem(X=X[2800:], y=y[2800:], group=s[2800:], group_names=["a", "b"], device="cpu")
    # 200 iterations per continued solve: the cooled surrogate needs more than the default 100 on this data
    params = {"portfolio": ["plada"], "refine_iterations": 200, "iterations": 300}
    result = solve(train, {"name": "auto", "params": params}, max_iterations=BUDGET, validation=val)
    rows = result.tried
    # the tolerance alone stalls (the exact gap stays ~0.1 while the surrogate is met), a cooler σ(f/T) does not
    assert rows[-2]["temperatures"] == [1.0] and rows[-2]["train_gaps"][0] > 0.05
    assert rows[-1]["temperatures"] == [0.25] and rows[-1].get("selected")
    assert _dp(result.model, X[:2800], y[:2800], s[:2800]) <= 0.03
    assert _dp(result.model, X[2800:], y[2800:], s[2800:]) <= 0.03
    assert family.config.temperature == 1.0 and family.tolerance == 0.03  # the user's again


def test_with_a_guarantee_auto_chooses_on_the_training_rows_only():
    """The Seldonian test of solvers.fairness.guarantee is valid for candidates that never saw validation."""
    from bench.common.datagen import planted_table

    spec = ProblemSpec.model_validate({
        "target": "income", "positive_label": ">50K", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.1}], "guarantee": {"confidence": 0.9},
        "solver": {"name": "auto", "params": {"portfolio": ["ssg"], "refinements": 1}}, "max_iterations": 100,
        "device": "cpu"})
    out = run(planted_table(3000, seed=4), spec)
    assert out.tried and all(t["judged_on"] == "train" for t in out.tried)
    assert out.guarantee is not None and out.guarantee["confidence"] == 0.9


def test_auto_serves_a_gbdt_model_with_its_tree_solvers_and_refuses_a_spec_it_cannot_serve():
    """A gbdt spec without a solver (auto, the default) runs the tree portfolio (group_thresholds, fair_boosting,
    reductions for DP: the cheapest first) and keeps the tolerance on validation; a family none of them handles is a SpecError
    naming ``solver`` at submit, not a failed job."""
    from solvers.models.factory import model_factory
    from solvers.data.spec import ModelSpec, SpecError, check_solver_supports

    X, y, s = planted_problem_data(2000, seed=3)
    cut = 1400
    gbdt = ModelSpec(type="gbdt", n_estimators=30)
    family = ConstraintSpec(type="demographic_parity", tolerance=TOL).build()
    train = Problem(X=X[:cut], y=y[:cut], group=s[:cut], group_names=["a", "b"], constraints=[family], device="cpu",
                    model_factory=model_factory(gbdt), model_type="gbdt")
    val = Problem(X=X[cut:], y=y[cut:], group=s[cut:], group_names=["a", "b"], device="cpu",
                  model_factory=model_factory(gbdt), model_type="gbdt")
    result = solve(train, "auto", max_iterations=200, seed=0, validation=val)
    tried = {t["solver"] for t in result.tried}
    assert tried and tried <= {"reductions", "fair_boosting", "group_thresholds"}
    assert result.tried[0]["solver"] == "group_thresholds"                  # the cheapest first
    selected = next(t for t in result.tried if t.get("selected"))
    assert selected["outcome"] == "meets" and _dp(result.model, X[cut:], y[cut:], s[cut:]) <= TOL
    spec = ProblemSpec(target="y", positive_label=1, sensitive=["s"], model={"type": "gbdt"},
                       constraints=[{"type": "loss_gap", "tolerance": 0.1}])
    with pytest.raises(SpecError, match="auto has no solver for a gbdt model") as refused:
        check_solver_supports(spec)
    assert refused.value.loc == ("solver",)


def test_selection_prefers_a_row_that_meets_with_the_margin_over_a_more_accurate_one_that_barely_meets():
    """The winner of "most accurate among those with validation gap ≤ ε" has an optimistic gap; a row whose
    bound on P(unseen gap > ε) is ≤ SELECT_DELTA is preferred; without such a row the most accurate meets."""
    from types import SimpleNamespace

    from solvers.auto import _Portfolio, _Row
    from solvers.fairness.threshold_margin import split_bound

    rng = np.random.default_rng(0)
    n = 4000
    y, g = rng.integers(0, 2, n), rng.integers(0, 2, n)
    barely = rng.random(n) < np.where(g == 1, 0.3 + TOL * 0.98, 0.3)      # gap just below ε
    clearly = rng.random(n) < 0.3                                           # gap near 0
    bounds = [split_bound([("demographic_parity", TOL)], y, p, g, 2) for p in (barely, clearly)]
    assert bounds[0] > SELECT_DELTA >= bounds[1]

    def row(accuracy, gap, bound):
        return _Row({"outcome": "meets", "accuracy": accuracy, "unseen_bound": bound, "train_gaps": [gap]},
                    model=torch.nn.Identity(), gaps=np.array([gap]))

    run = _Portfolio.__new__(_Portfolio)
    run.user_tolerance, run.judge, run.validation = np.array([TOL]), SimpleNamespace(y=y), SimpleNamespace()
    run.rows = [row(0.86, 0.049, bounds[0]), row(0.84, 0.01, bounds[1])]
    assert run.select() is run.rows[1]
    run.rows = [row(0.86, 0.049, bounds[0]), row(0.84, 0.03, 0.4)]
    assert run.select() is run.rows[0]


def test_judged_on_train_selection_prefers_a_model_the_exact_correction_can_shift():
    """Without a validation split (under a guarantee) the exact threshold correction follows the selection and
    shifts linear score models only: a meeting linear row is preferred to a more accurate meeting one it cannot
    shift (here a module without a linear ``net``, as a reductions or group_thresholds model); with a validation
    split, or without a shiftable meeting row, the most accurate meets as before."""
    from types import SimpleNamespace

    from solvers.auto import _Portfolio, _Row
    from solvers.fairness.enforce import shiftable
    from solvers.models.factory import linear

    def row(accuracy, model):
        return _Row({"outcome": "meets", "accuracy": accuracy, "unseen_bound": None, "train_gaps": [0.01]},
                    model=model, gaps=np.array([0.01]))

    fixed, shifted = row(0.86, torch.nn.Identity()), row(0.80, linear(3))
    assert shiftable(shifted.model) and not shiftable(fixed.model)
    run = _Portfolio.__new__(_Portfolio)
    run.user_tolerance, run.judge = np.array([TOL]), SimpleNamespace(y=np.zeros(4000))
    run.rows, run.validation = [fixed, shifted], None
    assert run.select() is shifted
    run.validation = SimpleNamespace()
    assert run.select() is fixed
    run.rows, run.validation = [fixed, row(0.80, torch.nn.Identity())], None
    assert run.select() is fixed


def test_the_gbdt_portfolio_tries_its_cheapest_dedicated_solvers_first_and_others_keep_their_order():
    from solvers.catalog.auto import CHEAPEST_FIRST, AutoConfig, portfolio_names

    for families in (["demographic_parity"], ["equalized_odds"]):
        names = portfolio_names(AutoConfig(), "gbdt", families)
        assert names[:len(CHEAPEST_FIRST["gbdt"])] == list(CHEAPEST_FIRST["gbdt"]) and "reductions" in names
    linear = portfolio_names(AutoConfig(), "linear", ["demographic_parity"])
    assert linear[0] == "group_thresholds" and linear.count("group_thresholds") == 1   # linear's lead (LEADS)
    plain = portfolio_names(AutoConfig(), "linear", ["demographic_parity"], leads=False)   # under a guarantee
    assert plain.index("reductions") < plain.index("group_thresholds")   # catalogue order outside gbdt
    assert plain[:4] == ["ssg", "plada", "lagrangian", "penalty"]
    assert portfolio_names(AutoConfig(portfolio=["reductions", "group_thresholds"]), "gbdt",
                           ["demographic_parity"]) == ["reductions", "group_thresholds"]   # a given order is kept


def test_auto_over_gbdt_cross_fits_group_thresholds_and_stops_on_its_population_margin():
    """gbdt auto: group_thresholds first, cross-fitted on train ∪ validation over the selected base (the tuned one
    or LightGBM's own, where the model spec keeps LightGBM's defaults: here the share of features, its own trees and
    leaves kept); its
    population margin met, the row "meets" by it, is never tightened and ends the portfolio (one solve); the job's
    enforcement record is the threshold LP's, and its promise sentence the margin's estimate."""
    from solvers import ProblemSpec, run
    from bench.common.datagen import planted_table

    spec = ProblemSpec(target="income", positive_label=">50K", sensitive=["sex"], device="cpu",
                       model={"type": "gbdt", "n_estimators": 30, "num_leaves": 7},
                       constraints=[{"type": "demographic_parity", "tolerance": 0.1}],
                       split={"test": 0.1, "validation": 0.3, "seed": 0})
    out = run(planted_table(6000, seed=5), spec)
    assert [t["solver"] for t in out.tried] == ["group_thresholds"]
    row = out.tried[0]
    assert row["params"] == {"cross_fit": 3, "base_model": "select", "margin_delta": 0.05}
    assert row["margin_met"] and row["selected"] and out.enforcement["margin"]["delta"] == 0.05
    assert row["unseen_bound"] <= 0.1 and row["outcome"] == "meets"
    margin = out.enforcement["margin"]
    assert out.enforcement["method"] == "group_thresholds" and margin["met"] and margin["about"] == "population"
    assert out.enforcement["cross_fit"] == {"folds": 3, "model": "refit"}
    selection = out.enforcement["base_selection"]   # the tuned base or LightGBM's own colsample, by out-of-fold
    chosen = selection["chosen"]
    assert chosen == ("capacity" if selection["capacity"] > selection["tuned"] else "tuned")
    assert out.enforcement["base_params"] == {"colsample_bytree": 0.5 if chosen == "tuned" else 1.0}
    assert out.promise["kind"] == "estimate" and "population" in out.promise["sentence"]


def test_auto_over_gbdt_margins_a_randomised_rule_at_group_thresholds_own_delta():
    """Equalized odds (two rate bands: a randomised rule) runs at δ = 0.1 and records it in its margin; demographic
    parity and equal opportunity (one band) at auto's 0.05; a deterministic-only family keeps 0.05."""
    from solvers.auto import DELTA_GBDT, DELTA_GBDT_RANDOMIZED, portfolio
    from solvers.catalog.auto import AutoConfig
    from solvers import ProblemSpec, run
    from bench.common.datagen import planted_table

    def delta(families):
        return dict(portfolio(AutoConfig(), "gbdt", families))["group_thresholds"][0]["margin_delta"]

    assert DELTA_GBDT_RANDOMIZED > DELTA_GBDT
    assert delta(["equalized_odds"]) == delta(["demographic_parity", "equal_opportunity"]) == DELTA_GBDT_RANDOMIZED
    assert delta(["demographic_parity"]) == delta(["equal_opportunity"]) == DELTA_GBDT
    assert delta(["partial_demographic_parity", "demographic_parity"]) == DELTA_GBDT
    spec = ProblemSpec(target="income", positive_label=">50K", sensitive=["sex"], device="cpu",
                       model={"type": "gbdt", "n_estimators": 30, "num_leaves": 7},
                       constraints=[{"type": "equalized_odds", "tolerance": 0.1}],
                       split={"test": 0.1, "validation": 0.3, "seed": 0})
    out = run(planted_table(6000, seed=5), spec)
    assert out.tried[0]["params"]["margin_delta"] == DELTA_GBDT_RANDOMIZED
    assert out.enforcement["margin"]["delta"] == DELTA_GBDT_RANDOMIZED and out.enforcement["randomized"]


def test_max_iterations_bounds_the_whole_portfolio_and_its_progress():
    """Issue 30 item 5: 2,000 asked, 3,000-5,000 run (each candidate had max_iterations); progress "3000 / 2000"."""
    train, val, _ = train_validation_problems(1500)
    obs = RecordingObserver()
    params = {"exhaustive": True, "iterations": 120, "refine_iterations": 60}
    result = solve(train, {"name": "auto", "params": params}, obs, max_iterations=400, validation=val)
    assert result.iterations == len(obs.records) == sum(t["iterations"] for t in result.tried) == 400
    assert obs.info["max_iterations"] == 400 and obs.records[-1].iteration == 400
    assert result.tried[0]["iterations"] == 120  # a first solve as configured, the last one cut to what was left
    assert result.status == "completed" and sum(t.get("selected", False) for t in result.tried) == 1
    unbounded = solve(train, {"name": "auto", "params": params}, max_iterations=BUDGET, validation=val)
    assert len(unbounded.tried) > len(result.tried) and unbounded.iterations > 400  # the budget cut the portfolio


def test_linear_auto_leads_with_group_thresholds_on_train_and_validation_rows_and_stops_on_its_margin():
    """A linear job's auto first fits group thresholds over a logistic base on every train and validation row
    (``threshold_rows``) with the population margin; met, it ends the portfolio (one row in ``tried``)."""
    rng = np.random.default_rng(3)
    n = 4000
    sex = rng.choice(["F", "M"], n)
    x = rng.normal(size=(n, 3))
    logit = x @ np.array([1.0, -0.5, 0.3]) + 0.8 * (sex == "M")
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    table = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "sex": sex, "y": y})
    spec = ProblemSpec.model_validate({
        "target": "y", "positive_label": "yes", "sensitive": ["sex"], "model": {"type": "linear"},
        "constraints": [{"type": "demographic_parity", "tolerance": 0.08}],
        "split": {"test": 0.2, "validation": 0.3, "seed": 0}, "device": "cpu"})
    out = run(table, spec)
    assert [t["solver"] for t in out.tried] == ["group_thresholds"]
    row = out.tried[0]
    assert row["params"] == {"threshold_rows": "train_validation"} and row["margin_met"] and row["selected"]
    assert out.enforcement["split"] == "train+validation" and out.enforcement["margin"]["met"]


def test_a_population_margin_these_rows_cannot_meet_ends_the_portfolio_unrefined():
    """A group of 40 rows: its true-positive rate's sampling error alone is above a 0.03 tolerance, so
    group_thresholds' population margin is not met even at its largest share; no candidate judged on these rows can
    promise more and no tighter training tolerance lowers that error: the lead's one row ends the portfolio, marked
    ``margin_unattainable`` with its bound (over δ), and the job promises nothing beyond its rows. ``exhaustive``
    still runs every candidate. Under demographic parity the same group is decided by a coin (2 % of the rows,
    :mod:`solvers.fairness.group_coins`), and the margin is met."""
    rng = np.random.default_rng(4)
    n = 3000
    group = np.where(rng.random(n) < 0.02, "small", "large")
    x = rng.normal(size=(n, 3))
    logit = x @ np.array([1.0, -0.5, 0.3]) + 0.5 * (group == "small")
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "yes", "no")
    table = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "g": group, "y": y})
    fields = {"target": "y", "positive_label": "yes", "sensitive": ["g"], "model": {"type": "linear"},
              "constraints": [{"type": "equal_opportunity", "tolerance": 0.03}],
              "split": {"test": 0.2, "validation": 0.3, "seed": 0}, "device": "cpu", "max_iterations": 600}
    out = run(table, ProblemSpec.model_validate(fields))
    assert [t["solver"] for t in out.tried] == ["group_thresholds"], out.tried
    row = out.tried[0]
    assert row["margin_unattainable"] and row["unseen_bound"] > 0.1 and not row.get("margin_met")
    assert out.enforcement["margin"]["met"] is False and out.promise["kind"] == "not kept"
    assert "too few" in out.promise["sentence"] and f"{100 * row['unseen_bound']:.0f} %" in out.promise["sentence"]
    exhaustive = run(table, ProblemSpec.model_validate({**fields, "solver": {"name": "auto",
                                                                            "params": {"exhaustive": True}}}))
    assert len({t["solver"] for t in exhaustive.tried}) > 1
    parity = run(table, ProblemSpec.model_validate({**fields, "constraints": [{"type": "demographic_parity",
                                                                                "tolerance": 0.03}]}))
    assert parity.tried[0]["margin_met"] and list(parity.enforcement["margin"]["coins"]) == ["small"]
    assert parity.promise["kind"] == "estimate" and "small" in parity.promise["sentence"]
