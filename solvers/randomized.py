r"""The randomised classifier of the reductions approach as a score model, stored without pickle.

Agarwal et al. (2018) return a distribution Q over classifiers: Q(x) predicts h_k(x) with probability w_k
(w_k ≥ 0, Σ_k w_k = 1). Its probability of predicting 1 is

    p_Q(x) = Σ_k w_k 1{h_k(x) = 1},

which is what fairlearn's ``_pmf_predict`` returns. FairSolve's convention is a score f with "predict 1 when
f(x) > 0" and P(y = 1 | x) = σ(f(x)), so the module's score is

    f_Q(x) = logit(clip(p_Q(x), δ, 1 − δ)),   δ = 10⁻⁶ (|f| ≤ 13.8, finite),

σ(f_Q) = p_Q up to the clip: the job's ``score`` column and every σ-based metric (Brier, log-loss, the
sigmoid surrogate of a rate constraint) are those of the randomised classifier Q, while the job's
prediction 1{f_Q > 0} = 1{p_Q > ½} is Q's weighted majority vote, a deterministic classifier (chosen over a
seeded draw: the same row always gets the same answer, and a served model needs no random state). The exact
metrics the job reports (accuracy, DP, ...) are those of the majority vote; fairlearn's randomised metrics
are the expectations over Q, computable from the scores p_Q (bench/reductions.py reports both).

Components: a linear h_k(x) = 1{w_kᵀx + b_k > 0} (scikit-learn's LogisticRegression, whose ``predict`` is
exactly that; fairlearn's constant DummyClassifier is w_k = 0, b_k = ±1). The weights are float64, as
scikit-learn computes them, and x·w_k is taken in float64, so the components decide as scikit-learn does
up to summation order.

State (a plain ``state_dict``, safetensors-ready): ``mix`` (K,) = w, ``components.weight`` (K, d),
``components.bias`` (K,). Inside a :class:`~solvers.models.ScoreModel` the keys are ``net.mix``, ... and
:func:`restore` rebuilds the module from them (loading a state resizes the buffers to its K) (:func:`solvers.algorithms.auc_postprocess.restore_model`
calls it for every saved model).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

CLIP = 1e-6
MIX_KEY = "net.mix"


class RandomizedClassifier(nn.Module):
    """x ↦ logit(clip(Σ_k w_k 1{x·W_kᵀ + b_k > 0})) as a column (n, 1), for a :class:`ScoreModel` ``net``."""

    def __init__(self, weight: Tensor, bias: Tensor, mix: Tensor) -> None:
        super().__init__()
        if weight.ndim != 2 or bias.shape != (weight.shape[0],) or mix.shape != bias.shape:
            raise ValueError("weight (K, d), bias (K,) and mix (K,) must agree")
        self.components = nn.Module()
        self.components.register_buffer("weight", weight.double())
        self.components.register_buffer("bias", bias.double())
        self.register_buffer("mix", mix.double())

    @classmethod
    def empty(cls, n_components: int, n_features: int) -> "RandomizedClassifier":
        return cls(torch.zeros(n_components, n_features), torch.zeros(n_components), torch.zeros(n_components))

    @classmethod
    def of_linear(cls, coefs: np.ndarray, intercepts: np.ndarray, mix: np.ndarray) -> "RandomizedClassifier":
        """From K linear classifiers (coefficients (K, d), intercepts (K,)) and their weights w (K,)."""
        return cls(torch.as_tensor(np.asarray(coefs, dtype=np.float64)),
                   torch.as_tensor(np.asarray(intercepts, dtype=np.float64)),
                   torch.as_tensor(np.asarray(mix, dtype=np.float64)))

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """Take the saved number of components K (the buffers are resized to the saved shapes first)."""
        for owner, name in ((self, "mix"), (self.components, "weight"), (self.components, "bias")):
            key = prefix + ("" if owner is self else "components.") + name
            saved = state_dict.get(key)
            if isinstance(saved, Tensor) and saved.shape != getattr(owner, name).shape:
                setattr(owner, name, torch.zeros(saved.shape, dtype=torch.float64, device=getattr(owner, name).device))
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def positive_probability(self, x: Tensor) -> Tensor:
        """p_Q(x) (n,), float64."""
        decisions = torch.addmm(self.components.bias, x.double(), self.components.weight.T) > 0   # (n, K)
        return decisions.double() @ self.mix

    def forward(self, x: Tensor) -> Tensor:
        p = self.positive_probability(x).clamp(CLIP, 1.0 - CLIP)
        return torch.logit(p).to(x.dtype if x.is_floating_point() else torch.float32).unsqueeze(-1)


def is_randomized_state(state: dict) -> bool:
    """True when ``state`` is the state_dict of a score model whose ``net`` is a :class:`RandomizedClassifier`."""
    return MIX_KEY in state


def restore(model: nn.Module, state: dict) -> nn.Module:
    """Put a :class:`RandomizedClassifier` into ``model.net`` (a fresh ScoreModel) and load ``state`` into it
    strictly (the buffers take the saved sizes); returns ``model``."""
    device = next(iter(model.state_dict().values())).device
    model.net = RandomizedClassifier.empty(0, 0).to(device)
    model.load_state_dict(state)
    return model
