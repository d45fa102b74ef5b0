r"""``group_thresholds``: post-processing by group-specific, possibly randomised thresholds of maximal accuracy
under demographic parity, equal opportunity or equalized odds (Hardt, Price & Srebro 2016; the "relaxed group
thresholds" of Cruz & Hardt, ICLR 2024), solved exactly as a linear programme over the groups' ROC points
(:mod:`solvers.fairness.threshold_lp`, where the LP is stated).

**Base scores.** Either a fresh model — ``erm`` on the train split (its update rule: Adam, or gradient descent,
on F; these iterations are the trajectory) — or the weights of an existing job (``base_job_id``: the worker
loads them as the start model, no training step is taken; the API checks that job has the same dataset, split,
target, features and model). A warm start from a ``group_thresholds`` model post-processes its base again.

**Selection split.** The thresholds are chosen on the VALIDATION split (expected accuracy, or balanced accuracy,
under every constraint family's exact gap ≤ ε there). Without a validation split they are chosen on the
training rows — the base model's own rows, whose scores are optimistic; the job then overfits the thresholds to
train as any in-sample post-processing does. Supported families: ``demographic_parity``, ``equal_opportunity``,
``equalized_odds`` (both aggregates: max(TPR gap, FPR gap) ≤ ε and the two gaps ≤ ε are the same set). Not
supported: partial parity on an interval (pSP / pDP of IDCA: a percentile interval is defined by ranks of the
output score inside each group, which a randomised per-group rule reorders, so the kept rows — and the rates —
are not linear in the mixture weights; with deterministic thresholds pDP at θ̂ = 0 would be, but the ranks of
the kept set still move with the threshold shifts' interaction with θ̂ ≠ 0), loss and AUC gaps (not rates of a
thresholded rule).

**The stored model** (:class:`ThresholdNet`, wrapping the base network): f'(x) = f(x) − t_{g(x), J(x)} with

* g(x) the group, read from the features like :class:`~.auc_postprocess.GroupShift` does: on the fitting rows
  (train and validation) every group's interval [lo_{g,c}, hi_{g,c}] of a few feature columns c — the columns
  constant inside every group and varying across them (the one-hots of the sensitive columns, their
  intersections and merged values), plus, when those do not tell the groups apart, one numeric column that does
  (range rules, e.g. age bands) — and g(x) = argmin_g Σ_c dist(x_c, [lo_{g,c}, hi_{g,c}]) (exact on the fitting
  rows; an unseen category goes to the nearest group). No such columns (the sensitive column is not a feature):
  the solve fails and says so;
* J(x) the component drawn for the row: u(x) = frac(43758.5453 · sin(κᵀx)) (float64, κ a seeded random vector
  stored with the model) and J = #{j : W_{g,j} ≤ u} with W the cumulative mixture weights. The draw is a
  deterministic function of the features: the same row always gets the same decision, on any machine, and
  P(J = j) = w_{g,j} over rows whose κᵀx spread over many periods. ``randomized: false`` stores one threshold per
  group (the mixed-integer optimum) and no draw happens.

So "predict 1 when f'(x) > 0" is the rule, and every metric, chart, audit and export reads f' as any other score.
Its state_dict holds ``net.base.*`` and the buffers ``net.lo``, ``net.hi``, ``net.columns``, ``net.thresholds``,
``net.cumulative``, ``net.key``; :func:`~.auc_postprocess.restore_model` rebuilds it (safetensors, no pickle).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ..fairness.exact import exact_gaps
from ..fairness.threshold_lp import FAMILY_RATES, ThresholdSolution, solve_thresholds
from .base import ALGORITHMS
from .erm import ERM

_BUFFERS = ("columns", "lo", "hi", "thresholds", "cumulative", "key")
_HASH = 43758.5453


class GroupReadError(ValueError):
    """The groups cannot be read from the model's features."""


def group_reader(X: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(columns (c,), lo (K, c), hi (K, c)) of the module docstring, fitted on rows (X, group); raises
    :class:`GroupReadError` when no such columns exist. Vectorised over rows, columns and groups."""
    X = np.asarray(X, dtype=np.float64)
    group = np.asarray(group).astype(np.int64)
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group, minlength=n_groups)
    present = sizes > 0
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])[present]
    lo = np.zeros((n_groups, X.shape[1]))
    hi = np.zeros((n_groups, X.shape[1]))
    lo[present] = np.minimum.reduceat(X[order], starts, axis=0)
    hi[present] = np.maximum.reduceat(X[order], starts, axis=0)
    varies = X.max(0) > X.min(0)
    fixed = np.flatnonzero((lo[present] == hi[present]).all(0) & varies)
    base = _distances(X[:, fixed], lo[:, fixed], hi[:, fixed], present)
    if fixed.size and (base.argmin(1) == group).all():
        return fixed, lo[:, fixed], hi[:, fixed]
    # one more (numeric) column whose group intervals separate the groups the fixed ones do not
    others = np.flatnonzero(varies & ~np.isin(np.arange(X.shape[1]), fixed))
    for chunk in np.array_split(others, max(1, int(np.ceil(len(others) * len(X) * n_groups / 2e7)))):
        if not chunk.size:
            continue
        extra = _interval_distance(X[:, chunk][:, None, :], lo[:, chunk][None], hi[:, chunk][None])  # (n, K, c)
        right = ((base[:, :, None] + extra).argmin(1) == group[:, None]).all(0)
        if right.any():
            cols = np.concatenate([fixed, chunk[np.flatnonzero(right)[:1]]])
            return cols, lo[:, cols], hi[:, cols]
    raise GroupReadError("group_thresholds reads each row's group from the features: include the sensitive "
                         "columns among the model's features (they are by default)")


def _interval_distance(x, lo, hi):
    return np.maximum(lo - x, 0.0) + np.maximum(x - hi, 0.0)


def _distances(Z: np.ndarray, lo: np.ndarray, hi: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(n, K) Σ_c dist(z_c, [lo_{g,c}, hi_{g,c}]); +inf for groups absent from the fitting rows."""
    d = _interval_distance(Z[:, None, :], lo[None], hi[None]).sum(-1)
    return np.where(present[None, :], d, np.inf)


class ThresholdNet(nn.Module):
    """x ↦ net(x) − t_{g(x), J(x)} (module docstring). Everything it needs is in its state_dict."""

    def __init__(self, net: nn.Module, columns, lo, hi, thresholds, cumulative, key) -> None:
        super().__init__()
        self.base = net
        self.register_buffer("columns", torch.as_tensor(columns, dtype=torch.int64))
        self.register_buffer("lo", torch.as_tensor(lo, dtype=torch.float64))
        self.register_buffer("hi", torch.as_tensor(hi, dtype=torch.float64))
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
        z = x[:, self.columns].double()[:, None, :]
        d = ((self.lo[None] - z).clamp_min(0) + (z - self.hi[None]).clamp_min(0)).sum(-1)
        return d.masked_fill(~torch.isfinite(self.lo).all(-1)[None], float("inf")).argmin(1)

    def draw(self, x: torch.Tensor) -> torch.Tensor:
        """u(x) ∈ [0, 1), a deterministic function of the row."""
        v = torch.sin(x.double() @ self.key) * _HASH
        return v - torch.floor(v)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.base(x)
        g = self.group_of(x)
        cumulative = self.cumulative[g]
        j = (cumulative <= self.draw(x)[:, None]).sum(1).clamp_max(cumulative.shape[1] - 1)
        t = self.thresholds[g].gather(1, j[:, None]).reshape(h.shape)
        return (h.double() - t).to(h.dtype)


def threshold_net(net: nn.Module, solution: ThresholdSolution, columns, lo, hi, n_features: int,
                  seed: int) -> ThresholdNet:
    """Wrap ``net`` with the rule of ``solution`` (groups absent from the fitting rows get lo = hi = +inf)."""
    cumulative = np.cumsum(solution.weights, axis=1)
    used = (solution.weights > 0).sum(1)
    cumulative[np.arange(len(used)), np.maximum(used - 1, 0)] = 1.0      # round-off: the last component ends at 1
    cumulative = np.where(np.arange(cumulative.shape[1])[None] >= used[:, None] - 1, 1.0, cumulative)
    generator = torch.Generator().manual_seed(int(seed))
    key = torch.rand(n_features, generator=generator, dtype=torch.float64) * 1000.0
    device = next(iter(net.parameters()), torch.empty(0)).device
    return ThresholdNet(net, columns, lo, hi, solution.thresholds, cumulative, key).to(device)


@ALGORITHMS.implements("group_thresholds")
class GroupThresholds(ERM):
    """``erm``'s steps (or none, from ``base_job_id``'s model), then the exact threshold LP in :meth:`finish`."""

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        if isinstance(getattr(model, "net", None), ThresholdNet):  # warm start: post-process its base again
            model.net = model.net.base
        super().__init__(problem, config, model, seed)
        self.seed = seed
        self.families = [(f.name, float(f.tolerance)) for f in problem.constraints]
        unsupported = [name for name, _ in self.families if name not in FAMILY_RATES]
        if unsupported:
            raise ValueError(f"group_thresholds supports {sorted(FAMILY_RATES)} constraints, not {unsupported}")
        self.pretrained = self.config.base_job_id is not None

    def start(self, current) -> None:
        self.converged = self.pretrained   # the base job's model is post-processed as it is

    def step(self, k, current):
        if self.pretrained:
            return current, None
        return super().step(k, current)

    @torch.no_grad()
    def finish(self):
        p, v = self.problem, self.validation
        fit = v if v is not None else p
        scores = self.model(fit.X).double().cpu().numpy()
        K = len(p.group_names)
        solution = solve_thresholds(scores, fit.y.cpu().numpy(), fit.group.cpu().numpy(), K, self.families,
                                    self.config.objective, self.config.randomized, self.config.time_limit_s)
        X = p.X if v is None else torch.cat([p.X, v.X])
        group = p.group if v is None else torch.cat([p.group, v.group])
        columns, lo, hi = group_reader(X.cpu().numpy(), group.cpu().numpy(), K)
        absent = np.bincount(group.cpu().numpy(), minlength=K) == 0
        lo[absent], hi[absent] = np.inf, np.inf
        self.model.net = threshold_net(self.model.net, solution, columns, lo, hi, p.n_features, self.seed)
        realised = self.model(fit.X).double().cpu().numpy()
        y, g = fit.y.cpu().numpy(), fit.group.cpu().numpy()
        self.model.net.report = {   # the job's ``enforcement`` record (solvers.api.keep_promise)
            "method": "group_thresholds", "met": bool(solution.status == "optimal" or solution.randomized),
            "split": "validation" if v is not None else "train", "objective": self.config.objective,
            **solution.summary(),
            "realised_accuracy": float(((realised > 0) == (y > 0.5)).mean()),
            "realised_gaps": dict(zip([f.name for f in p.constraints],
                                      exact_gaps(p.constraints, y, realised, g, p.group_names).tolist())),
        }
        return p.evaluate(self.model)
