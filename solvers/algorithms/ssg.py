r"""SSG: the single-loop switching subgradient method (Huang & Lin, "Oracle Complexity of
Single-Loop Switching Subgradient Methods for Non-Smooth Weakly Convex Functional Constrained
Optimization", NeurIPS 2023), the SSG baseline of the PLADA paper (§5) and the "SSw" of the
stochastic benchmark (its Algorithm 3).

Problem: min_{θ∈Θ} F(θ) s.t. g(θ) = max_j G_j(θ) ≤ 0. Iteration k = 0, 1, ...:

    if g(θ_k) ≤ ε_k:  θ_{k+1} = Π_Θ(θ_k − η^f_k ζ_F),  ζ_F ∈ ∂F(θ_k);   I ← I ∪ {k} if k ≥ k_0
    else:             θ_{k+1} = Π_Θ(θ_k − η^c_k ζ_g),  ζ_g ∈ ∂G_{j*}(θ_k), j* = argmax_j G_j(θ_k)

    output θ_τ, τ ∈ I drawn with P(τ = k) = η_k / Σ_{s∈I} η_s.

Choices (documented; the Huang & Lin paper itself is not in ``papers/``, so the rule is taken
from the descriptions in the PLADA notes and the stochastic benchmark's Algorithm 3):

* Step sizes. Huang & Lin's weakly-convex-constraint analysis uses a constant objective step
  η^f and Polyak's step η^c_k = g(θ_k)/‖ζ_g‖² on constraint steps — the default here
  (``eta_c=None``); a number for ``eta_c`` gives a constant constraint step (the benchmark's SSw
  variant η^f ≠ η^c). Their theoretical η^f = O(ε²) is far too small in practice, so the default
  numbers are the stochastic benchmark's (§4: η^f = 0.5, ε_k = 1e-4; its η^c = 0.05 is the value
  to use with ``eta_c`` when Polyak's step is not wanted). ``schedule="diminishing"`` divides the
  constant steps by √(k+1).
* Tolerance ε_k = ``tolerance`` (constant, as in Huang & Lin's theorems), optionally decayed
  geometrically after ``decay_start`` iterations (the benchmark's ε_k = 0.97 ε_{k−1} schedule is
  ``tolerance_decay=0.97, decay_start=500``, applied per iteration here, not per epoch).
  ε_k is added to FairSolve's G, which already subtracts each constraint's tolerance.
* k_0 = ⌊``start_fraction`` · K⌋ with K the run's iteration budget (``max_iterations``);
  Huang & Lin record the output only from a fraction of the run on; 0.5 chosen.
* Output (``output``): ``"random"`` (default, the paper's rule) draws τ online by weighted
  reservoir sampling (seeded; one parameter copy when the draw changes), and at the end the
  model holds θ_τ and the result's last record is θ_τ's full-batch F and G. If I ∩ [k_0, K) is
  empty the last iterate is kept. ``"last"`` reports the last iterate θ_K. The trajectory
  records always show the iterates θ_k themselves.
* Mini-batches: the switching test and the step use the same batch (the benchmark draws a
  separate batch for the test); the test then compares a plug-in estimate of g with ε_k.
* Host syncs: one per iteration for the branch (plus the driver's one): in score space G(θ_k) is read
  with ``tolist`` and j* taken on the host (the first maximiser, as ``argmax``), else ``.item()`` of max_j G_j.
* Gradients: for the library's linear / MLP models ∂F and ∂G_{j*} are taken in score space
  (:mod:`.score_space`, no autograd graph per iteration; the batch's per-sample losses are shared by F and a
  loss-gap G, and its group structure is read from the epoch's permutation, :meth:`FairnessData.run`);
  other models use autograd. Both give the same iterates up to float rounding.
* Logged "duals": ``objective_step`` (1 when k ∈ I's branch was taken, else 0).
"""
from __future__ import annotations

import torch

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm
from .score_space import ScoreSpaceAlgorithm
from .switching import WeightedReservoir, load_, switching_step


@ALGORITHMS.implements("ssg")
class SSG(ScoreSpaceAlgorithm, Algorithm):
    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        self.reservoir = WeightedReservoir(seed)
        self.flags = (torch.zeros(1, device=problem.device), torch.ones(1, device=problem.device))  # 0: constraint

    def tolerance(self, k: int) -> float:
        c = self.config
        return c.tolerance * c.tolerance_decay ** max(0, k - c.decay_start)

    def step_scale(self, k: int) -> float:
        return 1.0 if self.config.schedule == "constant" else 1.0 / (k + 1) ** 0.5

    def step(self, k: int, current: Evaluation):
        c = self.config
        scale = self.step_scale(k)
        record = c.output == "random" and k >= int(c.start_fraction * (self.horizon or 0))
        weight = c.eta_f * scale  # P(τ = k) ∝ η_k
        objective_step = switching_step(
            self.problem, self.params, current, tolerance=self.tolerance(k), eta_f=weight,
            eta_c=None if c.eta_c is None else c.eta_c * scale,
            on_objective_step=(lambda: self.reservoir.offer(k, self.params, weight)) if record else None)
        nxt = self.evaluate()
        return nxt, {"objective_step": self.flags[int(objective_step)]}

    def finish(self) -> Evaluation | None:
        if self.config.output != "random" or self.reservoir.kept is None:
            return None
        load_(self.params, self.reservoir.kept)
        with torch.no_grad():
            return self.problem.evaluate(self.model)
