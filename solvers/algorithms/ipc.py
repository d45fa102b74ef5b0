r"""IPC: the Inexact Proximally Constrained method (Ma, Lin & Yang, "Proximally Constrained
Methods for Weakly Convex Optimization with Weakly Convex Constraints", 2019), Algorithm 1,
with the switching subgradient oracle (Algorithm 2; ``ipc``, alias ``ipp_ssg``) or the
Yu–Neely–Wei stochastic oracle (Algorithm 3; ``ipc_stochastic``).

Problem (1): min_{x∈X} f(x) s.t. g(x) = max_i f_i(x) ≤ 0, f_i ρ-weakly convex. Outer loop
(Algorithm 1), t = 0..T−1, x_0 = θ_0:

    x_{t+1} = A(x_t, ρ̂, ε̂) ≈ x̂_t = argmin_{y∈X} { F(y) = f(y) + ρ̂/2‖y−x_t‖²
                                               s.t. G(y) = g(y) + ρ̂/2‖y−x_t‖² ≤ 0 }   (9)
    output x_R, R uniform on {0, ..., T}.

Algorithm 2 (deterministic oracle), z_0 = x_t, K inner steps, γ_k = 2/((ρ̂−ρ)(k+2)):

    if G(z_k) ≤ ε̂²:  I ← I ∪ {k};  z_{k+1} = Π_X(z_k − γ_k F'(z_k))
    else:            z_{k+1} = Π_X(z_k − γ_k G'(z_k))
    x_{t+1} = Σ_{k∈I} (k+1) z_k / Σ_{k∈I} (k+1)

Algorithm 3 (stochastic oracle): K inner steps of :func:`solvers.algorithms.ynw.ynw_step` on
(9) with every f_i given its own proximal term, V = √K, α = K, Q reset to 0 per subproblem,
x_{t+1} = (1/K) Σ_{k=0}^{K−1} z_k.

Choices (documented):

* Granularity: ONE driver iteration = ONE inner step, so the trajectory, the time limit and
  cancellation work per inner step. Records show the inner iterate z_k (f and g without the
  proximal terms); at the end of a subproblem the parameters jump to x_{t+1} and that record
  shows x_{t+1}. ``outer_iteration`` (t, logged as a dual) says which subproblem a record
  belongs to; ``objective_step`` (ipc) whether k ∈ I; ``Q`` (ipc_stochastic) the queues.
* Defaults from §5 / A.5: ε̂ = 1e-2, K = 1/ε̂² = 10⁴ inner steps, ρ̂ = 10^{-2.5} (the value used
  for every real data set), ρ = ρ̂/2 ("we assume ρ̂ = 2ρ"), so γ_k = 4/(ρ̂(k+2)). The paper's
  data had an ℓ1-ball X of radius 20 and a constraint written with SUMS over the data; on
  FairSolve's mean-normalised F and G with an unbounded Θ these steps are very large — set
  ``rho_hat`` (e.g. ~1 for standardised tabular data) and ``inner_iterations`` per problem.
  The theoretical ε̂(ε) and K = ⌈4(M²+ρ̂D²)/((ρ̂−ρ)ε̂²)⌉ need M, D, σ_ε that are unknown here.
* The switching test uses g = max_j G_j (the paper's g = max_i f_i); the Algorithm 3 oracle
  keeps one queue per row of G, as written.
* Empty I (every inner step was a constraint step, e.g. when x_t is far from feasible and (9)
  has no feasible point): x_{t+1} = z_K, the last inner iterate — the paper proves I ≠ ∅ for
  its K and an ε²-feasible x_0 (Assumption 1E), which FairSolve's θ_0 need not be; this makes
  the first subproblems a constraint-descent phase, in the spirit of Remark 1.
* Output (``output``): ``"last"`` (default: the last inner iterate), ``"random"`` (Algorithm 1's
  x_R with R uniform on {0..T} over the completed subproblems, drawn online by seeded reservoir
  sampling) or ``"last_outer"`` (x_T, the last oracle output). FairSolve departs from the paper's
  x_R by default because its runs end on iteration and time budgets: with §5's K = 1/ε̂² = 10⁴
  inner steps, a 2,000-iteration job completes no subproblem, T = 0 and x_R = x_0 = θ_0 (measured
  on Adult: a constant classifier). ``"random"`` gives the paper's rule.
  The model and the result's last record hold the chosen point.
* Mini-batches (``batch_size``): F, G and (sub)gradients on the batch; the switching test of
  Algorithm 2 then uses a plug-in estimate (the paper notes Algorithm 2 needs exact or very
  large-batch constraint values; Algorithm 3 is the stochastic one).
* Host syncs: ``ipc`` one ``.item()`` per inner step for the switch; ``ipc_stochastic`` none.
"""
from __future__ import annotations

import math

import torch

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm
from .switching import WeightedAverage, WeightedReservoir, load_, switching_step
from .ynw import ynw_step


class _IPC(Algorithm):
    """Algorithm 1's outer loop at inner-step granularity; subclasses supply the oracle's step."""

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        self.config.resolved_rho()  # validate ρ < ρ̂ early
        self.K = self.config.resolved_inner()
        self.outputs = WeightedReservoir(seed)

    def start(self, current: Evaluation) -> None:
        with torch.no_grad():
            self.center = [p.detach().clone() for p in self.params]  # x_0
        self.outer, self.inner = 0, 0
        self.outputs.offer(0, self.params)
        self.begin_subproblem(current)

    def begin_subproblem(self, current: Evaluation) -> None:
        raise NotImplementedError

    def inner_step(self, j: int, current: Evaluation) -> dict:
        raise NotImplementedError

    def oracle_output(self):
        raise NotImplementedError

    def step(self, k: int, current: Evaluation):
        duals = self.inner_step(self.inner, current)
        self.inner += 1
        if self.inner == self.K:  # subproblem t solved: x_{t+1} = A(x_t, ρ̂, ε̂)
            value = self.oracle_output()
            if value is not None:
                load_(self.params, value)
            with torch.no_grad():
                self.center = [p.detach().clone() for p in self.params]
            self.outer += 1
            self.inner = 0
            if self.config.output == "random":
                self.outputs.offer(self.outer, self.params)
        nxt = self.evaluate()
        if self.inner == 0:
            self.begin_subproblem(nxt)
        ref = nxt.objective
        duals["outer_iteration"] = torch.full((1,), float(self.outer), dtype=ref.dtype, device=ref.device)
        return nxt, duals

    def finish(self) -> Evaluation | None:
        output = self.config.output
        if output == "last":
            return None
        load_(self.params, self.outputs.kept if output == "random" else self.center)
        with torch.no_grad():
            return self.problem.evaluate(self.model)


@ALGORITHMS.implements("ipc")
class IPC(_IPC):
    def begin_subproblem(self, current: Evaluation) -> None:
        self.average = getattr(self, "average", None) or WeightedAverage(self.params)
        self.average.reset()

    def inner_step(self, j: int, current: Evaluation) -> dict:
        c = self.config
        gamma = 2.0 / ((c.rho_hat - c.resolved_rho()) * (j + 2))
        objective_step = switching_step(
            self.problem, self.params, current, tolerance=c.eps_hat ** 2, eta_f=gamma, eta_c=gamma,
            center=self.center, rho_hat=c.rho_hat,
            on_objective_step=lambda: self.average.add(self.params, float(j + 1)))
        ref = current.objective
        return {"objective_step": torch.full((1,), float(objective_step), dtype=ref.dtype, device=ref.device)}

    def oracle_output(self):
        return self.average.value()  # None (I = ∅): keep z_K


@ALGORITHMS.implements("ipc_stochastic")
class IPCStochastic(_IPC):
    def begin_subproblem(self, current: Evaluation) -> None:
        self.average = getattr(self, "average", None) or WeightedAverage(self.params)
        self.average.reset()
        self.Q = torch.zeros_like(current.constraints.detach())

    def inner_step(self, j: int, current: Evaluation) -> dict:
        self.average.add(self.params)  # z_k, k = 0..K−1
        self.Q = ynw_step(self.problem, self.params, current, self.Q, V=math.sqrt(self.K), alpha=float(self.K),
                          center=self.center, rho_hat=self.config.rho_hat)
        return {"Q": self.Q}

    def oracle_output(self):
        return self.average.value()
