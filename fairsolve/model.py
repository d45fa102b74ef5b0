"""A trained scorer on raw tables: the solvers' fitted :class:`~solvers.data.encoding.TableEncoder` and a
score model f_θ, so that ``predict`` takes the same columns the model was trained on.

P(y = 1 | x) = σ(f_θ(x)); the predicted class is ``classes[1]`` where f_θ(x) > 0 (σ > 0.5, the
service's rule), else ``classes[0]``. Both :class:`fairsolve.FairClassifier` (in-process) and
:meth:`fairsolve.Client.model` (a job's model from the service) return predictions through it.
"""
from __future__ import annotations

import copy
import json
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load
from scipy.special import expit
from torch import nn

from solvers.models.thresholded import restore_model
from solvers.pipeline import predict_scores
from solvers.data.encoding import TableEncoder
from solvers.models.factory import ScoreModel, model_factory
from solvers.data.spec import ModelSpec, ProblemSpec


@dataclass
class FairModel:
    """A trained scorer: the fitted table encoder and the score network f_θ; ŷ = ``classes[1]`` where f_θ(x) > 0.

    Parameters
    ----------
    encoder : TableEncoder
        The job's fitted encoder (raw table → the model's features).
    network : torch.nn.Module
        The score network (post-processing and randomised models included).
    classes : numpy.ndarray
        (negative, positive) labels of the predictions.
    spec : ProblemSpec or None
        The job's spec when the model came from the service.
    groups : list of str
        The job's group names.
    """

    encoder: TableEncoder
    network: nn.Module
    classes: np.ndarray = field(default_factory=lambda: np.array([0, 1]))
    spec: ProblemSpec | None = None          # the job's spec when the model came from the service
    groups: list[str] = field(default_factory=list)

    @classmethod
    def from_state(cls, encoder: TableEncoder, model: ModelSpec, state: dict[str, torch.Tensor],
                   **kwargs: Any) -> "FairModel":
        """The spec's architecture over the encoder's features, loaded with ``state``.

        Parameters
        ----------
        encoder : TableEncoder
            The fitted encoder whose features the network reads.
        model : ModelSpec
            The architecture (``linear``, ``mlp``, ``gbdt``).
        state : dict of str to torch.Tensor
            A saved state dict (``model.safetensors``); post-processed and randomised states are rebuilt.
        **kwargs
            ``classes``, ``spec``, ``groups``.
        """
        network = restore_model(model_factory(model)(len(encoder.feature_names)), state)
        return cls(encoder, network.eval(), **kwargs)

    @classmethod
    def from_audit_bytes(cls, data: bytes) -> "FairModel":
        """A job's audit model file.

        Parameters
        ----------
        data : bytes
            The file's bytes (``GET /api/v1/jobs/{id}/audit-model``: safetensors with the job's spec and fitted
            encoder in its metadata, :mod:`solvers.formats.model_file`).
        """
        from solvers.formats.model_file import read_metadata, spec_and_encoder  # the file format's owner

        with tempfile.TemporaryDirectory() as tmp:  # safetensors reads metadata from a file only
            path = Path(tmp) / "model.safetensors"
            path.write_bytes(data)
            meta = read_metadata(path)
        spec, encoder = spec_and_encoder(meta)
        groups = json.loads(meta.get("groups", "[]"))
        return cls.from_state(encoder, spec.model, load(data), spec=spec, groups=groups)

    @property
    def columns(self) -> list[str]:
        """The feature columns ``predict`` reads (other columns are ignored)."""
        return list(self.encoder.columns)

    def _table(self, X: Any) -> pd.DataFrame:
        table = X if isinstance(X, pd.DataFrame) else pd.DataFrame(X)
        missing = [c for c in self.encoder.columns if c not in table.columns]
        if missing:
            raise ValueError(f"X lacks the model's column(s) {', '.join(map(repr, missing[:10]))}")
        return table

    def decision_function(self, X: Any) -> np.ndarray:
        """The raw scores f_θ(x), shape (n,).

        A plain linear or MLP network scores in float64 (a copy; its float32 weights and the float32 features the
        service feeds it are exact there): float32 matrix products round differently by the number of rows
        scored together, so a row's score would depend on its neighbours by an ulp (scikit-learn's subset
        invariance). Post-processed and randomised models score as the service does, so their decisions and
        draws are the job's."""
        X = self.encoder.transform(self._table(X))
        if self._float64 is None:
            return predict_scores(self.network, X, torch.device("cpu")).reshape(-1)
        with torch.no_grad():
            return self._float64(torch.as_tensor(X, dtype=torch.float32).double()).numpy().reshape(-1)

    @cached_property
    def _float64(self) -> nn.Module | None:
        """A float64 copy of a plain :class:`~solvers.models.factory.ScoreModel` (a Linear or Sequential net), else None."""
        net = getattr(self.network, "net", None)
        if not isinstance(self.network, ScoreModel) or type(net) not in (nn.Linear, nn.Sequential):
            return None
        return copy.deepcopy(self.network).double().eval()

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, 2): [1 − σ(f), σ(f)], columns in the order of ``classes``."""
        p = expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X: Any) -> np.ndarray:
        """``classes[1]`` where f_θ(x) > 0, else ``classes[0]``."""
        return self.classes[(self.decision_function(X) > 0).astype(np.intp)]
