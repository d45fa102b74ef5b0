"""gbdt on Adult (sex, demographic parity ≤ 0.02): ``erm`` (plain LightGBM) and ``fair_boosting`` through
:func:`solvers.run` (the service's split, encoder and exact enforcement), and the encoder choice for LightGBM (the
one-hot :class:`~solvers.encoding.TableEncoder` vs LightGBM's native categorical splits, adult.data → adult.test).

    python -m bench.quality.fair_boosting [--seeds 0 1] [--out bench/quality/results/fair_boosting]

Seconds are CPU seconds of this process (``FAIRSOLVE_GBDT_THREADS`` threads, default 1) and wall seconds.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bench.common.datasets import ADULT_COLUMNS, adult, data_dir
from solvers import ProblemSpec
from solvers.api import run

TOLERANCE = 0.02


def solve_cell(table: pd.DataFrame, solver: str, seed: int) -> dict:
    spec = ProblemSpec(target="income", positive_label=">50K", sensitive=["sex"], model={"type": "gbdt"},
                       solver={"name": solver}, constraints=[{"type": "demographic_parity", "tolerance": TOLERANCE}],
                       split={"test": 0.2, "validation": 0.2, "seed": seed}, seed=seed)
    cpu, wall = time.process_time(), time.perf_counter()
    out = run(table, spec)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    test, train = out.metrics["test"], out.metrics["train"]
    return {"solver": solver, "seed": seed, "test_accuracy": test["accuracy"], "test_dp": test["demographic_parity"],
            "train_dp": train["demographic_parity"], "iterations": out.iterations, "cpu_s": cpu, "wall_s": wall,
            "enforcement": (out.enforcement or {}).get("method")}


def encoders() -> list[dict]:
    """LightGBM (200 trees, the gbdt defaults) on adult.data → adult.test: one-hot vs native categorical."""
    import lightgbm as lgb

    from solvers.encoding import TableEncoder
    from solvers.gbdt import lightgbm_params
    from solvers.spec import ModelSpec

    train = adult()
    test = pd.read_csv(data_dir() / "adult.test", header=None, names=ADULT_COLUMNS, skipinitialspace=True,
                       na_values="?", skiprows=1).dropna(how="all")
    y_train = (train["income"] == ">50K").to_numpy(int)
    y_test = (test["income"] == ">50K.").to_numpy(int)
    features = ADULT_COLUMNS[:-1]
    params = {**lightgbm_params(ModelSpec(type="gbdt")), "objective": "binary"}
    encoder = TableEncoder(features).fit(train)
    native_train, native_test = train[features].copy(), test[features].copy()
    for column in features:
        if not pd.api.types.is_numeric_dtype(native_train[column]):
            native_train[column] = native_train[column].astype("category")
            native_test[column] = pd.Categorical(native_test[column], categories=native_train[column].cat.categories)
    rows = []
    for name, (a, b) in {"one-hot (TableEncoder)": (encoder.transform(train), encoder.transform(test)),
                         "native categorical": (native_train, native_test)}.items():
        cpu = time.process_time()
        booster = lgb.train(params, lgb.Dataset(a, label=y_train), num_boost_round=200)
        cpu = time.process_time() - cpu
        rows.append({"encoder": name, "test_accuracy": float(((booster.predict(b) > 0.5) == y_test).mean()),
                     "width": int(a.shape[1]), "cpu_s": cpu})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", type=Path, default=None, help="write OUT.json and OUT.md")
    args = parser.parse_args()
    table = adult()
    cells = [solve_cell(table, solver, seed) for seed in args.seeds for solver in ("erm", "fair_boosting")]
    enc = encoders()
    lines = [f"# gbdt on Adult (sex, DP ≤ {TOLERANCE})", "",
             "| solver | seed | test accuracy | test DP | train DP | rounds | enforcement | CPU s | wall s |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {c['solver']} | {c['seed']} | {c['test_accuracy']:.4f} | {c['test_dp']:.4f} | {c['train_dp']:.4f} | "
              f"{c['iterations']} | {c['enforcement']} | {c['cpu_s']:.1f} | {c['wall_s']:.1f} |" for c in cells]
    lines += ["", "Encoder (adult.data → adult.test, 200 trees):", "", "| encoder | width | test accuracy | CPU s |",
              "|---|---|---|---|"]
    lines += [f"| {r['encoder']} | {r['width']} | {r['test_accuracy']:.4f} | {r['cpu_s']:.2f} |" for r in enc]
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps({"cells": cells, "encoders": enc}, indent=2))
        args.out.with_suffix(".md").write_text(text + "\n")
    if np.isnan([c["test_accuracy"] for c in cells]).any():
        raise SystemExit("a run gave no accuracy")


if __name__ == "__main__":
    main()
