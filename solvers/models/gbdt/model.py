"""The ``gbdt`` score model: gradient-boosted decision trees on LightGBM, as a torch module.

f(x) = Σ_t h_t(x), LightGBM's raw score (the log-odds: P(y = 1 | x) = σ(f(x)), predict y = 1 when f(x) > 0, the
same rule as the linear and MLP models). The first tree carries the initial score (LightGBM's
``boost_from_average``: log(p̄ / (1 − p̄)) of the training labels), so the trees alone are the model.

:class:`GBDTModel` is an ``nn.Module`` so that everything built for score models (artifacts, checkpoints, the audit
model file, the client's ``FairModel``) handles it unchanged: ``forward`` returns the raw scores of the rows as a
tensor, and the ``state_dict`` holds one entry, ``booster``: LightGBM's own TEXT model
(``Booster.model_to_string``) as a uint8 tensor, so safetensors carries it and nothing is ever pickled.
``load_state_dict`` accepts a text of any length and rebuilds the booster from it (``Booster(model_str=...)``),
refusing one whose feature count differs from the model's. A model without trees scores 0.

A boosting solver hands the model the scores it keeps of its training and validation rows
(:meth:`GBDTModel.keep_scores`): a forward pass over rows that are those rows (the same memory, e.g. the whole
table's X of which the splits are views, and still the same values) reads them (LightGBM's prediction bit for bit,
:mod:`solvers.models.gbdt.tree_scores`) instead of predicting every tree again; LightGBM predicts the other rows.

The module has no torch parameters: gradient-step solvers cannot train it (the catalog lists ``gbdt`` only under
the solvers that boost, :mod:`solvers.algorithms.boosting`).

Determinism: the training parameters (:func:`lightgbm_params`) fix ``deterministic``, ``force_row_wise``, the
seed and ``num_threads`` (``FAIRSOLVE_GBDT_THREADS``, default 1: LightGBM's histograms are summed per thread, so
the thread count is part of what makes a run reproducible).
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ...formats.lightgbm_text import load_booster
from .tree_scores import KeptScores

BOOSTER_KEY = "booster"


def num_threads() -> int:
    """LightGBM's threads per fit and prediction (``FAIRSOLVE_GBDT_THREADS``, default 1)."""
    try:
        return max(1, int(os.environ.get("FAIRSOLVE_GBDT_THREADS", "1")))
    except ValueError:
        return 1


def parallel_fits() -> int:
    """How many independent LightGBM fits a solve boosts at once (cross-fitting's fold models and refit):
    ``FAIRSOLVE_GBDT_PARALLEL_FITS`` (a worker pool process sets it to its share of the cores,
    ``worker.celery_app``), default the cores this process may use."""
    try:
        return max(1, int(os.environ["FAIRSOLVE_GBDT_PARALLEL_FITS"]))
    except (KeyError, ValueError):
        return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def lightgbm_params(spec: Any, seed: int = 0) -> dict[str, Any]:
    """LightGBM's training parameters of a ``gbdt`` :class:`~solvers.data.spec.ModelSpec` (its hyper-parameters carry
    LightGBM's own names), deterministic under ``seed``."""
    return {
        "learning_rate": spec.learning_rate, "num_leaves": spec.num_leaves, "max_depth": spec.max_depth,
        "min_child_samples": spec.min_child_samples, "min_child_weight": spec.min_child_weight,
        "reg_lambda": spec.reg_lambda, "colsample_bytree": spec.colsample_bytree, "max_bin": spec.max_bin,
        "seed": seed, "deterministic": True, "force_row_wise": True, "num_threads": num_threads(),
        "verbosity": -1,
    }


class GBDTModel(nn.Module):
    """LightGBM trees over ``n_features`` encoded features; ``forward(X) = f(X)`` (n,), raw scores.

    ``spec``: the ModelSpec whose hyper-parameters (:func:`lightgbm_params`) and ``n_estimators`` (rounds of one
    solve) a boosting solver trains with. ``booster``: the ``lightgbm.Booster`` (None: no tree yet)."""

    def __init__(self, n_features: int, spec: Any = None) -> None:
        super().__init__()
        self.n_features = int(n_features)
        self.spec = spec
        self.booster = None
        self.kept = _KeptIndex()

    @property
    def num_trees(self) -> int:
        return 0 if self.booster is None else int(self.booster.current_iteration())

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise RuntimeError(f"the gbdt model reads {self.n_features} features, not the shape {tuple(x.shape)}")
        if self.booster is None:
            return x.new_zeros(x.shape[0])
        rows = x.detach().cpu().numpy()
        raw = self._from_kept(rows)
        if raw is None:
            raw = self.booster.predict(rows, raw_score=True, num_threads=num_threads())
        return torch.as_tensor(np.asarray(raw), dtype=x.dtype, device=x.device).reshape(-1)

    def keep_scores(self, kept: KeptScores) -> None:
        """Answer later forward passes over ``kept``'s rows (:class:`~solvers.models.gbdt.tree_scores.KeptScores`: a
        boosting solver's training and validation rows) from its scores, brought up to the booster's trees, while
        the booster is the current one: rows scored again and again by traces, output rules and the final report
        cost one tree per round instead of a whole prediction each time."""
        self.kept[:] = [entry for entry in self.kept if entry[0] is self.booster]  # an earlier booster's are spent
        self.kept.append((self.booster, kept))

    def _from_kept(self, rows: np.ndarray) -> np.ndarray | None:
        """f(rows) (float64) when some of ``rows`` are kept rows (:meth:`KeptScores.span_in`: the same memory and
        values), the others predicted by LightGBM (whose prediction of a row reads that row alone); else None."""
        out, covered = None, None
        for booster, kept in self.kept:
            span = kept.span_in(rows) if booster is self.booster else None
            if span is None:
                continue
            if out is None:
                out, covered = np.empty(rows.shape[0]), np.zeros(rows.shape[0], dtype=bool)
            out[span[0]:span[1]] = kept.catch_up(self.booster)
            covered[span[0]:span[1]] = True
        if out is not None and not covered.all():
            out[~covered] = self.booster.predict(rows[~covered], raw_score=True, num_threads=num_threads())
        return out

    def text(self) -> str:
        """LightGBM's text model ('' without trees)."""
        return "" if self.booster is None else self.booster.model_to_string()

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + BOOSTER_KEY] = torch.frombuffer(bytearray(self.text().encode()), dtype=torch.uint8) \
            if self.booster is not None else torch.zeros(0, dtype=torch.uint8)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        key = prefix + BOOSTER_KEY
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)
        if key in unexpected_keys:
            unexpected_keys.remove(key)
        if key not in state_dict:
            missing_keys.append(key)
            return
        value = state_dict[key]
        if not isinstance(value, Tensor) or value.dtype != torch.uint8 or value.ndim != 1:
            error_msgs.append(f"{key!r}: LightGBM's text model as a 1-D uint8 tensor expected")
            return
        try:
            self.booster = load_booster(bytes(value.cpu().numpy()), self.n_features)
        except ValueError as exc:
            error_msgs.append(f"{key!r}: {exc}")


class _KeptIndex(list):
    """(booster, KeptScores) of :meth:`GBDTModel.keep_scores`. A deep copy of the model is a snapshot (the solver
    goes on growing the original's booster): its booster is a copy with the same trees (LightGBM's text, read back
    exactly), so each entry of the original's booster goes with it as a snapshot of its scores
    (:meth:`~.tree_scores.KeptScores.snapshot`), kept up to date by the copy's booster alone; the entries of earlier
    boosters are spent and dropped. (``copy.deepcopy`` copies ``booster`` before ``kept``, in the order
    :meth:`GBDTModel.__init__` sets them, so the memo holds the booster's copy here.)"""

    def __deepcopy__(self, memo) -> "_KeptIndex":
        out = _KeptIndex()
        for booster, kept in self:
            twin = memo.get(id(booster))
            if twin is not None:
                out.append((twin, kept.snapshot()))
        return out

    def __reduce__(self):
        return _KeptIndex, ()


def gbdt(n_features: int, spec: Any = None) -> GBDTModel:
    return GBDTModel(n_features, spec)
