"""A job's whole fitted pipeline as one ONNX graph (``GET /api/v1/jobs/{job_id}/model.onnx``).

Built on request from the weights artifact (weights + the fitted encoder in its metadata,
:func:`app.onnx_models.export.job_model`): the API reads neither the dataset nor torch.
"""
from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response

from app.jobs.artifacts import artifact_file, weights_of
from app.api.deps import DB, CurrentCaller, get_or_404
from app.models import Dataset, Job
from app.datasets.read_options import DEFAULT_MISSING

router = APIRouter(tags=["models"])


@router.get("/api/v1/jobs/{job_id}/model.onnx", response_class=Response,
            responses={200: {"content": {"application/octet-stream": {}},
                             "description": "ONNX model: one input per raw column; outputs logit, score, decision"}})
def download_onnx(job_id: str, db: DB, caller: CurrentCaller) -> Response:
    """The job's encoder, model, post-processing and decision threshold as one ONNX graph over the raw columns
    (inputs and outputs: :mod:`app.onnx_models.export`)."""
    from app.onnx_models.export import ExportError, job_model  # onnx, loaded in the API by this route only

    job = get_or_404(db, Job, job_id, "job", caller)
    art = weights_of(db, job_id)
    if job.status != "succeeded" or art is None:
        raise HTTPException(status_code=409, detail=f"job {job_id!r} has {job.status}; no model to export")
    try:
        dataset = db.get(Dataset, job.dataset_id)  # its missing-value markers are read inside the graph
        markers = ((dataset.read_options if dataset is not None else None) or {}).get("missing_values",
                                                                                      DEFAULT_MISSING)
        model = job_model(job.id, job.spec, artifact_file(art), markers)
    except ExportError as exc:
        raise HTTPException(status_code=409, detail=f"job {job_id!r}: {exc}") from exc
    return Response(model.SerializeToString(), media_type="application/octet-stream",
                    headers={"Content-Disposition": f'attachment; filename="{job_id}.onnx"'})
