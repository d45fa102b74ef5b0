"""Chart kinds of a job: each is one module registering a builder ``(ChartContext) -> Figure``.

A builder reads what it needs through the context (the trajectory, the test
predictions, the job's spec and metrics) and raises ``ChartUnavailable`` when the
job has nothing to draw yet (answered 404 with the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import pandas as pd
import plotly.graph_objects as go
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.jobs.artifacts import read_predictions
from app.models import Artifact, Job

TRAJECTORY_POINTS = 2000
CHARTS: dict[str, Callable[["ChartContext"], go.Figure]] = {}


class ChartUnavailable(LookupError):
    """The job has no data for this chart (yet); the message says why."""


def chart(kind: str):
    def register(builder: Callable[["ChartContext"], go.Figure]):
        if kind in CHARTS:
            raise ValueError(f"chart {kind!r} is already registered")
        CHARTS[kind] = builder
        return builder
    return register


@dataclass
class ChartContext:
    db: Session
    job: Job

    def trajectory(self, max_points: int = TRAJECTORY_POINTS) -> dict:
        from app.jobs.trajectory import read_trajectory

        traj = read_trajectory(self.db, self.job, max_points)
        if not traj["points"]:
            raise ChartUnavailable(f"job {self.job.id!r} has no trajectory yet")
        return traj

    @cached_property
    def _predictions(self) -> pd.DataFrame:
        art = self.db.scalar(select(Artifact).where(Artifact.job_id == self.job.id, Artifact.kind == "predictions"))
        if art is None:
            raise ChartUnavailable(f"job {self.job.id!r} has no predictions (status {self.job.status})")
        return read_predictions(art)

    def predictions(self) -> pd.DataFrame:
        """Test-split predictions: row, group, label, score, prediction."""
        return self._predictions
