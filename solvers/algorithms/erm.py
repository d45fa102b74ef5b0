"""Unconstrained empirical risk minimisation (the reference point of every fairness run)."""
from __future__ import annotations

import torch
from torch import Tensor

from ..data.batching import scale_batch_size
from ..problem import Evaluation
from .base import ALGORITHMS, Algorithm


@ALGORITHMS.implements("erm")
class ERM(Algorithm):
    r"""θ_{k+1} = θ_k − lr · d_k with d_k the Adam direction (or ∇ℒ(θ_k) for ``gd``) of ℒ = F.

    A gbdt model is boosted instead (:class:`~solvers.algorithms.boosting.GradientBoosting`: LightGBM's own
    logistic objective, one tree per iteration; ``optimizer`` and ``lr`` do not apply, the model's
    ``learning_rate`` does).

    Without a ``batch_size`` the steps are full batch up to :data:`~solvers.data.batching.FULL_BATCH_MAX_ROWS` training
    rows and mini-batches of :data:`~solvers.data.batching.SCALE_BATCH` above (:func:`~solvers.data.batching.scale_batch_size`;
    also for ``penalty``, a subclass): the job's unconstrained baseline is an ``erm`` run, and a full-batch MLP
    step on millions of rows costs seconds and gigabytes."""

    @classmethod
    def resolve_config(cls, config, problem):
        if config.batch_size is None and (size := scale_batch_size(problem.n_samples)) is not None:
            return config.model_copy(update={"batch_size": size})
        return config

    @classmethod
    def for_model(cls, model_type: str):
        if model_type == "gbdt":
            from .boosting import GradientBoosting

            return GradientBoosting
        return cls

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, model, seed)
        if self.config.optimizer == "adam":
            self.optimizer = torch.optim.Adam(self.params, lr=self.config.lr)
        else:
            self.optimizer = torch.optim.SGD(self.params, lr=self.config.lr)

    def loss(self, current: Evaluation) -> Tensor:
        """The function whose (sub)gradient drives the θ step."""
        return current.objective

    def duals(self) -> dict[str, Tensor] | None:
        return None

    def step(self, k: int, current: Evaluation):
        self.optimizer.zero_grad(set_to_none=True)
        self.loss(current).backward()
        self.optimizer.step()
        self.problem.project_(self.params)
        return self.evaluate(), self.duals()
