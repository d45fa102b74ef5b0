r"""IDCA: the inexact difference-of-convex algorithm of He, Huang, Yao & Lin, "Enforcing Fair
Predicted Scores on Intervals of Percentiles by Difference-of-Convex Constraints" (Algorithm 1,
inner solver Algorithm 2), for the DC-constrained problem (27)

    min_{w∈W} f0(w) = f0⁺(w) − f0⁻(w)   s.t.   f_i(w) = f_i⁺(w) − f_i⁻(w) ≤ 0,  i ∈ [m].

Here w stacks the model parameters and the constraint families' auxiliary variables (the θ_p of
problem (15)). Each families' ``dc_parts(scores, data)`` gives (f⁺, f⁻); a family without one is
used as f⁺ = G, f⁻ = 0 (exact when G is convex). The objective is split f0⁺ = f0, f0⁻ = 0 (the
logistic loss of a linear model is convex, eq. (79)).

Outer iteration k (one driver iteration; K = the run's ``max_iterations``, paper: K ∈ {100..400}):
linearise f_i⁻ at w^(k) (eq. (32)) and add μ/2‖·‖² to both parts (Assumption 6.3A), which gives
the strongly convex subproblem (31)

    g_0(v) = f0(v) + μ/2‖v − w^(k)‖²,   g_i(v) = f_i⁺(v) − f_i⁻(w^(k)) − ⟨∂f_i⁻(w^(k)), v − w^(k)⟩ + μ/2‖v − w^(k)‖²,

(μ/2‖v‖² − [μ/2‖w‖² + ⟨μw, v − w⟩] = μ/2‖v − w‖²), solved by SSG (Algorithm 2) from v^(0) = w^(k):

    if g(v_t) = max_i g_i(v_t) ≤ ε:  v_{t+1} = Proj_W(v_t − ε/‖g_0'‖² g_0'),   T ← T ∪ {t}
    else:                            v_{t+1} = Proj_W(v_t − g(v_t)/‖g'‖² g')
    w^(k+1) = v_τ,  τ = argmin_{t∈T} g_0(v_t)

(the shared :func:`~solvers.algorithms.switching.switching_step` with center w^(k), ρ̂ = μ and the
normalised objective step). The Jacobian of f⁻ at w^(k) is taken once per outer iteration.

Fast linear path (linear model, full batch, ``fast_linear``, families with the ``dc_plus`` /
``dc_plus_row_grad`` oracles): the same iteration in score space on one flat vector v = (weight, bias,
θ) with closed-form gradients and no host sync (:meth:`IDCA._ssg_fast`): per inner step one product
h = Xv_w + v_b (CSR X), the f⁺ values, ∂f0/∂h in closed form (:func:`objective_value_and_score_grad`)
and the active row's ∂f⁺_r/∂h, the switch by ``torch.where``, one product Xᵀu; f⁻(w^(k)) and
J = ∂f⁻(w^(k)) are formed once per outer iteration (``dc_minus_jacobian`` in closed form where the
family has it, else autograd in score space). Measured on a9a (n = 29,305, 247 features + cross terms,
|Î| = 10), one thread, a shared and loaded 2-core machine: about 1 ms of CPU per inner step, of which the
two CSR products are half (the f⁺ ramps 0.2 ms); one κ point at K = 100, T = 150 in 17 s of CPU.

Iterates (``feasible_iterates``). By default Algorithm 2 on (31) as written, as in the paper's experiments:
SSG with tolerance ε, so each outer iterate is ε-feasible, f_i(w^(k+1)) ≤ g_i(w^(k+1)) ≤ ε. Lemma E.3
proves f_i(w^(k+1)) ≤ 0 when ε_k meets its condition (92), which needs the unknown M and ν; with the ε of
G.2.2, ε is for pSP a rate comparable to the whole band κ(β − α) (a9a, κ = 0.01: 2.5e-3 against ε = 5e-3).
``feasible_iterates=True`` runs SSG on (31) with its constraints tightened by ε, g_i(v) + ε ≤ 0 (the
constant f⁻_i(w^(k)) lowered by ε): an ε-feasible point of the tightened problem has g_i ≤ 0. Since
g_i(w^(k)) = f_i(w^(k)) ≤ 0 by induction from the feasible w^(0), t = 0 ∈ T still, so (tested)

    f0(w^(k+1)) ≤ g_0(w^(k+1)) ≤ g_0(w^(k)) = f0(w^(k))   (f0 non-increasing),
    f_i(w^(k+1)) ≤ g_i(w^(k+1)) ≤ 0                         (every outer iterate feasible, as Lemma E.3).

Untightened, the same holds with ≤ ε in the second line (also tested). Measured (bench/papers/idca_reproduction.py,
5 seeds, tuned as G.2.2): on a9a the two fronts are close (tightened: a little more test fairness for a
little less accuracy); on bank at κ = 0.01 the tightened subproblem is empty for ε ≥ κ(β − α)/2 and
IDCA stops at its constant start (accuracy 0.887, the majority rate), which validation then picks over
the smaller ε (0.74–0.84 at K = 50). The stochastic primal-dual inner solver (below) is never tightened.

Choices (the paper's experiments, §G.2.2, and documented gaps):

* w^(0) = 0 (linear model factory) and feasible θ_p (the families' start).
* T = ``inner_iterations`` (G.2.2: T ∈ {150, 200}, default 200); ε_k = ε constant (G.2.2:
  ε ∈ {5e-4, 1e-3, 2e-3, 5e-3}, default 1e-3). The theoretical T_k (Prop. 6.4) and ε_k (35) need M and
  ν, which are unknown in practice; the paper tunes (T, ε, K) on validation accuracy, which
  ``bench/papers/idca_reproduction.py`` does.
* μ is unspecified in the paper (for a linear model A^± are already convex, so only the strong
  convexity of Assumption 6.3A needs it); default 1e-4 (a weak proximal term).
* Empty T (v^(0) not ε-feasible, e.g. an infeasible warm start): the last inner iterate is kept
  (the constraint steps move it towards feasibility). The paper does not cover this case.
* ``initial_score`` = b (default None: the paper's w^(0) = 0): start at h ≡ b instead. Measured on bank pDP,
  I = [0, 25%], κ = 0.05, seed 0, ε = 1e-3, K = 40: from w^(0) = 0 the surrogate rate of the majority group stays
  at 0.24 ≈ β(1 − κ) (the start S_k = 0.5 lies on the flat part of φ_k, so the linearised f⁻ forces
  S_k ≥ β(1 − κ)) and validation accuracy is 0.729 (26 % predicted positive, label rate 11 %); from h ≡ −1 it
  is 0.897 at pDP fairness 0.99.
* Reported model: the last outer iterate w^(K) (G.2.2 "the final solution").
* Stop rule: the fast (full-batch, deterministic) path stops when w^(k+1) = w^(k) exactly (the inner
  SSG found no objective-step iterate better than its start, τ = 0): every later outer iteration would
  repeat it, so w^(K) = w^(k+1) and the run ends early with the same output (one host sync per outer
  iteration). On a9a (pSP, ε = 5e-3) it is reached after 38–107 outer iterations.
* Deep-learning variant (§G.9): ``inner="primal_dual"`` (default for non-linear models) replaces
  SSG by a stochastic primal-dual method on the same subproblem with mini-batches of
  ``pd_batch_size`` = 64 (Yu, Neely & Wei 2017 style: v ← v − η(∇g_0 + Σ λ_i ∇g_i) on a batch,
  λ ← [λ + η_λ g(v)]₊, reset to 0 at each outer iteration); the last inner iterate is w^(k+1).
  The paper gives no learning rates; ``pd_lr`` = 0.01, ``pd_dual_lr`` = 0.5 chosen. f⁻ of an MLP is not
  convex; μ then plays the weak-convexity ρ of Ex. D.1.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F_
from torch import Tensor

from ..catalog.partial import IDCAConfig
from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm, gradient
from .linear_scores import LinearScores
from .switching import load_, squared_norm, switching_step


def objective_value_and_score_grad(objective, h: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    r"""f0 = (1/n) Σ_i ℓ(h_i, y_i) and ∂f0/∂h (n,), no graph kept. Logistic and bce (the same loss,
    y ∈ {0, 1}) in closed form: ℓ = softplus(−ỹh) with ỹ = 2y − 1 equals softplus(h) − y h, so

        f0 = (Σ_i softplus(h_i) − ⟨y, h⟩)/n,    ∂f0/∂h_i = (σ(h_i) − y_i)/n;

    any other objective by autograd on the n-vector h."""
    n = h.numel()
    if getattr(objective, "name", None) in ("logistic", "bce"):
        return (F_.softplus(h).sum() - y.dot(h)) / n, (torch.sigmoid(h) - y).div_(n)
    with torch.enable_grad():
        hl = h.detach().requires_grad_(True)
        f0 = objective(hl, y)
        (u,) = torch.autograd.grad(f0, hl)
    return f0.detach(), u


def _jacobian_rows(out: Tensor, inputs: list[Tensor], like: list[Tensor]) -> list[Tensor]:
    """∂out_i/∂input for every row i of ``out`` (m,): (m, *input.shape) per input (zeros when unused)."""
    m = out.numel()
    if not out.requires_grad:
        return [torch.zeros((m, *p.shape), dtype=p.dtype, device=p.device) for p in like]
    eye = torch.eye(m, dtype=out.dtype, device=out.device)
    try:
        jac = torch.autograd.grad(out, inputs, grad_outputs=eye, is_grads_batched=True, allow_unused=True)
    except RuntimeError:  # an op without a batching rule: one backward per row
        rows = [torch.autograd.grad(out[i], inputs, retain_graph=True, allow_unused=True) for i in range(m)]
        jac = [None if rows[0][j] is None else torch.stack([r[j] for r in rows]) for j in range(len(inputs))]
    return [torch.zeros((m, *p.shape), dtype=p.dtype, device=p.device) if g is None else g.detach()
            for p, g in zip(like, jac)]


def dc_parts(problem, scores: Tensor, data) -> tuple[Tensor, Tensor]:
    """(f⁺, f⁻) of every constraint row of ``problem`` (f⁺ − f⁻ = G)."""
    plus, minus = [], []
    for family in problem.constraints:
        split = getattr(family, "dc_parts", None)
        if split is not None:
            p, m = split(scores, data)
        else:  # convex (or treated as convex) row: f⁺ = G, f⁻ = 0
            p = family.surrogate(scores, data)
            m = torch.zeros_like(p)
        plus.append(p)
        minus.append(m)
    if not plus:
        return scores.new_zeros(0), scores.new_zeros(0)
    return torch.cat(plus), torch.cat(minus)


@ALGORITHMS.implements("idca")
class IDCA(Algorithm):
    @classmethod
    def resolve_config(cls, config: IDCAConfig, problem) -> IDCAConfig:
        if config.inner is None:
            inner = "ssg" if getattr(problem, "model_type", "linear") == "linear" else "primal_dual"
            config = config.model_copy(update={"inner": inner})
        return config

    def start(self, current: Evaluation) -> None:
        self.inner_steps = 0
        self.fast = None
        if self.config.initial_score is not None:
            self._start_at_constant_score(self.config.initial_score)
        if self.config.fast_linear and LinearScores.applicable(self.model, getattr(self.problem, "model_type", "")):
            self.fast = LinearScores(self.model, self.problem)
            self._flatten()

    def _start_at_constant_score(self, b: float) -> None:
        """w^(0) = (0, b): h ≡ b, a constant score (trivially fair, Assumption 6.3E); the families'
        score thresholds (θ_p of pSP) move by b so that their rows keep the values they have at h ≡ 0."""
        if not LinearScores.applicable(self.model, getattr(self.problem, "model_type", "")):
            raise ValueError("idca: initial_score needs a linear model with a bias")
        with torch.no_grad():
            self.model.net.weight.zero_()
            self.model.net.bias.fill_(b)
            for family in self.problem.constraints:
                if hasattr(family, "shift_thresholds_"):
                    family.shift_thresholds_(b)

    # -- fast linear path: one flat parameter vector, score-space oracles ---------------------
    def _flatten(self) -> None:
        """Make every parameter a view of ONE flat vector v = (weight, bias, θ...) (``.data`` swap), so
        the inner SSG updates, norms and the linear term J(v − w^(k)) are single vector operations.
        Also maps constraint rows to their family and each family's auxiliary variables to their
        slice of v."""
        sizes = [p.numel() for p in self.params]
        flat = torch.cat([p.detach().reshape(-1) for p in self.params])
        with torch.no_grad():
            for p, view in zip(self.params, flat.split(sizes)):
                p.data = view.view_as(p)
        self.flat = flat
        offsets = [0]
        for size in sizes:
            offsets.append(offsets[-1] + size)
        where = {id(p): (offsets[i], offsets[i + 1]) for i, p in enumerate(self.params)}
        self.n_model = sizes[0] + sizes[1]                        # weight (1, d) then bias (1,)
        self.rows = []                                            # global row -> (family, local row)
        self.aux = []                                             # per family: [(param, (start, end))]
        for family in self.problem.constraints:
            own = [(p, where[id(p)]) for p in (family.parameters() if hasattr(family, "parameters") else [])
                   if id(p) in where]
            self.aux.append(own)
            self.rows += [(family, r, len(self.aux) - 1) for r in range(len(family.names))]

    def _linearise_fast(self) -> tuple[Tensor, Tensor]:
        """f⁻(w^(k)) (m,) and its Jacobian (m, D) in v's layout: families with ``dc_minus_jacobian``
        give it in closed form, others by autograd in score space (one backward per row)."""
        fast = self.fast
        with torch.no_grad():
            h = torch.mv(fast.X, self.flat[:self.n_model - 1]) + self.flat[self.n_model - 1]
        values, blocks = [], []
        for family, own in zip(self.problem.constraints, self.aux):
            params = [p for p, _ in own]
            jac = getattr(family, "dc_minus_jacobian", None)
            if jac is not None:
                with torch.no_grad():
                    minus = family.dc_parts(h, fast.data)[1]
                    Jh, Jaux = jac(h, fast.data)
            else:
                hl = h.detach().requires_grad_(True)
                split = getattr(family, "dc_parts", None)
                minus = split(hl, fast.data)[1] if split is not None else hl.new_zeros(len(family.names))
                Jh, *Jaux = _jacobian_rows(minus, [hl] + params, [hl] + params)
                minus = minus.detach()
            J = h.new_zeros(minus.numel(), self.flat.numel())
            J[:, :self.n_model] = torch.cat([g.reshape(minus.numel(), -1) for g in fast.pullback(Jh)], 1)
            for (_, (a, b)), Ja in zip(own, Jaux):
                J[:, a:b] = Ja.reshape(minus.numel(), -1)
            values.append(minus)
            blocks.append(J)
        if not values:
            return self.flat.new_zeros(0), self.flat.new_zeros(0, self.flat.numel())
        return torch.cat(values), torch.cat(blocks)

    def _ssg_fast(self, c: Tensor, J: Tensor) -> None:
        r"""Algorithm 2 on subproblem (31), the iterates of :meth:`_ssg` (up to float rounding), in score
        space with closed-form gradients and no host sync. Per inner step, with D = (v − w^(k)):

            h = X v_w + v_b                                           (one CSR product)
            g_i(v) = f⁺_i(h, θ) − f⁻_i(w^(k)) − J_i D + μ/2‖D‖²,  r = argmax_i g_i,  g(v) = g_r(v)
            objective step (g(v) ≤ ε):  u = ∂f0/∂h (closed form, :func:`objective_value_and_score_grad`),
                                        ∇ = (Xᵀu, Σu, 0) + μD,  step ε/‖∇‖²
            constraint step:            u = ∂f⁺_r/∂h (the family's ``dc_plus_row_grad``),
                                        ∇ = (Xᵀu, Σu, ∂f⁺_r/∂θ) − J_r + μD,  step g(v)/‖∇‖²
            v ← v − step ∇                                            (one CSR product Xᵀu)

        J = ∂f⁻(w^(k)) and f⁻(w^(k)) are fixed within the outer iteration (:meth:`_linearise_fast`). Both
        candidate score gradients are formed (n-vectors, cheap) and the switch picks one with
        ``torch.where``, so ONE Xᵀ product serves either step and the loop never reads a value back to
        the host. τ = argmin over objective steps of g_0(v_t) = f0(v_t) + μ/2‖D‖² is tracked the same way;
        no objective step at all keeps the last iterate."""
        cfg, problem, fast = self.config, self.problem, self.fast
        v, mu = self.flat, cfg.mu
        d, n_model = self.n_model - 1, self.n_model
        center = v.clone()
        best, best_val = v.clone(), v.new_full((), float("inf"))
        grad = torch.empty_like(v)
        w, b, grad_w, grad_b, grad_aux = v[:d], v[d:n_model], grad[:d], grad[d:n_model], grad[n_model:]
        h = v.new_empty(fast.y.numel())
        y = fast.y.to(v.dtype)
        eps, tiny = v.new_tensor(cfg.epsilon), torch.finfo(v.dtype).tiny
        families = problem.constraints
        sizes = [len(f.names) for f in families]
        offsets = torch.as_tensor([0] + sizes, device=v.device).cumsum(0)
        with torch.no_grad():
            for _ in range(cfg.inner_iterations):
                diff = v - center
                prox = diff.dot(diff).mul_(0.5 * mu)
                torch.mv(fast.X, w, out=h)
                h.add_(b)
                f0, u = objective_value_and_score_grad(problem.objective, h, y)
                torch.mul(diff, mu, out=grad)
                if families:
                    plus = torch.cat([f.dc_plus(h, fast.data) for f in families]) if len(families) > 1 else \
                        families[0].dc_plus(h, fast.data)
                    g_max, r = torch.addmv(plus - c, J, diff, alpha=-1.0).max(0)
                    value = g_max + prox
                    objective_step = value <= eps
                    u_row, aux_row = self._row_grad(h, r.reshape(1), sizes, offsets)
                    u = torch.where(objective_step, u, u_row)
                    # constraint step: + (0, 0, ∂f⁺_r/∂θ) − J_r; objective step: nothing
                    grad.addcmul_(J.index_select(0, r.reshape(1))[0], objective_step.to(v.dtype) - 1.0)
                    grad_aux.addcmul_(aux_row, ~objective_step)
                    step = torch.where(objective_step, eps, value.clamp_min(0.0))
                else:
                    objective_step, step = torch.ones((), dtype=torch.bool, device=v.device), eps
                grad_w.add_(torch.mv(fast.XT, u))
                grad_b.add_(u.sum())
                step = step / grad.dot(grad).clamp_min(tiny)
                g0 = f0 + prox
                better = objective_step & (g0 < best_val)
                best_val = torch.where(better, g0, best_val)
                torch.where(better, v, best, out=best)
                v.addcmul_(grad, step, value=-1.0)
                if problem.domain is not None:
                    problem.project_(self.params)
                self.inner_steps += 1
            torch.where(torch.isfinite(best_val), best, v, out=v)
            # τ = 0 with v_0 = w^(k): w^(k+1) = w^(k), and the deterministic iteration repeats itself
            self.converged = bool(torch.equal(v, center))

    def _row_grad(self, h: Tensor, r: Tensor, sizes: list[int], offsets: Tensor) -> tuple[Tensor, Tensor]:
        """(∂f⁺_r/∂h (n,), ∂f⁺_r/∂(auxiliary variables) in v's layout after the model) for the global
        constraint row r ((1,) tensor). With several families each one's row is formed and all but the
        family holding r are weighted by 0 (no host sync)."""
        families = self.problem.constraints
        aux = h.new_zeros(self.flat.numel() - self.n_model)
        total = None
        for fi, family in enumerate(families):
            local = r if len(families) == 1 else (r - offsets[fi]).clamp(0, sizes[fi] - 1)
            u, grads = family.dc_plus_row_grad(h, self.fast.data, local)
            if len(families) > 1:
                here = ((r >= offsets[fi]) & (r < offsets[fi + 1])).to(h.dtype)
                u, grads = u * here, [g * here for g in grads]
            for (_, (a, b)), g in zip(self.aux[fi], grads):
                aux[a - self.n_model:b - self.n_model] += g.reshape(-1)
            total = u if total is None else total + u
        return total, aux

    # -- subproblem (31) -----------------------------------------------------------------
    def _linearise(self) -> tuple[Tensor, list[Tensor], list[Tensor]]:
        """f⁻(w^(k)) (m,), its Jacobian rows per parameter (m, *p.shape), and w^(k)."""
        problem = self.problem
        fast = getattr(self, "fast", None)
        if fast is not None:  # differentiate in score space, then pull back through X once
            scores = fast.scores().detach().requires_grad_(True)
            inputs = [scores] + self.params[2:]          # h, then the auxiliary variables (θ_p)
        else:
            scores = self.model(problem.X)
            inputs = self.params
        _, minus = dc_parts(problem, scores, problem.data if fast is None else fast.data)
        center = [p.detach().clone() for p in self.params]
        if minus.numel() == 0:
            return minus.detach(), [], center
        jac = _jacobian_rows(minus, inputs, inputs)
        if fast is not None:
            jac = fast.pullback(jac[0]) + list(jac[1:])
        return minus.detach(), jac, center

    def _subproblem(self, c: Tensor, jac: list[Tensor], center: list[Tensor], idx: Tensor | None = None) -> Evaluation:
        """g_0 − μ/2‖v−w‖² and g_i − μ/2‖v−w‖² at the current v (the proximal term is added by the step)."""
        problem = self.problem
        if idx is None and getattr(self, "fast", None) is not None:
            y, data = self.fast.y, self.fast.data
            scores = self.fast.scores()
        elif idx is None:
            y, data = problem.y, problem.data
            scores = self.model(problem.X)
        else:
            y, data = problem.y[idx], problem.data.subset(idx)
            scores = self.model(problem.X[idx])
        objective = problem.objective(scores, y)
        plus, _ = dc_parts(problem, scores, data)
        if plus.numel():
            lin = c
            for p, w, J in zip(self.params, center, jac):
                lin = lin + J.reshape(J.shape[0], -1) @ (p - w).reshape(-1)
            constraints = plus - lin
        else:
            constraints = plus
        return Evaluation(scores, objective, constraints)

    def _ssg(self, c, jac, center) -> None:
        cfg = self.config
        mu = cfg.mu
        best_val = None
        best: list[Tensor] | None = None

        for _ in range(cfg.inner_iterations):
            ev = self._subproblem(c, jac, center)

            def record(ev=ev) -> None:
                with torch.no_grad():
                    diff = torch._foreach_sub(self.params, center)
                    val = ev.objective.detach() + 0.5 * mu * squared_norm(diff)
                    nonlocal best_val, best
                    if best_val is None:
                        best_val, best = val.clone(), [p.detach().clone() for p in self.params]
                    else:
                        better = val < best_val
                        best_val = torch.where(better, val, best_val)
                        for b, p in zip(best, self.params):
                            b.copy_(torch.where(better, p.detach(), b))

            switching_step(self.problem, self.params, ev, tolerance=cfg.epsilon, eta_f=cfg.epsilon, eta_c=None,
                           center=center, rho_hat=mu, on_objective_step=record, normalize_f=True)
            self.inner_steps += 1
        if best is not None:
            load_(self.params, best)

    def _primal_dual(self, c, jac, center) -> None:
        cfg = self.config
        n = self.problem.n_samples
        lam = None
        for _ in range(cfg.inner_iterations):
            idx = self.sampler.uniform(min(cfg.pd_batch_size, n)) if cfg.pd_batch_size < n else None
            ev = self._subproblem(c, jac, center, idx)
            with torch.no_grad():
                diff = torch._foreach_sub(self.params, center)
            if lam is None:
                lam = torch.zeros_like(ev.constraints.detach())
            prox = 0.5 * cfg.mu * squared_norm(diff)
            lagr = ev.objective + prox + (lam * (ev.constraints + prox)).sum()
            grads = gradient(lagr, self.params)
            with torch.no_grad():
                torch._foreach_add_(self.params, grads, alpha=-cfg.pd_lr)
                self.problem.project_(self.params)
                lam = (lam + cfg.pd_dual_lr * (ev.constraints.detach() + prox)).clamp_min(0.0)
            self.inner_steps += 1

    def _margin(self) -> float:
        """ε subtracted from f⁻_i(w^(k)), the constant of g_i: SSG then runs on the ε-tightened (31)."""
        return self.config.epsilon if self.config.feasible_iterates else 0.0

    def step(self, k: int, current: Evaluation):
        if self.fast is not None and self.config.inner == "ssg" and all(
                hasattr(f, "dc_plus_row_grad") and hasattr(f, "dc_plus") for f in self.problem.constraints):
            c, J = self._linearise_fast()
            self._ssg_fast(c - self._margin(), J)
            with torch.no_grad():  # the new iterate, in the fast path's sample order (sums only)
                h = self.fast.scores()
                nxt = Evaluation(h, self.problem.objective(h, self.fast.y),
                                 self.problem.constraint_values_on(h, self.fast.data))
            steps = torch.full((1,), float(self.inner_steps), dtype=nxt.objective.dtype)
            return nxt, {"inner_steps": steps}
        c, jac, center = self._linearise()
        if self.config.inner == "ssg":
            self._ssg(c - self._margin(), jac, center)
        else:
            self._primal_dual(c, jac, center)
        nxt = self.problem.evaluate(self.model)
        steps = torch.full((1,), float(self.inner_steps), dtype=nxt.objective.dtype, device=nxt.objective.device)
        return nxt, {"inner_steps": steps}
