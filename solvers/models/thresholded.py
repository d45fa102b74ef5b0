r"""Score models wrapped by a post-processing rule, and restoring any saved score model from its state alone.

Two wrappers keep everything they need in buffers, so a saved model (``model.safetensors``, a checkpoint, the
audit model file) is rebuilt from the problem's own model factory and the saved tensors (no pickle):

* :class:`GroupShift` (``auc_postprocess``, Kallus & Zhou's xAUC shift): x ↦ ω₁ f(x) + ω₂ where
  x[:, c] > ½ (the protected group's indicator feature c), f(x) elsewhere. State: ``net.base.*``,
  ``net.omega`` = (ω₁, ω₂), ``net.column`` = c.
* :class:`ThresholdNet` (``group_thresholds``, Hardt, Price & Srebro): f'(x) = f(x) − t_{g(x), J(x)}, g(x) the
  group read from the features by the nearest codebook row m, g(x) = label of
  argmin_m Σ_c s_c dist(x_c, [lo_{m,c}, hi_{m,c}]), and J(x) = #{j : W_{g,j} ≤ u(x)} the mixture component drawn
  by u(x) = frac(43758.5453 · sin(κᵀx)) (:func:`row_draw`) against the cumulative weights W
  (:mod:`solvers.algorithms.group_thresholds` fits them; :mod:`solvers.fairness.mixture_draw` chooses κ). State:
  ``net.base.*`` and the buffers ``columns``, ``scale``, ``lo``, ``hi``, ``label``, ``thresholds``, ``cumulative``,
  ``key``.

:func:`restore_model` loads a saved state into a fresh model of the problem's architecture: wrappers (nested in
any order, :func:`rebuild_net`), the randomised classifier of the reductions solver
(:func:`solvers.models.randomized.restore`) and every other model's state (strictly).
"""
from __future__ import annotations

import torch
from torch import nn

from .randomized import is_randomized_state
from .randomized import restore as restore_randomized


class GroupShift(nn.Module):
    """x ↦ ω₁ net(x) + ω₂ where x[:, column] > ½ (the protected group), net(x) elsewhere.

    Everything it needs is in its state_dict (``base.*``, ``omega`` = (ω₁, ω₂), ``column``), so a saved
    post-processed model is self-contained: :func:`restore_model` rebuilds it from the problem's own model
    factory and the saved tensors (e.g. a ``model.safetensors`` artifact)."""

    def __init__(self, net: nn.Module, column: int, omega1: float, omega2: float) -> None:
        super().__init__()
        self.base = net
        self.register_buffer("column", torch.tensor(int(column), dtype=torch.int64))
        self.register_buffer("omega", torch.tensor([omega1, omega2], dtype=torch.float32))

    def forward(self, x):
        h = self.base(x)
        mask = (x[:, int(self.column)] > 0.5).reshape(h.shape)
        return torch.where(mask, self.omega[0] * h + self.omega[1], h)


#: keys of a post-processed ScoreModel's state_dict besides the wrapped network's ``net.base.*``
SHIFT_KEYS = ("net.omega", "net.column")


def is_shifted_state(state: dict, prefix: str = "net.") -> bool:
    """True when ``state`` is the state_dict of a post-processed (:class:`GroupShift`) score model."""
    return all(f"{prefix}{k[len('net.'):]}" in state for k in SHIFT_KEYS)


def rebuild_net(net: nn.Module, state: dict, prefix: str = "net.") -> nn.Module:
    """``net`` inside the post-processing wrappers whose buffers ``state`` holds under ``prefix`` (a
    :class:`GroupShift`, a :class:`ThresholdNet`, nested in any order), ready to load it."""
    if is_shifted_state(state, prefix):
        return GroupShift(rebuild_net(net, state, f"{prefix}base."), int(state[f"{prefix}column"]), 1.0, 0.0)
    if ThresholdNet.saved_in(state, prefix):
        return ThresholdNet.like(rebuild_net(net, state, f"{prefix}base."), state, prefix)
    return net


def restore_model(model: nn.Module, state: dict) -> nn.Module:
    """Load a saved state into ``model``, a fresh model of the problem's architecture (``problem.make_model()``).

    A post-processed state (``net.base.*`` with a :class:`GroupShift`'s ``net.omega``, ``net.column``, or a
    group-thresholds model's buffers) first wraps ``model.net`` as it was saved (:func:`rebuild_net`), so the
    reloaded model post-processes new data the same way; any other state is loaded as it is (strictly). A
    randomised classifier's state (``net.mix``, the reductions solver) is rebuilt by
    :func:`solvers.models.randomized.restore`. Returns ``model``."""
    if ThresholdNet.saved_in(state, ""):   # a model without a ``net`` (gbdt, a randomised one) wrapped whole
        base = restore_model(model, {k[len("base."):]: v for k, v in state.items() if k.startswith("base.")})
        wrapped = ThresholdNet.like(base, state, "").to(_device(base))
        wrapped.load_state_dict(state)
        return wrapped
    if is_randomized_state(state):
        return restore_randomized(model, state)
    if hasattr(model, "net"):
        model.net = rebuild_net(model.net, state).to(_device(model))
    model.load_state_dict(state)
    return model


def _device(model: nn.Module) -> torch.device:
    tensor = next(iter([*model.parameters(), *model.buffers()]), None)
    return tensor.device if tensor is not None else torch.device("cpu")


_BUFFERS = ("columns", "scale", "lo", "hi", "label", "thresholds", "cumulative", "key")
_HASH = 43758.5453


def row_draw(x: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """u(x) = frac(43758.5453 · sin(κᵀx)) of every row of ``x``: (n,) for a key (d,), (n, C) for C keys (d, C)."""
    v = torch.sin(x.double() @ key.to(device=x.device, dtype=torch.float64)) * _HASH
    return v - torch.floor(v)


class ThresholdNet(nn.Module):
    """x ↦ net(x) − t_{g(x), J(x)} (module docstring). Everything it needs is in its state_dict."""

    def __init__(self, net: nn.Module, columns, scale, lo, hi, label, thresholds, cumulative, key) -> None:
        super().__init__()
        self.base = net
        self.register_buffer("columns", torch.as_tensor(columns, dtype=torch.int64))
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float64))
        self.register_buffer("lo", torch.as_tensor(lo, dtype=torch.float64))
        self.register_buffer("hi", torch.as_tensor(hi, dtype=torch.float64))
        self.register_buffer("label", torch.as_tensor(label, dtype=torch.int64))
        self.register_buffer("thresholds", torch.as_tensor(thresholds, dtype=torch.float64))
        self.register_buffer("cumulative", torch.as_tensor(cumulative, dtype=torch.float64))
        self.register_buffer("key", torch.as_tensor(key, dtype=torch.float64))

    @classmethod
    def saved_in(cls, state: dict, prefix: str = "net.") -> bool:
        return all(f"{prefix}{name}" in state for name in _BUFFERS)

    @classmethod
    def like(cls, net: nn.Module, state: dict, prefix: str = "net.") -> "ThresholdNet":
        """An empty wrapper of the shapes saved in ``state`` (its values come with ``load_state_dict``)."""
        return cls(net, *(torch.zeros_like(state[f"{prefix}{name}"]) for name in _BUFFERS))

    def group_of(self, x: torch.Tensor) -> torch.Tensor:
        """The group of each row: the label of the nearest codebook row (module docstring)."""
        z = x[:, self.columns].double()[:, None, :]
        d = (((self.lo[None] - z).clamp_min(0) + (z - self.hi[None]).clamp_min(0)) * self.scale).sum(-1)
        return self.label[d.argmin(1)]

    def draw(self, x: torch.Tensor) -> torch.Tensor:
        """u(x) ∈ [0, 1), a deterministic function of the row."""
        return row_draw(x, self.key)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.base(x)
        g = self.group_of(x)
        if self.cumulative.shape[1] == 1:   # one threshold per group (deterministic): J = 0 whatever u(x)
            return (h.double() - self.thresholds[g, 0].reshape(h.shape)).to(h.dtype)
        cumulative = self.cumulative[g]
        j = (cumulative <= self.draw(x)[:, None]).sum(1).clamp_max(cumulative.shape[1] - 1)
        t = self.thresholds[g].gather(1, j[:, None]).reshape(h.shape)
        return (h.double() - t).to(h.dtype)


def unwrapped(model: nn.Module) -> nn.Module:
    """``model`` without its threshold rule (a warm start post-processes its base again)."""
    if isinstance(model, ThresholdNet):
        return model.base
    if isinstance(getattr(model, "net", None), ThresholdNet):
        model.net = model.net.base
    return model


def _rule_of(model: nn.Module) -> ThresholdNet | None:
    """The model's threshold rule: the model itself or its network (None for any other model)."""
    for net in (model, getattr(model, "net", None)):
        if isinstance(net, ThresholdNet):
            return net
    return None


def refit_of(model: nn.Module):
    """The rule's ``refit_at(model, tolerances)`` — the rule chosen again at other tolerances on the scores it was
    chosen on, around the same base (:class:`solvers.algorithms.group_thresholds._Fitted`) — or None (another
    model, or one restored from its weights, which keep no scores)."""
    return getattr(_rule_of(model), "refit_at", None)


def report_of(model: nn.Module) -> dict | None:
    """The threshold LP's record attached to a post-processed model (None for any other model)."""
    return getattr(_rule_of(model), "report", None)
