"""Job artifacts on disk: model weights as safetensors, test predictions as Parquet.

The worker writes them (:func:`write_artifacts`, which loads torch); the API only finds and reads them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from app.models import Artifact
from app.settings import get_settings

if TYPE_CHECKING:
    import torch

MEDIA_TYPES = {"weights": "application/octet-stream", "predictions": "application/vnd.apache.parquet"}
FILE_NAMES = {"weights": "model.safetensors", "predictions": "predictions.parquet"}


def artifact_path(stored_name: str) -> Path:
    return get_settings().storage_dir / "artifacts" / stored_name


def _record(job_id: str, kind: str, path: Path, root: Path) -> Artifact:
    data = path.read_bytes()
    return Artifact(job_id=job_id, kind=kind, stored_name=path.relative_to(root).as_posix(),
                    media_type=MEDIA_TYPES[kind], size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def write_artifacts(job_id: str, state_dict: dict[str, torch.Tensor], predictions: pd.DataFrame,
                    metadata: dict[str, str], folder: str | None = None) -> list[Artifact]:
    """Write the files under ``artifacts/<job_id>[/<folder>]`` (the worker names the folder by its start, so a
    superseded start never overwrites the files of the start that holds the job)."""
    from safetensors.torch import save_file

    folder = artifact_path(job_id if folder is None else f"{job_id}/{folder}")
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / FILE_NAMES["weights"]
    save_file({k: v.detach().cpu().contiguous() for k, v in state_dict.items()}, str(weights), metadata=metadata)
    preds = folder / FILE_NAMES["predictions"]
    predictions.to_parquet(preds, index=False)
    stored = artifact_path("")
    return [_record(job_id, "weights", weights, stored), _record(job_id, "predictions", preds, stored)]


def read_predictions(artifact: Artifact) -> pd.DataFrame:
    return pd.read_parquet(artifact_path(artifact.stored_name))
