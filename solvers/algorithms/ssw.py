r"""Stochastic Switching Subgradient (SSw; Algorithm 3 of Kliachkin, Lepšová, Bareilles, Mareček,
"Benchmarking Stochastic Approximation Algorithms for Fairness-Constrained Training of Deep Neural
Networks"; Huang & Lin 2023, generalised to different step sizes η^f_k ≠ η^c_k).

Iteration k (Algorithm 3):

    c̄^J(x_k) = (1/J) Σ_j c(x_k, ζ_j)                        (constraint batch ζ, balanced per group)
    if max_i c̄^J_i(x_k) ≤ ε_k:   x_{k+1} = proj_𝒳(x_k − η^f_k S^f(x_k, ξ))      (objective step)
    else:                         x_{k+1} = proj_𝒳(x_k − η^c_k S^c(x_k, ζ'))     (constraint step)

S^f is the mini-batch (sub)gradient of F on ξ; S^c the (sub)gradient of max_i c_i on a FRESH
constraint batch ζ' (Algorithm 3 line 10 samples a new ζ). With m > 1 constraints the switching
test and S^c use max_i c_i (the paper's public code).

Tolerance schedule (Sec. 4): ε_k = ε_0 = 1e−4 for k < 500, ε_k = 0.97 ε_{k−1} for k ≥ 500 "at each
epoch": k counts iterations WITHIN the current epoch (the public code resets ε to ε_0 at each epoch),
an epoch being ⌈n_train / batch_size⌉ iterations (``tol_per_epoch=False``: k is the global counter).
In full batch every iteration is an epoch, so ε_k = ε_0 throughout (the constant-tolerance method).

Choices the paper leaves open (documented here):

* Defaults: Sec. 4: η^f = 0.5, η^c = 0.05 (constant), ε_0 = 1e−4, decay 0.97 after 500 iterations.
  Appendix B uses η^f = η^c = 0.02. The paper gives no batch size (public code: 16 or 8);
  ``batch_size=None`` is full batch.
* G already contains the fairness tolerance (G = Δ̂ − ε ≤ 0); ε_k is the method's extra
  infeasibility tolerance on top of it.
* The switching test needs one host sync per iteration (a Python branch: G(x_k; ζ) is read with ``tolist``).
  The objective batch ξ is drawn (and F evaluated) together with ζ before the test, in ONE forward over
  ξ ∪ ζ that also gives the evaluation the driver logs; ξ is independent of ζ so this is the same law as
  drawing it after the test (its rows are unused on constraint steps). The constraint step's fresh batch ζ'
  is taken only when the test fails (Algorithm 3 line 10): ζ and ζ' are consumed in the paper's order from
  blocks of balanced batches drawn at once (:meth:`~.alm.BalancedConstraintBatches.next_balanced`), and ζ'
  costs a second forward over ζ' alone.
* Gradients: for the library's linear / MLP models S^f and S^c are taken in score space
  (:mod:`.score_space`: one forward without autograd graph, the closed-form ∂F/∂s on the ξ rows or the
  constraint family's closed-form ∂(e_{j*}ᵀG)/∂s on the ζ' rows, j* = argmax_i G_i(x_k; ζ') (the first
  maximiser; ∂ max_i G_i = ∂G_{j*} off ties), one hand-written backward). Other models, objectives or
  constraint parameters use autograd on the same quantities; both give the same iterates up to float
  rounding (tests/solvers/algorithms/test_ssw_score_space.py checks them against the autograd implementation).
* Output: the LAST iterate. Algorithm 3 outputs x_τ with τ drawn from I = {k ≥ k0} with
  P(τ = k) ∝ η_k; that needs a post-loop hook the shared driver does not have, and the paper's own
  experiments (and public code, save_iter=None) report the last iterate. Not implemented.
* Duals logged: ``constraint_step`` (1 when the constraint step was taken) and ``epsilon`` (ε_k).
"""
from __future__ import annotations

import math

import torch

from ..problem import Evaluation
from .alm import BalancedConstraintBatches
from .base import ALGORITHMS, Algorithm, gradient, project
from .score_space import ScoreSpaceAlgorithm


@ALGORITHMS.implements("ssw")
class SSw(BalancedConstraintBatches, ScoreSpaceAlgorithm, Algorithm):
    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        dev = problem.device
        self.flags = (torch.zeros(1, device=dev), torch.ones(1, device=dev))  # constraint_step 0 / 1
        self._eps = (None, None)  # (ε_k, its logged tensor): ε_k is constant for 500 iterations at a time
        self._basis = None

    def start(self, current: Evaluation) -> None:
        b = self.config.batch_size
        n = self.problem.n_samples
        self.epoch_len = 1 if b is None or b >= n else math.ceil(n / b)
        self._samples = 0

    def epsilon(self, k: int) -> float:
        c = self.config
        j = k % self.epoch_len if c.tol_per_epoch else k
        return c.eps0 * c.eps_decay ** max(0, j - c.decay_start + 1)

    def evaluate(self) -> Evaluation:
        """F on ξ and G on ζ (drawn in that order) from one forward; with a score space when ``self.net``."""
        if self.net is None:
            return BalancedConstraintBatches.evaluate(self)
        if self.full_batch:
            return ScoreSpaceAlgorithm.evaluate(self)
        obj_idx = self.batch()
        if obj_idx is None:  # objective on the whole set, constraints on balanced batches
            obj_idx = torch.arange(self.problem.n_samples, device=self.problem.device)
        return self.space_evaluate(obj_idx, self.next_balanced(1)[0])

    def step(self, k: int, current: Evaluation):
        c = self.config
        eps = self.epsilon(k)
        cons = current.constraints
        space = getattr(current, "space", None)
        base = super().samples_per_step() if not self.full_batch else self.problem.n_samples
        if cons.numel() == 0:
            objective_step = True
        elif space is not None:
            objective_step = max(cons.tolist()) <= eps                 # the one host sync
        else:
            objective_step = float(cons.detach().max()) <= eps
        if objective_step:
            grads = space.gradient(1.0, None) if space is not None else self._autograd(current.objective)
            self._samples = base + (0 if self.full_batch else self.constraint_samples())
        else:
            if not self.full_batch:   # S^c on a fresh constraint batch ζ'
                idx = self.constraint_idx()
                if space is not None:
                    fresh = self.space_constraints(idx)
                    space, cons = fresh.space, fresh.constraints
                else:
                    with torch.enable_grad():
                        cons = self.problem.evaluate(self.model, idx).constraints
            if space is not None:  # e_{j*}, j* the first maximiser (as argmax), on the device
                grads = space.gradient(0.0, self.basis(cons)[cons.argmax()])
            else:
                grads = self._autograd(cons, maximum=True)
            self._samples = base + (0 if self.full_batch else 2 * self.constraint_samples())
        eta = c.eta_f if objective_step else c.eta_c
        if torch.is_grad_enabled():
            with torch.no_grad():
                torch._foreach_add_(self.params, grads, alpha=-eta)
        else:  # (a score-space run: the driver turned grad mode off)
            torch._foreach_add_(self.params, grads, alpha=-eta)
        project(self.problem, self.params)
        if self._eps[0] != eps:
            self._eps = (eps, torch.tensor([eps], device=self.problem.device))
        return self.evaluate(), {"constraint_step": self.flags[0 if objective_step else 1], "epsilon": self._eps[1]}

    def basis(self, cons) -> torch.Tensor:
        """The rows e_1, ..., e_m of the identity in the constraints' dtype and device (e_{j*} is a row lookup)."""
        if self._basis is None:  # (m, the dtype and the device are the run's)
            self._basis = torch.eye(cons.numel(), dtype=cons.dtype, device=cons.device)
        return self._basis

    def _autograd(self, value, maximum: bool = False) -> list:
        """∇θ of ``value`` (of max_i value_i when ``maximum``) on its graph, also under a no-grad driver (a resumed
        run's first evaluation has a graph; the max must be taken with grad mode on to extend it)."""
        with torch.enable_grad():
            return gradient(value.max() if maximum else value, self.params)

    def samples_per_step(self) -> int:
        return self._samples
