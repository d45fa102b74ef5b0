r"""What an uploaded ONNX graph allocates and computes on one block of rows, known before it ever runs.

The graph's inputs get N = ``block_rows`` (the scorer's block, :data:`app.onnx_models.scorer.BLOCK_ROWS`) as
their first dimension, and ONNX's own shape inference (strict, with data propagation, so ``Shape`` → ``Gather``
→ ``Reshape`` chains resolve) gives every intermediate tensor its shape. Then, with |t| the elements of a
tensor t:

* **every tensor** a node makes must have a fully known shape (a shape read from the data cannot be bounded:
  refused), and |t| · itemsize ≤ ``max_tensor_bytes``;
* **the block's work** W = Σ_nodes Σ_outputs |t| · k_node ≤ ``max_block_ops``, where k = the contracted dimension
  of ``MatMul`` / ``Gemm`` (m·k·n multiply-adds for an m×k by k×n product, batch dimensions included in |t|)
  and k = 1 for every other operator (each output element written once: ``Concat``, ``Expand``, ``Tile`` copy
  |t| elements, an elementwise operator computes |t|). So a chain of d doubling ``Concat``\ s costs
  N·(2 + 4 + … + 2^d) and is refused at the first tensor past the cap, and ``x · xᵀ`` of N×1 inputs makes
  an N×N tensor (4.3·10^9 elements for N = 65,536).

Outputs that are not tensors (``ZipMap``'s sequence of maps) carry no shape and cost nothing here; an
``ai.onnx.ml`` estimator's unknown output shape is allowed, and any default-domain operator that reads it then
has an unknown shape and is refused. The audit run multiplies W / N by its rows and checks the product
against ``FAIRSOLVE_AUDIT_MAX_ONNX_OPS`` before scoring (:mod:`app.audits.compute`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import onnx
from onnx import TensorProto, helper, shape_inference

from solvers.formats.model_file import ModelError

CONTRACTING = {"MatMul", "Gemm"}


@dataclass(frozen=True)
class GraphLimits:
    """The caps of :func:`graph_cost` (``FAIRSOLVE_ONNX_MAX_TENSOR_BYTES``, ``FAIRSOLVE_ONNX_MAX_BLOCK_OPS``)."""

    max_tensor_bytes: int
    max_block_ops: float

    @classmethod
    def from_settings(cls, settings=None) -> "GraphLimits":
        from app.core.settings import get_settings

        settings = settings or get_settings()
        return cls(settings.onnx_max_tensor_bytes, settings.onnx_max_block_ops)


@dataclass(frozen=True)
class GraphCost:
    """A graph's work on one block: ``ops`` (W of the module docstring) and its largest tensor in bytes."""

    block_rows: int
    ops: float
    largest_bytes: int

    @property
    def ops_per_row(self) -> float:
        return self.ops / self.block_rows


def _dims(value: onnx.ValueInfoProto) -> list[int] | None:
    """The fully known shape of a tensor value, else None."""
    tensor = value.type.tensor_type
    if not tensor.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    return None if any(d is None for d in dims) else dims


def _itemsize(elem_type: int) -> int:
    if elem_type == TensorProto.STRING:
        return 8  # a pointer per element; the strings themselves come from the data
    try:
        return helper.tensor_dtype_to_np_dtype(elem_type).itemsize
    except Exception:  # an undefined element type: refused by the shape check below
        return 8


def _with_block(model: onnx.ModelProto, block_rows: int) -> onnx.ModelProto:
    """A copy whose graph inputs (initializers aside) have ``block_rows`` as their first dimension."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    initializers = {t.name for t in copy.graph.initializer}
    for value in copy.graph.input:
        if value.name in initializers or not value.type.tensor_type.HasField("shape"):
            continue
        dims = value.type.tensor_type.shape.dim
        if len(dims):
            dims[0].Clear()
            dims[0].dim_value = block_rows
    return copy


def graph_cost(model: onnx.ModelProto, block_rows: int, limits: GraphLimits) -> GraphCost:
    """The graph's :class:`GraphCost` on ``block_rows`` rows, or :class:`ModelError` naming the tensor or the
    work past its cap (module docstring)."""
    max_tensor_bytes, max_block_ops = limits.max_tensor_bytes, limits.max_block_ops
    try:
        inferred = shape_inference.infer_shapes(_with_block(model, block_rows), strict_mode=True, data_prop=True)
    except Exception as exc:  # onnx's InferenceError: shapes that contradict each other
        raise ModelError(f"the ONNX model's shapes cannot be inferred: {str(exc).splitlines()[0]}"[:300]) from exc
    graph = inferred.graph
    values = {v.name: v for v in (*graph.value_info, *graph.output, *graph.input)}
    ops, largest = 0.0, 0
    for node in graph.node:
        default_domain = node.domain in ("", "ai.onnx")
        k = 1
        if node.op_type in CONTRACTING and default_domain:
            a = values.get(node.input[0])
            a_dims = _dims(a) if a is not None else None
            if a_dims is None:
                raise _unknown(node, node.input[0])
            trans_a = any(at.name == "transA" and at.i for at in node.attribute)
            k = a_dims[0] if (node.op_type == "Gemm" and trans_a) or len(a_dims) == 1 else a_dims[-1]
        for name in node.output:
            value = values.get(name)
            if not name or (value is not None and value.type.WhichOneof("value") not in (None, "tensor_type")):
                continue  # an omitted optional output, or a sequence / map
            dims = _dims(value) if value is not None else None
            if dims is None:
                if not default_domain:
                    continue  # an ai.onnx.ml estimator's output; what reads it must have a known shape
                raise _unknown(node, name)
            elements = math.prod(dims)
            size = elements * _itemsize(value.type.tensor_type.elem_type)
            if size > max_tensor_bytes:
                raise ModelError(f"tensor {name!r} (output of {node.op_type} node {node.name or name!r}) would hold "
                                 f"{size / 2**20:,.0f} MiB on a block of {block_rows} rows (shape {dims}; at most "
                                 f"{max_tensor_bytes / 2**20:,.0f} MiB, FAIRSOLVE_ONNX_MAX_TENSOR_BYTES)")
            largest = max(largest, size)
            ops += float(elements) * k
        if ops > max_block_ops:
            raise ModelError(f"the ONNX model would compute more than {max_block_ops:.3g} multiply-adds and copied "
                             f"elements on a block of {block_rows} rows (reached at {node.op_type} node "
                             f"{node.name or node.output[0]!r}; FAIRSOLVE_ONNX_MAX_BLOCK_OPS)")
    return GraphCost(block_rows, ops, largest)


def _unknown(node: onnx.NodeProto, name: str) -> ModelError:
    return ModelError(f"the size of tensor {name!r} ({node.op_type} node {node.name or node.output[0]!r}) cannot be "
                      "inferred from the batch size: every intermediate tensor's shape must follow from the inputs' "
                      "N (no shape read from the data)")
