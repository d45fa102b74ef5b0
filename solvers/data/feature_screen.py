"""Which columns ``features: null`` should not feed the model, and why (a job's data onboarding).

Every column except the target is screened; the rules, in order (the first that applies decides):

* ``constant``: at most one distinct non-missing value — excluded (it carries nothing);
* ``date``: a datetime column, or text of which ≥ :data:`DATE_SHARE` of the sampled values look like
  dates (``2013-01-27``, ``27/01/2013``, ...) — excluded (one-hot of dates only memorises rows);
* ``identifier``: text or integers with a distinct value for (nearly) every row (≥ :data:`ID_SHARE` of
  the non-missing values, more than :data:`MIN_ID_DISTINCT`) — excluded;
* ``free_text``: text averaging ≥ :data:`TEXT_WORDS` words with more than :data:`MIN_TEXT_DISTINCT`
  distinct values — excluded (a one-hot encoding turns each sentence into a column);
* ``identifier`` again: other text with ≥ :data:`NAME_SHARE` distinct values per row (names: ``first``,
  ``last``) — excluded;
* ``leakage``: on a sample of at most :data:`SAMPLE_ROWS` rows split in two halves, the column alone
  predicts the target on the second half from the target's mean per value (numbers: per quantile bin,
  :data:`~solvers.data.leakage.BINS` bins) learnt on the first, with ROC AUC a (max(a, 1 − a) taken) ≥ :data:`LEAK_AUC`
  — excluded; ``near_duplicate`` when it also has at most :data:`DUPLICATE_LEVELS` values (a recoding of
  the target);
* ``outcome_only``: the column is defined (present, non-zero) almost only for one class
  (:func:`~solvers.data.leakage.outcome_only`) — excluded;
* ``target_stem``: its name shares the target's stem and it predicts the target (AUC ≥
  :data:`~solvers.data.leakage.STEM_AUC`; :func:`~solvers.data.leakage.shares_stem`) — excluded;
* ``dominant``: among the columns still kept, one that alone predicts the target about as well as all the others
  together and adds what none of them does (:func:`~solvers.data.leakage.dominant`, naive Bayes on the same halves) —
  excluded, one per round.

A column kept with AUC in [:data:`FLAG_AUC`, :data:`LEAK_AUC`) is ``flagged``: it may be known only after the
outcome. Every rule is about the data, never about names of known datasets (the stem compares the column's name
with the target's).

Each note says the column, ``action`` (``excluded`` / ``flagged``), ``reason`` and a sentence ``detail``.
Sensitive columns are never excluded (the job names them), only screened for leakage.

Counts (distinct and present values, the column's kind) are of the whole column: taken from ``stats``
when given (the API passes its upload profile and a sample read chunk by chunk, so it never holds the
table), else computed from ``table``. The text rules and the leakage check read at most
:data:`SAMPLE_ROWS` rows of ``table``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .encoding import encode_labels
from .leakage import STEM_AUC, codes, dominant, held_out_auc, naming_words, outcome_only, shares_stem

SAMPLE_ROWS = 5000
DATE_SHARE = 0.9
ID_SHARE = 0.95
NAME_SHARE = 0.3
MIN_ID_DISTINCT = 50
TEXT_WORDS = 3.0
MIN_TEXT_DISTINCT = 50
LEAK_AUC = 0.95
FLAG_AUC = 0.85
DUPLICATE_LEVELS = 10
DATE_PATTERN = (r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4})"
                r"([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*$")


@dataclass(frozen=True)
class ColumnStats:
    """Whole-column counts: distinct non-missing values, non-missing values, and the kind
    (``integer``, ``float``, ``boolean``, ``datetime`` or ``string``, as the upload profile names them)."""

    n_distinct: int
    n_present: int
    kind: str


def kind_of(s: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(s.dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(s.dtype):
        return "integer"
    if pd.api.types.is_float_dtype(s.dtype):
        return "float"
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        return "datetime"
    return "string"


def column_stats(table: pd.DataFrame) -> dict[str, ColumnStats]:
    """:class:`ColumnStats` of every column of a whole table."""
    return {c: ColumnStats(int(table[c].nunique(dropna=True)), int(table[c].notna().sum()), kind_of(table[c]))
            for c in table.columns}


@dataclass
class FeatureScreen:
    kept: list[str]
    notes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def excluded(self) -> list[str]:
        return [n["column"] for n in self.notes if n["action"] == "excluded"]


def _date_share(values: pd.Series) -> float:
    """The share of ``values`` (text) that read as dates: the pattern is matched once per distinct value, each
    weighted by its count (a categorical column has a few dozen distinct values in thousands of rows)."""
    counts = values.value_counts(sort=False)
    dates = counts.index.to_series().str.match(DATE_PATTERN).to_numpy(dtype=bool)
    return float(counts.to_numpy()[dates].sum() / len(values))


def _shape_note(stats: ColumnStats, sample: pd.Series) -> dict[str, Any] | None:
    """The constant / date / identifier / free-text rules on one column (whole-column ``stats``, sampled text)."""
    distinct, present = stats.n_distinct, stats.n_present
    observed = sample.dropna()
    example = repr(str(observed.iloc[0])[:40]) if len(observed) else "?"
    if distinct <= 1:
        what = "every value is missing" if present == 0 else f"a single value ({example})"
        return {"reason": "constant", "detail": f"{what}: it cannot inform the model"}
    text = stats.kind == "string"
    values = observed.astype(str) if text else None
    if stats.kind == "datetime" or (text and len(values) and _date_share(values) >= DATE_SHARE):
        return {"reason": "date", "detail": f"dates ({distinct} distinct, e.g. {example}): "
                                            "encoded as categories they only memorise rows"}
    identifier = {"reason": "identifier", "detail": f"{distinct} distinct values in {present} rows: an "
                                                    "identifier (unique per row) cannot generalise"}
    if stats.kind in ("string", "integer") and distinct > MIN_ID_DISTINCT and distinct >= ID_SHARE * present:
        return identifier
    if text and distinct > MIN_TEXT_DISTINCT and len(values):
        words = values.str.split().str.len().mean()
        if words >= TEXT_WORDS:
            return {"reason": "free_text", "detail": f"free text ({distinct} distinct values averaging {words:.1f} "
                                                     "words): one column per sentence once encoded"}
        if distinct >= NAME_SHARE * present:
            return identifier
    return None


def _leak_note(column: str, target: str, auc: float, levels: int) -> dict[str, Any]:
    reason = "near_duplicate" if levels <= DUPLICATE_LEVELS else "leakage"
    what = "a recoding of the target" if reason == "near_duplicate" else "leaks the target"
    return {"reason": reason, "detail": f"predicts {target!r} alone with AUC {auc:.3f} on held-out rows: "
                                       f"{what}, probably known only after the outcome"}


def _outcome_note(target: str, found: dict[str, float]) -> dict[str, Any]:
    return {"reason": "outcome_only", "detail": (
        f"defined (present and non-zero) in {found['rows']} sampled rows ({100 * found['share']:.0f} %), "
        f"{100 * found['share_in']:.0f} % of them with {target} = {found['class']} against "
        f"{100 * found['share_out']:.0f} % elsewhere: recorded only after the outcome")}


def _stem_note(target: str, stem: str, auc: float) -> dict[str, Any]:
    return {"reason": "target_stem", "detail": f"named like the target ({stem!r} in {target!r}) and predicts it "
                                               f"(AUC {auc:.3f} on held-out rows): probably part of the outcome"}


def _dominant_note(target: str, found: dict[str, Any]) -> dict[str, Any]:
    return {"reason": "dominant", "detail": (
        f"predicts {target!r} alone with AUC {found['auc']:.3f} on held-out rows, as well as all other columns "
        f"together ({found['rest']:.3f}), and adds {found['unique']:.3f} AUC none of them carries: probably "
        "known only after the outcome (list it in features if it is known before)")}


def screen_features(table: pd.DataFrame, target: str, positive_label: Any, sensitive: list[str],
                    stats: dict[str, ColumnStats] | None = None, seed: int = 0) -> FeatureScreen:
    """Screen every column but ``target`` (module docstring); ``kept`` keeps the table's column order."""
    stats = column_stats(table) if stats is None else stats
    rng = np.random.default_rng(seed)
    rows = np.sort(rng.choice(len(table), size=min(len(table), SAMPLE_ROWS), replace=False))
    sample = table.iloc[rows]
    y = encode_labels(sample[target], positive_label).astype(float)
    first = rng.random(len(sample)) < 0.5
    notes: dict[str, dict[str, Any]] = {}  # column -> its note (excluded or flagged)
    candidates: dict[str, np.ndarray] = {}  # columns still kept -> their codes
    alone: dict[str, float] = {}
    protected = set(sensitive)
    scheme = naming_words(table.columns)
    for column in table.columns:  # one vectorised pass per column
        if column == target:
            continue
        note = None if column in protected else _shape_note(stats[column], sample[column])
        if note is None:
            c = codes(sample[column])
            alone[column] = auc = held_out_auc(c, y, first)
            if column in protected:
                pass
            elif auc >= LEAK_AUC:
                note = _leak_note(column, target, auc, int(c.max()) + 1)
            elif (found := outcome_only(sample[column], y)) is not None:
                note = _outcome_note(target, found)
            elif (stem := shares_stem(column, target, scheme)) is not None and auc >= STEM_AUC:
                note = _stem_note(target, stem, auc)
            if note is None:
                candidates[column] = c
        if note is not None:
            notes[column] = {"column": column, "action": "excluded", **note}
    for found in dominant(candidates, alone, y, first, protected):
        notes[found["column"]] = {"column": found["column"], "action": "excluded", **_dominant_note(target, found)}
    for column in candidates:
        if column not in notes and alone[column] >= FLAG_AUC:
            notes[column] = {"column": column, "action": "flagged", "reason": "leakage",
                             "detail": f"predicts {target!r} alone with AUC {alone[column]:.3f} on held-out rows: "
                                       "check it is known before the outcome"}
    columns = [c for c in table.columns if c != target]
    return FeatureScreen([c for c in columns if c not in notes or notes[c]["action"] != "excluded"],
                         [notes[c] for c in columns if c in notes])
