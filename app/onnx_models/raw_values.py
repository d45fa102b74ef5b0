"""What an uploaded ONNX model's text inputs are fed: the cells of the audited file as they are written.

A model trained elsewhere knows the file's own values, its missing-value markers included (``?`` in the UCI
files is a category of a model trained on them as read by pandas with ``keep_default_na=False``, and a model
fed FairSolve's ``__missing__`` for it scores those rows as an unseen value). So a text input gets:

* for a model exported by FairSolve that documents its tokens (:func:`speaks_fairsolve`: producer ``fairsolve``,
  ``__missing__`` in its doc string), the values as FairSolve normalises them
  (:func:`solvers.encoding.normalise_values`), which its graph reads (it also reads the raw markers);
* for any other model, the text of each cell as the file holds it (:func:`file_text`: the dataset read again
  with its own options but no missing-value markers, only the model's text columns kept chunk by chunk); numbers
  of a column with no text as FairSolve writes them (integral ones as integers);
* when the file cannot be read again (an audit source fetched and deleted), the values as read, a missing cell
  as the empty string (what a CSV writer writes for it), never a FairSolve token.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from solvers.encoding import MISSING, normalise_values

#: columns -> their cells as written, in the rows and order of the audited table
FileText = Callable[[list[str]], pd.DataFrame]


def speaks_fairsolve(producer: str, doc: str) -> bool:
    """Whether a model was exported by FairSolve and documents its missing token (module docstring)."""
    return producer == "fairsolve" and MISSING in doc


def file_text(path: Path, fmt: str, options: dict[str, Any]) -> FileText:
    """A reader of the stored table's text columns as written (no cell read as missing)."""
    from app.datasets.storage import iter_chunks

    def read(columns: list[str]) -> pd.DataFrame:
        raw = {**options, "missing_values": []}
        return pd.concat([chunk[columns] for chunk in iter_chunks(path, fmt, raw)], ignore_index=True)
    return read


def as_written(series: pd.Series) -> np.ndarray:
    """One column's cells as text: text as it is, numbers as FairSolve writes them, a missing cell as ``""``."""
    if pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype):
        values = normalise_values(series)
        return np.where(values == MISSING, "", values).astype(object)
    values = series.astype(object).to_numpy()
    missing = pd.isna(values)
    return np.where(missing, "", values.astype(str)).astype(object)
