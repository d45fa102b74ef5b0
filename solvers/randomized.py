r"""The randomised classifier of the reductions approach as a score model, stored without pickle.

Agarwal et al. (2018) return a distribution Q over classifiers: Q(x) predicts h_k(x) with probability w_k
(w_k ≥ 0, Σ_k w_k = 1). Its probability of predicting 1 is

    p_Q(x) = Σ_k w_k 1{h_k(x) = 1},

which is what fairlearn's ``_pmf_predict`` returns. FairSolve's convention is a score f with "predict 1 when
f(x) > 0" and P(y = 1 | x) = σ(f(x)), so the module's score is

    f_Q(x) = logit(clip(p_Q(x), δ, 1 − δ)),   δ = 10⁻⁶ (|f| ≤ 13.8, finite),

σ(f_Q) = p_Q up to the clip: the job's ``score`` column and every σ-based metric (Brier, log-loss, the
sigmoid surrogate of a rate constraint) are those of the randomised classifier Q, while the job's
prediction 1{f_Q > 0} = 1{p_Q > ½} is Q's weighted majority vote (``decision="majority"``, the default: the
scores stay Q's probabilities). The exact metrics the job reports (accuracy, DP, ...) are then those of the
majority vote, which need not keep Q's fairness (``bench/quality/reductions.py`` reports both).

``decision="draw"`` instead makes every row's prediction one draw of Q, deterministic per row: with
u(x) = frac(|xᵀr|) ∈ [0, 1), r ~ N(0, 1000² I) drawn once under the solve's seed and stored (``draw``, (d,)),

    f_Q(x) = logit(clip(p_Q(x))) − logit(clip(u(x))),   1{f_Q(x) > 0} = 1{u(x) < p_Q(x)}  (up to the clip),

so over rows whose u(x) spread uniformly the predictions have Q's expected rates (fairlearn's ``predict`` draws
u independently per call instead). The score is then the draw's margin, no longer a probability.

Components, in this order:

* linear h_k(x) = 1{w_kᵀx + b_k > 0}: scikit-learn's LogisticRegression (whose ``predict`` is exactly that) and
  fairlearn's constant DummyClassifier (w_k = 0, b_k = ±1). The weights are float64, as scikit-learn computes
  them, and x·w_k is taken in float64, so the components decide as scikit-learn does up to summation order;
* trees h_k(x) = 1{F_k(x) > 0}, F_k the raw score of LightGBM's LGBMClassifier (its ``predict`` is
  1{σ(F_k) > ½}), each a :class:`~solvers.gbdt.GBDTModel` whose state is LightGBM's text model.

State (a plain ``state_dict``, safetensors-ready, no pickle): ``mix`` (K,) = w, ``draw`` (d,) = r (empty
for the majority vote), ``linear.weight`` (K_l, d),
``linear.bias`` (K_l,), ``trees.<i>.booster`` (LightGBM's text as uint8) for i < K − K_l. Loading a state
resizes the module to it; :func:`restore` builds one from a state alone (called by
:func:`solvers.algorithms.auc_postprocess.restore_model` for every saved model).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor, nn

CLIP = 1e-6
MIX_KEY, WEIGHT_KEY = "mix", "linear.weight"


class RandomizedModel(nn.Module):
    """x ↦ logit(clip(Σ_k w_k h_k(x))) (n,), over ``n_features`` features (see the module docstring)."""

    def __init__(self, n_features: int, weight: Tensor | None = None, bias: Tensor | None = None,
                 trees: list[nn.Module] = (), mix: Tensor | None = None, draw: Tensor | None = None) -> None:
        super().__init__()
        weight = torch.zeros(0, n_features) if weight is None else weight
        bias = torch.zeros(weight.shape[0]) if bias is None else bias
        mix = torch.zeros(weight.shape[0] + len(trees)) if mix is None else mix
        if weight.shape[1:] != (n_features,) or bias.shape != weight.shape[:1] or mix.shape != (len(bias) + len(trees),):
            raise ValueError("linear weight (K_l, d), bias (K_l,) and mix (K_l + K_t,) must agree")
        self.n_features = int(n_features)
        self.linear = nn.Module()
        self.linear.register_buffer("weight", weight.double())
        self.linear.register_buffer("bias", bias.double())
        self.trees = nn.ModuleList(trees)
        self.register_buffer("mix", mix.double())
        self.register_buffer("draw", torch.zeros(0) if draw is None else draw.double())

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs) -> None:
        """Take the saved sizes: buffers resized, one empty tree model per saved ``trees.<i>.booster``."""
        for owner, name, key in ((self, "mix", MIX_KEY), (self, "draw", "draw"), (self.linear, "weight", WEIGHT_KEY),
                                 (self.linear, "bias", "linear.bias")):
            saved, current = state_dict.get(prefix + key), getattr(owner, name)
            if isinstance(saved, Tensor) and saved.shape != current.shape:
                setattr(owner, name, torch.zeros(saved.shape, dtype=torch.float64, device=current.device))
        n_trees = sum(1 for key in state_dict if key.startswith(prefix + "trees.") and key.endswith(".booster"))
        if n_trees != len(self.trees):
            from .gbdt import gbdt   # LightGBM only for a model with trees

            self.trees = nn.ModuleList([gbdt(self.n_features) for _ in range(n_trees)])
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    def decisions(self, x: Tensor) -> Tensor:
        """1{h_k(x) = 1} as (n, K) float64, linear components first."""
        linear = torch.addmm(self.linear.bias, x.double(), self.linear.weight.T) > 0
        trees = [tree(x) > 0 for tree in self.trees]   # one call per tree model, vectorised over the rows
        return torch.cat([linear, *[t.reshape(-1, 1).to(linear.device) for t in trees]], dim=1).double()

    def positive_probability(self, x: Tensor) -> Tensor:
        """p_Q(x) (n,), float64."""
        return self.decisions(x) @ self.mix

    def uniform(self, x: Tensor) -> Tensor:
        """u(x) = frac(|xᵀr|) (n,), float64 (``decision="draw"`` only)."""
        return torch.frac((x.double() @ self.draw).abs())

    def forward(self, x: Tensor) -> Tensor:
        f = torch.logit(self.positive_probability(x).clamp(CLIP, 1.0 - CLIP))
        if self.draw.numel():
            f = f - torch.logit(self.uniform(x).clamp(CLIP, 1.0 - CLIP))
        return f.to(x.dtype if x.is_floating_point() else torch.float32)


def draw_vector(n_features: int, seed: int) -> Tensor:
    """r ~ N(0, 1000² I) of ``decision="draw"``, from its own generator seeded with ``seed``."""
    return torch.randn(n_features, generator=torch.Generator().manual_seed(seed), dtype=torch.float64) * 1000.0


def is_randomized_state(state: dict) -> bool:
    """True when ``state`` is the state_dict of a :class:`RandomizedModel`."""
    return MIX_KEY in state and WEIGHT_KEY in state


def restore(model: nn.Module, state: dict) -> RandomizedModel:
    """A :class:`RandomizedModel` loaded (strictly) with ``state``, on the device of ``model`` (the spec's fresh
    model, which a randomised classifier replaces)."""
    tensors = list(model.state_dict().values())
    device = tensors[0].device if tensors else torch.device("cpu")
    randomized = RandomizedModel(int(state[WEIGHT_KEY].shape[1])).to(device)
    randomized.load_state_dict(state)
    return randomized


def linear_and_trees(parts: list[tuple[str, object]], weights: np.ndarray, n_features: int,
                     draw: Tensor | None = None) -> RandomizedModel:
    """Q from components ``("linear", (w, b))`` or ``("tree", GBDTModel)`` and their weights (same order);
    components of weight 0 are left out. ``draw``: r of ``decision="draw"`` (None: the majority vote)."""
    keep = [(kind, part, float(w)) for (kind, part), w in zip(parts, weights) if w > 0]
    linear = [(part, w) for kind, part, w in keep if kind == "linear"]
    trees = [(part, w) for kind, part, w in keep if kind == "tree"]
    weight = torch.as_tensor(np.array([p[0] for p, _ in linear], dtype=np.float64).reshape(len(linear), n_features))
    bias = torch.as_tensor(np.array([p[1] for p, _ in linear], dtype=np.float64))
    mix = torch.as_tensor(np.array([w for _, w in linear] + [w for _, w in trees], dtype=np.float64))
    return RandomizedModel(n_features, weight, bias, [t for t, _ in trees], mix, draw)
