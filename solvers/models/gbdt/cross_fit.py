r"""Cross-fitted (out-of-fold) scores of a gbdt base model, for post-processing on every fitting row.

A post-processor that chooses its rule on the validation split alone sees a fifth of the rows; one that uses the
base model's own training rows sees optimistic scores. Cross-fitting (K-fold) gives every fitting row an honest
score: the rows are split into K folds, stratified by (group, label) — within each (group, label) stratum the rows
in a seeded random order are dealt to folds 0, 1, …, K − 1, 0, … — and the rows of fold k are scored by a model
boosted on the other K − 1 folds with the base model's hyper-parameters and number of rounds (LightGBM's
``binary`` objective, ``boost_from_average``: what ``erm`` boosts, :mod:`solvers.algorithms.boosting`).

The rule is then fitted to these scores, and the stored model is either the base model as trained on the train
split (``"train"``: the fold models see (K − 1)/K of train + validation, 64 % of the rows with a 60 / 20 / 20
split against the base model's 60 %, so their scores are distributed like the stored model's) or the base refitted
on all fitting rows (``"refit"``: more rows for the trees, a model slightly more confident than the fold models
whose scores chose the thresholds). :func:`cross_fit` boosts that model with the fold models (``with_refit``).

The fold models (and the refit) do not depend on one another, nor on the base model whose scores a known fold
takes: :class:`CrossFit` boosts them at once on :func:`~.model.parallel_fits` background threads (LightGBM computes
outside Python's lock), each fit on its own ``num_threads``, from the moment it is made — ``group_thresholds``
starts them beside the base's own boosting. Every fit is deterministic, so the trees are the same as one after the
other.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from .model import lightgbm_params, parallel_fits

MIN_FOLDS, MAX_FOLDS = 2, 10


def fold_of(y: np.ndarray, group: np.ndarray, k: int, seed: int) -> np.ndarray:
    """(n,) fold of each row in 0..k−1, stratified by (group, label) (module docstring)."""
    y = (np.asarray(y).reshape(-1) > 0.5).astype(np.int64)
    g = np.asarray(group).astype(np.int64).reshape(-1)
    u = np.random.default_rng(seed).random(len(y))
    order = np.lexsort((u, y, g))                                  # strata contiguous, random order inside
    stratum = (g * 2 + y)[order]
    start = np.ones(len(y), dtype=bool)
    start[1:] = stratum[1:] != stratum[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(len(y)), 0))
    fold = np.empty(len(y), dtype=np.int64)
    fold[order] = (np.arange(len(y)) - first) % k
    return fold


def _params(spec: Any, seed: int) -> dict[str, Any]:
    return {**lightgbm_params(spec, seed), "objective": "binary"}


def _dataset(X: np.ndarray, y: np.ndarray, params: dict[str, Any]):
    """A LightGBM dataset of these rows alone, binned."""
    import lightgbm as lgb

    return lgb.Dataset(X, label=y, params=params).construct()


def _binned(X: np.ndarray, y: np.ndarray, params: dict[str, Any]):
    """One LightGBM dataset of all the rows, binned once: every fold's training rows are a ``subset`` of it (the
    same bin boundaries for every fold model and the refit, one binning instead of K + 1)."""
    import lightgbm as lgb

    return lgb.Dataset(X, label=y, params=params, free_raw_data=False).construct()


def out_of_fold_scores(X: np.ndarray, y: np.ndarray, group: np.ndarray, spec: Any, rounds: int, k: int,
                       seed: int, fold: np.ndarray | None = None, known: dict[int, np.ndarray] | None = None,
                       binned: bool = False) -> np.ndarray:
    """(n,) raw scores, each row's from the model boosted on the folds without it (``rounds`` rounds).

    ``fold``: the rows' folds (default :func:`fold_of`); ``known``: fold → the scores of its rows already given by
    a model boosted on the other folds' rows alone (e.g. the base model of the train split, for a validation fold):
    that fold is not boosted again. ``binned``: (X, y) binned once (:func:`_binned`), the fold models trained on
    its subsets (False: each fold model bins its own rows)."""
    scores, _ = cross_fit(X, y, group, spec, rounds, k, seed, fold=fold, known=known, binned=binned)
    return scores


def cross_fit(X: np.ndarray, y: np.ndarray, group: np.ndarray, spec: Any, rounds: int, k: int, seed: int,
              fold: np.ndarray | None = None, known: dict[int, np.ndarray] | None = None, binned: bool = False,
              with_refit: bool = False) -> tuple[np.ndarray, Any]:
    """(:func:`out_of_fold_scores`, the refit booster or None): the fold models and, with ``with_refit``, the base
    boosted on all the rows (on the one binning with ``binned``), boosted at once (:class:`CrossFit`)."""
    known = known or {}
    scores, refit, _ = CrossFit(X, y, group, spec, rounds, k, seed, fold=fold, known_folds=known, binned=binned,
                                with_refit=with_refit).result(known)
    return scores, refit


class Abandoned(Exception):
    """Raised inside a fit of a :class:`CrossFit` that was cancelled (its result is never read)."""


class CrossFit:
    """The fold models (and, with ``with_refit``, the base boosted on all the rows) of one cross-fitting, boosted
    from construction on :func:`~.model.parallel_fits` background threads (module docstring): a caller may start
    them before the model whose scores one fold takes (``known_folds``) is boosted, and read them with
    :meth:`result` (or the fold models' scores with :meth:`scores` and the refit with :meth:`refit`). Each thread
    boosts one model and predicts its rows (a fold model its held-out fold, the refit every row), so the
    predictions run beside the other fits too; with ``binned`` the rows are binned once, by the first fit's
    thread, and every fold model trains on a subset of that binning (the constructor returns at once). Every fit
    is deterministic: the trees are those of the same fits one after the other. :meth:`cancel` stops the fits
    between rounds. ``held``: fits (fold numbers, None for the refit) that wait, using no CPU, until
    :meth:`release` — a caller that may not need them lets the others have the cores first."""

    def __init__(self, X: np.ndarray, y: np.ndarray, group: np.ndarray, spec: Any, rounds: int, k: int, seed: int,
                 fold: np.ndarray | None = None, known_folds: Any = (), binned: bool = False,
                 with_refit: bool = False, held: Any = ()) -> None:
        from concurrent.futures import ThreadPoolExecutor

        if not MIN_FOLDS <= k <= MAX_FOLDS:
            raise ValueError(f"cross_fit: {MIN_FOLDS} to {MAX_FOLDS} folds, not {k}")
        self.X, self.y = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64).reshape(-1)
        self.fold = fold_of(self.y, group, k, seed) if fold is None else np.asarray(fold)
        self.rounds, self.with_refit, self.n, self.binned = int(rounds), with_refit, len(self.y), binned
        self.params = _params(spec, seed)
        self.boosted = [j for j in range(k) if j not in set(known_folds)]   # at most K model fits (not a row loop)
        self._datasets: dict[int | None, Any] | None = None   # fold j (None: every row) -> its LightGBM dataset
        self._built = threading.Lock()
        self.stopped = threading.Event()
        tasks = self.boosted + ([None] if with_refit else [])
        self.held = set(held) & set(tasks)   # a refit boosted on request (refit() without with_refit) never waits
        self.released = threading.Event()
        if not self.held:
            self.released.set()
        tasks.sort(key=lambda j: j in self.held)   # the fits that go at once first, in their order
        self._pool = ThreadPoolExecutor(max_workers=min(parallel_fits(), len(tasks)), thread_name_prefix="gbdt-fit")
        self._futures = {j: self._pool.submit(self._fit, j) for j in tasks}   # fold (None: the refit) -> its fit
        self._pool.shutdown(wait=False)   # the threads end with their last fit

    def _dataset_of(self, j: int | None) -> Any:
        """The training rows of fold ``j``'s model (None: the refit's, every row). With ``binned``, the first call
        bins every row and builds every fold's subset, under a lock (before any fit boosts on the binning)."""
        if not self.binned:
            train = self.fold != j if j is not None else slice(None)
            return _dataset(self.X[train], self.y[train], self.params)
        with self._built:
            if self._datasets is None:
                everything = _binned(self.X, self.y, self.params)
                self._datasets = {j: everything.subset(np.flatnonzero(self.fold != j).tolist(),
                                                       params=self.params).construct() for j in self.boosted}
                self._datasets[None] = everything
        return self._datasets[j]

    def _fit(self, j: int | None) -> tuple[Any, np.ndarray]:
        import lightgbm as lgb

        def check(_env) -> None:
            if self.stopped.is_set():
                raise Abandoned

        if j in self.held:
            self.released.wait()   # set by release() or cancel()
        if self.stopped.is_set():
            raise Abandoned
        data = self._dataset_of(j)
        rows = self.X if j is None else self.X[self.fold == j]
        # keep_training_booster: no text round trip of the model at the end (its trees and scores are the same)
        booster = lgb.train(self.params, data, num_boost_round=self.rounds, callbacks=[check],
                            keep_training_booster=True)
        return booster, booster.predict(rows, raw_score=True, num_threads=self.params["num_threads"])

    def scores(self, known: dict[int, np.ndarray]) -> np.ndarray:
        """Out-of-fold scores of every row — fold j of ``known`` given there —, once the fold models have ended
        (not the refit)."""
        scores = np.zeros(self.n)
        for j, known_scores in known.items():
            scores[self.fold == j] = known_scores
        for j in self.boosted:
            scores[self.fold == j] = self._futures[j].result()[1]
        return scores

    def result(self, known: dict[int, np.ndarray]) -> tuple[np.ndarray, Any, np.ndarray | None]:
        """(:meth:`scores`, the refit booster or None, its raw scores of every row or None), once every fit has
        ended."""
        scores = self.scores(known)
        refit, refit_scores = self._futures[None].result() if self.with_refit else (None, None)
        return scores, refit, refit_scores

    def refit(self) -> tuple[Any, np.ndarray]:
        """(the base boosted on all the rows at this cross-fitting's rounds, its raw scores of every row): the refit
        boosted with the fold models, or, without ``with_refit``, boosted now — on the fits' own thread count, as
        the refit boosted with the fold models: the same trees on any machine."""
        if self.with_refit:
            return self._futures[None].result()
        return self._fit(None)

    def fold_booster(self, j: int) -> Any:
        """The booster of fold ``j``'s model (boosted on the other folds' rows), once its fit has ended."""
        return self._futures[j].result()[0]

    def fold_scores(self, j: int) -> np.ndarray:
        """Fold ``j``'s rows' raw scores (in their order) by its model, once that fit has ended (the others may
        still run)."""
        return self._futures[j].result()[1]

    def release(self) -> None:
        """The ``held`` fits go."""
        self.released.set()

    def cancel(self) -> None:
        """Stop every fit at its next round (the results are never read)."""
        self.stopped.set()
        self.released.set()   # a held fit wakes, and stops
        for future in self._futures.values():
            future.cancel()
