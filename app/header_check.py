"""Does a CSV file's first line look like data rather than a header?

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

SAMPLE_ROWS = 200


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


def header_warning(path: Path, delimiter: str, missing: list[str], newline: str = "\n") -> dict[str, Any] | None:
    """The upload answer's warning (field, message, suggestion) when the first line looks like data."""
    from app.storage import _text_lines  # the strict, bounded line reader of uploads

    with open(path, "rb") as fh:
        reader = csv.reader(_text_lines(fh, newline.encode()), delimiter=delimiter, skipinitialspace=True)
        rows = [r for r in itertools.islice(reader, SAMPLE_ROWS + 1) if r and any(c.strip() for c in r)]
    verdict = first_row_verdict(rows, set(missing))
    if verdict is None:
        return None
    width = len(rows[0])
    return {
        "field": "header",
        "message": f"the first line looks like data, not a header ({'; '.join(verdict['reasons'])}); if the file "
                   f"has no header row, upload it again with header=false and column_names (one name for each of "
                   f"its {width} columns)",
        "suggestion": {"header": False, "column_names": [f"column_{j}" for j in range(1, width + 1)]},
    }
