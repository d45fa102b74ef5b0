"""fairlearn's oracle calls as a stream the driver steps through, one iteration per call.

fairlearn's ``fit`` runs its whole loop and has no callback, so it runs on a thread of its own and reports
each oracle call through two hooks that change nothing in its computation:

* :class:`OracleEstimator`, the estimator handed to fairlearn: a scikit-learn meta-estimator whose ``fit``
  fits (a clone of) the real estimator on fairlearn's reweighted, relabelled rows, then hands the fitted
  classifier to the stream;
* :func:`probed`, the constraint moment handed to fairlearn: its ``signed_weights(λ)`` (called once per
  oracle call, just before it, outside fairlearn's oracle timer) records λ and first waits until the driver
  has taken the previous call, so the fit runs at most one oracle call ahead of the trajectory, and raises
  :class:`Stopped` once the driver asked it to stop (cancel, time limit, iteration budget).

An oracle call whose relabelled targets are constant is fitted by fairlearn with a DummyClassifier, not
with the estimator: no record (it changes no weight of the returned classifier that the trajectory shows).
The stream has ``__slots__`` (no ``__dict__``), so checkpoints do not walk it, and it deep-copies to itself
(fairlearn copies its moment, GridSearch its estimator).
"""
from __future__ import annotations

import threading
import warnings
from collections import deque
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning


class Stopped(Exception):
    """Raised inside fairlearn's fit when the driver stopped reading the stream."""


class OracleStream:
    """Items ``("oracle", classifier, λ)`` per oracle call, then ``("done", fitted fairlearn estimator, None)``,
    ``("stopped", None, None)`` or ``("error", exception, None)``."""

    __slots__ = ("_cond", "_items", "_pending", "_stopped", "_lambda", "_thread", "taken", "_scores")

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: deque = deque()
        self._pending = 0
        self._stopped = False
        self._lambda = None
        self._thread: threading.Thread | None = None
        self.taken = 0   # items the driver has taken
        self._scores: dict[int, tuple] = {}   # id(classifier) -> (classifier, X, raw scores), see :meth:`scores_of`

    def __deepcopy__(self, memo) -> "OracleStream":
        return self

    # --- fairlearn's thread
    def probe(self, lambda_vec) -> None:
        """Before an oracle call: wait for the driver to take the previous one; record λ."""
        with self._cond:
            self._cond.wait_for(lambda: self._pending == 0 or self._stopped)
            if self._stopped:
                raise Stopped
            self._lambda = lambda_vec

    def fitted(self, classifier, scores: tuple | None = None) -> None:
        """An oracle call's classifier; ``scores``: (X, its raw scores on the rows X it was fitted on), if known."""
        with self._cond:
            if scores is not None:
                self._scores[id(classifier)] = (classifier, *scores)
        self._put(("oracle", classifier, self._lambda))

    def scores_of(self, classifier) -> tuple | None:
        """(X, raw scores F(X)) that fairlearn's thread computed for ``classifier`` (taken once), else None."""
        with self._cond:
            found = self._scores.pop(id(classifier), None)
        return found[1:] if found is not None and found[0] is classifier else None

    def _put(self, item: tuple) -> None:
        with self._cond:
            self._items.append(item)
            self._pending += 1
            self._cond.notify_all()

    def start(self, fitter, X, y, **fit_params: Any) -> "OracleStream":
        """Run ``fitter.fit(X, y, **fit_params)`` on a daemon thread."""
        def run() -> None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    warnings.filterwarnings("ignore", module="fairlearn")   # pandas deprecations of its code
                    fitter.fit(X, y, **fit_params)
            except Stopped:
                self._put(("stopped", None, None))
            except BaseException as exc:  # noqa: BLE001  (re-raised in the driver's thread)
                self._put(("error", exc, None))
            else:
                self._put(("done", fitter, None))

        self._thread = threading.Thread(target=run, name="fairlearn-fit", daemon=True)
        self._thread.start()
        return self

    # --- the driver's thread
    def next(self) -> tuple:
        """The next item (blocks until fairlearn has one)."""
        with self._cond:
            self._cond.wait_for(lambda: bool(self._items))
            item = self._items.popleft()
            self._pending -= 1
            self.taken += 1
            self._cond.notify_all()
            return item

    def stop(self, timeout_s: float = 60.0) -> None:
        """Ask fairlearn's fit to stop at its next oracle call and wait (at most ``timeout_s``) for it."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)


class OracleEstimator(ClassifierMixin, BaseEstimator):
    """The estimator fairlearn calls: fits a clone of ``estimator`` and reports it to ``stream``."""

    def __init__(self, estimator=None, stream: OracleStream | None = None) -> None:
        self.estimator = estimator
        self.stream = stream

    def fit(self, X, y, sample_weight=None):
        self.estimator_ = clone(self.estimator).fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.estimator_.classes_
        self._predicted, scores = None, None
        if _binary_lightgbm(self.estimator_):  # one pass: the raw scores, its predictions of X and the trajectory's
            raw = np.asarray(self.estimator_.booster_.predict(X, raw_score=True), dtype=np.float64)
            self._predicted, scores = (X, lightgbm_labels(self.estimator_, X, raw)), (X, raw)
        self.stream.fitted(self.estimator_, scores)
        return self

    def predict(self, X):
        """The fitted classifier's predictions. Right after each oracle call fairlearn predicts the same training
        rows twice (its objective's γ(h), then its constraints'; one array ``X`` loaded into both moments):
        the second time gets a copy of the first's answer instead of a second pass of the classifier."""
        last = getattr(self, "_predicted", None)
        if last is not None and last[0] is X:
            return last[1].copy()
        out = self.estimator_.predict(X)
        self._predicted = (X, out.copy())
        return out


def _binary_lightgbm(classifier) -> bool:
    """A fitted LGBMClassifier with LightGBM's own binary objective (whose ``predict`` is 1{σ(F) > ½})."""
    return (hasattr(classifier, "booster_") and len(getattr(classifier, "classes_", ())) == 2
            and getattr(classifier, "objective_", None) == "binary")


#: raw scores in (0, UNSURE] may round to σ(F) = ½ exactly in LightGBM's sigmoid: those rows are predicted by it
UNSURE = 1e-12


def lightgbm_labels(classifier, X, raw: np.ndarray) -> np.ndarray:
    """``classifier.predict(X)`` of a binary LGBMClassifier from its raw scores F(X): it predicts the class of the
    larger of (1 − p, p), p = σ(F) computed by LightGBM (ties: the first class), so class 1 exactly when p > ½.
    F ≤ 0 gives e^{−F} ≥ 1 and p ≤ ½; F > 10⁻¹² gives p > ½ by far more than any rounding; the rows in between
    (:data:`UNSURE`) are predicted by the classifier itself."""
    index = (raw > 0).astype(np.int64)
    labels = classifier.classes_[index]
    unsure = (raw > 0) & (raw <= UNSURE)
    if unsure.any():
        labels[unsure] = classifier.predict(X[unsure])
    return labels


def probed(moment_cls: type, stream: OracleStream, **kwargs: Any):
    """An instance of fairlearn moment class ``moment_cls`` (``kwargs``: its bounds) whose ``signed_weights``
    calls ``stream.probe(λ)`` first and otherwise is the class's own."""

    class Probed(moment_cls):
        def signed_weights(self, lambda_vec):
            stream.probe(lambda_vec)
            return super().signed_weights(lambda_vec)

    Probed.__name__ = Probed.__qualname__ = moment_cls.__name__
    return Probed(**kwargs)
