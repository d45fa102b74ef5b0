r"""Gradient boosting of a :class:`~solvers.models.gbdt.GBDTModel`, one LightGBM round per driver iteration.

Iteration k adds one tree h_k fitted (LightGBM's second-order leaf-wise growth) to the gradient g and Hessian h of
the round's objective at the current training scores f_k: f_{k+1} = f_k + η h_k. :class:`GradientBoosting` boosts
the logistic loss F with LightGBM's own ``binary`` objective (g = σ(f) − y, h = σ(f)(1 − σ(f)),
``boost_from_average``): the unconstrained ``erm`` of a gbdt model, plain LightGBM. Subclasses replace
:meth:`Boosting.gradients` (LightGBM's custom objective, ``Booster.update(fobj=...)``), e.g. ``fair_boosting``.

Everything else is the driver's (:mod:`.driver`): a trajectory record per round (F and G at the new training
scores f_{k+1}, exact traces; :class:`Trainer` says where f_{k+1} comes from), cancel and time limit between rounds (the driver's loop plays LightGBM's callback), and
checkpoints: the model's state is the booster's text, and a resumed run rebuilds its trainer from it and goes on
boosting (``init_model``) with the same data and parameters. Nothing is random (``deterministic``, no bagging,
``colsample_bytree`` seeded), so a resumed run grows the same trees as the uninterrupted one. The run ends
(``converged``) after ``n_estimators`` rounds of this solve, or when LightGBM can split no leaf.

A warm start (a model with trees: exact enforcement's continuation, a sweep's warm start) goes on from its trees.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.special import logit

from ..models.gbdt.model import GBDTModel, lightgbm_params
from ..models.gbdt.tree_scores import KeptScores
from ..problem import Evaluation
from .base import Algorithm


#: LightGBM's training probabilities p are read back as scores only inside [P_EDGE, 1 − P_EDGE] (:class:`Trainer`)
P_EDGE = 1e-6


@dataclass(frozen=True)
class Trainer:
    r"""LightGBM's training booster and the float64 training scores f (n,) after its latest round (:attr:`scores`,
    written in place), built by the first step from the model (frozen: a checkpoint leaves it out, the model's text
    carries it).

    LightGBM keeps the training rows' scores itself (each round adds the new tree's leaf values, routed by the rows'
    bins) and hands them out for one copy of n values (``Booster.eval_train``'s custom metric): raw scores under a
    custom objective, equal to ``Booster.predict(X, raw_score=True)`` bit for bit (the same leaf values summed in
    the same order; ``tests/solvers/models/test_gbdt_tree_scores.py`` checks every round), and p = 1 / (1 + e^{−f})
    under ``binary``. Those are read back as f̃ = logit(p): p carries a relative
    error of about 2u (u = 2⁻⁵³), so |f̃ − f| ≲ 4u (1 + e^{f}) + u|f| ≤ 5·10⁻¹⁰ while P_EDGE ≤ p ≤ 1 − P_EDGE
    (|f| ≤ 13.8); a round with a row outside is read exactly instead, tree by tree
    (:class:`~solvers.models.gbdt.tree_scores.KeptScores`; the test checks both on planted rows, Adult and bank).
    Predicting the new tree every round cost more than LightGBM's own boosting (Adult's 12,000 train rows, the tuned
    base: 0.72 ms a round against the update's 0.56 ms; 0.36 ms this way).

    ``kept``: the KeptScores of the training rows, the model's answer to a forward pass over them (bit for bit
    LightGBM's prediction; caught up when read, or in a round read exactly)."""

    booster: Any
    kept: KeptScores
    raw: bool   # a custom objective: LightGBM's training scores are f itself
    scores: np.ndarray

    @classmethod
    def of(cls, booster: Any, kept: KeptScores, raw: bool) -> "Trainer":
        return cls(booster, kept, raw, kept.scores.copy())

    def refresh(self) -> np.ndarray:
        """f after the booster's latest round, in :attr:`scores` (none added when LightGBM dropped a split-less
        round)."""
        held: dict[str, np.ndarray] = {}

        def grab(preds, _data):
            held["p"] = preds
            return "scores", 0.0, False

        self.booster.eval_train(grab)
        p = held["p"]
        if self.raw:
            self.scores[:] = p
        elif P_EDGE <= p.min() and p.max() <= 1.0 - P_EDGE:
            logit(p, out=self.scores)
        else:
            self.scores[:] = self.kept.catch_up(self.booster)
        return self.scores


class Boosting(Algorithm):
    """One boosting round per step; ``objective`` None: :meth:`gradients` is LightGBM's custom objective."""

    needs_autograd = False
    objective: str | None = "binary"

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        if not isinstance(model, GBDTModel):
            raise TypeError(f"{type(self).__name__} trains gbdt models only")
        super().__init__(problem, config, model, seed)
        self.seed = seed
        self.rounds = 0  # rounds of this solve
        self.trainer: Trainer | None = None  # built by the first step (from the model's trees, if any)

    def samples_per_step(self) -> int:
        return self.problem.n_samples

    def _params(self) -> dict[str, Any]:
        params = lightgbm_params(self.model.spec, self.seed)
        params["objective"] = self.objective or "none"
        params["metric"] = "None"   # Trainer.refresh reads the training scores through eval_train: no metric there
        return params

    def _fobj(self, preds, _data) -> tuple[np.ndarray, np.ndarray]:
        return self.gradients(np.asarray(preds, dtype=float))

    def _begin(self) -> tuple[Trainer, bool]:
        """A training booster on the problem's rows, after this round's tree; it continues the model's trees
        (``lightgbm.train(init_model=...)``, whose first round is this one) or starts afresh. Returns the trainer
        with the scores before the round, and LightGBM's "no leaf can split"."""
        import lightgbm as lgb

        X = self.problem.X.cpu().numpy()
        y = self.problem.y.double().cpu().numpy()
        params = self._params()
        start = self.model.booster
        if start is not None:
            scores = np.asarray(start.predict(X, raw_score=True, num_threads=params["num_threads"]), dtype=float)
            if self.objective is None:
                params["objective"] = self._fobj
            data = lgb.Dataset(X, label=y, params=params, free_raw_data=False)
            booster = lgb.train(params, data, num_boost_round=1, init_model=start, keep_training_booster=True)
            return self._trainer(booster, KeptScores(X, params["num_threads"]).start_from(scores, start.current_iteration())), False
        init = np.full(len(y), log_odds(y)) if self.objective is None else None  # custom: no boost_from_average
        data = lgb.Dataset(X, label=y, init_score=init, params=params, free_raw_data=False)
        booster = lgb.Booster(params, data)
        finished = self._update(booster)
        if init is not None:  # the initial score goes into the first tree, as boost_from_average does
            add_to_tree(booster, 0, float(init[0]))
        return self._trainer(booster, KeptScores(X, params["num_threads"])), finished

    def _trainer(self, booster, kept: KeptScores) -> Trainer:
        """The model's booster is now ``booster``; its forward pass over the training (and validation) rows reads
        kept scores, caught up with the trees added since the last read rather than predicting every tree again."""
        self.model.booster = booster
        self.model.keep_scores(kept)
        if self.validation is not None:
            self.model.keep_scores(KeptScores(self.validation.X.cpu().numpy(), kept.num_threads))
        return Trainer.of(booster, kept, raw=self.objective is None)

    def _update(self, booster) -> bool:
        return bool(booster.update(fobj=self._fobj) if self.objective is None else booster.update())

    def gradients(self, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(g, h) of the round's objective at the training scores (float64, (n,) each); custom objectives only."""
        raise NotImplementedError

    def step(self, k: int, current: Evaluation):
        if self.trainer is None or self.trainer.booster is not self.model.booster:  # first round, or restored
            self.trainer, finished = self._begin()
        else:
            finished = self._update(self.trainer.booster)
        scores = self.trainer.refresh()
        self.rounds += 1
        self.converged = finished or self.rounds >= self.model.spec.n_estimators
        return self.evaluate_scores(scores), self.duals()

    def evaluate_scores(self, scores: np.ndarray) -> Evaluation:
        """F and G at the training scores ``scores`` (the trees need no forward pass)."""
        problem = self.problem
        f = torch.as_tensor(scores, dtype=problem.X.dtype, device=problem.device)
        return Evaluation(f, problem.objective(f, problem.y), problem.constraint_values(f))

    def duals(self) -> dict[str, torch.Tensor] | None:
        return None


class GradientBoosting(Boosting):
    """``erm`` of a gbdt model: LightGBM's ``binary`` objective (the logistic loss), no constraint."""

    name = "erm"


def log_odds(y: np.ndarray) -> float:
    """log(p̄ / (1 − p̄)) of the labels' mean p̄ (clipped to [1e-15, 1 − 1e-15]): LightGBM's initial binary score."""
    p = float(np.clip(np.mean(y), 1e-15, 1 - 1e-15))
    return float(np.log(p / (1 - p)))


def add_to_tree(booster, tree: int, value: float) -> None:
    """Add ``value`` to every leaf of tree ``tree`` (``Booster.set_leaf_output``)."""
    leaves = booster.dump_model(start_iteration=tree, num_iteration=1)["tree_info"][0]["num_leaves"]
    for leaf in range(leaves):
        booster.set_leaf_output(tree, leaf, booster.get_leaf_output(tree, leaf) + value)
