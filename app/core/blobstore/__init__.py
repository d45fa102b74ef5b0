"""Storage any process can reach: one interface (:class:`BlobStore`), two backends chosen by
``FAIRSOLVE_STORAGE_URL`` (unset: the local directory; ``s3://bucket/prefix``: object storage), and the keys
of each kind of stored file."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from app.core.blobstore.base import BlobError, BlobStore, ChecksumMismatch, sha256_file
from app.core.settings import Settings, get_settings


@lru_cache(maxsize=8)
def _store_for(url: str | None, endpoint_url: str | None, storage_dir: Path, cache_max_bytes: int) -> BlobStore:
    if url:
        from app.core.blobstore.cache import ReadCache
        from app.core.blobstore.s3 import S3Store

        return S3Store(url, endpoint_url, ReadCache(storage_dir / "cache", cache_max_bytes), storage_dir / "spool")
    from app.core.blobstore.local import LocalStore

    return LocalStore(storage_dir)


def blobs(settings: Settings | None = None) -> BlobStore:
    """The store that ``settings`` (by default the process's) name."""
    s = settings or get_settings()
    return _store_for(s.storage_url, s.s3_endpoint_url, s.storage_dir, s.cache_max_bytes)


def dataset_key(stored_name: str) -> str:
    return f"datasets/{stored_name}"


def artifact_key(stored_name: str) -> str:
    return f"artifacts/{stored_name}"


def checkpoint_key(job_id: str, start: int | str = "", iteration: int | None = None) -> str:
    """The checkpoint a start of the job took after ``iteration``; without ``iteration``, the prefix of every
    checkpoint of that start; without ``start`` either, of every checkpoint of the job. A start writes each
    checkpoint under a key of its own and removes the one before only once the job names the new one, so the
    named checkpoint is never the file being replaced (``worker.persistence``)."""
    if start == "":
        return f"checkpoints/{job_id}."
    return f"checkpoints/{job_id}.{start}." + ("" if iteration is None else f"{iteration}.safetensors")


def model_key(stored_name: str) -> str:
    return f"models/{stored_name}"


def dataset_file(dataset, settings: Settings | None = None) -> Path:
    """A local file holding a dataset row's file, checked against its upload SHA-256 when it comes from object
    storage."""
    return blobs(settings).fetch(dataset_key(dataset.stored_name), dataset.sha256)


def model_file(model, settings: Settings | None = None) -> Path:
    """A local file holding an uploaded audit model's file (checked like :func:`dataset_file`)."""
    return blobs(settings).fetch(model_key(model.stored_name), model.sha256)


__all__ = ["BlobStore", "BlobError", "ChecksumMismatch", "blobs", "sha256_file", "dataset_key", "artifact_key",
           "checkpoint_key", "model_key", "dataset_file", "model_file"]
