"""ONNX export and scoring time against the service's own scoring, on the Adult test split (issue 20's figure).

For each model type (linear and MLP trained by PLADA under DP ≤ 0.02 by sex; gbdt boosted by erm): one
``solvers.run`` on Adult (80/20 split, seed 0; the train split fits the encoder), its weights written as the
worker writes them (safetensors + the encoder in the metadata), then, median of ``--repeats``:

* export: :func:`app.onnx_models.export.job_model` (what ``GET /api/v1/jobs/{id}/model.onnx`` runs: read the
  weights, build the graph, check it) plus ``SerializeToString``;
* the service's scoring of the test split: :meth:`AuditModel.score` (labels, groups, encoder, torch forward);
* onnxruntime's: :meth:`OnnxModel.score` on the same rows (the same labels and groups; feeds built per column,
  one session run), and the session run alone;

both with one thread (``torch.set_num_threads(1)``, the session's ``intra_op_num_threads = 1``), CPU seconds of
this process. Also the largest |score difference| between onnxruntime and the stored test predictions.
Writes ``bench/system/results/onnx_speed.json`` and ``.md``. Run: ``python -m bench.system.onnx_speed``.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.common.datasets import adult

RESULTS = Path(__file__).resolve().parent / "results"
BASE = {"target": "income", "positive_label": ">50K", "sensitive": ["sex"], "objective": "logistic",
        "split": {"test": 0.2, "validation": 0.0, "seed": 0}, "device": "cpu", "time_limit_s": 600}
MODELS = {
    "linear": {"model": {"type": "linear"}, "solver": {"name": "plada"}, "max_iterations": 500,
               "constraints": [{"type": "demographic_parity", "tolerance": 0.02}]},
    "mlp": {"model": {"type": "mlp", "hidden": [64, 64]}, "solver": {"name": "plada"}, "max_iterations": 500,
            "constraints": [{"type": "demographic_parity", "tolerance": 0.02}]},
    "gbdt": {"model": {"type": "gbdt", "n_estimators": 100, "num_leaves": 31}, "solver": {"name": "erm"},
             "max_iterations": 100},
}


def timed(fn, repeats: int) -> tuple[float, float, object]:
    """Median CPU and wall seconds of ``fn()`` over ``repeats`` calls, and its last value."""
    cpu, wall, value = [], [], None
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        value = fn()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return statistics.median(cpu), statistics.median(wall), value


def measure(kind: str, table, repeats: int, folder: Path) -> dict:
    import onnx
    import torch
    from safetensors.torch import save_file

    from app.audits.model import AuditModel
    from app.onnx_models.check import describe
    from app.onnx_models.export import job_model
    from app.onnx_models.scorer import OnnxModel, _feed
    from solvers import ProblemSpec, run
    from solvers.encoding import TableEncoder

    body = {**BASE, **MODELS[kind]}
    spec = ProblemSpec.model_validate(body)
    out = run(table, spec)
    weights = folder / f"{kind}.safetensors"
    save_file(dict(out.state_dict), str(weights), metadata={"encoder": json.dumps(out.encoder),
                                                            "groups": json.dumps(out.groups)})
    export_cpu, export_wall, data = timed(lambda: job_model(kind, body, weights).SerializeToString(), repeats)
    model = onnx.load_from_string(data)
    onnx_file = folder / f"{kind}.onnx"
    onnx_file.write_bytes(data)

    rows = table.loc[out.predictions["row"]]
    service = AuditModel(spec, TableEncoder.from_dict(out.encoder), dict(out.state_dict), out.groups)
    portable = OnnxModel.from_file(onnx_file, {**body, **describe(model)}, 1 << 30)
    service_cpu, service_wall, by_service = timed(lambda: service.score(rows), repeats)
    onnx_cpu, onnx_wall, by_onnx = timed(lambda: portable.score(rows), repeats)
    feeds = {i["name"]: _feed(rows[i["name"]], i) for i in portable.graph["inputs"]}
    run_cpu, run_wall, (score,) = timed(lambda: portable.session.run(["score"], feeds), repeats)
    return {"model": kind, "test_rows": len(rows), "n_features": len(out.feature_names),
            "onnx_bytes": len(data), "nodes": len(model.graph.node),
            "export_cpu_s": export_cpu, "export_wall_s": export_wall,
            "service_score_cpu_s": service_cpu, "service_score_wall_s": service_wall,
            "onnx_score_cpu_s": onnx_cpu, "onnx_score_wall_s": onnx_wall,
            "onnx_session_run_cpu_s": run_cpu, "onnx_session_run_wall_s": run_wall,
            "max_abs_score_diff_vs_stored": float(np.abs(score - out.predictions["score"].to_numpy()).max()),
            "max_abs_logit_diff_vs_service": float(np.abs(by_onnx.logits - by_service.logits).max()),
            "torch_threads": torch.get_num_threads()}


def markdown(rows: list[dict], repeats: int) -> str:
    ms = lambda s: f"{1000 * s:.1f}"  # noqa: E731
    lines = [f"# ONNX export and scoring on the Adult test split ({rows[0]['test_rows']:,} rows)", "",
             f"`python -m bench.system.onnx_speed --repeats {repeats}`: medians of {repeats} runs, CPU milliseconds of one "
             "process, one thread (torch and onnxruntime). *service* = `AuditModel.score` (labels, groups, "
             "encoder, torch); *onnx* = `OnnxModel.score` (the same labels and groups, one onnxruntime run); "
             "*run* = the session run alone on ready feeds. Export = `job_model` (read the weights artifact, "
             "build and check the graph) + serialisation.", "",
             "| model | features | ONNX bytes | export ms | service score ms | onnx score ms | onnx run ms | "
             "max abs(score − stored) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['n_features']} | {r['onnx_bytes']:,} | {ms(r['export_cpu_s'])} | "
                     f"{ms(r['service_score_cpu_s'])} | {ms(r['onnx_score_cpu_s'])} | "
                     f"{ms(r['onnx_session_run_cpu_s'])} | {r['max_abs_score_diff_vs_stored']:.1e} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--models", nargs="*", default=list(MODELS))
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    table = adult()
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(kind, table, args.repeats, Path(tmp)) for kind in args.models]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "onnx_speed.json").write_text(json.dumps({"repeats": args.repeats, "rows": rows}, indent=2) + "\n")
    (RESULTS / "onnx_speed.md").write_text(markdown(rows, args.repeats))
    print(markdown(rows, args.repeats))


if __name__ == "__main__":
    main()
