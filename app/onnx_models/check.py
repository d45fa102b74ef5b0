r"""An uploaded ONNX model checked before any inference session exists.

Order (each step refuses with :class:`~solvers.formats.model_file.ModelError`, which the upload answers as a 422
naming ``file``): the file's size (``FAIRSOLVE_MAX_ONNX_BYTES``, before it is parsed); the protobuf parse
(``onnx.load`` with external data off); then the graph:

* **opsets**: only the default domain (``ai.onnx``, opsets ``MIN_OPSET``–``MAX_OPSET``) and ``ai.onnx.ml``
  (the converters' trees, linear models, encoders); any other domain is a custom operator and is refused,
  as are model-local functions;
* **operators**: every node's operator is in :data:`ALLOWED_OPS` (elementwise math, matrix products, the
  usual activations, shape and indexing operators, comparisons, casts, reductions and the ``ai.onnx.ml``
  estimators). Control flow (``If``, ``Loop``, ``Scan``: subgraphs), random operators, sequences, operators
  whose output size is read from the data (``ConstantOfShape``, ``Expand``, ``Tile``, ``Range``, ``Pad``) and
  anything else is refused by name. Intermediate sizes and the work per block of rows are bounded by shape
  inference (:mod:`.bounds`, called by the upload and the scorer);
* **no file references**: no tensor stored as external data (initializers, ``Constant`` values);
* **limits**: at most ``MAX_NODES`` nodes, ``MAX_PARAMETERS`` stored elements, ``MAX_INPUTS`` inputs; each
  stored tensor holds exactly prod(dims) × itemsize bytes (:func:`stored_elements`);
* ``onnx.checker.check_model`` (the format's own consistency checks).

**Inputs** are matched to the data's columns BY NAME: every graph input (initializers aside) is one column,
shape ``[N]`` or ``[N, 1]``, of type ``string`` (the value as FairSolve normalises it, see
:mod:`app.onnx_models.export`), ``float``/``double`` (NaN for missing), ``int64``/``int32`` or ``bool``.

**The output used** (:func:`pick_output`), among the graph's tensor outputs:

1. one named ``logit`` → a raw score f(x), used as it is (ŷ = 1{f > 0});
2. else the floating-point output (one named ``score``, ``probability``, ``probabilities`` or
   ``output_probability`` when there are several) → P(y = 1 | x); a ``[N, 2]`` output is read at column 1
   (the converters' class probabilities); the audit takes f = log p − log(1 − p), so ŷ = 1{p > ½};
3. else an integer, boolean or string output (a predicted label) → ŷ = 1 where it equals the positive
   label (1 / True for numbers); f = ±∞, so metrics that need a score (AUC, log loss, partial metrics) see
   the hard decisions.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto, helper

from solvers.formats.model_file import ModelError
from solvers.data.spec import MAX_PARAMETERS

MIN_OPSET, MAX_OPSET, MAX_ML_OPSET = 7, 23, 5
MAX_NODES, MAX_INPUTS = 20_000, 2_000
ML = "ai.onnx.ml"
ALLOWED_OPS: dict[str, frozenset[str]] = {
    "": frozenset("""
        Abs Add And ArgMax ArgMin Cast CastLike Ceil Clip Concat Constant Div Elu Equal Erf Exp Flatten Floor
        Gather GatherElements GatherND Gelu Gemm Greater GreaterOrEqual HardSigmoid HardSwish Identity IsInf IsNaN
        LeakyRelu Less LessOrEqual Log LogSoftmax MatMul Max Mean Min Mod Mul Neg
        Not Or PRelu Pow Reciprocal ReduceL1 ReduceL2 ReduceLogSumExp ReduceMax ReduceMean ReduceMin ReduceProd
        ReduceSum ReduceSumSquare Relu Reshape Round Selu Shape Sigmoid Sign Sin Size Slice Softmax Softplus Softsign
        Split Sqrt Squeeze Sub Sum Tanh TopK Transpose Unsqueeze Where Xor""".split()),
    ML: frozenset("""
        ArrayFeatureExtractor Binarizer CastMap CategoryMapper FeatureVectorizer Imputer LabelEncoder
        LinearClassifier LinearRegressor Normalizer OneHotEncoder Scaler SVMClassifier SVMRegressor TreeEnsemble
        TreeEnsembleClassifier TreeEnsembleRegressor ZipMap""".split()),
}
INPUT_TYPES = {TensorProto.STRING: "string", TensorProto.FLOAT: "float", TensorProto.DOUBLE: "double",
               TensorProto.INT64: "int64", TensorProto.INT32: "int32", TensorProto.BOOL: "bool"}
FLOATS = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16}
LABELS = {TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, TensorProto.STRING}
PROBABILITY_NAMES = ("score", "probability", "probabilities", "output_probability")


def _shape(value: onnx.ValueInfoProto) -> list[int | str | None]:
    dims = value.type.tensor_type.shape.dim if value.type.tensor_type.HasField("shape") else None
    if dims is None:
        return []
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in dims]


def _tensors(graph: onnx.GraphProto):
    """Every tensor the graph stores: initializers and ``Constant`` / attribute tensors."""
    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors


DATA_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data", "raw_data")


def stored_elements(tensor: TensorProto) -> int:
    """prod(dims), once the tensor is seen to store exactly that many values: ``raw_data`` of prod(dims) ×
    itemsize bytes, or prod(dims) entries of its typed field (two per complex number), and no other field
    (ModelError otherwise: a ``[1]`` tensor holding 60 MB is not one weight)."""
    expected = math.prod(tensor.dims)
    used = [f for f in DATA_FIELDS if len(getattr(tensor, f))]
    if len(used) > 1:
        raise ModelError(f"tensor {tensor.name!r} stores its values in several fields ({', '.join(used)})")
    if not used:
        stored, unit = 0, 0
    elif used[0] == "raw_data":
        if tensor.data_type == TensorProto.STRING:
            raise ModelError(f"tensor {tensor.name!r}: string tensors cannot use raw_data")
        try:
            unit = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        except Exception as exc:
            raise ModelError(f"tensor {tensor.name!r} has an unknown element type {tensor.data_type}") from exc
        stored = len(tensor.raw_data)
    else:
        unit = 2 if tensor.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else 1
        stored = len(getattr(tensor, used[0]))
    if stored != expected * unit:
        what = f"{stored} bytes" if used and used[0] == "raw_data" else f"{stored} values"
        raise ModelError(f"tensor {tensor.name!r} of dims {list(tensor.dims)} stores {what}; prod(dims) × "
                         f"{'itemsize' if used and used[0] == 'raw_data' else 'values per element'} = "
                         f"{expected * unit}")
    return expected


def _check_graph(model: onnx.ModelProto) -> None:
    for opset in model.opset_import:
        domain = opset.domain or ""
        if domain in ("", "ai.onnx"):
            if not MIN_OPSET <= opset.version <= MAX_OPSET:
                raise ModelError(f"opset {opset.version} of the default domain is not supported "
                                 f"({MIN_OPSET} to {MAX_OPSET})")
        elif domain == ML:
            if not 1 <= opset.version <= MAX_ML_OPSET:
                raise ModelError(f"opset {opset.version} of {ML} is not supported (1 to {MAX_ML_OPSET})")
        else:
            raise ModelError(f"the model imports operator domain {domain!r}: custom operators are not allowed "
                             f"(only ai.onnx and {ML})")
    if len(model.functions):
        raise ModelError(f"the model defines functions ({', '.join(f.name for f in model.functions)[:200]}): "
                         "custom operators are not allowed")
    graph = model.graph
    if len(graph.node) > MAX_NODES:
        raise ModelError(f"the graph has {len(graph.node)} nodes (more than {MAX_NODES})")
    for node in graph.node:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        if node.op_type not in ALLOWED_OPS.get(domain, ()):
            where = f" of domain {node.domain!r}" if node.domain else ""
            raise ModelError(f"operator {node.op_type!r}{where} (node {node.name or node.output[0]!r}) is not "
                             "allowed: see the ONNX section of the docs for the allowed operators")
    stored = 0
    for tensor in _tensors(graph):
        if tensor.data_location == TensorProto.EXTERNAL or len(tensor.external_data):
            raise ModelError(f"tensor {tensor.name!r} refers to external data (a file): every weight must be "
                             "stored in the model file")
        stored += stored_elements(tensor)
    for sparse in graph.sparse_initializer:
        if any(t.data_location == TensorProto.EXTERNAL or len(t.external_data)
               for t in (sparse.values, sparse.indices)):
            raise ModelError(f"sparse tensor {sparse.values.name!r} refers to external data (a file)")
        stored += stored_elements(sparse.values) + stored_elements(sparse.indices)
    if stored > MAX_PARAMETERS:
        raise ModelError(f"the graph stores {stored} weights (more than {MAX_PARAMETERS})")


def graph_inputs(model: onnx.ModelProto) -> list[dict[str, str]]:
    """The model's inputs as ``{"name", "type"}``, one per column (ModelError on an input that is not one)."""
    initializers = {t.name for t in model.graph.initializer}
    out = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        kind = value.type.WhichOneof("value")
        elem = value.type.tensor_type.elem_type if kind == "tensor_type" else None
        if elem not in INPUT_TYPES:
            raise ModelError(f"input {value.name!r} is not a string, float, integer or bool tensor")
        shape = _shape(value)
        if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            raise ModelError(f"input {value.name!r} has shape {shape}: the model must take one input per column, "
                             "named as the column, of shape [N] or [N, 1]")
        out.append({"name": value.name, "type": INPUT_TYPES[elem], "rank": len(shape)})
    if not out:
        raise ModelError("the model has no input")
    if len(out) > MAX_INPUTS:
        raise ModelError(f"the model has {len(out)} inputs (more than {MAX_INPUTS})")
    return out


def pick_output(model: onnx.ModelProto) -> dict[str, Any]:
    """The output an audit reads and how (module docstring): ``{"name", "kind", "column"}``."""
    tensors = [o for o in model.graph.output if o.type.WhichOneof("value") == "tensor_type"]
    by_name = {o.name: o for o in tensors}

    def usable(o, kinds) -> dict[str, Any] | None:
        shape = _shape(o)
        if o.type.tensor_type.elem_type not in kinds or not shape or len(shape) > 2:
            return None
        if len(shape) == 2 and shape[1] not in (1, 2):
            return None
        return {"name": o.name, "column": 1 if len(shape) == 2 and shape[1] == 2 else None}

    if "logit" in by_name and (found := usable(by_name["logit"], FLOATS)):
        return {**found, "kind": "logit"}
    floats = [f for o in tensors if (f := usable(o, FLOATS))]
    named = [f for f in floats if f["name"] in PROBABILITY_NAMES]
    if len(floats) == 1 or named:
        return {**(named or floats)[0], "kind": "probability"}
    if floats:
        raise ModelError(f"the model has several score outputs ({', '.join(f['name'] for f in floats)}): name the "
                         "one to audit 'score' (a probability) or 'logit' (a raw score)")
    labels = [f for o in tensors if (f := usable(o, LABELS)) and f["column"] is None]
    if len(labels) == 1:
        return {**labels[0], "kind": "label"}
    raise ModelError("the model needs one output of shape [N], [N, 1] or [N, 2]: a score, a probability or a "
                     "predicted label (outputs: " + ", ".join(o.name for o in model.graph.output)[:200] + ")")


def load_checked(path: Path, max_bytes: int) -> onnx.ModelProto:
    """The ONNX model in ``path`` after every check of the module docstring (ModelError otherwise)."""
    size = path.stat().st_size
    if size > max_bytes:
        raise ModelError(f"the ONNX model has {size} bytes (more than {max_bytes}, FAIRSOLVE_MAX_ONNX_BYTES)")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError and friends: the bytes are not a model
        raise ModelError(f"neither an audit model file (safetensors) nor an ONNX model: {exc}"[:300]) from exc
    if not model.HasField("graph") or not len(model.opset_import):
        raise ModelError("neither an audit model file (safetensors) nor an ONNX model (no graph or opset)")
    _check_graph(model)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise ModelError(f"the ONNX model is invalid: {str(exc).splitlines()[0]}"[:300]) from exc
    return model


def describe(model: onnx.ModelProto) -> dict[str, Any]:
    """What the upload stores about the graph (``inputs``, ``output``) for audits; checks them."""
    return {"format": "onnx", "inputs": graph_inputs(model), "output": pick_output(model),
            "opsets": {o.domain or "ai.onnx": o.version for o in model.opset_import}}


def input_problems(inputs: list[dict[str, str]], columns: dict[str, str]) -> str | None:
    """Why the data's columns (name → kind: integer, float, boolean, string, ...) cannot feed the inputs, or
    None: a missing column, or a numeric input fed by a column that is not numeric."""
    missing = [i["name"] for i in inputs if i["name"] not in columns]
    if missing:
        return f"the data lacks the column(s) of the model's input(s) {', '.join(map(repr, missing[:20]))}"
    for i in inputs:
        kind = columns[i["name"]]
        if i["type"] != "string" and kind not in ("integer", "float", "boolean"):
            return (f"input {i['name']!r} takes {i['type']} numbers but column {i['name']!r} holds {kind} values; "
                    "a model input of text must be of type string")
    return None
