"""Checkpoints of a running solve: its whole numeric state as tensors plus JSON scalars (no pickle).

A checkpoint after iteration k holds

* the model's ``state_dict`` and every tensor the algorithm keeps (duals, slacks, proximal
  centres, averaged iterates, running sums — found by walking the algorithm's attributes:
  tensors (dense or sparse), lists/tuples/dicts of tensors, NumPy arrays, ``torch.Generator`` states, and the
  attributes of helper objects defined in this package, such as the mini-batch sampler's
  generator, permutation and position (frozen dataclasses are left out: ``start`` rebuilds them
  and nothing changes them);
* its int / float / bool / str attributes (step counters, stage indices, flags), and the
  state of any ``torch.optim`` optimizer it holds (moments and step counts as tensors, its
  parameter groups as JSON);
* torch's global RNG state, and the driver's counters (k, samples seen, solver seconds).

Restoring copies tensors in place where a tensor of the same shape exists (so references
held elsewhere, e.g. ``algorithm.params`` and the model's parameters, stay valid) and sets the
rest. The evaluation the next step starts from is recomputed at the restored θ on the
restored last mini-batch, so a resumed full-batch or mini-batch run continues exactly as the
uninterrupted one would (tested for algorithms whose state is tensors and scalars).
Attributes of other types are listed in ``meta["skipped"]``; an algorithm holding them resumes
from its captured state with those parts as ``start`` rebuilt them.

Files are safetensors with the scalars and counters as JSON in the header's metadata. Safetensors
holds dense arrays only, so a sparse tensor at key ``K`` (e.g. the CSR design matrix of IDCA's
score-space path) is written as its arrays: ``K@<layout>.indices`` and ``.values`` for COO,
``K@<layout>.compressed`` / ``.plain`` / ``.values`` for CSR, CSC, BSR and BSC (``crow_indices`` /
``col_indices``, or ``ccol_indices`` / ``row_indices``), each with ``K@<layout>.size``; their index
dtype (int32 or int64) is kept, and restoring rebuilds the same layout.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

SKIP = frozenset({"problem", "config", "validation", "model"})
SCALARS = (bool, int, float, str, type(None))


# sparse layout -> the methods giving its compressed and plain index arrays (COO: indices() alone)
_COMPRESSED = {torch.sparse_csr: ("crow_indices", "col_indices"), torch.sparse_csc: ("ccol_indices", "row_indices"),
               torch.sparse_bsr: ("crow_indices", "col_indices"), torch.sparse_bsc: ("ccol_indices", "row_indices")}
_LAYOUTS = {str(layout).removeprefix("torch."): layout for layout in (torch.sparse_coo, *_COMPRESSED)}


@dataclass
class Checkpoint:
    iteration: int
    samples_seen: int
    elapsed_s: float
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def _ours(value: Any) -> bool:
    return hasattr(value, "__dict__") and type(value).__module__.startswith("solvers.") \
        and not isinstance(value, (nn.Module, torch.Tensor))


def _frozen(value: Any) -> bool:
    """A frozen dataclass cannot change after ``start`` built it, so it holds no state to capture."""
    return dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen


def _walk(obj: Any, prefix: str, tensors: dict, scalars: dict, skipped: list, depth: int = 0) -> None:
    for name, value in vars(obj).items():
        if depth == 0 and name in SKIP:
            continue
        key = f"{prefix}{name}"
        if isinstance(value, torch.optim.Optimizer):
            state = value.state_dict()
            for index, per_param in state["state"].items():
                for field_name, v in per_param.items():
                    tensors[f"{key}#optim.{index}.{field_name}"] = torch.as_tensor(v)
            scalars[f"{key}#param_groups"] = state["param_groups"]
        elif isinstance(value, torch.Tensor):
            tensors[key] = value
        elif isinstance(value, torch.Generator):
            tensors[f"{key}#generator"] = value.get_state()
        elif isinstance(value, np.ndarray) and value.dtype != object:
            tensors[f"{key}#numpy"] = torch.from_numpy(np.ascontiguousarray(value))
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            for i, v in enumerate(value):
                tensors[f"{key}#{type(value).__name__}.{i}"] = v
        elif isinstance(value, dict) and value and all(isinstance(v, torch.Tensor) for v in value.values()) \
                and all(isinstance(k, str) for k in value):
            for k, v in value.items():
                tensors[f"{key}#dict.{k}"] = v
        elif isinstance(value, SCALARS):
            scalars[key] = value
        elif _frozen(value):
            continue
        elif _ours(value) and depth < 2:
            _walk(value, f"{key}.", tensors, scalars, skipped, depth + 1)
        elif value is not None and not callable(value):
            skipped.append(key)


def _parts(key: str, tensor: torch.Tensor) -> dict[str, torch.Tensor]:
    """``tensor`` as dense, contiguous CPU arrays under ``key``: itself when strided, else its sparse
    layout's index and value arrays and its size (see the module docstring)."""
    tensor = tensor.detach().to("cpu", copy=True)
    if tensor.layout == torch.strided:
        return {key: tensor.contiguous()}
    if tensor.layout == torch.sparse_coo:
        tensor = tensor.coalesce()
        arrays = {"indices": tensor.indices(), "values": tensor.values()}
    else:
        compressed, plain = _COMPRESSED[tensor.layout]
        arrays = {"compressed": getattr(tensor, compressed)(), "plain": getattr(tensor, plain)(),
                  "values": tensor.values()}
    arrays["size"] = torch.tensor(tensor.shape, dtype=torch.int64)
    layout = str(tensor.layout).removeprefix("torch.")
    return {f"{key}@{layout}.{part}": array.contiguous() for part, array in arrays.items()}


def _assembled(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The inverse of :func:`_parts` over a whole checkpoint: every sparse tensor rebuilt under its key."""
    out: dict[str, torch.Tensor] = {}
    sparse: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
    for key, value in tensors.items():
        base, sep, suffix = key.rpartition("@")
        layout, _, part = suffix.partition(".")
        if sep and layout in _LAYOUTS:
            sparse.setdefault((base, layout), {})[part] = value
        else:
            out[key] = value
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
        for (base, layout), arrays in sparse.items():
            size = tuple(arrays["size"].tolist())
            if layout == "sparse_coo":
                out[base] = torch.sparse_coo_tensor(arrays["indices"], arrays["values"], size).coalesce()
            else:
                out[base] = torch.sparse_compressed_tensor(arrays["compressed"], arrays["plain"], arrays["values"],
                                                           size, layout=_LAYOUTS[layout])
    return out


def capture(algorithm, iteration: int, samples_seen: int, elapsed_s: float) -> Checkpoint:
    """The state of ``algorithm`` (and its model) after ``iteration`` iterations."""
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, Any] = {}
    skipped: list[str] = []
    _walk(algorithm, "", tensors, scalars, skipped)
    for name, value in algorithm.model.state_dict().items():
        tensors[f"model:{name}"] = value
    tensors["rng:torch"] = torch.get_rng_state()
    cpu = {name: array for key, value in tensors.items() for name, array in _parts(key, value).items()}
    return Checkpoint(iteration, samples_seen, elapsed_s, cpu, {"scalars": scalars, "skipped": skipped})


def _resolve(root: Any, dotted: str) -> tuple[Any, str]:
    *path, last = dotted.split(".")
    obj = root
    for part in path:
        obj = getattr(obj, part)
    return obj, last


def _placed(current: Any, value: torch.Tensor, device) -> torch.Tensor:
    """``current`` updated in place when it is a tensor of the same shape and dtype, else ``value`` on its device."""
    if isinstance(current, torch.Tensor) and current.layout == value.layout == torch.strided \
            and current.shape == value.shape and current.dtype == value.dtype:
        with torch.no_grad():
            current.copy_(value)
        return current
    return value.to(current.device if isinstance(current, torch.Tensor) else device)


def restore(algorithm, checkpoint: Checkpoint) -> None:
    """Put ``checkpoint``'s state into a freshly built ``algorithm`` for the same problem and config."""
    device = algorithm.problem.device
    tensors = _assembled(checkpoint.tensors)
    algorithm.model.load_state_dict({k[len("model:"):]: v for k, v in tensors.items() if k.startswith("model:")})
    containers: dict[tuple[str, str], dict[str, torch.Tensor]] = {}
    optimizers: dict[str, dict[int, dict[str, torch.Tensor]]] = {}
    for key, value in tensors.items():
        if key.startswith(("model:", "rng:")):
            continue
        path, _, kind = key.partition("#")
        owner, name = _resolve(algorithm, path)
        if kind.startswith("optim."):
            _, index, field_name = kind.split(".", 2)
            optimizers.setdefault(path, {}).setdefault(int(index), {})[field_name] = value
        elif kind == "generator":
            getattr(owner, name).set_state(value)
        elif kind == "numpy":
            setattr(owner, name, value.numpy().copy())
        elif kind:
            container, index = kind.split(".", 1)
            containers.setdefault((path, container), {})[index] = value
        else:
            setattr(owner, name, _placed(getattr(owner, name, None), value, device))
    for (path, container), items in containers.items():
        owner, name = _resolve(algorithm, path)
        existing = getattr(owner, name, None)
        if container == "dict":
            old = existing if isinstance(existing, dict) else {}
            setattr(owner, name, {**old, **{k: _placed(old.get(k), v, device) for k, v in items.items()}})
            continue
        old = list(existing) if isinstance(existing, (list, tuple)) else []
        new = [_placed(old[int(i)] if int(i) < len(old) else None, items[i], device) for i in sorted(items, key=int)]
        if isinstance(existing, list):
            existing[:] = new  # the same list object: others may hold it
        else:
            setattr(owner, name, tuple(new) if container == "tuple" else new)
    for key, value in checkpoint.meta.get("scalars", {}).items():
        path, _, kind = key.partition("#")
        owner, name = _resolve(algorithm, path)
        if kind == "param_groups":
            getattr(owner, name).load_state_dict({"state": optimizers.get(path, {}), "param_groups": value})
        else:
            setattr(owner, name, value)
    torch.set_rng_state(tensors["rng:torch"])


def save(path: Path, checkpoint: Checkpoint) -> None:
    """Write atomically (temporary file, then rename): a crash mid-write leaves the previous checkpoint."""
    tmp = path.with_suffix(".tmp")
    meta = {"iteration": checkpoint.iteration, "samples_seen": checkpoint.samples_seen,
            "elapsed_s": checkpoint.elapsed_s, **checkpoint.meta}
    save_file(checkpoint.tensors, str(tmp), metadata={"fairsolve": json.dumps(meta)})
    os.replace(tmp, path)


def load(path: Path) -> Checkpoint:
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as fh:
        meta = json.loads(fh.metadata()["fairsolve"])
    tensors = load_file(str(path))
    return Checkpoint(int(meta.pop("iteration")), int(meta.pop("samples_seen")), float(meta.pop("elapsed_s")),
                      tensors, meta)
