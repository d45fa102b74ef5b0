r"""A job's fitted pipeline as ONE ONNX graph over the raw columns, built with ``onnx.helper`` from what the
worker stored with the weights (the encoder dict, the group names) and the weights themselves: no table,
no torch, so the API builds it on request (``GET /api/v1/jobs/{id}/model.onnx``) without loading a dataset.

**Inputs**: one per column the :class:`~solvers.encoding.TableEncoder` reads, named as the column, shape
``[N, 1]``:

* categorical column → ``tensor(string)``: the value as FairSolve normalises it
  (:func:`solvers.encoding.normalise_values`: text stripped of surrounding whitespace, integral numbers
  written as integers, booleans as ``True``/``False``, missing as ``__missing__``); one-hot over the train
  categories (``Equal`` against them, broadcast), an unseen value encodes as all zeros — as the encoder;
* numeric column → ``tensor(double)``, NaN for missing: ``x̃ = (Where(IsNaN(x), median, x) − mean) / std``
  in float64, then float32 (the encoder's own operations), followed by the ``IsNaN`` 0/1 indicator when the
  encoder added one; binary integer columns are passed on as they are.

The encoded columns are concatenated in the encoder's order into X (float32 ``[N, d]``), then the network:

* linear: f = Xwᵀ + b (``Gemm``); mlp: ``Gemm`` → activation (``Relu`` / ``Tanh``) per hidden layer, ``Gemm``;
* GroupShift (the xAUC post-processing of :mod:`solvers.algorithms.auc_postprocess`):
  f ← ``Where(X[:, c] > ½, ω₁ f + ω₂, f)``. The exact-enforcement threshold correction is already folded into
  a linear model's weights, so it needs nothing more.

**Outputs** (shape ``[N]``): ``logit`` = f(x) (double), ``score`` = σ(f) (double; ``P(y = 1 | x)``, what the job's
predictions artifact stores), ``decision`` = 1{score > ½} (int64, FairSolve's decision threshold: ŷ = 1{f > 0}).
``metadata_props["fairsolve_audit"]`` (JSON) holds target, positive label, sensitive columns, group rules and
group names, so the file uploaded again (``POST /api/v1/models``) is audited without any form field.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 19  # Equal on strings (opset 19) is the newest operator the graph uses
IR_VERSION = 9  # the IR version of opset 19: runtimes from onnxruntime 1.15 on read the file
META_KEY = "fairsolve_audit"
OUTPUTS = ("logit", "score", "decision")
_ACTIVATIONS = {"relu": "Relu", "tanh": "Tanh"}


class ExportError(ValueError):
    """The model cannot be written as ONNX; the message says why."""


class _Graph:
    """Nodes and constants of the graph being built, with unique value names."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._n = 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{re.sub(r'[^A-Za-z0-9_]', '_', hint)[:40]}_{self._n}"

    def const(self, value: Any, hint: str, dtype=None) -> str:
        name = self.name(hint)
        array = np.asarray(value, dtype=dtype)
        if array.dtype.kind in "OU":
            tensor = helper.make_tensor(name, TensorProto.STRING, array.shape,
                                        [str(v).encode() for v in array.reshape(-1)])
        else:
            tensor = numpy_helper.from_array(array, name)
        self.initializers.append(tensor)
        return name

    def op(self, op_type: str, inputs: list[str], hint: str, output: str | None = None, **attrs) -> str:
        out = output or self.name(hint)
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out


def _encode(g: _Graph, plan: list[dict]) -> tuple[list[onnx.ValueInfoProto], list[str]]:
    """Graph inputs (one per column) and the float32 [N, k] blocks of X, in the encoder's order."""
    inputs, blocks = [], []
    for p in plan:
        col = p["column"]
        if p["kind"] == "categorical":
            inputs.append(helper.make_tensor_value_info(col, TensorProto.STRING, ["N", 1]))
            cats = g.const(np.array([[str(c) for c in p["categories"]]], dtype=object), f"{col}_categories")
            hit = g.op("Equal", [col, cats], f"{col}_onehot")
            blocks.append(g.op("Cast", [hit], f"{col}_onehot_f", to=TensorProto.FLOAT))
            continue
        inputs.append(helper.make_tensor_value_info(col, TensorProto.DOUBLE, ["N", 1]))
        if p["kind"] == "binary":
            blocks.append(g.op("Cast", [col], f"{col}_f", to=TensorProto.FLOAT))
            continue
        missing = g.op("IsNaN", [col], f"{col}_missing")
        filled = g.op("Where", [missing, g.const(np.float64(p["median"]), f"{col}_median"), col], f"{col}_filled")
        centred = g.op("Sub", [filled, g.const(np.float64(p["mean"]), f"{col}_mean")], f"{col}_centred")
        z = g.op("Div", [centred, g.const(np.float64(p["std"]), f"{col}_std")], f"{col}_z")
        blocks.append(g.op("Cast", [z], f"{col}_z_f", to=TensorProto.FLOAT))
        if p.get("missing_indicator"):
            blocks.append(g.op("Cast", [missing], f"{col}_indicator", to=TensorProto.FLOAT))
    return inputs, blocks


def _layers(state: dict[str, np.ndarray], prefix: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(weight, bias) of the network's Linear layers under ``prefix``, in order: ``prefix.weight`` (linear) or
    ``prefix.<i>.weight`` (an MLP's ``nn.Sequential``)."""
    if f"{prefix}.weight" in state:
        return [(state[f"{prefix}.weight"], state[f"{prefix}.bias"])]
    index = sorted(int(m.group(1)) for k in state if (m := re.fullmatch(re.escape(prefix) + r"\.(\d+)\.weight", k)))
    if not index:
        raise ExportError(f"no linear layer under {prefix!r} in the weights ({', '.join(sorted(state))[:200]})")
    return [(state[f"{prefix}.{i}.weight"], state[f"{prefix}.{i}.bias"]) for i in index]


def _network(g: _Graph, X: str, state: dict[str, np.ndarray], model: dict, d: int) -> str:
    """f(X) as a [N, 1] float32 value: the layers, then the group shift when the state has one."""
    if "mix" in state:
        raise ExportError("a randomised classifier (solver 'reductions') has no ONNX export: its audit model file "
                          "(GET /api/v1/jobs/{id}/audit-model) serves it")
    shifted = "net.omega" in state and "net.column" in state
    layers = _layers(state, "net.base" if shifted else "net")
    if model.get("type") not in ("linear", "mlp"):
        raise ExportError(f"model type {model.get('type')!r} has no ONNX export (linear, mlp)")
    if layers[0][0].shape[1] != d:
        raise ExportError(f"the first layer reads {layers[0][0].shape[1]} features, the encoder gives {d}")
    activation = _ACTIVATIONS[model.get("activation", "relu")]
    h = X
    for i, (w, b) in enumerate(layers):
        h = g.op("Gemm", [h, g.const(w.astype(np.float32), f"w{i}"), g.const(b.astype(np.float32), f"b{i}")],
                 f"layer{i}", transB=1)
        if i < len(layers) - 1:
            h = g.op(activation, [h], f"act{i}")
    if shifted:
        column, (w1, w2) = int(state["net.column"]), np.asarray(state["net.omega"], np.float32)
        cut = g.op("Slice", [X, g.const([column], "col", np.int64), g.const([column + 1], "col_end", np.int64),
                             g.const([1], "axis", np.int64)], "protected_x")
        mask = g.op("Greater", [cut, g.const(np.float32(0.5), "half")], "protected")
        moved = g.op("Add", [g.op("Mul", [h, g.const(w1, "omega1")], "scaled"), g.const(w2, "omega2")], "moved")
        h = g.op("Where", [mask, moved, h], "shifted")
    return h


def pipeline_model(encoder: dict, state: dict[str, np.ndarray], model: dict, audit: dict[str, Any]) -> onnx.ModelProto:
    """The ONNX model of the whole pipeline (module docstring). ``encoder`` is :meth:`TableEncoder.to_dict`,
    ``state`` the weights (numpy), ``model`` the spec's model dict, ``audit`` what an audit of the file needs
    (target, positive_label, sensitive, group_rules, groups, job_id), stored in the metadata."""
    g = _Graph()
    inputs, blocks = _encode(g, encoder["plan"])
    if not blocks:
        raise ExportError("the model reads no feature column")
    X = g.op("Concat", blocks, "X", axis=1) if len(blocks) > 1 else blocks[0]
    h = _network(g, X, state, model, sum(len(p["categories"]) if p["kind"] == "categorical"
                                          else 1 + bool(p.get("missing_indicator")) for p in encoder["plan"]))
    flat = g.op("Reshape", [h, g.const([-1], "flat", np.int64)], "f")
    logit = g.op("Cast", [flat], "logit", output="logit", to=TensorProto.DOUBLE)
    score = g.op("Sigmoid", [logit], "score", output="score")
    above = g.op("Greater", [score, g.const(np.float64(0.5), "threshold")], "above")
    g.op("Cast", [above], "decision", output="decision", to=TensorProto.INT64)
    outputs = [helper.make_tensor_value_info("logit", TensorProto.DOUBLE, ["N"]),
               helper.make_tensor_value_info("score", TensorProto.DOUBLE, ["N"]),
               helper.make_tensor_value_info("decision", TensorProto.INT64, ["N"])]
    graph = helper.make_graph(g.nodes, "fairsolve_pipeline", inputs, outputs, g.initializers)
    out = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION,
                            producer_name="fairsolve", doc_string=__doc__.split("\n\n")[1])
    helper.set_model_props(out, {META_KEY: json.dumps(audit)})
    onnx.checker.check_model(out, full_check=True)
    return out


def job_model(job_id: str, job_spec: dict, weights: Path) -> onnx.ModelProto:
    """The ONNX pipeline of a job from its weights artifact alone (the worker stores the fitted encoder and
    the group names in its safetensors metadata); ExportError when it lacks them (weights written before the
    worker stored the encoder)."""
    from safetensors import safe_open

    from app.audits.model_file import problem_spec

    with safe_open(str(weights), framework="numpy") as fh:
        meta = fh.metadata() or {}
        state = {k: fh.get_tensor(k) for k in fh.keys()}
    if "encoder" not in meta:
        raise ExportError("the job's weights carry no fitted encoder (a job of an older version): train it again "
                          "to export it")
    spec = problem_spec(job_spec)
    audit = {"target": spec.target, "positive_label": spec.positive_label, "sensitive": spec.sensitive,
             "group_rules": {k: v.model_dump(mode="json") for k, v in (spec.group_rules or {}).items()},
             "groups": json.loads(meta.get("groups", "[]")), "job_id": job_id}
    return pipeline_model(json.loads(meta["encoder"]), state, spec.model.model_dump(mode="json"), audit)
