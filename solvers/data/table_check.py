"""The spec against an actual table: every check that needs the table's columns, dtypes and values.

It sits beside :mod:`.spec` (which declares the spec) and :mod:`.membership` (the overlapping groups, whose own
check needs the spec's limits), so that neither of those imports the other back.
"""
from __future__ import annotations

from typing import Callable

import pandas as pd

from .encoding import MISSING, build_groups, normalise_scalar, normalise_values
from .membership import check_overlapping_groups
from .spec import (ProblemSpec, SpecError, binarize_error, check_solver_supports, positive_label_error,
                   value_counts)


def check_spec_against_table(spec: ProblemSpec, table: pd.DataFrame,
                             counts: Callable[[str], pd.Series] | None = None) -> None:
    """Raise :class:`SpecError` when the spec cannot run on ``table``. ``counts(column)``: the column's
    :func:`value_counts` in the whole dataset when ``table`` stands in for it (default: ``table``'s own), read
    only for the refusal of a many-valued target."""
    check_solver_supports(spec)
    columns = set(table.columns)
    if spec.target not in columns:
        raise SpecError(("target",), f"unknown column {spec.target!r}")
    for i, col in enumerate(spec.sensitive):
        if col not in columns:
            raise SpecError(("sensitive", i), f"unknown column {col!r}")
        if col == spec.target:
            raise SpecError(("sensitive", i), f"{col!r} is the target column: a sensitive column must be another one")
    for i, col in enumerate(spec.features or []):
        if col not in columns:
            raise SpecError(("features", i), f"unknown column {col!r}")
        if col == spec.target:
            raise SpecError(("features", i), "the target column cannot be a feature")
    if not spec.feature_columns(table.columns):
        raise SpecError(("features",), "no feature columns")
    if spec.overlapping_groups is not None:
        check_overlapping_groups(spec.overlapping_groups, table, spec.target)
    for col, rule in spec.group_rules.items():
        if col not in spec.sensitive:
            raise SpecError(("group_rules", col), f"{col!r} is not a sensitive column")
        dtype = table[col].dtype
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        if rule.ranges is not None and not numeric:
            raise SpecError(("group_rules", col, "ranges"), f"ranges need a numeric column; {col!r} is {table[col].dtype}")

    target = normalise_values(table[spec.target])
    distinct = pd.unique(target[target != MISSING])
    if len(distinct) < 2:
        raise SpecError(("target",), f"column {spec.target!r} has fewer than 2 distinct values")
    if normalise_scalar(spec.positive_label) not in set(distinct):
        raise positive_label_error(spec, distinct)
    if len(distinct) > 2 and not spec.binarize:
        raise binarize_error(spec, (counts or (lambda col: value_counts(table[col])))(spec.target))
    for i, col in enumerate(spec.sensitive):
        _, names = build_groups(table, [col], spec.group_rules)
        if len(names) < 2:
            raise SpecError(("sensitive", i), f"column {col!r} yields fewer than 2 groups ({names})")
