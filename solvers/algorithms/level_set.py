r"""SFLS with the SMD oracle (Yao, Lin & Yang, AISTATS 2023, Algorithms 1–2, Lemmas 1–4) for
AUC maximisation under an AUC-based fairness constraint (``auc_parity``), linear models.

Problem (10): f* = min_x f₀(x) s.t. f₁(x) ≤ 1+κ, f₂(x) ≤ 1+κ, x = (w, (a_k, b_k)_{k=0..4}),
each f a min–max of per-sample terms (:mod:`solvers.auc.surrogate`). Level function
H(r) = min_x max{f₀ − r, f₁ − 1 − κ, f₂ − 1 − κ}, written as the saddle problem (23)

    min_{x∈X} max_{y∈Y} E[Φ(x,y;z)] − d_y(y) + d_x(x),   Φ = ỹᵀF(x,z) + α̃ᵀG(w,z),
    F = (F₀ − r, F₁ + F₂ − 1 − κ, F₃ + F₄ − 1 − κ),      G = (G₀, …, G₄)  (Appendix-D pairing),
    d_y(y) = c₁ Σ_k α̃_k²/ỹ_{g(k)},                        d_x(x) = (ρ̂/2)‖x − x̃‖²  (ρ̂ = 0 here).

**SMD (Algorithm 2)**, t = 0..T−1, one mini-batch z_t (mean over it; any order, no pairs):

* x_{t+1} = Π_X((x_t − η_t ∇_xΦ + η_t ρ̂ x̃)/(1 + η_t ρ̂))   (V_x = ½‖·‖², a,b ∈ I = [−I, I]);
* y_{t+1} = argmin_Y −⟨∇_yΦ, y⟩ + V_y(y, y_t)/τ_t + d_y(y), closed form (**Lemma 3**) with u = F(x_t,z_t),
  v = G(w_t,z_t):  α#_i = clip_I((τ v_i + 2α'_i)/(2c₁τ + 2)), μ_i its minimum value,
  ỹ#_j ∝ ỹ'_j exp(−τ(Σ_{i∈j} μ_i − u_j) / (2(1+√2 I)²)), α̃#_i = ỹ#_{g(i)} α#_i
  (V_y is the paper's eq. (24): scaled KL on the 3-simplex + ỹ-weighted squared distances of the α's);
* **Lemma 4**: ū = Σ τ_t F_t / Σ τ_t, v̄ = Σ τ_t G_t / Σ τ_t, μ̄_i = max_{α∈I} α v̄_i − c₁α² (α = clip(v̄_i/2c₁)),
  U(r) = max{ū₀ + μ̄₀, ū₁ + μ̄₁ + μ̄₂, ū₂ + μ̄₃ + μ̄₄} + Σ τ_t d_x(x_t)/Σ τ_t;
* output x̄ = (1/T) Σ_t x_t (unweighted, as printed).

**SFLS (Algorithm 1)**: r_{k+1} = r_k + U(r_k)/(2θ) until U(r_k) ≥ −ε_opt, ε_opt = −(1/θ) U(r₀) ε
(Prop. 1 with H(r₀) estimated by U(r₀)); the driver stops then (``converged``).

Misprints resolved (see the notes beside the paper):

* −c₁α² instead of −α² in Lemma 1 (so d_y, Lemma 3 and Lemma 4 carry c₁);
* G uses the Appendix-D pairing (G₀,G_{G1',G1},G_{G2,G2'},G_{G2',G2},G_{G1,G1'}), matching F;
* Lemma 4's averages are τ-weighted in the numerators as well (Σ τ_t F_t / Σ τ_t);
* θ > 1 as Algorithm 1 requires (the experiments' θ = 1 makes ε_A = 0): default θ = 1.1.

Defaults / choices the paper leaves open: batch 100 (paper), η_t = η/√(t+1) with η = 0.1
(paper's grid {0.01, 0.1, 1}); τ_t = τ/√(t+1), τ = 10 (unspecified in the paper; ``bench.papers.auc_reproduction``
tunes τ ∈ {1, 10, 100} on validation: τ = 1 moves the dual weights too slowly to meet the exact constraint);
c₁ = 0.5, c₂ = 1 from the ``auc_parity`` constraint (paper: c₂ = 1, c₁ ∈ {0.5, 1}; 0.5 satisfies Lemma 2); I = 2;
r₀ = c₁c₂² + 0.01 (f* ≤ c₁c₂² since w = 0 is feasible when 2c₁c₂² ≤ 1 + κ); T = 500 per oracle call;
warm start: each oracle call starts from the previous x̄ (the paper restarts at x⁽⁰⁾ = 0; ``warm_start=False``).

**Model selection (paper App. E.3)**: every ``select_every`` steps and at every x̄, the iterate's exact
AUĈ and exact fairness gap are computed on ``self.validation`` (the validation split given to
:func:`solvers.solve` / used by :func:`solvers.run`; the training set when none); the returned model is
the iterate feasible for the exact constraint (gap ≤ κ) with the best validation AUC, or, when none
is feasible, the one with the smallest gap.
"""
from __future__ import annotations

import copy
import math

import torch

from ..auc.constraint import AUCParity, exact_gap
from ..auc.surrogate import TERM_GROUP, level_values, per_sample_F_G, scaled_indicators, term_sets
from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm

_G = torch.tensor(TERM_GROUP)


@ALGORITHMS.implements("level_set")
class LevelSet(Algorithm):
    # ---------------------------------------------------------------- setup
    def start(self, current: Evaluation) -> None:
        p, c = self.problem, self.config
        fams = [f for f in p.constraints if isinstance(f, AUCParity)]
        if len(fams) != len(p.constraints) or len(fams) > 1:
            raise ValueError(f"{self.name} supports exactly one 'auc_parity' constraint (or none)")
        self.family = fams[0] if fams else None
        self.c1 = c.c1 or (self.family.config.c1 if self.family else 0.5)
        self.c2 = c.c2 or (self.family.config.c2 if self.family else 1.0)
        self.kappa = self.family.tolerance if self.family else 0.0
        dev = p.device
        if self.family is not None:
            in_p, in_q = self.family.sets(p.y, p.group)
        else:
            in_p, in_q = term_sets(p.y, torch.zeros_like(p.group, dtype=torch.bool), None)
        self.in_p, self.in_q = in_p, in_q
        self.sp, self.sq = scaled_indicators(in_p, in_q)           # s_G = 1_G / p_G (training frequencies)
        self.active = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0] if self.family else [1.0, 0, 0, 0, 0], device=dev)
        self.I = float(c.interval)
        self.C = 2.0 * (1.0 + math.sqrt(2.0) * self.I) ** 2          # 2(1+√2 I)² of V_y (24)
        self.g_of = _G.to(dev)
        self.ab = torch.zeros(5, 2, device=dev)                      # (a_k, b_k)
        self.r = c.r0 if c.r0 is not None else self.c1 * self.c2 ** 2 + 0.01
        self.x0 = self._snapshot()                                    # x⁽⁰⁾ of Algorithm 2
        self.prox_center = self._snapshot()                           # x̃ of d_x
        self.outer, self.U, self.eps_opt, self.history = 0, None, None, []
        self.steps = 0
        self.selector = IterateSelector(self.family, self.kappa)
        self._reset_inner()

    def _snapshot(self) -> tuple[list[torch.Tensor], torch.Tensor]:
        return [q.detach().clone() for q in self.params], self.ab.detach().clone()

    def _load(self, snap) -> None:
        with torch.no_grad():
            for q, v in zip(self.params, snap[0]):
                q.copy_(v)
            self.ab.copy_(snap[1])

    def _reset_inner(self) -> None:
        dev = self.problem.device
        self.t = 0
        self.yt = torch.full((3,), 1.0 / 3.0, device=dev)            # ỹ⁽⁰⁾
        self.alpha = torch.zeros(5, device=dev)                       # untilded α (α̃ = ỹ_{g} α)
        self.sum_tau = 0.0
        self.sum_tF = torch.zeros(3, device=dev)
        self.sum_tG = torch.zeros(5, device=dev)
        self.sum_tdx = 0.0
        self.sum_x = [torch.zeros_like(q) for q in self.params]
        self.sum_ab = torch.zeros_like(self.ab)

    # ---------------------------------------------------------------- pieces
    def constants(self) -> torch.Tensor:
        """(r, 1 + κ, 1 + κ): F = (F₀ − r, F₁ + F₂ − 1 − κ, F₃ + F₄ − 1 − κ)."""
        one = 1.0 + self.kappa
        return torch.tensor([self.r, one, one], device=self.problem.device)

    def reduce_F(self, Fk: torch.Tensor) -> torch.Tensor:
        """Per-term F_k (…, 5) → the three components of F (without the constants)."""
        Fk = Fk * self.active
        return torch.stack([Fk[..., 0], Fk[..., 1] + Fk[..., 2], Fk[..., 3] + Fk[..., 4]], -1)

    def dual_step(self, u: torch.Tensor, v: torch.Tensor, tau: float) -> None:
        """Lemma 3 (with c₁): the closed-form y-update from (ỹ', α') with gradients (u, v) and step τ."""
        self.yt, self.alpha = lemma3(self.yt, self.alpha, u, v, tau, self.c1, self.I, self.C)

    def d_x(self) -> float:
        c = self.config
        if c.rho_hat == 0.0:
            return 0.0
        sq = sum(float(((q - q0) ** 2).sum()) for q, q0 in zip(self.params, self.prox_center[0]))
        return 0.5 * c.rho_hat * (sq + float(((self.ab - self.prox_center[1]) ** 2).sum()))

    # ---------------------------------------------------------------- one SMD step
    def step(self, k: int, current: Evaluation):
        p, c = self.problem, self.config
        idx = self.batch()
        X = p.X if idx is None else p.X[idx]
        sp = self.sp if idx is None else self.sp[idx]
        sq = self.sq if idx is None else self.sq[idx]
        eta = c.eta / math.sqrt(self.t + 1)
        tau = c.tau / math.sqrt(self.t + 1)
        ab = self.ab.detach().requires_grad_(True)
        h = self.model(X)
        Fk, Gk = per_sample_F_G(h, sp, sq, ab[:, 0], ab[:, 1], self.c1, self.c2)
        Fbar, Gbar = Fk.mean(0), (Gk * self.active).mean(0)           # mini-batch means
        weights = self.yt[self.g_of] * self.active                    # ỹ_{g(k)} per term
        alpha_t = self.yt[self.g_of] * self.alpha                     # α̃_k
        phi = (weights * Fbar).sum() + (alpha_t * Gbar).sum()
        grads = torch.autograd.grad(phi, [*self.params, ab], allow_unused=True)
        with torch.no_grad():
            u = self.reduce_F(Fbar.detach()) - self.constants()       # g_y = (u, v) at (x_t, y_t)
            v = Gbar.detach()
            # Lemma 4 accumulators (τ-weighted) and the x̄ sums, at x_t
            self.sum_tau += tau
            self.sum_tF += tau * u
            self.sum_tG += tau * v
            self.sum_tdx += tau * self.d_x()
            torch._foreach_add_(self.sum_x, [q.detach() for q in self.params])
            self.sum_ab += self.ab
            # x-update: Π_X((x − η g + η ρ̂ x̃)/(1 + η ρ̂))
            rho = c.rho_hat
            for q, g, q0 in zip(self.params, grads[:-1], self.prox_center[0]):
                g = torch.zeros_like(q) if g is None else g
                q.copy_((q - eta * g + eta * rho * q0) / (1.0 + eta * rho))
            p.project_(self.params)
            self.ab = ((self.ab - eta * grads[-1] + eta * rho * self.prox_center[1]) / (1.0 + eta * rho)
                       ).clamp(-self.I, self.I)
            # y-update: Lemma 3
            self.dual_step(u, v, tau)
            # reported values: exact closed-form (f₀, f₁ − 1 − κ, f₂ − 1 − κ) on this batch at x_t
            f = level_values(h.detach(), self.in_p if idx is None else self.in_p[idx],
                             self.in_q if idx is None else self.in_q[idx], self.c1, self.c2)
        self.t += 1
        self.steps += 1
        if self.steps % c.select_every == 0:
            self._consider()
        if self.t >= c.inner_iterations:
            self._end_oracle_call()
        one = 1.0 + self.kappa
        cons = (f[1:] - one) if self.family is not None else f.new_zeros(0)
        evaluation = Evaluation(h.detach(), f[0], cons)
        r = torch.tensor([self.r], device=p.device)
        duals = {"y_tilde": self.yt.clone(), "alpha": self.alpha.clone(), "r": r}
        if self.U is not None:  # Lemma 4's bound exists from the first oracle call's end on (no NaN placeholder:
            duals["U"] = torch.tensor([self.U], device=p.device)  # a non-finite multiplier means divergence)
        return evaluation, duals

    # ---------------------------------------------------------------- oracle end, SFLS update
    def lemma4(self) -> float:
        """U(r) of Lemma 4 with τ-weighted averages."""
        u = self.sum_tF / self.sum_tau
        v = self.sum_tG / self.sum_tau
        return lemma4(u, v, self.c1, self.I, self.active) + self.sum_tdx / self.sum_tau

    def _end_oracle_call(self) -> None:
        U = self.lemma4()
        T = self.t
        xbar = ([s / T for s in self.sum_x], self.sum_ab / T)
        self.history.append({"r": self.r, "U": U})
        self.U = U
        if self.eps_opt is None and U < 0:
            # ε_opt is fixed by the first estimate with U(r) < 0 (r above f*). An estimate U(r₀) ≥ 0
            # means r₀ is not (yet seen to be) above f*: r moves up and the oracle is called again,
            # instead of stopping at once with ε_opt = 0.
            self.eps_opt = -(1.0 / self.config.theta) * U * self.config.epsilon
        self._load(xbar)
        self._consider()
        if self.eps_opt is not None and U >= -self.eps_opt:
            self.converged = True
        else:
            self.r = self.r + U / (2.0 * self.config.theta)
        self.outer += 1
        if not self.config.warm_start:
            self._load(self.x0)
        self._reset_inner()
        self._after_oracle_call()

    def _after_oracle_call(self) -> None:
        """Hook for IQRC's proximal outer loop."""

    # ---------------------------------------------------------------- model selection
    def _consider(self) -> None:
        if not hasattr(self, "selector"):
            self.selector = IterateSelector(self.family, self.kappa)
        self.selector.consider(self.model, self.validation or self.problem, self.steps)

    def finish(self) -> Evaluation | None:
        self._consider()
        self.selector.restore(self.model)
        self.best_info = self.selector.info
        with torch.no_grad():
            return self.problem.evaluate(self.model)


class IterateSelector:
    """Model selection of the paper (App. E.3): keep the iterate feasible for the exact AUC constraint
    (exact gap ≤ κ) on the selection data with the best exact AUC; if none is feasible, the one with
    the smallest exact gap. Only the best state_dict is stored.

    ``extra_kappas``: further tolerances for which the same rule is applied on the same iterates (one
    penalised run serves a whole κ grid, e.g. ``correlation_penalty``); :attr:`by_kappa` maps each of them
    to ``{"state": state_dict, "info": {...}}``."""

    def __init__(self, family: AUCParity | None, kappa: float, extra_kappas=()) -> None:
        self.family, self.kappa = family, kappa
        self.by_kappa: dict[float, dict] = {float(k): {"key": None, "state": None, "info": None}
                                            for k in (kappa, *extra_kappas)}

    @property
    def state(self):
        return self.by_kappa[float(self.kappa)]["state"]

    @property
    def info(self):
        return self.by_kappa[float(self.kappa)]["info"]

    @torch.no_grad()
    def consider(self, model, data, step: int = 0) -> None:
        scores = model(data.X)
        if self.family is not None:
            auc_v, gap_v = exact_gap(self.family, data.y, scores, data.group)
        else:
            from ..auc.metrics import auc as exact_auc
            auc_v, gap_v = exact_auc(data.y.cpu().numpy(), scores.double().cpu().numpy()), 0.0
        if auc_v is None:
            return
        gap_v = 0.0 if gap_v is None else gap_v
        state = None
        for kappa, slot in self.by_kappa.items():
            key = (1, auc_v) if gap_v <= kappa else (0, -gap_v)
            if slot["key"] is None or key > slot["key"]:
                state = copy.deepcopy(model.state_dict()) if state is None else state   # one copy per iterate
                slot.update(key=key, state=state, info={"selection_auc": auc_v, "selection_gap": gap_v,
                                                        "step": step, "feasible": gap_v <= kappa})

    def restore(self, model) -> None:
        if self.state is not None:
            model.load_state_dict(self.state)


def lemma3(y_prev: torch.Tensor, alpha_prev: torch.Tensor, u: torch.Tensor, v: torch.Tensor, tau: float,
           c1: float, I: float, C: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Closed-form argmin_{y∈Y} −uᵀỹ − vᵀα̃ + V_y(y, y')/τ + d_y(y) (Lemma 3, with c₁α² in d_y).

    ``alpha_prev`` holds the untilded α'_i = α̃'_i/ỹ'_{g(i)}; returns (ỹ#, α#) with α̃# = ỹ#_{g} α#.
    """
    C = 2.0 * (1.0 + math.sqrt(2.0) * I) ** 2 if C is None else C
    a = ((tau * v + 2.0 * alpha_prev) / (2.0 * c1 * tau + 2.0)).clamp(-I, I)       # α#_i
    mu = -a * v + c1 * a ** 2 + (a - alpha_prev) ** 2 / tau                          # μ_i
    s = torch.stack([mu[0], mu[1] + mu[2], mu[3] + mu[4]])
    logits = torch.log(y_prev.clamp_min(1e-300)) - tau * (s - u) / C
    y = torch.softmax(logits, 0)                                                     # ỹ#_j ∝ ỹ'_j e^{−τ(μ−u)/C}
    return y, a


def lemma4(u: torch.Tensor, v: torch.Tensor, c1: float, I: float, active: torch.Tensor | None = None) -> float:
    """max_{y∈Y} ỹᵀu + α̃ᵀv − d_y(y) = max_j (u_j + Σ_{i∈j} max_{α∈I}(α v_i − c₁α²))."""
    a = (v / (2.0 * c1)).clamp(-I, I)
    mu = a * v - c1 * a ** 2
    vals = torch.stack([u[0] + mu[0], u[1] + mu[1] + mu[2], u[2] + mu[3] + mu[4]])
    if active is not None and float(active[1]) == 0.0:
        vals = vals[:1]
    return float(vals.max())
