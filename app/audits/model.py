"""A job's trained model with the job's own preprocessing, applied to a table.

The preprocessing is the job's: groups and labels from its spec (``build_groups``,
``solvers.spec.labels_of``, which refuses a positive label that no row has), features through its
:class:`~solvers.encoding.TableEncoder`, which
:func:`solvers.prepare` fits on the job's train split (the split is seeded, so refitting on the
job's dataset gives the encoder the job trained with). Weights are the job's ``weights`` artifact
(safetensors, never a pickle), reloaded with :func:`~solvers.algorithms.auc_postprocess.restore_model`
so post-processed models keep their group shift.

**Audit model file** (what ``fairsolve-admin audit run --model`` reads, served by
``GET /api/v1/jobs/{job_id}/audit-model``): the weights as safetensors with the metadata of
:mod:`app.audits.model_file` (read there without torch). A job's plain weights artifact carries no
encoder, so it cannot be audited on its own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save, save_file

from solvers import ProblemSpec
from solvers.api import predict_scores, prepare
from solvers.algorithms.auc_postprocess import restore_model
from solvers.encoding import TableEncoder
from solvers.models import model_factory

from .metrics import Scored
from .model_file import (FORMAT_KEY, FORMAT_VERSION, ModelError, check_size, groups, labelled_groups, problem_spec,
                         read_metadata, required_columns, spec_and_encoder)

__all__ = ["AuditModel", "ModelError", "problem_spec"]


@dataclass
class AuditModel:
    spec: ProblemSpec
    encoder: TableEncoder
    state: dict[str, torch.Tensor]
    groups: list[str]
    job_id: str | None = None

    @classmethod
    def from_job(cls, job_id: str, job_spec: dict, weights_path: Path, training_table: pd.DataFrame) -> "AuditModel":
        """The job's weights with the encoder refitted by :func:`solvers.prepare` on its training table."""
        spec = problem_spec(job_spec)
        prepared = prepare(training_table, spec)
        return cls(spec, prepared.encoder, load_file(str(weights_path)), prepared.group_names, job_id)

    @classmethod
    def from_file(cls, path: Path) -> "AuditModel":
        """An audit model file (see :mod:`app.audits.model_file`)."""
        meta = read_metadata(path)
        spec, encoder = spec_and_encoder(meta)
        check_size(path, spec, encoder)  # before any weight or model is allocated
        try:
            state = load_file(str(path))
        except (OSError, SafetensorError) as exc:
            raise ModelError(f"--model: the weights cannot be read: {exc}") from exc
        return cls(spec, encoder, state, groups(meta), meta.get("job_id") or None)

    @classmethod
    def load_checked(cls, path: Path) -> "AuditModel":
        """The audit model in ``path``, its weights loaded into the spec's architecture once (ModelError if not)."""
        model = cls.from_file(path)
        try:
            restore_model(model_factory(model.spec.model)(len(model.encoder.feature_names)), model.state)
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            raise ModelError(f"the weights do not fit the spec's {model.spec.model.type} model: {exc}"[:500]) from exc
        return model

    def metadata(self) -> dict[str, str]:
        return {FORMAT_KEY: FORMAT_VERSION, "spec": self.spec.model_dump_json(),
                "encoder": json.dumps(self.encoder.to_dict()), "groups": json.dumps(self.groups),
                "job_id": self.job_id or ""}

    def to_bytes(self) -> bytes:
        return save({k: v.contiguous() for k, v in self.state.items()}, metadata=self.metadata())

    def save(self, path: Path) -> None:
        """Write the audit model file to ``path`` (no copy of the file in memory, unlike :meth:`to_bytes`)."""
        save_file({k: v.contiguous() for k, v in self.state.items()}, str(path), metadata=self.metadata())

    def required_columns(self) -> list[str]:
        return required_columns(self.spec, self.encoder)

    def score(self, table: pd.DataFrame) -> Scored:
        """Labels, raw scores f(x) and groups of every row of ``table`` (ModelError on a missing column)."""
        y, group, names = labelled_groups(self.spec, self.required_columns(), table)
        X = self.encoder.transform(table)
        try:
            model = restore_model(model_factory(self.spec.model)(X.shape[1]), self.state)
        except RuntimeError as exc:
            raise ModelError(f"the weights do not fit the model of {X.shape[1]} features: {exc}") from exc
        model.eval()
        logits = predict_scores(model, X, torch.device("cpu")).reshape(-1)
        return Scored(y, logits, group, names)
