r"""What any group-threshold rule can keep at a sample's size: the attainable keep-rate of a population cell.

The population protocol (:mod:`bench.quality.population`) asks a default job to keep its tolerance ε on the
population in at least 5/6 of bootstrap samples. Before that is called out of reach in a cell, this module computes
what a rule with PERFECT scores could keep there. The oracle knows the population P itself: a LightGBM model with
LightGBM's defaults boosted on every row of P (it has seen every row the population holds, so no fit to a sample
ranks the rows of a group better). Each seeded bootstrap sample of n rows (the protocol's rows,
:func:`~bench.quality.population.bootstrap_rows`) keeps 90 % as its fitting rows (the protocol's test share left
out), and on those rows the oracle's scores get one threshold per group:

* **demographic parity**: every group selects the same share r of its fitting rows (its ⌈r n_g⌉ highest scores;
  the sample's gap is 0 up to one row of the smallest group), r the share of best accuracy on the fitting rows;
* **equal opportunity** (the TPR band of equalized odds): every group accepts the same share τ of its fitting
  POSITIVES, τ of best accuracy on the fitting rows. Equalized odds' gap is at least this band's, so its keep-rate
  is at most this one's.

The population rates of that rule are exact (every row of P, :func:`rule_metrics`),
so the only error left is the sample's: the rate of a group of n_g fitting rows is off by about
√(r (1 − r) / n_g) on the population. The share of samples whose population gap is ≤ ε is the keep-rate that
deterministic thresholds aimed at gap 0 reach with perfect scores; a job that aims at a positive gap, or fits its
scores to the sample, keeps less. A rate near 0 or 1 has a smaller error (the constant rule keeps every tolerance,
at the base rate's accuracy), so the report also gives ``at target``: the most accurate share r (or τ) on the grid,
the same for every sample, whose rule keeps ε in at least :data:`TARGET` of the samples, and its mean accuracy.

Run::

    python -m bench.quality.attainable --tables adult_race5 adult_sex bank_age compas_race --samples 200

Results in ``bench/quality/results/attainable.md``.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from bench.quality.population import POPULATIONS, RESULTS, Context, bootstrap_rows

REPORT = RESULTS / "attainable.md"
#: the shares r (selection rate) or τ (TPR) the rule is tried at
GRID = np.round(np.arange(0.01, 1.0, 0.01), 2)
#: the protocol's fitting rows: the sample without its test share
FITTING_SHARE = 0.9
#: the keep-rate the protocol asks of a default job
TARGET = 5 / 6


def thresholds(scores: np.ndarray, group: np.ndarray, K: int, shares: np.ndarray) -> np.ndarray:
    """(len(shares), K) thresholds t: the rule s > t[i, g] accepts the ⌈shares[i] · m_g⌉ highest of group g's
    ``scores`` (m_g of them; a row drawn twice counts twice), t halfway below the last accepted score."""
    t = np.full((len(shares), K), -np.inf)
    for g in range(K):   # K ≤ 5 groups: a bench's loop, not a solver's
        s = np.sort(scores[group == g])[::-1]
        m = len(s)
        if m == 0:
            continue
        k = np.ceil(shares * m).astype(np.int64)
        last = s[np.clip(k - 1, 0, m - 1)]
        below = np.where(k < m, s[np.clip(k, 0, m - 1)], -np.inf)
        t[:, g] = np.where(k == 0, s[0] + 1.0, (last + below) / 2)
    return t


def rule_metrics(decisions: np.ndarray, y: np.ndarray, onehot: np.ndarray) -> dict[str, np.ndarray]:
    """Exact accuracy, DP gap and TPR gap over P of each row of ``decisions`` (rules × rows of P, 0/1)."""
    positive = y == 1

    def gap(mask: np.ndarray) -> np.ndarray:
        rates = (decisions[:, mask] @ onehot[mask]) / np.maximum(onehot[mask].sum(axis=0), 1)
        return rates.max(axis=1) - rates.min(axis=1)

    return {"accuracy": (decisions == y).mean(axis=1), "demographic_parity": gap(np.ones_like(positive)),
            "equal_opportunity": gap(positive)}


def cell(table: str, samples: int, tolerance: float, n: int | None = None) -> dict:
    """The attainable keep-rates of ``table`` at sample size ``n`` (default the protocol's; module docstring)."""
    import lightgbm as lgb
    import pandas as pd

    pop = Context().population(table)
    P, y, groups = pop["table"], np.asarray(pop["y"]).astype(np.float64), pop["groups"][table]
    g, K = groups["index"], len(groups["names"])
    X = pd.get_dummies(P.drop(columns=[POPULATIONS[table].fields["target"]]), dtype=float).to_numpy()
    start = time.perf_counter()
    oracle = lgb.train({"objective": "binary", "verbose": -1, "seed": 0, "deterministic": True},
                       lgb.Dataset(X, y), 100)
    scores = oracle.predict(X, raw_score=True)
    onehot = np.eye(K)[g]
    n = n or POPULATIONS[table].sample_rows
    result: dict = {"table": table, "n": n, "samples": samples, "tolerance": tolerance,
                    "groups": dict(zip(groups["names"], np.bincount(g, minlength=K).tolist()))}
    for kind in ("demographic_parity", "equal_opportunity"):
        kept, accuracy, chosen = np.zeros(len(GRID)), np.zeros(len(GRID)), []
        for seed in range(samples):
            draws = bootstrap_rows(len(P), n, seed)[: int(FITTING_SHARE * n)]
            among = draws if kind == "demographic_parity" else draws[y[draws] == 1]
            t = thresholds(scores[among], g[among], K, GRID)
            decisions = (scores[None, :] > t[:, g]).astype(np.float64)
            weight = np.bincount(draws, minlength=len(P)).astype(np.float64)   # the fitting rows, as drawn
            best = int(np.argmax((decisions == y) @ weight))   # the share of best accuracy on the fitting rows
            metrics = rule_metrics(decisions, y, onehot)
            kept += metrics[kind] <= tolerance
            accuracy += metrics["accuracy"]
            chosen.append((metrics[kind][best], metrics["accuracy"][best]))
        gaps, accuracies = np.array(chosen).T
        keeping = np.flatnonzero(kept / samples >= TARGET)
        top = int(keeping[np.argmax(accuracy[keeping])]) if len(keeping) else int(np.argmax(kept))
        if kind == "demographic_parity":
            result["coins"] = coins(scores, y, g, K, onehot, n, samples, tolerance)
        result[kind] = {"kept": float(np.mean(gaps <= tolerance)), "accuracy": float(accuracies.mean()),
                        "gap_mean": float(gaps.mean()), "gap_p90": float(np.quantile(gaps, 0.9)),
                        "at_target": {"share": float(GRID[top]), "kept": kept[top] / samples,
                                      "accuracy": accuracy[top] / samples}}
    result["seconds"] = time.perf_counter() - start
    return result


def coins(scores: np.ndarray, y: np.ndarray, g: np.ndarray, K: int, onehot: np.ndarray, n: int, samples: int,
          tolerance: float) -> list[dict]:
    """Demographic parity with the c smallest groups (by rows of P) decided by a coin, c = 1 … K − 1: each of their
    rows selected with probability r whatever its score (a fresh uniform draw per row of P, so the group's
    realised rate on P is off r by the draw's own error only), the other groups by their thresholds at r, r of
    best accuracy on the fitting rows; the share of samples kept and the mean accuracy on P."""
    order = np.argsort(np.bincount(g, minlength=K), kind="stable")
    out = []
    for c in range(1, K):
        coin = np.isin(g, order[:c])
        kept = accuracy = 0.0
        for seed in range(samples):
            draws = bootstrap_rows(len(y), n, seed)[: int(FITTING_SHARE * n)]
            t = thresholds(scores[draws], g[draws], K, GRID)
            u = np.random.default_rng(seed).random(len(y))
            decisions = np.where(coin[None, :], u[None, :] < GRID[:, None], scores[None, :] > t[:, g])
            decisions = decisions.astype(np.float64)
            weight = np.bincount(draws, minlength=len(y)).astype(np.float64)
            best = int(np.argmax((decisions == y) @ weight))
            metrics = rule_metrics(decisions[best:best + 1], y, onehot)
            kept += metrics["demographic_parity"][0] <= tolerance
            accuracy += metrics["accuracy"][0]
        out.append({"coins": int(c), "share_of_rows": float(coin.mean()), "kept": kept / samples,
                    "accuracy": accuracy / samples})
    return out


def markdown(rows: list[dict]) -> list[str]:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out = ["# What perfect scores can keep (`python -m bench.quality.attainable`)", "",
           "One threshold per group on an oracle's scores (LightGBM boosted on every row of the population), fitted "
           "to exact parity on each bootstrap sample's fitting rows (90 % of n), judged on every row of the table "
           "(module docstring of `bench/quality/attainable.py`). kept: the share of samples whose population gap "
           f"is ≤ ε. Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load:.2f}.", "",
           "| table | n | groups (rows of P) | samples | ε | DP at gap 0: kept / accuracy / gap mean / gap p90 | DP at "
           "target (kept ≥ 5/6): r / kept / accuracy | TPR band at gap 0: kept / accuracy / gap mean / gap p90 | TPR "
           "band at target: τ / kept / accuracy |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = []
        for kind in ("demographic_parity", "equal_opportunity"):
            c = r[kind]
            m = c["at_target"]
            cells.append(f"{c['kept']:.2f} / {c['accuracy']:.4f} / {c['gap_mean']:.4f} / {c['gap_p90']:.4f}")
            cells.append(f"{m['share']:.2f} / {m['kept']:.2f} / {m['accuracy']:.4f}")
        groups = ", ".join(f"{k} {v:,}" for k, v in r["groups"].items())
        out.append(f"| {r['table']} | {r['n']:,} | {groups} | {r['samples']} | {r['tolerance']:g} | "
                   + " | ".join(cells) + " |")
    out += ["", "Demographic parity with the c smallest groups decided by a coin at the common rate r (each row of "
            "them selected with probability r, a fresh draw per row of the table), the others by their thresholds "
            "(`coins` in the module):", "",
            "| table | c | their share of the rows | kept | accuracy |", "|---|---|---|---|---|"]
    for r in rows:
        for c in r.get("coins", []):
            out.append(f"| {r['table']} | {c['coins']} | {c['share_of_rows']:.3f} | {c['kept']:.2f} | "
                       f"{c['accuracy']:.4f} |")
    return out + [""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=["adult_race5", "adult_sex"])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--rows", type=int, default=None, help="sample rows (default: the table's)")
    args = parser.parse_args(argv)
    rows = []
    for table in args.tables:
        rows.append(cell(table, args.samples, args.tolerance, args.rows))
        print(rows[-1], flush=True)
    REPORT.write_text("\n".join(markdown(rows)))
    print("\n".join(markdown(rows)))


if __name__ == "__main__":
    main()
