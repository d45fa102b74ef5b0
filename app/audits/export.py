"""A job's audit model file, streamed from its weights artifact without a table or torch in the API.

The worker stores the fitted encoder and the group names in the weights' safetensors metadata. The
audit model file (:mod:`solvers.formats.model_file`) holds the same tensors with other metadata, so it is the
weights file with its header rewritten: ``u64 header length (little-endian) | JSON header | tensor
bytes``, the tensors' offsets being relative to the end of the header. The new header is written, then
the tensor bytes are copied from the artifact in 1 MiB blocks: the API holds one block at a time.
"""
from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from solvers.formats.model_file import FORMAT_KEY, FORMAT_VERSION, problem_spec

BLOCK = 1 << 20
MAX_HEADER = 100 << 20  # safetensors' own limit


@dataclass
class AuditFile:
    size: int
    chunks: Iterator[bytes]


def _read_header(path: Path) -> tuple[int, dict]:
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        if n > MAX_HEADER:
            raise ValueError(f"{path.name}: a safetensors header of {n} bytes")
        return n, json.loads(fh.read(n))


def audit_file(job_id: str, job_spec: dict, weights: Path) -> AuditFile | None:
    """The audit model file of a job whose weights carry its encoder, else None (weights written before the
    worker stored it)."""
    n, header = _read_header(weights)
    meta = header.pop("__metadata__", None) or {}
    if "encoder" not in meta:
        return None
    header["__metadata__"] = {FORMAT_KEY: FORMAT_VERSION, "spec": problem_spec(job_spec).model_dump_json(),
                              "encoder": meta["encoder"], "groups": meta.get("groups", "[]"), "job_id": job_id}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the tensor bytes stay 8-byte aligned
    data_start, size = 8 + n, weights.stat().st_size

    def chunks() -> Iterator[bytes]:
        yield struct.pack("<Q", len(raw)) + raw
        with open(weights, "rb") as fh:
            fh.seek(data_start)
            while block := fh.read(BLOCK):
                yield block

    return AuditFile(8 + len(raw) + size - data_start, chunks())
