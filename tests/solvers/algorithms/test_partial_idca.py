"""IDCA on generated data: every outer iterate feasible (ε-feasible without the tightening) and f0
non-increasing (Lemma E.3 and the descent of §6); the partial constraints work with other solvers;
interval 'auto' finds a planted interval."""
import numpy as np
import pytest
import torch

from solvers import ConstraintSpec, Problem, RecordingObserver, solve
from solvers.partial import partial_sp



def _problem(constraint, n=800, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 1.2 * s
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * X[:, 0] + X[:, 1])))).astype(np.int64)
    X = np.column_stack([X, s]).astype(np.float32)
    return Problem(X=X, y=y, group=s, group_names=["a", "b"], constraints=[ConstraintSpec(**constraint).build()])


@pytest.mark.parametrize("constraint", [
    {"type": "partial_statistical_parity", "tolerance": 0.1, "interval": [0.0, 0.3]},
    {"type": "partial_demographic_parity", "tolerance": 0.02, "interval": [0.2, 0.6]},
])
@pytest.mark.parametrize("feasible_iterates", [True, False])
@pytest.mark.parametrize("fast_linear", [True, False])
def test_idca_outer_iterates_feasible_and_monotone(constraint, feasible_iterates, fast_linear):
    """Lemma E.3: f_i(w^(k)) ≤ 0 at every outer iterate with the ε-tightened subproblem (``feasible_iterates``);
    ε-feasible, the guarantee of (33), with Algorithm 2 as written (the default); f0 non-increasing either
    way. Fast (score-space) and autograd paths."""
    problem = _problem(constraint)
    obs = RecordingObserver()
    eps = 5e-3
    params = {"inner_iterations": 60, "epsilon": eps, "feasible_iterates": feasible_iterates,
              "fast_linear": fast_linear}
    result = solve(problem, {"name": "idca", "params": params}, obs, max_iterations=12)
    objectives = np.array([r.objective for r in obs.records])
    violations = np.array([r.max_violation for r in obs.records])
    assert np.log(2) - objectives[-1] > 0.02                 # it made progress from w = 0
    assert np.all(np.diff(np.r_[np.log(2), objectives]) <= 1e-6)   # f0 non-increasing
    bound = 0.0 if feasible_iterates else eps
    assert violations.max() <= bound + 1e-6                    # f_i(w^(k)) ≤ 0 (or ε) at every outer iterate
    assert result.iterations == 12
    if not feasible_iterates:  # the check above could fail: untightened iterates do use the ε of slack
        assert violations.max() > 1e-4


def test_idca_enforces_psp_where_erm_does_not():
    c = {"type": "partial_statistical_parity", "tolerance": 0.05, "interval": [0.0, 0.3]}
    problem = _problem(c, n=1000)
    erm = solve(problem, {"name": "erm"}, max_iterations=200)
    idca = solve(problem, {"name": "idca", "params": {"inner_iterations": 60}}, max_iterations=15)
    g = problem.group.numpy()
    with torch.no_grad():
        before = partial_sp(erm.model(problem.X).numpy(), g, [0.0, 0.3], 2)["value"]
        after = partial_sp(idca.model(problem.X).numpy(), g, [0.0, 0.3], 2)["value"]
    assert before > 0.5 and after < before - 0.3


def test_other_solvers_optimise_the_auxiliary_thresholds():
    problem = _problem({"type": "partial_statistical_parity", "tolerance": 0.1, "interval": [0.0, 0.3]})
    fam = problem.constraints[0]
    solve(problem, {"name": "ssg", "params": {"output": "last"}}, max_iterations=30)
    assert not torch.allclose(fam.theta.detach(), fam.theta0)


def test_auto_interval_picks_the_planted_unfair_interval():
    """Two groups with identical score distributions except in the top-down band [0.4, 0.6] of
    group b (scores permuted inside the band): 'auto' must choose the band among candidates."""
    rng = np.random.default_rng(0)
    n = 4000
    s = np.repeat([0, 1], n // 2)
    u = rng.random(n)                                  # within-group top-down rank of each sample
    X = np.column_stack([-u, s * ((u > 0.4) & (u < 0.6)) * np.sin(40 * u)]).astype(np.float32)
    y = (rng.random(n) < 0.5 + 0.4 * (u < 0.5) - 0.4 * (u >= 0.5)).astype(np.int64)
    cands = [[0.0, 0.2], [0.2, 0.4], [0.4, 0.6], [0.6, 0.8], [0.3, 0.5], [0.45, 0.65]]
    c = ConstraintSpec(type="partial_statistical_parity", tolerance=0.1, interval="auto",
                       auto_candidates=cands, auto_iterations=150).build()
    Problem(X=X, y=y, group=s, group_names=["a", "b"], constraints=[c])
    report = c.auto_report
    assert 0.4 <= report["p"] <= 0.65
    assert report["interval"] == [0.4, 0.6]
    assert c.names  # the rows exist once resolved


def test_mlp_primal_dual_inner_solver_reduces_the_violation():
    """Deep-learning variant (§G.9): an MLP trained by IDCA with the stochastic primal-dual inner solver
    (mini-batches of 64) keeps the pSP constraint violation and the exact pSP^I far below those of the
    unconstrained MLP on a planted unfair problem."""
    from solvers.models import mlp

    rng = np.random.default_rng(1)
    n = 600
    s = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 1.5 * s
    y = (rng.random(n) < 1 / (1 + np.exp(-(2 * X[:, 0] + X[:, 1])))).astype(np.int64)
    X = np.column_stack([X, s]).astype(np.float32)

    def problem():
        c = ConstraintSpec(type="partial_statistical_parity", tolerance=0.05, interval=[0.0, 0.3]).build()
        return Problem(X=X, y=y, group=s, group_names=["a", "b"], constraints=[c],
                       model_factory=lambda d: mlp(d, [8]), model_type="mlp")

    erm = solve(problem(), {"name": "erm", "params": {"lr": 0.1}}, max_iterations=300, seed=0)
    with torch.no_grad():
        before = partial_sp(erm.model(torch.as_tensor(X)).numpy(), s, [0.0, 0.3], 2)["value"]
    after = []
    for seed in range(3):  # the last iterate of a stochastic method: judged over three seeds
        obs = RecordingObserver()
        idca = solve(problem(), {"name": "idca", "params": {"inner": "primal_dual", "inner_iterations": 40,
                                                            "pd_lr": 0.05}}, obs, max_iterations=30, seed=seed)
        violations = np.array([r.max_violation for r in obs.records])
        assert np.isfinite([r.objective for r in obs.records]).all()
        # the unconstrained MLP ends at a max violation of about 0.9; the primal-dual iterates stay far below
        assert violations[-5:].max() < 0.5 * erm.last.max_violation
        with torch.no_grad():
            after.append(partial_sp(idca.model(torch.as_tensor(X)).numpy(), s, [0.0, 0.3], 2)["value"])
    assert np.median(after) < 0.5 * before                       # exact pSP^I: 0.96 -> 0.17-0.36 (seeds 0-2)


def test_idca_stops_at_its_fixed_point_with_the_same_output():
    """The fast path stops when w^(k+1) = w^(k) exactly (τ = 0): one more outer iteration from there
    returns the same point, so the output equals that of the run to K."""
    from solvers.algorithms.idca import IDCA, IDCAConfig

    problem = _problem({"type": "partial_statistical_parity", "tolerance": 0.1, "interval": [0.0, 0.3]}, n=5000)
    result = solve(problem, {"name": "idca", "params": {"inner_iterations": 40, "epsilon": 5e-3}}, max_iterations=400)
    assert result.iterations < 400                         # it reached the fixed point
    alg = IDCA(problem, IDCA.resolve_config(IDCAConfig(inner_iterations=40, epsilon=5e-3), problem),
               problem.make_model(), seed=0)
    alg.horizon = 400
    alg.start(alg.evaluate())
    for _ in range(result.iterations):
        alg.step(0, None)
    assert alg.converged
    before = alg.flat.clone()
    alg.step(0, None)
    assert torch.equal(alg.flat, before)
    fixed = torch.cat([p.detach().reshape(-1) for p in result.model.parameters()])
    assert torch.equal(fixed, before[:fixed.numel()])


@pytest.mark.parametrize("constraint", [
    {"type": "partial_statistical_parity", "tolerance": 0.1, "interval": [0.0, 0.3]},
    {"type": "partial_demographic_parity", "tolerance": 0.02, "interval": [0.0, 0.3]},
])
def test_idca_constant_score_start_is_feasible_and_monotone(constraint):
    """initial_score = b: h ≡ b with the pSP thresholds shifted by b is a feasible start: with feasible
    iterates every outer iterate is feasible, f0 non-increasing from f0(h ≡ b)."""
    problem = _problem(constraint)
    obs = RecordingObserver()
    eps, b = 1e-3, -1.0
    solve(problem, {"name": "idca", "params": {"inner_iterations": 60, "epsilon": eps, "initial_score": b,
                                               "feasible_iterates": True}}, obs,
          max_iterations=10)
    y = problem.y.numpy()
    start = float(np.mean(np.log1p(np.exp(-(2 * y - 1) * b))))
    objectives = np.array([r.objective for r in obs.records])
    assert np.all(np.diff(np.r_[start, objectives]) <= 1e-6)
    assert start - objectives[-1] > 0.02
    assert max(r.max_violation for r in obs.records) <= 1e-6
