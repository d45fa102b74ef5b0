r"""The three pairwise (AUC-type) in-processing baselines of He, Huang, Yao & Lin, App. G.3 —
group AUC (102), inter-group pairwise (105) and intra-group pairwise (107) fairness — with the
quadratic surrogate σ(x) = ½(1 + x)² (103) of 1[x ≥ 0], solved by projected gradient (108)–(110).

Sets. D_k = {γ = k}, D_{k,+} = {γ = k, ζ = +1}, D_{k,−} = {γ = k, ζ = −1}. For two sets A, B write

    Ŝ(A, B)(w) = (1/(|A||B|)) Σ_{i∈A} Σ_{j∈B} σ(h_w(ξ_i) − h_w(ξ_j)),

the surrogate of Pr(h(ξ) ≥ h(ξ') | ξ ∈ A, ξ' ∈ B). One constraint per ordered pair (k, k'), k ≠ k'
(G(G − 1) rows):

    variant ``group`` (102):  Ŝ(D_k, D_k')                           − 0.5 ≤ κ
    variant ``inter`` (105):  Ŝ(D_{k,+}, D_{k',−}) + Ŝ(D_{k,−}, D_{k',+}) − 1 ≤ κ
    variant ``intra`` (107):  Ŝ(D_{k,+}, D_{k,−})  + Ŝ(D_{k',−}, D_{k',+}) − 1 ≤ κ

(with the indicator in place of σ: AUC(k, k') − ½, xAUC(k+, k'−) − xAUC(k'+, k−) and
AUC_k − AUC_k'; the paper's (105)/(107) index the second sum loosely — we read it, as its
(104)/(106) say, as the mean over (negative of the first set, positive of the second) of
σ(h_neg − h_pos)).

O(n) closed form (no n×n matrix). With m_A, V_A the mean and (population) variance of the scores on A,

    Ŝ(A, B) = ½[(1 + m_A − m_B)² + V_A + V_B],

which is :func:`solvers.constraints.auc_surrogate.term_values` with c₁ = ½, c₂ = 1 and (P, Q) = (B, A)
(c₁(h_P − h_Q − c₂)² = ½(1 + h_A − h_B)²). For the linear model h_w(ξ) = wᵀξ + b, with μ_A, Σ_A
the mean and covariance of the features on A and δ = μ_A − μ_B,

    Ŝ(A, B)(w) = ½ + δᵀw + ½ wᵀ(δδᵀ + Σ_A + Σ_B) w,

a convex quadratic in w that does not involve the bias b (pairwise differences cancel it). Every
row is therefore c_r(w) = ½ wᵀH_r w + g_rᵀw + c⁰_r − κ with H_r ⪰ 0 computed ONCE (paper G.3.2:
"the Hessian matrices ... only need to be computed once"), in O(n d²).

Projected gradient (108)–(110), from w(0) = 0, b(0) = 0:

    v = w(k) − η ∇_w f0(w(k), b(k)),   b(k+1) = b(k) − η ∂_b f0,
    w(k+1) = argmin_w ½‖w − v‖²  s.t.  c_r(w) ≤ 0 for every row r,

a convex QCQP. It is skipped when v is already feasible (then v is the projection), and otherwise
solved by scipy's SLSQP (the paper used MATLAB fmincon, interior point, MaxIterations = 1000,
OptimalityTolerance = ConstraintTolerance = 1e-6) in the scaled variable z = (w − v)/r,
r = ‖w(k) − v‖ (the optimum has ‖z‖ ≤ 1 because w(k) is feasible, so SLSQP's absolute tolerances
are relative ones), started at the feasible w(k). If the solver's point still violates a row, it
is pulled back along the segment to the feasible w(k) (closed-form root of each row's quadratic in
the segment parameter), so **every iterate is feasible**: w(0) = 0 is (every row equals −κ there,
κ ≥ 0) and each projection keeps it so. The SLSQP multipliers λ of the projection give the
estimated multipliers λ/η of the constrained problem (the KKT conditions of (108) read
(w(k) − w(k+1))/η = ∇f0 + Σ_r (λ_r/η) ∇c_r); they are reported as the iteration's duals.

The enforced rows are this module's own (κ = ``kappa`` of the config); the problem's constraint
families (pSP / pDP of the paper's Figure 1) are only evaluated and reported, as for the sibling
:mod:`solvers.algorithms.partial_regularized`. Linear model only (the projection is a QCQP only
when h is linear in w), full batch by default (the paper's method); the gradient uses the
score-space fast path of :mod:`solvers.algorithms.linear_scores` when applicable.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from ..constraints.auc_surrogate import term_values
from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm, gradient
from .linear_scores import LinearScores

Variant = Literal["group", "inter", "intra"]

#: a sample set: (group k, label ζ ∈ {+1, −1} or None for the whole group)
SampleSet = tuple[int, int | None]

#: default κ per variant: the middle of the paper's a9a pSP grids (G.3.2): (102) {0.7, 1, 2, 3.5},
#: (105) {1.5, 3, 3.5, 6}, (107) {3, 5, 8}
DEFAULT_KAPPA = {"group": 1.0, "inter": 3.0, "intra": 5.0}


@dataclass(frozen=True)
class PairwiseRows:
    """The rows of (102)/(105)/(107) as sums of pair terms Ŝ(A_t, B_t):

    row_r = Σ_t M[r, t] Ŝ(A_t, B_t) − offset_r  (the κ-free value; the constraint is row_r ≤ κ)."""

    variant: str
    terms: tuple[tuple[SampleSet, SampleSet], ...]
    M: np.ndarray         # (m, T) 0/1
    offset: np.ndarray    # (m,)
    names: tuple[str, ...]


def pairwise_rows(variant: str, group_names) -> PairwiseRows:
    """Rows for every ordered pair (k, k'), k ≠ k' (the paper's ∀ k, k' ∈ G); terms are shared."""
    G = len(group_names)
    index: dict[tuple[SampleSet, SampleSet], int] = {}
    rows, names = [], []

    def term(a: SampleSet, b: SampleSet) -> int:
        return index.setdefault((a, b), len(index))

    for k in range(G):
        for kp in range(G):
            if k == kp:
                continue
            if variant == "group":
                rows.append([term((k, None), (kp, None))])
            elif variant == "inter":
                rows.append([term((k, 1), (kp, -1)), term((k, -1), (kp, 1))])
            elif variant == "intra":
                rows.append([term((k, 1), (k, -1)), term((kp, -1), (kp, 1))])
            else:
                raise ValueError(f"unknown variant {variant!r}; known: group, inter, intra")
            names.append(f"pairwise_auc[{variant}:{group_names[k]}>{group_names[kp]}]")
    M = np.zeros((len(rows), len(index)))
    for r, ts in enumerate(rows):
        M[r, ts] = 1.0
    offset = np.full(len(rows), 0.5 if variant == "group" else 1.0)
    return PairwiseRows(variant, tuple(index), M, offset, tuple(names))


def set_mask(y: Tensor, group: Tensor, s: SampleSet) -> Tensor:
    """Rows of the set (k, ζ); labels y ∈ {0, 1} (ζ = 2y − 1)."""
    k, label = s
    mask = group == k
    if label is not None:
        mask = mask & ((y > 0.5) == (label > 0))
    return mask


def term_masks(rows: PairwiseRows, y: Tensor, group: Tensor) -> tuple[Tensor, Tensor]:
    """Membership (n, T) of A_t and B_t."""
    a = torch.stack([set_mask(y, group, A) for A, _ in rows.terms], 1)
    b = torch.stack([set_mask(y, group, B) for _, B in rows.terms], 1)
    return a, b


def check_sets(rows: PairwiseRows, y: Tensor, group: Tensor, group_names) -> None:
    """Every set of every term must hold a sample (otherwise its mean is undefined)."""
    for pair in rows.terms:
        for k, label in pair:
            if not bool(set_mask(y, group, (k, label)).any()):
                what = "" if label is None else (" positives" if label > 0 else " negatives")
                raise ValueError(f"pairwise_auc_pg[{rows.variant}]: group {group_names[k]!r} has no{what} "
                                 "in the training data")


def pair_means(h: Tensor, in_a: Tensor, in_b: Tensor) -> Tensor:
    """Ŝ(A_t, B_t) = ½[(1 + m_A − m_B)² + V_A + V_B] for every term t, O(n T), differentiable."""
    return term_values(h, in_b, in_a, 0.5, 1.0)


def row_values(h: Tensor, rows: PairwiseRows, in_a: Tensor, in_b: Tensor) -> Tensor:
    """κ-free values of the rows of (102)/(105)/(107) at scores h, (m,)."""
    M = torch.as_tensor(rows.M, dtype=h.dtype, device=h.device)
    return M @ pair_means(h, in_a, in_b) - torch.as_tensor(rows.offset, dtype=h.dtype, device=h.device)


@dataclass
class QuadraticRows:
    """c_r(w) = ½ wᵀH_r w + g_rᵀw + c_r (float64 numpy): the rows minus κ as quadratics in the weights."""

    H: np.ndarray   # (m, d, d), positive semidefinite
    g: np.ndarray   # (m, d)
    c: np.ndarray   # (m,)

    def values(self, w: np.ndarray) -> np.ndarray:
        Hw = self.H @ w
        return 0.5 * Hw @ w + self.g @ w + self.c

    def jacobian(self, w: np.ndarray) -> np.ndarray:
        return self.H @ w + self.g


def quadratic_rows(rows: PairwiseRows, X: Tensor, y: Tensor, group: Tensor, kappa: float) -> QuadraticRows:
    """H_r = Σ_t M[r,t](δ_tδ_tᵀ + Σ_{A_t} + Σ_{B_t}), g_r = Σ_t M[r,t] δ_t, c_r = ½ Σ_t M[r,t] − offset_r − κ,
    δ_t = μ_{A_t} − μ_{B_t}; one centred Gram matrix per distinct set, O(n d²) in all (float64)."""
    stats: dict[SampleSet, tuple[Tensor, Tensor]] = {}
    for pair in rows.terms:
        for s in pair:
            if s not in stats:
                Xs = X[set_mask(y, group, s)].double()
                mu = Xs.mean(0)
                Xc = Xs - mu
                stats[s] = (mu, Xc.t() @ Xc / Xs.shape[0])
    d = X.shape[1]
    S = torch.empty((len(rows.terms), d, d), dtype=torch.float64, device=X.device)
    delta = torch.empty((len(rows.terms), d), dtype=torch.float64, device=X.device)
    for t, (A, B) in enumerate(rows.terms):
        delta[t] = stats[A][0] - stats[B][0]
        S[t] = torch.outer(delta[t], delta[t]) + stats[A][1] + stats[B][1]
    M = torch.as_tensor(rows.M, dtype=torch.float64, device=X.device)
    H = torch.einsum("rt,tij->rij", M, S)
    g = M @ delta
    c = 0.5 * rows.M.sum(1) - rows.offset - kappa
    return QuadraticRows(H.cpu().numpy(), g.cpu().numpy(), c)


@dataclass
class Projection:
    w: np.ndarray
    multipliers: np.ndarray   # λ ≥ 0 of the rows (0 when v was feasible)
    iterations: int           # SLSQP iterations (0 when v was feasible)
    pulled_back: bool         # the solver's point was infeasible and was moved towards the anchor


def pull_back(anchor: np.ndarray, w: np.ndarray, quad: QuadraticRows) -> np.ndarray:
    """The point anchor + t(w − anchor) with the largest t ∈ [0, 1] feasible for every row (anchor feasible).

    Along the segment row r is q t² + b t + c₀ with q = ½ δᵀH_rδ ≥ 0, b = ∇c_r(anchor)ᵀδ, c₀ = c_r(anchor) ≤ 0;
    for a row violated at t = 1 its root in (0, 1) is (−b + √(b² − 4qc₀))/(2q) = −2c₀/(b + √(b² − 4qc₀))."""
    dw = w - anchor
    c0 = np.minimum(quad.values(anchor), 0.0)
    b = quad.jacobian(anchor) @ dw
    q = 0.5 * np.einsum("i,rij,j->r", dw, quad.H, dw)
    t = 1.0
    for r in np.flatnonzero(quad.values(w) > 0.0):
        disc = np.sqrt(max(b[r] ** 2 - 4.0 * q[r] * c0[r], 0.0))
        if b[r] < 0.0:
            root = (-b[r] + disc) / (2.0 * q[r]) if q[r] > 0.0 else np.inf
        else:
            root = -2.0 * c0[r] / (b[r] + disc) if b[r] + disc > 0.0 else 0.0
        t = min(t, root)
    t = max(t, 0.0)
    point = anchor + t * dw
    while t > 0.0 and np.max(quad.values(point)) > 0.0:  # rounding at the boundary: step inside
        t *= 1.0 - 1e-9 if t > 1e-6 else 0.0
        point = anchor + t * dw
    return point


def project(v: np.ndarray, quad: QuadraticRows, anchor: np.ndarray, max_iter: int = 1000, tol: float = 1e-6
            ) -> Projection:
    """argmin_w ½‖w − v‖² s.t. c_r(w) ≤ 0 ∀r, for a feasible ``anchor`` (the previous iterate).

    SLSQP in z = (w − v)/ρ, ρ = ‖anchor − v‖, started at the anchor; its objective and constraint
    tolerances (``ftol``) are then relative to the step. Exact shortcut when v is feasible."""
    if np.max(quad.values(v), initial=-np.inf) <= 0.0:
        return Projection(v.copy(), np.zeros(len(quad.c)), 0, False)
    rho = float(np.linalg.norm(anchor - v))
    if rho == 0.0:  # v = anchor is feasible; only reached for an infeasible anchor
        raise ValueError("projection anchor is infeasible")
    res = minimize(
        lambda z: (0.5 * z @ z, z), (anchor - v) / rho, jac=True, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda z: -quad.values(v + rho * z),
                      "jac": lambda z: -rho * quad.jacobian(v + rho * z)}],
        options={"maxiter": max_iter, "ftol": tol})
    w = v + rho * res.x
    pulled = bool(np.max(quad.values(w)) > 0.0)
    if pulled:
        w = pull_back(anchor, w, quad)
    lam = np.asarray(getattr(res, "multipliers", np.zeros(len(quad.c))), dtype=float).reshape(-1)
    # SLSQP's multipliers μ are those of the scaled problem (z + ρ Σ μ_r ∇c_r = 0); in w (w − v + Σ λ_r ∇c_r = 0)
    # they are λ = ρ² μ
    lam = rho ** 2 * np.maximum(lam, 0.0) if lam.size == len(quad.c) else np.zeros(len(quad.c))
    return Projection(w, lam, int(res.nit), pulled)


@ALGORITHMS.implements("pairwise_auc_pg")
class PairwiseAUCPG(Algorithm):
    @classmethod
    def resolve_config(cls, config, problem):
        update = {}
        if config.kappa is None:
            update["kappa"] = DEFAULT_KAPPA[config.variant]
        if config.lr is None:
            if getattr(problem.objective, "name", "") not in ("logistic", "bce"):
                raise ValueError("pairwise_auc_pg: give 'lr' (the 1/L default is for the logistic loss only)")
            X = problem.X.double()
            gram = torch.cat([X, X.new_ones(X.shape[0], 1)], 1)
            L = float(torch.linalg.eigvalsh(gram.t() @ gram / X.shape[0])[-1]) / 4.0
            update["lr"] = 1.0 / L
        return config.model_copy(update=update) if update else config

    def start(self, current: Evaluation) -> None:
        problem, cfg = self.problem, self.config
        if not LinearScores.applicable(self.model, getattr(problem, "model_type", "")):
            raise ValueError("pairwise_auc_pg needs the linear model: the constraints (102)/(105)/(107) are "
                             "convex quadratics in w only when h_w is linear in w (paper G.3.2)")
        if problem.domain is not None or getattr(self.model, "ball", None) is not None:
            raise ValueError("pairwise_auc_pg projects onto the constraint set in W = R^d; a weight domain/ball "
                             "is not supported")
        self.rows = pairwise_rows(cfg.variant, problem.group_names)
        check_sets(self.rows, problem.y, problem.group, problem.group_names)
        self.quad = quadratic_rows(self.rows, problem.X, problem.y, problem.group, cfg.kappa)
        net = self.model.net
        with torch.no_grad():  # w(0) = 0 (paper G.3.2), feasible for κ ≥ 0
            net.weight.zero_()
            net.bias.zero_()
        self.w = np.zeros(net.weight.numel())
        self.fast = None
        if cfg.fast_linear and cfg.batch_size is None:
            self.fast = LinearScores(self.model, problem)
        self.previous = None
        self.projections = 0
        self.projection_iterations = 0
        self.pull_backs = 0

    def step(self, k: int, current: Evaluation):
        problem, cfg = self.problem, self.config
        net = self.model.net
        if self.fast is not None:
            scores, y = self.fast.scores(), self.fast.y
        else:
            idx = self.batch()
            scores = self.model(problem.X if idx is None else problem.X[idx])
            y = problem.y if idx is None else problem.y[idx]
        f0 = problem.objective(scores, y)
        gw, gb = gradient(f0, [net.weight, net.bias])
        v = self.w - cfg.lr * gw.detach().double().reshape(-1).cpu().numpy()
        proj = project(v, self.quad, self.w, cfg.projection_max_iter, cfg.projection_tol)
        self.w = proj.w
        if proj.iterations or proj.pulled_back:
            self.projections += 1
            self.projection_iterations += proj.iterations
            self.pull_backs += int(proj.pulled_back)
        with torch.no_grad():
            net.weight.copy_(torch.as_tensor(self.w, dtype=net.weight.dtype).reshape(net.weight.shape))
            net.bias.add_(gb, alpha=-cfg.lr)
        duals = {"lambda": torch.as_tensor(proj.multipliers / cfg.lr, dtype=torch.float32, device=self.problem.device)}
        if self.fast is None:
            ev = problem.evaluate(self.model)
        else:
            with torch.no_grad():
                h = self.fast.scores()
            ev = Evaluation(h, problem.objective(h, self.fast.y), problem.constraint_values_on(h, self.fast.data))
        value = float(ev.objective)
        if cfg.stop_tol > 0 and self.previous is not None and abs(value - self.previous) < cfg.stop_tol:
            self.converged = True
        self.previous = value
        return ev, duals

    def pairwise_values(self) -> np.ndarray:
        """The enforced rows c_r(w) (κ subtracted) at the current iterate; ≤ 0 at every iterate."""
        return self.quad.values(self.w)
