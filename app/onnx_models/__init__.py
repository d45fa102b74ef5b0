"""ONNX models in and out: a job's whole fitted pipeline as one ONNX graph (:mod:`.export`), and uploaded ONNX
models checked before any session exists (:mod:`.check`) and scored in audits (:mod:`.scorer`)."""

#: the upload's fields an audit needs besides the graph (the label and the groups)
AUDIT_FIELDS = ("target", "positive_label", "sensitive", "group_rules")


def is_onnx_bytes(head: bytes) -> bool:
    """False for a safetensors file (an 8-byte header length, then its JSON header ``{``), else the upload is
    read as ONNX (a protobuf, whose byte 8 is never ``{`` in a model: it lies inside the first fields' tags
    and lengths)."""
    return not (len(head) > 8 and head[8:9] == b"{")


def onnx_columns(stored: dict) -> list[str]:
    """The columns an uploaded ONNX model's audit reads (target, sensitive columns, inputs) from its stored spec."""
    return list(dict.fromkeys([stored["target"], *stored["sensitive"], *(i["name"] for i in stored["inputs"])]))
