"""Job artifacts in the store (:mod:`app.core.blobstore`): model weights as safetensors, test predictions as Parquet.

The worker writes them (:func:`write_artifacts`, which loads torch); the API only finds and reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
from sqlalchemy import select

from app.core.blobstore import artifact_key, blobs, sha256_file
from app.models import Artifact

if TYPE_CHECKING:
    import torch
    from sqlalchemy.orm import Session

MEDIA_TYPES = {"weights": "application/octet-stream", "predictions": "application/vnd.apache.parquet"}
FILE_NAMES = {"weights": "model.safetensors", "predictions": "predictions.parquet"}


def artifact_file(artifact: Artifact) -> Path:
    """A local file holding the artifact, checked against its SHA-256 when it comes from object storage."""
    return blobs().fetch(artifact_key(artifact.stored_name), artifact.sha256)


def _store(job_id: str, kind: str, stored_name: str, path: Path) -> Artifact:
    """Put the file written at ``path`` under ``artifacts/<stored_name>``; its database row."""
    size, sha256 = path.stat().st_size, sha256_file(path)
    blobs().put(artifact_key(stored_name), path, sha256)
    return Artifact(job_id=job_id, kind=kind, stored_name=stored_name, media_type=MEDIA_TYPES[kind],
                    size_bytes=size, sha256=sha256)


def write_artifacts(job_id: str, state_dict: dict[str, torch.Tensor], predictions: pd.DataFrame,
                    metadata: dict[str, str], folder: str | None = None) -> list[Artifact]:
    """Write the files under ``artifacts/<job_id>[/<folder>]`` (the worker names the folder by its start, so a
    superseded start never overwrites the files of the start that holds the job)."""
    from safetensors.torch import save_file

    names = {kind: f"{job_id if folder is None else f'{job_id}/{folder}'}/{FILE_NAMES[kind]}" for kind in FILE_NAMES}
    weights, preds = (blobs().staging(artifact_key(names[kind])) for kind in ("weights", "predictions"))
    save_file({k: v.detach().cpu().contiguous() for k, v in state_dict.items()}, str(weights), metadata=metadata)
    predictions.to_parquet(preds, index=False)
    return [_store(job_id, "weights", names["weights"], weights),
            _store(job_id, "predictions", names["predictions"], preds)]


def read_predictions(artifact: Artifact) -> pd.DataFrame:
    return pd.read_parquet(artifact_file(artifact))


def weights_of(db: Session, job_id: str) -> Artifact | None:
    return db.scalar(select(Artifact).where(Artifact.job_id == job_id, Artifact.kind == "weights"))
