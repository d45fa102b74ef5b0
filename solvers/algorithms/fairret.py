r"""SGD-Fairret: the regularised baseline of Kliachkin, Lepšová, Bareilles, Mareček, "Benchmarking
Stochastic Approximation Algorithms for Fairness-Constrained Training of Deep Neural Networks"
(Sec. 4: ERM (2) with a fairness-inducing regulariser ℛ from the Fairret library, Buyl et al. 2024).

    min_θ  F(θ) + ω · ‖ γ(θ) / γ̄(θ) − 1 ‖_p

with, per group g, the statistic γ_g of the predicted probabilities p_i = σ(f_θ(x_i)) and γ̄ the same
statistic over all samples (fairret's ``NormLoss``: violation |γ_g/γ̄ − 1|, p-norm over groups,
summed over statistics). Statistics (vectorised over groups through the cell indices):

* ``accuracy``  (the paper's "difference in accuracy between groups"; fairret ``Accuracy``):
  γ_g = mean_{i∈g} [p_i y_i + (1 − p_i)(1 − y_i)];
* ``positive_rate`` (demographic parity): γ_g = mean_{i∈g} p_i;
* ``tpr_fpr`` (equalized odds): γ_g = (mean_{i∈g, y=1} p_i, mean_{i∈g, y=0} p_i).

Step: θ_{k+1} = Π_Θ(θ_k − lr · d_k), d_k the SGD (or Adam) direction of the mini-batch loss.
F is evaluated on a uniform batch ξ (``batch_size``), the penalty on a per-group balanced batch
(``penalty_batch`` per group; public code: BATCH_SIZE/2 per group): two forwards when batched, one
when full batch.

Choices the paper leaves open (documented here):

* Defaults (not in the paper; the public code's Hydra config): lr = 0.05, ω = 0.5, p = 1, statistic
  accuracy, plain SGD. The problem's constraints are NOT enforced (it is a regulariser): they are
  evaluated and logged only; raise ω or pick the statistic matching the constraint for fairness.
* Groups (or group×label cells) with no sample in the batch are left out of the norm; if γ̄ = 0 the
  violation of that statistic is set to 0 (fairret raises / falls back to Σγ).
* Output: the last iterate. Duals logged: ``penalty`` (ω, fixed).
"""
from __future__ import annotations

import torch
from torch import Tensor

from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm


def fairret_norm(scores: Tensor, data, statistic: str, p: float) -> Tensor:
    """‖γ_g/γ̄ − 1‖_p summed over statistics; no loop over groups."""
    prob = torch.sigmoid(scores)
    y = data.y.to(prob.dtype)
    if statistic == "tpr_fpr":
        cells = data.by_group_label
        stats = cells.means(prob).view(-1, 2).T               # row y, column g
        valid = cells.valid.view(-1, 2).T
        counts = cells.counts.view(-1, 2).T
        overall = (stats * counts).sum(1, keepdim=True) / counts.sum(1, keepdim=True).clamp_min(1.0)
    else:
        values = prob if statistic == "positive_rate" else prob * y + (1 - prob) * (1 - y)
        cells = data.by_group
        stats, valid = cells.means(values)[None], cells.valid[None]
        overall = values.mean().reshape(1, 1)
    ratio = torch.where(overall > 0, stats / overall.clamp_min(1e-12), torch.ones_like(stats))
    violation = torch.where(valid, (ratio - 1).abs(), torch.zeros_like(stats))
    return torch.linalg.vector_norm(violation, ord=p, dim=-1).sum()


@ALGORITHMS.implements("fairret_penalty")
class FairretPenalty(Algorithm):
    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        opt = torch.optim.Adam if self.config.optimizer == "adam" else torch.optim.SGD
        self.optimizer = opt(self.params, lr=self.config.lr)
        self._omega = torch.tensor([float(self.config.penalty)], device=problem.device)

    @property
    def full_batch(self) -> bool:
        b = self.config.batch_size
        return (b is None or b >= self.problem.n_samples) and self.config.penalty_batch is None

    @property
    def per_group(self) -> int:
        k = len(self.problem.group_names)
        b = self.config.batch_size or self.problem.n_samples
        return self.config.penalty_batch or max(1, -(-b // k))

    def step(self, k: int, current: Evaluation):
        if self.full_batch:
            fair = fairret_norm(current.scores, self.problem.data, self.config.statistic, self.config.p)
        else:
            idx = self.sampler.balanced(self.per_group)
            scores = self.model(self.problem.X[idx])
            fair = fairret_norm(scores, self.problem.data.subset(idx), self.config.statistic, self.config.p)
        self.optimizer.zero_grad(set_to_none=True)
        (current.objective + self.config.penalty * fair).backward()
        self.optimizer.step()
        self.problem.project_(self.params)
        return self.evaluate(), {"penalty": self._omega}

    def samples_per_step(self) -> int:
        extra = 0 if self.full_batch else int((self.sampler.counts > 0).sum()) * self.per_group
        return super().samples_per_step() + extra
