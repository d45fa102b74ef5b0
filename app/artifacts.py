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


def _record(job_id: str, kind: str, path: Path) -> Artifact:
    data = path.read_bytes()
    return Artifact(job_id=job_id, kind=kind, stored_name=f"{job_id}/{path.name}",
                    media_type=MEDIA_TYPES[kind], size_bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def write_artifacts(job_id: str, state_dict: dict[str, torch.Tensor], predictions: pd.DataFrame,
                    metadata: dict[str, str]) -> list[Artifact]:
    from safetensors.torch import save_file

    folder = get_settings().storage_dir / "artifacts" / job_id
    folder.mkdir(parents=True, exist_ok=True)
    weights = folder / FILE_NAMES["weights"]
    save_file({k: v.detach().cpu().contiguous() for k, v in state_dict.items()}, str(weights), metadata=metadata)
    preds = folder / FILE_NAMES["predictions"]
    predictions.to_parquet(preds, index=False)
    return [_record(job_id, "weights", weights), _record(job_id, "predictions", preds)]


def read_predictions(artifact: Artifact) -> pd.DataFrame:
    return pd.read_parquet(artifact_path(artifact.stored_name))
