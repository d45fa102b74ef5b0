r"""A job's fitted pipeline as ONE ONNX graph over the raw columns, built with ``onnx.helper`` from what the
worker stored with the weights (the encoder dict, the group names) and the weights themselves: no table,
no torch, so the API builds it on request (``GET /api/v1/jobs/{id}/model.onnx``) without loading a dataset.

**Inputs**: one per column the :class:`~solvers.encoding.TableEncoder` reads, named as the column, shape
``[N, 1]``:

* categorical column → ``tensor(string)``: the value as FairSolve normalises it
  (:func:`solvers.encoding.normalise_values`: text stripped of surrounding whitespace, integral numbers
  written as integers, booleans as ``True``/``False``, missing as ``__missing__``) or the cell as the training
  file holds it: its missing-value markers (``?``, ``NA``, empty, ... from the dataset's reading options) are read
  as ``__missing__`` inside the graph; one-hot over the train categories (``Equal`` against them, broadcast), an
  unseen value encodes as all zeros — as the encoder;
* numeric column → ``tensor(double)``, NaN for missing: ``x̃ = (Where(IsNaN(x), median, x) − mean) / std``
  in float64, then float32 (the encoder's own operations), followed by the ``IsNaN`` 0/1 indicator when the
  encoder added one; binary integer columns are passed on as they are.

The encoded columns are concatenated in the encoder's order into X (float32 ``[N, d]``), then the network:

* linear: f = Xwᵀ + b (``Gemm``); mlp: ``Gemm`` → activation (``Relu`` / ``Tanh``) per hidden layer, ``Gemm``;
  gbdt: LightGBM's trees as one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` (sum of the leaves = LightGBM's raw
  score, thresholds and leaves in float64), written from ``Booster.dump_model()`` by :func:`_tree_nodes`
  (onnxmltools 1.16's converter stops at opset 15 and, for a binary booster, outputs the probability only);
* the reductions' randomised classifier Q (:mod:`solvers.randomized`): f = logit(clip(Σ_k w_k h_k(x))) over its
  linear and tree components, so ŷ = 1{f > 0} is Q's weighted majority vote, as the job predicts;
* group thresholds (:mod:`solvers.algorithms.group_thresholds`): f ← f − t_{g(x), J(x)}, the group read from
  the features by the stored codebook and the component by the stored deterministic draw, in float64 as the
  module does;
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
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from solvers.encoding import MISSING

OPSET = 19  # Equal on strings (opset 19) is the newest operator the graph uses
IR_VERSION = 9  # the IR version of opset 19: runtimes from onnxruntime 1.15 on read the file
ML_DOMAIN, ML_OPSET = "ai.onnx.ml", 3  # TreeEnsembleRegressor with float64 thresholds and leaf values (gbdt)
META_KEY = "fairsolve_audit"
OUTPUTS = ("logit", "score", "decision")
_ACTIVATIONS = {"relu": "Relu", "tanh": "Tanh"}
# The constants of the solver library's modules this graph reproduces, written here because those modules load
# torch and the API builds the graph without it (tests/app/onnx_models/test_onnx_models.py checks they agree):
THRESHOLD_BUFFERS = ("columns", "scale", "lo", "hi", "label", "thresholds", "cumulative", "key")  # group_thresholds
THRESHOLD_HASH = 43758.5453   # group_thresholds._HASH: u(x) = frac(HASH · sin(κᵀx))
RANDOMIZED_CLIP = 1e-6        # solvers.randomized.CLIP: f_Q = logit(clip(p_Q, δ, 1 − δ))
MODEL_DOC = ("A FairSolve job's pipeline (encoder, model, post-processing, threshold). Inputs: one per raw column, "
             "[N, 1]; string columns hold the value stripped of surrounding whitespace, integral numbers written "
             "as integers, booleans as True/False, missing as __missing__ or as the training file's own missing-value "
             "markers; double columns NaN for missing. "
             "Outputs [N]: logit f(x), score = sigmoid(f) = P(y = 1), decision = 1{score > 0.5}.")


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


def _onehot(g: _Graph, col: str, categories: list[str], markers: Sequence[str]) -> str:
    """float32 [N, k]: 1 where the value is the category; the file's missing-value markers count as ``__missing__``
    when that is a category (``Equal`` against the markers, then a [T, k] matrix of ones in its column)."""
    cats = [str(c) for c in categories]
    hit = g.op("Cast", [g.op("Equal", [col, g.const(np.array([cats], dtype=object), f"{col}_categories")],
                             f"{col}_onehot")], f"{col}_onehot_f", to=TensorProto.FLOAT)
    markers = [m for m in dict.fromkeys(markers) if m not in cats]
    if MISSING not in cats or not markers:
        return hit
    to_missing = np.zeros((len(markers), len(cats)), dtype=np.float32)
    to_missing[:, cats.index(MISSING)] = 1.0
    marked = g.op("Cast", [g.op("Equal", [col, g.const(np.array([markers], dtype=object), f"{col}_markers")],
                                f"{col}_marked")], f"{col}_marked_f", to=TensorProto.FLOAT)
    return g.op("Add", [hit, g.op("MatMul", [marked, g.const(to_missing, f"{col}_to_missing")], f"{col}_m")],
                f"{col}_onehot_m")


def _encode(g: _Graph, plan: list[dict], markers: Sequence[str] = ()) -> tuple[list[onnx.ValueInfoProto], list[str]]:
    """Graph inputs (one per column) and the float32 [N, k] blocks of X, in the encoder's order."""
    inputs, blocks = [], []
    for p in plan:
        col = p["column"]
        if p["kind"] == "categorical":
            inputs.append(helper.make_tensor_value_info(col, TensorProto.STRING, ["N", 1]))
            blocks.append(_onehot(g, col, p["categories"], markers))
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


def _tree_nodes(booster_text: bytes, d: int) -> dict[str, Any]:
    """The attributes of one ``ai.onnx.ml`` TreeEnsembleRegressor summing LightGBM's trees (their raw score f).

    LightGBM's numerical split sends x left when x ≤ threshold; a missing x (NaN) goes the split's default
    side when its ``missing_type`` is ``NaN``, and is read as 0 when it is ``None`` (so it goes left iff
    0 ≤ threshold): ``nodes_missing_value_tracks_true`` says the same. Thresholds and leaf values stay float64
    (the ``*_as_tensor`` attributes of ai.onnx.ml opset 3), as LightGBM compares them."""
    from solvers.lightgbm_text import load_booster  # torch-free: the API builds this graph without torch

    try:
        booster = load_booster(booster_text, d)
    except ValueError as exc:
        raise ExportError(f"the gbdt state: {exc}") from None
    if booster is None:
        raise ExportError("the gbdt state is not a LightGBM text model with trees")
    dump = booster.dump_model()
    if dump.get("average_output") or dump.get("num_tree_per_iteration", 1) != 1:
        raise ExportError("only boosted binary trees (one tree per iteration, summed) are exported")
    a: dict[str, list] = {k: [] for k in ("tree", "node", "feature", "value", "mode", "true", "false", "missing",
                                          "leaf_tree", "leaf_node", "weight")}
    for tree in dump["tree_info"]:
        t, ids, stack = tree["tree_index"], iter(range(1 << 30)), [(tree["tree_structure"], None)]
        while stack:  # depth-first; a node's id is given when it is reached, its children's when they are
            node, nid = stack.pop()
            nid = next(ids) if nid is None else nid
            if "leaf_value" in node or "split_feature" not in node:
                a["leaf_tree"].append(t), a["leaf_node"].append(nid), a["weight"].append(node.get("leaf_value", 0.0))
                for key, value in (("feature", 0), ("value", 0.0), ("mode", "LEAF"), ("true", 0), ("false", 0),
                                   ("missing", 0)):
                    a[key].append(value)
                a["tree"].append(t), a["node"].append(nid)
                continue
            if node["decision_type"] != "<=" or node["missing_type"] not in ("None", "NaN"):
                raise ExportError(f"a split of type {node['decision_type']!r} / missing {node['missing_type']!r} "
                                  "has no ONNX tree node")
            left, right = next(ids), next(ids)
            missing_left = node["default_left"] if node["missing_type"] == "NaN" else 0.0 <= node["threshold"]
            for key, value in (("tree", t), ("node", nid), ("feature", node["split_feature"]),
                               ("value", node["threshold"]), ("mode", "BRANCH_LEQ"), ("true", left),
                               ("false", right), ("missing", int(missing_left))):
                a[key].append(value)
            stack += [(node["right_child"], right), (node["left_child"], left)]
    return dict(n_targets=1, aggregate_function="SUM", post_transform="NONE", domain=ML_DOMAIN,
                nodes_treeids=a["tree"], nodes_nodeids=a["node"], nodes_featureids=a["feature"],
                nodes_values_as_tensor=numpy_helper.from_array(np.asarray(a["value"], np.float64)),
                nodes_modes=a["mode"], nodes_truenodeids=a["true"], nodes_falsenodeids=a["false"],
                nodes_missing_value_tracks_true=a["missing"], target_treeids=a["leaf_tree"],
                target_nodeids=a["leaf_node"], target_ids=[0] * len(a["leaf_node"]),
                target_weights_as_tensor=numpy_helper.from_array(np.asarray(a["weight"], np.float64)))


def _trees(g: _Graph, wide: str, booster: np.ndarray, d: int) -> str:
    """LightGBM's raw score f of the float64 features ``wide`` as a [N, 1] float value."""
    return g.op("TreeEnsembleRegressor", [wide], "trees", **_tree_nodes(bytes(np.asarray(booster)), d))


def _randomized(g: _Graph, wide: str, state: dict[str, np.ndarray], d: int) -> str:
    """The reductions' randomised classifier (:mod:`solvers.randomized`) as a [N, 1] float value:
    f_Q = logit(clip(Σ_k w_k 1{h_k(x) = 1}, δ, 1 − δ)), linear components 1{x·w_k + b_k > 0} in float64 (one
    ``Gemm`` for all), then the trees 1{F_k(x) > 0} in their order; with ``decision="draw"`` (a non-empty
    ``draw`` = r) minus logit(clip(frac(|x·r|), δ, 1 − δ))."""
    weight, bias, mix = (np.asarray(state[k], np.float64) for k in ("linear.weight", "linear.bias", "mix"))
    decisions = []
    if weight.shape[0]:
        scores = g.op("Gemm", [wide, g.const(weight, "q_w"), g.const(bias, "q_b")], "q_linear", transB=1)
        decisions.append(g.op("Greater", [scores, g.const(np.float64(0), "zero_d")], "q_linear_hit"))
    trees = sorted(int(m.group(1)) for k in state if (m := re.fullmatch(r"trees\.(\d+)\.booster", k)))
    for i in trees:
        raw = _trees(g, wide, state[f"trees.{i}.booster"], d)
        decisions.append(g.op("Greater", [raw, g.const(np.float32(0), "zero_f")], f"q_tree{i}_hit"))
    if not decisions or len(mix) != weight.shape[0] + len(trees):
        raise ExportError("the randomised classifier's components and mixture weights do not agree")
    hits = [g.op("Cast", [h], "q_hit_d", to=TensorProto.DOUBLE) for h in decisions]
    joined = g.op("Concat", hits, "q_hits", axis=1) if len(hits) > 1 else hits[0]
    p = g.op("MatMul", [joined, g.const(mix.reshape(-1, 1), "q_mix")], "q_p")
    low, high = g.const(np.float64(RANDOMIZED_CLIP), "q_lo"), g.const(np.float64(1 - RANDOMIZED_CLIP), "q_hi")
    p = g.op("Clip", [p, low, high], "q_clipped")
    f = _logit(g, p, "q")
    draw = np.asarray(state.get("draw", np.zeros(0)), np.float64)
    if draw.size:   # decision "draw": f − logit(clip(u)), u = frac(|x·r|)
        a = g.op("Abs", [g.op("MatMul", [wide, g.const(draw.reshape(-1, 1), "q_r")], "q_xr")], "q_abs")
        u = g.op("Clip", [g.op("Sub", [a, g.op("Floor", [a], "q_floor")], "q_u"), low, high], "q_u_clipped")
        f = g.op("Sub", [f, _logit(g, u, "q_u")], "q_margin")
    return g.op("Cast", [f], "q_f", to=TensorProto.FLOAT)  # the module returns the features' dtype


def _logit(g: _Graph, p: str, hint: str) -> str:
    """log p − log(1 − p) of a float64 value."""
    one_minus = g.op("Sub", [g.const(np.float64(1), "one"), p], f"{hint}_rest")
    return g.op("Sub", [g.op("Log", [p], f"{hint}_log"), g.op("Log", [one_minus], f"{hint}_log_rest")], f"{hint}_logit")


def _network(g: _Graph, X: str, state: dict[str, np.ndarray], model: dict, d: int) -> str:
    """f(X) as a [N, 1] float32 value: the reductions' randomised classifier, or the score model with its
    post-processing wrappers (state under ``net.``, or at the top for gbdt, which has no ``net``)."""
    if "mix" in state and "linear.weight" in state:
        return _randomized(g, g.op("Cast", [X], "X_double", to=TensorProto.DOUBLE), state, d)
    if model.get("type") not in ("linear", "mlp", "gbdt"):
        raise ExportError(f"model type {model.get('type')!r} has no ONNX export (linear, mlp, gbdt)")
    return _wrapped(g, X, state, model, d, "" if model["type"] == "gbdt" else "net.")


def _wrapped(g: _Graph, X: str, state: dict[str, np.ndarray], model: dict, d: int, prefix: str) -> str:
    """The model under ``prefix``: a GroupShift or group-thresholds wrapper (nested in any order, as
    :func:`~solvers.algorithms.auc_postprocess.rebuild_net` reads them) around the trees or layers."""
    if f"{prefix}omega" in state and f"{prefix}column" in state:
        return _group_shift(g, X, _wrapped(g, X, state, model, d, f"{prefix}base."), state, prefix)
    if all(f"{prefix}{name}" in state for name in THRESHOLD_BUFFERS):
        return _group_thresholds(g, X, _wrapped(g, X, state, model, d, f"{prefix}base."), state, prefix)
    if model["type"] == "gbdt":
        wide = g.op("Cast", [X], "X_double", to=TensorProto.DOUBLE)  # float64 thresholds read float64 inputs
        return _trees(g, wide, state[f"{prefix}booster"], d)
    layers = _layers(state, prefix.rstrip("."))
    if layers[0][0].shape[1] != d:
        raise ExportError(f"the first layer reads {layers[0][0].shape[1]} features, the encoder gives {d}")
    activation = _ACTIVATIONS[model.get("activation", "relu")]
    h = X
    for i, (w, b) in enumerate(layers):
        h = g.op("Gemm", [h, g.const(w.astype(np.float32), f"w{i}"), g.const(b.astype(np.float32), f"b{i}")],
                 f"layer{i}", transB=1)
        if i < len(layers) - 1:
            h = g.op(activation, [h], f"act{i}")
    return h


def _group_shift(g: _Graph, X: str, h: str, state: dict[str, np.ndarray], prefix: str) -> str:
    """:class:`~solvers.algorithms.auc_postprocess.GroupShift`: ω₁ h + ω₂ where X[:, c] > ½, else h."""
    column, (w1, w2) = int(state[f"{prefix}column"]), np.asarray(state[f"{prefix}omega"], np.float32)
    cut = g.op("Slice", [X, g.const([column], "col", np.int64), g.const([column + 1], "col_end", np.int64),
                         g.const([1], "axis", np.int64)], "protected_x")
    mask = g.op("Greater", [cut, g.const(np.float32(0.5), "half")], "protected")
    moved = g.op("Add", [g.op("Mul", [h, g.const(w1, "omega1")], "scaled"), g.const(w2, "omega2")], "moved")
    return g.op("Where", [mask, moved, h], "shifted")


def _group_thresholds(g: _Graph, X: str, h: str, state: dict[str, np.ndarray], prefix: str) -> str:
    """:class:`~solvers.algorithms.group_thresholds.ThresholdNet`, its operations in float64: the group
    g(x) = label of argmin_m Σ_c s_c dist(x_c, [lo_mc, hi_mc]) (first minimum, as torch), the draw
    u(x) = frac(43758.5453 · sin(κᵀx)), the component J = min(#{j : W_gj ≤ u}, J − 1) and f − t_{g, J}."""
    b = {name: np.asarray(state[f"{prefix}{name}"]) for name in THRESHOLD_BUFFERS}
    wide = g.op("Cast", [X], "X_double", to=TensorProto.DOUBLE)
    z = g.op("Unsqueeze", [g.op("Gather", [wide, g.const(b["columns"].astype(np.int64), "t_columns")], "t_z",
                                axis=1), g.const([1], "t_axis1", np.int64)], "t_z3")
    below = g.op("Relu", [g.op("Sub", [g.const(b["lo"][None].astype(np.float64), "t_lo"), z], "t_lo_z")], "t_below")
    above = g.op("Relu", [g.op("Sub", [z, g.const(b["hi"][None].astype(np.float64), "t_hi")], "t_z_hi")], "t_above")
    weighted = g.op("Mul", [g.op("Add", [below, above], "t_out"), g.const(b["scale"].astype(np.float64), "t_s")],
                    "t_weighted")
    distance = g.op("ReduceSum", [weighted, g.const([-1], "t_last", np.int64)], "t_distance", keepdims=0)
    nearest = g.op("ArgMin", [distance], "t_nearest", axis=1, keepdims=0)
    group = g.op("Gather", [g.const(b["label"].astype(np.int64), "t_label"), nearest], "t_group")
    angle = g.op("MatMul", [wide, g.const(b["key"].astype(np.float64).reshape(-1, 1), "t_key")], "t_angle")
    v = g.op("Mul", [g.op("Sin", [angle], "t_sin"), g.const(np.float64(THRESHOLD_HASH), "t_hash")], "t_v")
    u = g.op("Sub", [v, g.op("Floor", [v], "t_floor")], "t_u")  # [N, 1]
    cumulative = g.op("Gather", [g.const(b["cumulative"].astype(np.float64), "t_cum"), group], "t_cum_g")
    count = g.op("ReduceSum", [g.op("Cast", [g.op("LessOrEqual", [cumulative, u], "t_le")], "t_le_i",
                                    to=TensorProto.INT64), g.const([1], "t_axis", np.int64)], "t_count", keepdims=1)
    j = g.op("Min", [count, g.const(np.int64(b["cumulative"].shape[1] - 1), "t_last_j")], "t_j")
    rows = g.op("Gather", [g.const(b["thresholds"].astype(np.float64), "t_thresholds"), group], "t_rows")
    t = g.op("GatherElements", [rows, j], "t_t", axis=1)  # [N, 1]
    moved = g.op("Sub", [g.op("Cast", [h], "t_h", to=TensorProto.DOUBLE), t], "t_moved")
    return g.op("Cast", [moved], "thresholded", to=TensorProto.FLOAT)


def pipeline_model(encoder: dict, state: dict[str, np.ndarray], model: dict, audit: dict[str, Any],
                   missing_values: Sequence[str] = ()) -> onnx.ModelProto:
    """The ONNX model of the whole pipeline (module docstring). ``encoder`` is :meth:`TableEncoder.to_dict`,
    ``state`` the weights (numpy), ``model`` the spec's model dict, ``audit`` what an audit of the file needs
    (target, positive_label, sensitive, group_rules, groups, job_id), stored in the metadata; ``missing_values``
    the training file's markers, read inside the graph as ``__missing__``."""
    g = _Graph()
    inputs, blocks = _encode(g, encoder["plan"], missing_values)
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
    imports = [helper.make_opsetid("", OPSET)]
    if any(node.domain == ML_DOMAIN for node in g.nodes):
        imports.append(helper.make_opsetid(ML_DOMAIN, ML_OPSET))
    out = helper.make_model(graph, opset_imports=imports, ir_version=IR_VERSION,
                            producer_name="fairsolve", doc_string=MODEL_DOC)
    helper.set_model_props(out, {META_KEY: json.dumps(audit)})
    onnx.checker.check_model(out, full_check=True)
    return out


def job_model(job_id: str, job_spec: dict, weights: Path, missing_values: Sequence[str] = ()) -> onnx.ModelProto:
    """The ONNX pipeline of a job from its weights artifact alone (the worker stores the fitted encoder and
    the group names in its safetensors metadata); ExportError when it lacks them (weights written before the
    worker stored the encoder). ``missing_values``: the markers of the job's dataset (its reading options)."""
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
    return pipeline_model(json.loads(meta["encoder"]), state, spec.model.model_dump(mode="json"), audit,
                          missing_values)
