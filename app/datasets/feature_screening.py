"""``features: null`` at submission: the dataset's columns screened once (:mod:`solvers.feature_screen`),
the job stored with the kept columns as its ``features`` and the notes (which column, excluded or
flagged, why) in its spec's ``feature_screen`` and in the submission's answer.

The API never holds the table: the whole-column counts come from the upload's profile and the rows
screened are a uniform sample of about :data:`~solvers.feature_screen.SAMPLE_ROWS`, drawn chunk by chunk
as the file is read. A dataset never changes, so a screen is kept per dataset, target, positive label and
sensitive columns (the last :data:`CACHED`).
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np
import pandas as pd

from app.models import Dataset
from app.core.settings import Settings
from app.datasets.storage import iter_chunks
from solvers import ProblemSpec, SpecError
from solvers.encoding import normalise_scalar
from solvers.feature_screen import SAMPLE_ROWS, ColumnStats, FeatureScreen, screen_features

CACHED = 64
_screens: OrderedDict[tuple, FeatureScreen] = OrderedDict()
_lock = threading.Lock()  # routes run in a thread pool


def dataset_screen(settings: Settings, dataset: Dataset, target: str, positive_label, sensitive: list[str]
                   ) -> FeatureScreen:
    """The screen of ``dataset``'s columns for this target (cached)."""
    from app.datasets.storage import dataset_path

    key = (dataset.id, dataset.sha256, target, normalise_scalar(positive_label), tuple(sensitive))
    with _lock:
        if key in _screens:
            _screens.move_to_end(key)
            return _screens[key]
    path = dataset_path(settings, dataset)
    keep = min(1.0, 1.2 * SAMPLE_ROWS / max(dataset.n_rows, 1))  # a little over: the screen samples it again
    rng = np.random.default_rng(0)
    sample = pd.concat([chunk[rng.random(len(chunk)) < keep]
                        for chunk in iter_chunks(path, dataset.format, dataset.read_options)], ignore_index=True)
    stats = {c["name"]: ColumnStats(c["n_distinct"], dataset.n_rows - c["n_missing"], c["dtype"])
             for c in dataset.columns}
    screen = screen_features(sample, target, positive_label, sensitive, stats)
    with _lock:
        _screens[key] = screen
        if len(_screens) > CACHED:
            _screens.popitem(last=False)
    return screen


def screened(settings: Settings, dataset: Dataset, spec: ProblemSpec) -> FeatureScreen | None:
    """None when the spec lists its features; else the screen (SpecError on ``features`` when nothing is kept)."""
    if spec.features is not None:
        return None
    screen = dataset_screen(settings, dataset, spec.target, spec.positive_label, list(spec.sensitive))
    if not screen.kept:
        raise SpecError(("features",), "every column was excluded by the feature screen ("
                        + "; ".join(f"{n['column']}: {n['reason']}" for n in screen.notes[:10])
                        + "); list the features to use")
    return screen
