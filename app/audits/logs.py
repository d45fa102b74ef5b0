r"""Prediction logs: audits of a model FairSolve never saw, from a table that already holds its output.

A log names its columns (:class:`PredictionLog`): exactly one of

* ``score_column``: a continuous score s per row, with ``score_scale``

  - ``"probability"`` (default): s ∈ [0, 1]; the raw score the metrics read is f = logit(s) (s clipped to
    [1e-15, 1 − 1e-15]), so log loss and the loss gap read σ(f) = s; the decision is ŷ = 1{s > t} with the
    ``threshold`` t (default ½, where ŷ = 1{f > 0} as for FairSolve's own models);
  - ``"raw"``: f = s (a margin or a logit); ŷ = 1{s > t}, t default 0;

* ``prediction_column``: the decision ŷ itself (0/1 or true/false); f = ŷ, so only the metrics that need
  no score (:data:`app.audits.metrics.AUDIT_METRICS`' ``needs``) are offered;

and optionally ``label_column`` with its ``positive_label`` (y = 1 where the normalised value equals it, as
for jobs), without which the metrics that need a label are refused. Groups are the ``sensitive`` columns'
observed values (several columns: their intersections), as for jobs (:func:`solvers.data.encoding.build_groups`).
"""
from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from solvers.data.encoding import build_groups, encode_labels, normalise_values
from solvers.metrics.classification import _logits as logit

from .metrics import MetricSpec, Scored
from solvers.formats.model_file import ModelError

TRUE, FALSE = frozenset({"1", "True", "true", "yes"}), frozenset({"0", "False", "false", "no"})


class PredictionLog(BaseModel):
    """Where a prediction log keeps the model's output, the outcome and the groups (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    score_column: str | None = Field(None, min_length=1, max_length=255, description="A continuous score per row.")
    prediction_column: str | None = Field(None, min_length=1, max_length=255,
                                          description="The decision per row (0/1, true/false); give it or "
                                          "score_column.")
    threshold: float | None = Field(None, allow_inf_nan=False, description="ŷ = 1{score > threshold} (default ½ "
                                    "for probabilities, 0 for raw scores); only with score_column.")
    score_scale: Literal["probability", "raw"] = Field("probability", description="probability: scores in [0, 1] "
                                                       "(f = logit(s)); raw: scores are f itself.")
    label_column: str | None = Field(None, min_length=1, max_length=255, description="The outcome; optional, "
                                     "needed by the metrics that read a label.")
    positive_label: str | int | float | bool = Field(1, description="The label_column value of the positive class.")
    sensitive: list[str] = Field(min_length=1, max_length=8, description="The group columns.")

    @model_validator(mode="after")
    def _one_output(self) -> "PredictionLog":
        if (self.score_column is None) == (self.prediction_column is None):
            raise ValueError("give exactly one of score_column or prediction_column")
        if self.threshold is not None:
            if self.score_column is None:
                raise ValueError("threshold applies to score_column only")
            if self.score_scale == "probability" and not 0 < self.threshold < 1:
                raise ValueError("threshold of probability scores must lie in (0, 1)")
        if any(not 0 < len(c) <= 255 for c in self.sensitive):
            raise ValueError("sensitive: column names of 1 to 255 characters")
        texts = [*self.columns(), self.positive_label if isinstance(self.positive_label, str) else ""]
        if any("\x00" in t or len(t) > 255 for t in texts):  # the database's text cannot hold a NUL
            raise ValueError("column names and positive_label: at most 255 characters, no NUL character")
        return self

    @property
    def provides(self) -> frozenset[str]:
        """What the log offers the metrics: ``score`` and / or ``label``."""
        return frozenset({"score"} if self.score_column else set()) | frozenset(
            {"label"} if self.label_column else set())

    def columns(self) -> list[str]:
        return [c for c in (self.score_column, self.prediction_column, self.label_column, *self.sensitive) if c]

    def refusal(self, metrics: list[MetricSpec]) -> tuple[str, str] | None:
        """``(field, message)`` for the first metric this log cannot give (a needed column missing), else None."""
        for spec in metrics:
            missing = spec.metric.needs - self.provides
            if "label" in missing:
                return "label_column", f"metric {spec.type!r} needs the outcome: give label_column"
            if "score" in missing:
                return "score_column", (f"metric {spec.type!r} needs a continuous score: give score_column "
                                        "instead of prediction_column")
        return None

    def score(self, table: pd.DataFrame) -> Scored:
        """Labels (zeros without a label column), raw scores, decisions and groups of every row of ``table``;
        :class:`ModelError` naming the column that is missing or holds the wrong values."""
        scored = self.score_rows(table)
        self.check_positives(int(scored.y.sum()))
        return scored

    def check_positives(self, positives: int) -> None:
        """:class:`ModelError` when the log has a label column and none of its rows is positive."""
        if self.label_column and positives == 0:
            raise ModelError(f"predictions.positive_label: {self.positive_label!r} never occurs in column "
                             f"{self.label_column!r}")

    def score_rows(self, table: pd.DataFrame) -> Scored:
        """:meth:`score` of one part of a log (a streamed batch may hold no positive label: the caller checks the
        whole log with :meth:`check_positives`)."""
        missing = [c for c in dict.fromkeys(self.columns()) if c not in table.columns]
        if missing:
            raise ModelError(f"predictions: the data lacks the column(s) {', '.join(map(repr, missing))}")
        if len(table) == 0:
            raise ModelError("the data has no rows")
        group, names = build_groups(table, self.sensitive)
        y = encode_labels(table[self.label_column], self.positive_label) if self.label_column \
            else np.zeros(len(table), np.int64)
        if self.score_column is not None:
            logits, decisions = self._scores(table[self.score_column])
        else:
            decisions = self._decisions(table[self.prediction_column])
            logits = decisions.astype(np.float64)
        return Scored(np.asarray(y, np.int64), logits, np.asarray(group, np.int64), [str(n) for n in names],
                      decisions)

    def _scores(self, column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        s = pd.to_numeric(column, errors="coerce").to_numpy(np.float64)
        if not np.isfinite(s).all():
            raise ModelError(f"predictions.score_column: {self.score_column!r} holds {int((~np.isfinite(s)).sum())} "
                             "value(s) that are missing or not finite numbers")
        if self.score_scale == "raw":
            return s, (s > (self.threshold or 0.0)).astype(np.int64)
        if s.min() < 0 or s.max() > 1:
            raise ModelError(f"predictions.score_column: {self.score_column!r} holds values outside [0, 1]; "
                             "set score_scale to 'raw' for scores that are not probabilities")
        threshold = 0.5 if self.threshold is None else self.threshold
        return logit(s), (s > threshold).astype(np.int64)

    def _decisions(self, column: pd.Series) -> np.ndarray:
        values = normalise_values(column)
        bad = ~np.isin(values, list(TRUE | FALSE))
        if bad.any():
            raise ModelError(f"predictions.prediction_column: {self.prediction_column!r} holds "
                             f"{values[bad][0]!r}; decisions are 0/1 or true/false")
        return np.isin(values, list(TRUE)).astype(np.int64)


def log_of(value: dict[str, Any] | None) -> PredictionLog | None:
    return None if value is None else PredictionLog.model_validate(value)
