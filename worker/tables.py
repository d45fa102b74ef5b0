"""A dataset as the worker's solves read it: its table (the cached read, text columns as categories: the encoder's
input) and the ``prepare`` to run on it, which keeps each prepared split in this process's
:class:`~solvers.data.prepared_cache.PreparedCache` (``FAIRSOLVE_PREPARED_CACHE_BYTES``) under the table's content key:
the stored file's SHA-256, its format and its reading options, the key of the table cache itself."""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Callable

import pandas as pd

from app.core.blobstore import dataset_file
from app.core.settings import get_settings
from app.datasets.storage import content_key, load_table
from app.models import Dataset
from solvers import ProblemSpec
from solvers.data.prepared_cache import PreparedCache
from solvers.pipeline import Prepared


@lru_cache(maxsize=1)
def prepared_tables() -> PreparedCache:
    """This process's prepared tables."""
    return PreparedCache(get_settings().prepared_cache_bytes)


def dataset_table(dataset: Dataset) -> tuple[pd.DataFrame, Callable[[pd.DataFrame, ProblemSpec], Prepared]]:
    """(the dataset's table, the prepare for :func:`solvers.run`'s ``prepare_with``)."""
    table = load_table(dataset_file(dataset), dataset.format, dataset.read_options, dataset.sha256,
                       text_as_categories=True)
    key = content_key(dataset.sha256, dataset.format, dataset.read_options)
    return table, partial(prepared_tables().prepared, key)
