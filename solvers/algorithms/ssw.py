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
* The switching test needs one host sync per iteration (a Python branch). The objective batch ξ is
  drawn (and F evaluated) together with ζ before the test, in the evaluation the driver logs; ξ is
  independent of ζ so this is the same law as drawing it after the test (one unused forward on
  constraint steps).
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
from .base import ALGORITHMS, Algorithm, gradient


@ALGORITHMS.implements("ssw")
class SSw(BalancedConstraintBatches, Algorithm):
    def start(self, current: Evaluation) -> None:
        b = self.config.batch_size
        n = self.problem.n_samples
        self.epoch_len = 1 if b is None or b >= n else math.ceil(n / b)
        self._samples = 0

    def epsilon(self, k: int) -> float:
        c = self.config
        j = k % self.epoch_len if c.tol_per_epoch else k
        return c.eps0 * c.eps_decay ** max(0, j - c.decay_start + 1)

    def step(self, k: int, current: Evaluation):
        c = self.config
        eps = self.epsilon(k)
        cons = current.constraints
        base = super().samples_per_step() if not self.full_batch else self.problem.n_samples
        if cons.numel() == 0 or float(cons.detach().max()) <= eps:   # the one host sync
            grads, eta, switched = gradient(current.objective, self.params), c.eta_f, 0.0
            self._samples = base + (0 if self.full_batch else self.constraint_samples())
        else:
            if not self.full_batch:   # S^c on a fresh constraint batch ζ'
                cons = self.problem.evaluate(self.model, self.constraint_idx()).constraints
            grads, eta, switched = gradient(cons.max(), self.params), c.eta_c, 1.0
            self._samples = base + (0 if self.full_batch else 2 * self.constraint_samples())
        with torch.no_grad():
            torch._foreach_add_(self.params, grads, alpha=-eta)
            self.problem.project_(self.params)
        dev = self.problem.device
        return self.evaluate(), {"constraint_step": torch.tensor([switched], device=dev),
                                 "epsilon": torch.tensor([eps], device=dev)}

    def samples_per_step(self) -> int:
        return self._samples
