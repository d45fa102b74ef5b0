r"""Stochastic Ghost (StGh; Algorithm 1 of Kliachkin, Lepšová, Bareilles, Mareček, "Benchmarking
Stochastic Approximation Algorithms for Fairness-Constrained Training of Deep Neural Networks";
Facchinei & Kungurtsev 2023, with the multilevel estimator of Blanchet et al. 2019).

Direction subproblem (7)/(8) at x_k on a batch X (∇f̄, c̄, ∇c̄ its mini-batch means, eq. 6):

    d(x_k; X) = argmin_d  ∇f̄ᵀd + (τ/2)‖d‖²   s.t.  c̄ + ∇c̄ d ≤ κ e,   ‖d‖_∞ ≤ β

with κ (Facchinei, Kungurtsev, Lampariello & Scutari 2021; the paper's public code)

    κ = (1 − λ) max{0, max_i c̄_i} + λ t*,   t* = min_{t ≥ 0, ‖d‖_∞ ≤ ρ} t  s.t.  c̄ + ∇c̄ d ≤ t e   (κ-LP)

so that (8) is always feasible (the LP solution is feasible for it when ρ ≤ β).
Multilevel estimator (eq. 9), N ~ Geom(p0) (P(N = n) = (1 − p0)^n p0), J = 2^{N+1}:

    d(x_k) = [d(x_k; X^J) − ½(d(x_k; odd(X^J)) + d(x_k; even(X^J)))] / P(N) + d(x_k; X^1)

    α_k = α_{k−1}(1 − α̂ α_{k−1}),    x_{k+1} = Π_Θ(x_k + α_k d(x_k))

Subproblem solvers. The paper's instances are tiny in the constraints (the benchmark's two-sided loss
gap has m = 2 rows) and large in n (every network weight), so the m ≤ 2 cases are solved exactly in
closed form and only larger m goes to a general solver:

* κ-LP, m ≤ 2: by LP duality t* = max{0, max_{w∈Δ} wᵀc̄ − ρ‖∇c̄ᵀw‖_1}, a concave piecewise-linear
  maximisation over w ∈ Δ (one variable for m = 2), solved exactly by sorting its n kinks
  (:func:`kappa_lp_closed_form`, O(n log n)). m > 2: ``scipy.optimize.linprog(method="highs")`` over
  (d, t) ∈ R^{n+1} (:func:`kappa_lp_highs`). The tests check both against each other.
* QP: (8) is strongly convex with a separable box, so for multipliers λ ∈ R^m_{≥0} of the m linear
  rows the box-constrained minimiser is d(λ) = clip(−(∇f̄ + ∇c̄ᵀλ)/τ, −β, β) and the dual
  φ(λ) = ∇f̄ᵀd(λ) + (τ/2)‖d(λ)‖² + λᵀ(c̄ + ∇c̄ d(λ) − κe) is concave and C¹ with
  ∇φ(λ) = c̄ + ∇c̄ d(λ) − κe (Danskin). (i) If the box-only minimiser clip(−∇f̄/τ, −β, β) satisfies the
  rows, λ = 0. (ii) For m ≤ 2, the active-set enumeration of the box-free dual QP
  min_{λ≥0} ½λᵀ(∇c̄∇c̄ᵀ/τ)λ − λᵀr (four candidate sets, each a ≤ 2×2 linear solve, KKT-checked) gives
  the exact solution whenever it lies strictly inside the box (then the box multipliers are 0 and the
  KKT conditions of (8) hold). (iii) Otherwise we maximise φ over λ ≥ 0 with
  ``scipy.optimize.minimize(method="SLSQP")`` — an m-variable problem whatever the number n of
  network weights (a primal SLSQP on n ≈ 3k weights would be dense O(n³)). The linear rows are
  polyhedral, so dual attainment and zero gap hold whenever (8) is feasible, which κ guarantees.
  m = 0 (no constraint) is the closed form clip(−∇f̄/τ, −β, β).

Cost per iteration (document of record): 3 forward passes (objective and constraint samples of a level
in one pass) and one batched backward per level giving the m + 1 rows (∇f̄, ∇c̄) at once
(``is_grads_batched``; one backward per row where an op has no batching rule), one host transfer of
(∇f̄, c̄, ∇c̄) per level, and 4 κ-LPs + 4 QPs on the CPU (full batch: 1 + 1), each O(n log n) when m ≤ 2.

Choices the paper leaves open (documented here):

* Defaults: Sec. 4 ("Algorithms and parameters"): p0 = 0.4, α0 = 0.05, ρ = 0.8, τ = 1, β = 10,
  λ = 0.5, α̂ = 0.05. The paper does not define κ; ρ and λ take the roles above (LP box radius and
  convex weight). The notes on the public code flag a possible ρ/λ swap there; we follow the
  definition, not the call site. If ρ > β the LP box is clipped to β so (8) stays feasible.
* α_0 = α0 (the first step uses α0), α_k = α_{k−1}(1 − α̂ α_{k−1}) for k ≥ 1.
* Batch sizes: the paper's X^1 has one ξ and one ζ; here X^1 has ``batch_size`` objective samples
  (uniform) and ``constraint_batch`` samples per group (balanced), and X^J has J times as many
  (objective indices i.i.d. with replacement, as the paper's iid sampling and the public code;
  constraint indices with replacement per group, split odd/even WITHIN each group so both halves
  stay balanced). ``batch_size=None`` (default) is the deterministic method (7) on the full training
  set: every level of (9) would give the same d, so (9) reduces exactly to d(x_k; D) and one QP.
* N is capped at L = ``max_level`` (default: the largest N with batch_size·2^{N+1} ≤ n_train; the
  public code resamples N above its cap). We draw N from the geometric law truncated to {0..L} and
  divide by the TRUNCATED probability, which keeps (9) an exactly unbiased estimator of d on the
  finest level X^{2^{L+1}} (the untruncated weight would be biased after capping).
* If HiGHS fails on the κ-LP, t* := max{0, max_i c̄_i} (d = 0 is feasible), i.e. κ = max{0, max c̄}.
* The F/G logged per iteration are the mini-batch estimates of X^1 at θ_{k+1} (the next iteration
  uses them); duals logged: the QP multipliers λ of the X^1 (or full-batch) subproblem, κ and N.
* Output: the last iterate (the paper states no other rule).
"""
from __future__ import annotations

import math

import numpy as np
import torch
from scipy.optimize import linprog, minimize

from ..problem import Evaluation
from .alm import BalancedConstraintBatches
from .base import ALGORITHMS, Algorithm


# --------------------------------------------------------------------------- subproblems
def solve_kappa_lp(c: np.ndarray, A: np.ndarray, rho: float) -> float:
    """t* = min_{t≥0, ‖d‖_∞≤ρ} t s.t. c + A d ≤ t e: closed form for m ≤ 2 (:func:`kappa_lp_closed_form`),
    else HiGHS (:func:`kappa_lp_highs`)."""
    if c.size <= 2:
        return kappa_lp_closed_form(c, A, rho)
    return kappa_lp_highs(c, A, rho)


def kappa_lp_highs(c: np.ndarray, A: np.ndarray, rho: float) -> float:
    """t* of the κ-LP by HiGHS (``scipy.optimize.linprog``) over (d, t) ∈ R^{n+1}."""
    m, n = A.shape
    fallback = max(0.0, float(c.max())) if m else 0.0
    if m == 0 or fallback == 0.0:  # c ≤ 0: d = 0, t = 0 is optimal (t ≥ 0), no LP needed
        return 0.0
    cost = np.zeros(n + 1)
    cost[-1] = 1.0
    A_ub = np.hstack([A, -np.ones((m, 1))])
    bounds = [(-rho, rho)] * n + [(0.0, None)]
    res = linprog(cost, A_ub=A_ub, b_ub=-c, bounds=bounds, method="highs")
    if res.status != 0:
        return fallback
    return float(min(max(res.x[-1], 0.0), fallback))


def kappa_lp_closed_form(c: np.ndarray, A: np.ndarray, rho: float) -> float:
    r"""t* of the κ-LP for m ≤ 2 rows, exactly, in O(n log n).

    By LP duality (minimax over the box and the simplex Δ),

        min_{‖d‖_∞≤ρ} max_i (c_i + a_iᵀd) = max_{w∈Δ} wᵀc − ρ‖Aᵀw‖_1,   t* = max{0, that value}.

    m = 1: t* = max{0, c_1 − ρ‖a_1‖_1}. m = 2, w = (1 − s, s): φ(s) = c_1 + s(c_2 − c_1) − ρΣ_j|u_j + s v_j|
    (u = a_1, v = a_2 − a_1) is concave piecewise linear on [0, 1]; its slope drops by 2ρ|v_j| at each kink
    s_j = −u_j/v_j, so the maximiser is the first kink (in increasing order) where the slope turns ≤ 0."""
    m = c.size
    if m == 0 or max(0.0, float(c.max())) == 0.0:  # c ≤ 0: t* = 0
        return 0.0
    if m == 1:
        value = float(c[0]) - rho * float(np.abs(A[0]).sum())
    elif m == 2:
        u, v = A[0], A[1] - A[0]
        # slope just right of s = 0 (sign of u_j + 0⁺·v_j: of u_j, or of v_j where u_j = 0)
        direction = np.where(u != 0.0, np.sign(u), np.sign(v))
        slope = float(c[1] - c[0]) - rho * float(v @ direction)
        s_star = 0.0
        if slope > 0.0:
            with np.errstate(divide="ignore", invalid="ignore"):
                kinks = -u / v
            inside = (v != 0.0) & (kinks > 0.0) & (kinks < 1.0)
            order = np.argsort(kinks[inside], kind="stable")
            at, drops = kinks[inside][order], 2.0 * rho * np.abs(v[inside][order])
            turned = np.nonzero(slope - np.cumsum(drops) <= 0.0)[0]
            s_star = float(at[turned[0]]) if turned.size else 1.0
        value = float(c[0] + s_star * (c[1] - c[0])) - rho * float(np.abs(u + s_star * v).sum())
    else:
        raise ValueError("closed form for m ≤ 2 rows only")
    return float(min(max(value, 0.0), float(c.max())))


def kappa(c: np.ndarray, A: np.ndarray, rho: float, lam: float) -> float:
    """κ = (1 − λ) max{0, max_i c_i} + λ t*."""
    if c.size == 0:
        return 0.0
    return (1.0 - lam) * max(0.0, float(c.max())) + lam * solve_kappa_lp(c, A, rho)


def _qp_active_set(g: np.ndarray, A: np.ndarray, h: np.ndarray, tau: float,
                   beta: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(d, λ) of argmin gᵀd + (τ/2)‖d‖² s.t. A d ≤ h for m ≤ 2 rows by enumerating the active sets, when its
    solution lies strictly inside the box ‖d‖_∞ ≤ β (then the box has zero multipliers and (d, λ) is the
    KKT point of the boxed QP as well); None otherwise (the caller falls back to SLSQP).

    Without the box the dual is the bound-constrained QP min_{λ≥0} ½λᵀHλ − λᵀr, H = AAᵀ/τ, r = A(−g/τ) − h,
    d(λ) = −(g + Aᵀλ)/τ; for each active set S (∅, {1}, {2}, {1, 2}) λ_S solves H_SS λ_S = r_S, and the first
    one with λ ≥ 0 and Hλ − r ≥ 0 off S is optimal (KKT of a convex QP)."""
    m = h.size
    d0 = -g / tau
    r = A @ d0 - h
    H = (A @ A.T) / tau
    scale = 1.0 + float(np.abs(r).max()) + float(np.abs(H).max())
    tol = 1e-12 * scale
    subsets = [(), *((i,) for i in range(m)), tuple(range(m))] if m == 2 else [(), (0,)]
    for S in subsets:
        lam = np.zeros(m)
        if S:
            idx = list(S)
            sub = H[np.ix_(idx, idx)]
            if abs(np.linalg.det(sub)) <= 1e-12 * max(1.0, float(np.abs(sub).max())) ** len(idx):
                continue  # singular block (e.g. two parallel rows): another active set covers it
            lam[idx] = np.linalg.solve(sub, r[idx])
        if lam.min() < -tol:
            continue
        lam = np.maximum(lam, 0.0)
        slack = H @ lam - r  # = h − A d(λ) ≥ 0 off the active set (primal feasibility)
        if any(slack[i] < -tol for i in range(m) if i not in S):
            continue
        d = -(g + A.T @ lam) / tau
        if np.abs(d).max(initial=0.0) >= beta:
            return None
        return d, lam
    return None


def solve_direction_qp(g: np.ndarray, c: np.ndarray, A: np.ndarray, kappa_: float, tau: float,
                       beta: float) -> tuple[np.ndarray, np.ndarray]:
    """argmin_d gᵀd + (τ/2)‖d‖² s.t. c + A d ≤ κe, ‖d‖_∞ ≤ β; returns (d, λ) with λ ≥ 0 the
    multipliers of the m linear rows: the box-only minimiser when it is feasible (λ = 0); for m ≤ 2 the
    active-set solution when the box is inactive at it (:func:`_qp_active_set`); otherwise SLSQP on the
    m-variable concave dual (see module docstring)."""
    m = c.size
    if m == 0:
        return np.clip(-g / tau, -beta, beta), np.zeros(0)
    h = kappa_ - c  # rows: A d ≤ h
    d0 = np.clip(-g / tau, -beta, beta)
    if np.all(A @ d0 <= h):  # λ = 0 satisfies the KKT conditions: the box-only minimiser is feasible
        return d0, np.zeros(m)
    if m <= 2:
        exact = _qp_active_set(g, A, h, tau, beta)
        if exact is not None:
            return exact
    return _qp_dual_slsqp(g, A, h, tau, beta)


def _qp_dual_slsqp(g: np.ndarray, A: np.ndarray, h: np.ndarray, tau: float,
                   beta: float) -> tuple[np.ndarray, np.ndarray]:
    m = h.size

    def primal(lmb):
        return np.clip(-(g + A.T @ lmb) / tau, -beta, beta)

    def neg_dual(lmb):
        d = primal(lmb)
        r = A @ d - h
        return -(g @ d + 0.5 * tau * d @ d + lmb @ r), -r

    scale = max(1.0, float(np.abs(g).max(initial=0.0)), float(np.abs(A).max(initial=0.0)))
    res = minimize(neg_dual, np.zeros(m), jac=True, method="SLSQP", bounds=[(0.0, None)] * m,
                   options={"ftol": 1e-15 * scale * scale, "maxiter": 500})
    lmb = np.maximum(res.x, 0.0)
    return primal(lmb), lmb


# --------------------------------------------------------------------------- algorithm


@ALGORITHMS.implements("ghost")
class StochasticGhost(BalancedConstraintBatches, Algorithm):
    def start(self, current: Evaluation) -> None:
        self.alpha = self.config.alpha0
        self._samples = self.problem.n_samples
        n, b = self.problem.n_samples, self.config.batch_size or 1
        self.level_cap = self.config.max_level
        if self.level_cap is None:
            self.level_cap = max(0, int(math.floor(math.log2(max(n / b, 1.0)))) - 1)

    # one linearisation (∇f̄, c̄, ∇c̄) → numpy float64
    def _linearise(self, ev: Evaluation) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        params = self.params
        c = ev.constraints
        m = c.numel()
        out = torch.cat([ev.objective.reshape(1), c.reshape(-1)])  # rows ∇F̄, ∇c̄_1..m: ONE batched backward
        try:
            rows = torch.autograd.grad(out, params, grad_outputs=torch.eye(m + 1, dtype=out.dtype, device=out.device),
                                       is_grads_batched=True, allow_unused=True)
        except RuntimeError:  # an op without a batching rule: one backward per row
            per = [torch.autograd.grad(out[j], params, retain_graph=j < m, allow_unused=True) for j in range(m + 1)]
            rows = [torch.stack([r[i] if r[i] is not None else torch.zeros_like(p) for r in per])
                    for i, p in enumerate(params)]
        J = torch.cat([(torch.zeros(m + 1, p.numel(), dtype=p.dtype, device=p.device) if r is None else
                        r.reshape(m + 1, -1)) for p, r in zip(params, rows)], dim=1)
        flat = torch.cat([J.reshape(-1), c.detach().reshape(-1).to(J.dtype)]).double().cpu().numpy()  # one transfer
        n = J.shape[1]
        return flat[:n], flat[(m + 1) * n:], flat[n:(m + 1) * n].reshape(m, n)

    def _direction(self, ev: Evaluation) -> tuple[np.ndarray, np.ndarray, float]:
        cfg = self.config
        g, c, A = self._linearise(ev)
        k = kappa(c, A, min(cfg.rho, cfg.beta), cfg.lam)
        d, lmb = solve_direction_qp(g, c, A, k, cfg.tau, cfg.beta)
        return d, lmb, k

    def _level(self) -> tuple[int, float]:
        """N from Geom(p0) truncated to {0..L}, and its (truncated) probability."""
        q, L = 1.0 - self.config.p0, self.level_cap
        mass = 1.0 - q ** (L + 1)
        u = float(torch.rand((), generator=self.sampler.generator))
        n = min(L, max(0, int(math.floor(math.log1p(-u * mass) / math.log(q)))))
        return n, (q ** n) * self.config.p0 / mass

    def step(self, k: int, current: Evaluation):
        N = 0
        if self.full_batch:
            d, lmb, kap = self._direction(current)          # (7) on the whole training set
            self._samples = self.problem.n_samples
        else:
            d1, lmb, kap = self._direction(current)         # X^1 = the batch of `current`
            N, prob = self._level()
            J = 2 ** (N + 1)
            b, n = self.config.batch_size or self.problem.n_samples, self.problem.n_samples
            obj = torch.randint(n, (b * J,), generator=self.sampler.generator).to(self.problem.device)
            con = self.sampler.balanced(self.per_group * J).reshape(-1, self.per_group * J)
            odd = self.split_evaluate(obj[0::2], con[:, 0::2].reshape(-1))
            even = self.split_evaluate(obj[1::2], con[:, 1::2].reshape(-1))
            full = self.split_evaluate(obj, con.reshape(-1))
            dJ = self._direction(full)[0]
            d_odd, d_even = self._direction(odd)[0], self._direction(even)[0]
            d = (dJ - 0.5 * (d_odd + d_even)) / prob + d1  # (9)
            self._samples = (b + self.constraint_samples()) * (1 + J)
        alpha = self.alpha
        step = torch.from_numpy(d)
        with torch.no_grad():
            offset = 0
            for p in self.params:  # unflatten x_{k+1} = x_k + α_k d (loop over parameter tensors only)
                size = p.numel()
                p.add_(step[offset:offset + size].view_as(p).to(device=p.device, dtype=p.dtype), alpha=alpha)
                offset += size
            self.problem.project_(self.params)
        self.alpha = alpha * (1.0 - self.config.alpha_hat * alpha)
        nxt = self.evaluate()
        dev = self.problem.device
        duals = {
            "qp_lambda": torch.as_tensor(lmb, dtype=torch.float64).to(dev),
            "kappa": torch.tensor([kap], dtype=torch.float64, device=dev),
            "level_N": torch.tensor([float(N)], device=dev),
            "alpha": torch.tensor([alpha], device=dev),
        }
        return nxt, duals

    def samples_per_step(self) -> int:
        return self._samples
