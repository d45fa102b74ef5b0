"""Does a CSV file's first line look like data rather than a header? And are its names repeated?

Rule, on the first line and up to :data:`SAMPLE_ROWS` lines below it (missing markers left out):

* a column is *numeric below* when every value below the first line parses as a number;
* a first-line cell is *data-like* when its column is numeric below and the cell is a number too
  (header names are not numbers), or when it equals one of the values below it in its column
  (``State-gov`` over a column of work classes).

The first line looks like data when some column is numeric below with a number on the first line,
or when at least half of the first-line cells are data-like. UCI Adult as published (``39, State-gov,
77516, ...``) is flagged on its numeric columns; a header such as ``age,workclass,...`` never is,
since no name is a number or a value of its own column.
"""
from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

from app.datasets.lines import text_lines  # the strict, bounded line reader of uploads

SAMPLE_ROWS = 200
SAMPLE_CHARS = 1 << 20  # the sample stops after the line that passes this many characters


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def first_row_verdict(rows: list[list[str]], missing: set[str]) -> dict[str, Any] | None:
    """None when the first row reads as a header; else why it looks like data (columns and reasons)."""
    if len(rows) < 2:
        return None
    first, body = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    if not body:
        return None
    numeric_hits, value_hits = [], []
    for j, cell in enumerate(first):
        values = {r[j].strip() for r in body} - missing
        cell = cell.strip()
        if values and all(_number(v) for v in values) and _number(cell):
            numeric_hits.append(j)
        elif cell in values:
            value_hits.append(j)
    if not numeric_hits and 2 * len(value_hits) < len(first):
        return None
    reasons = [f"column {j + 1}'s name {first[j].strip()[:40]!r} is a number like the values below it"
               for j in numeric_hits[:3]]
    reasons += [f"column {j + 1}'s name {first[j].strip()[:40]!r} is one of its own values"
                for j in value_hits[:max(0, 3 - len(reasons))]]
    return {"columns": [first[j].strip()[:40] for j in sorted(numeric_hits + value_hits)][:10], "reasons": reasons}


def _first_rows(path: Path, delimiter: str, newline: str, max_chars: int = SAMPLE_CHARS) -> list[list[str]]:
    """Up to :data:`SAMPLE_ROWS` + 1 non-blank rows, and no more once ``max_chars`` characters were read (this runs
    before the upload's shape is checked: a hostile file of long lines must not be held 200 lines at a time)."""
    def bounded(lines):
        read = 0
        for line in lines:
            read += len(line)
            yield line
            if read > max_chars:
                return

    with open(path, "rb") as fh:
        reader = csv.reader(bounded(text_lines(fh, newline.encode())), delimiter=delimiter, skipinitialspace=True)
        try:
            return [r for r in itertools.islice(reader, SAMPLE_ROWS + 1) if r and any(c.strip() for c in r)]
        except csv.Error:  # malformed: the shape check that follows names the line
            return []


def deduplicated(names: list[str]) -> list[str]:
    """``names`` with each repeat renamed as pandas does: the second ``decile_score`` becomes ``decile_score.1``, the
    third ``.2`` (a suffix already taken by another column is skipped)."""
    taken, used, out = set(names), set(), []
    for name in names:
        new, k = name, 0
        while new in used or (new != name and new in taken):
            k += 1
            new = f"{name}.{k}"
        used.add(new)
        out.append(new)
    return out


def _listed(pairs: list[str], limit: int = 5) -> str:
    return ", ".join(pairs[:limit]) + (f" and {len(pairs) - limit} more" if len(pairs) > limit else "")


def reading_fixes(path: Path, delimiter: str, asked: dict[str, Any], newline: str = "\n"
                  ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The reading options an upload gets beyond those it ``asked`` for, and the warnings that say so.

    * No ``header`` asked and the first line looks like data (:func:`first_row_verdict`): it is read as the first
      data row (``header: false``) and, without ``column_names``, the columns are named ``column_1`` … ``column_k``.
    * A header row with repeated names and no ``column_names``: each repeat is renamed (:func:`deduplicated`)."""
    rows = _first_rows(path, delimiter, newline)
    if not rows:
        return {}, []
    width = len(rows[0])
    verdict = first_row_verdict(rows, set(asked.get("missing_values", [])))
    if "header" not in asked and verdict is not None:
        named = asked.get("column_names") is not None
        names = f"named column_1 … column_{width}" if not named else "named by column_names"
        return {"header": False}, [{
            "field": "header",
            "message": f"the first line looks like data, not a header ({'; '.join(verdict['reasons'])}): it was read "
                       f"as the first data row and the {width} columns were {names}; rename them on the dataset's "
                       "page (PUT /api/v1/datasets/<id>/column-names), or upload again with header=true if it is a "
                       "header",
            "read_as": "data",
            "suggestion": {"header": False, "column_names": [f"column_{j}" for j in range(1, width + 1)]},
        }]
    if asked.get("column_names") is not None or not asked.get("header", True):
        return {}, []
    header = [h.strip() for h in rows[0]]
    if len(set(header)) == len(header) or not all(header):  # no repeats (an empty name is refused by the check)
        return {}, []
    names = deduplicated(header)
    renamed = [f"column {j + 1} {old!r} → {new!r}" for j, (old, new) in enumerate(zip(header, names)) if old != new]
    return {"column_names": names}, [{
        "field": "column_names",
        "message": f"the header repeats column names; the repeats were renamed: {_listed(renamed)} (give "
                   "column_names to name them yourself)",
        "renamed": {str(j + 1): new for j, (old, new) in enumerate(zip(header, names)) if old != new},
    }]
