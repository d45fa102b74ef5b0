r"""The population protocol: a tolerance is a statement about the population the rows come from, so judge every
job there (issue "Spend the tolerance").

**Protocol.** A real table P is taken as the population. Each job's dataset is a bootstrap sample of P (``n`` rows
drawn with replacement, seeded), so its rows are i.i.d. draws from P's empirical distribution. The job runs through
the service (upload → job → ``succeeded``; a real API and Celery worker on PostgreSQL + Redis); its model is
downloaded as ONNX (``/jobs/{id}/model.onnx``) and scores EVERY row of P, so its population accuracy and gaps are
exact, with no sampling noise. Split: test 0.1, validation 0.3. The ONNX model is checked on every job against the
job's own stored test accuracy (``onnx_check``: |Δ| on the job's test rows).

Peers are fitted in the same run on the same sample's training rows (train ∪ validation, the rows the job may use)
and the same columns: a job without ``features`` trains on those the service's feature screen keeps (on
bank-additional-full.csv it excludes ``duration``, the call's length, known only after it), so its peers are fitted on
them too, and the report names the excluded columns (with ``duration`` TO(LightGBM) reached 0.926 on the table
against 0.902 without it; a job given ``features`` with it, 0.920):

* ``TO(LightGBM)``: fairlearn's ``ThresholdOptimizer`` over LightGBM (fitted on those rows, ``prefit=False``, as
  its documentation uses it), ``tol`` = the aim for demographic parity and equal opportunity (fairlearn's
  ``true_positive_rate_parity``; it relaxes no other constraint: equalized odds is exact, at the aim ε only);
* ``EG(LR)``: ``ExponentiatedGradient(LogisticRegression)`` asked for the same max − min gap: fairlearn bounds
  |E[h | A = a] − E[h]| per group, and with two groups of shares p_a ≥ p_b, E[h | a] − E[h] = p_b (E[h | a] −
  E[h | b]), so ``difference_bound`` = aim × the largest group's share bounds max − min by the aim (with more groups,
  the same bound is the nearest one-number equivalent);

* ``OxonFair(LightGBM)`` / ``OxonFair(LR)``: OxonFair's ``FairPredictor`` over the base fitted on the job's train
  split, its per-group thresholds chosen on the job's validation split for the most accurate rule whose max − min
  gap there is ≤ the aim (the same split a job of ours has);
* ``FairGBM``: the authors' package, LightGBM's 100 rounds under its constrained cross-entropy with the group FNR
  (equal opportunity) or FPR and FNR (equalized odds) gaps ≤ the aim (it has no demographic parity);
* ``EG(LightGBM)`` (``--peers``; slow: a LightGBM fit per round of the reduction);

each at the aims {ε, 0.75 ε, 0.5 ε, 0.25 ε}. Their population metrics are the exact expectations of their
randomised decisions: P(ŷ = 1 | x) from fairlearn's ``_pmf_predict`` on every row of P (OxonFair and FairGBM
decide deterministically). The verdict is against the issue's target family (TO(LightGBM) for gbdt cells, EG(LR)
for linear and MLP ones); the most accurate fair peer of every family that ran is reported beside it ("best peer of
the run", with its own verdict). ``--add-peers`` fits the families a stored job lacks on its sample, without running
the job again.

**Exact population metrics** (:func:`population_metrics`), with p(x) = P(ŷ = 1 | x) and rows weighted equally:
accuracy = mean(y p + (1 − y)(1 − p)); SR_g = mean_g p; TPR_g = mean_{g, y=1} p; FPR_g = mean_{g, y=0} p;
DP = max_g SR_g − min_g SR_g; equal opportunity the TPR gap; equalized odds max(TPR gap, FPR gap).

**Report per cell** (table × model × constraint × ε × mode): the share of jobs whose population gap is ≤ ε, mean
population accuracy and gap, median job wall seconds (POST → succeeded seen by the client, queue included; in
parentheses the median of the solve's own seconds, the job's ``solver_time_s``: the rest is the service's) beside
the peer's median fit seconds, and the peer at the largest aim that keeps ε on the population at least as often as
FairSolve on the same samples ("the fair peer"); the verdict is accuracy ≥ the fair peer's − 0.001. Beside, the
accuracy on the rows of P that no draw of the sample took (:func:`unseen_accuracy`): P holds the sample's rows (a
third of bank's, most of COMPAS's), so a model that memorises them gains population accuracy without generalising
(docs/architecture.md, "Population accuracy rewards memorising the sample"); the unseen rows' accuracy does not.
A randomised rule of ours is measured twice: by its ONNX decision (the draw it realises on P's rows: the table's
figures and the verdict) and in expectation over its draw (:func:`onnx_expected`, the measure the peers get): on a
group of a few hundred rows of P the realised draw is itself off its expectation by a few points.

Run::

    python -m bench.quality.population --core                      # the core grid (4 tables x linear/gbdt x DP/EO x
                                                           # eps {0.02, 0.05} x default/guarantee, 8 seeds)
    python -m bench.quality.population --tables adult_sex bank_age --models gbdt --kinds demographic_parity \
        --tolerances 0.05 --modes default --seeds 0 1 2 3  # any sub-grid
    python -m bench.quality.population --report                    # rewrite population.md from the stored jobs
    python -m bench.quality.population --table-file my.csv --target y --positive-label yes --sensitive age \
        --group-rules '{"age": {"ranges": {"25-60": [25, 61]}, "other": "other"}}' --seeds 0 1 2 3 4 5 \
        --results my-results                               # a table of your own (:func:`table_population`)

Jobs are stored as they finish in ``bench/quality/results/population.json.gz`` (gzipped JSON: every job with every
peer at every aim is about 2 MB of text; a run skips the jobs already there unless
``--rerun``); ``population.md`` is rewritten from every stored job. ``--results DIR`` keeps both in another folder
(a table of your own: its jobs then stay out of the committed results).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from bench.common.jobs import job_settled
from bench.common.datasets import ADULT_COLUMNS, data_dir
from bench.quality.promise import _compas_two_races

RESULTS = Path(__file__).resolve().parent / "results"
STORE = RESULTS / "population.json.gz"
REPORT = RESULTS / "population.md"
AIMS = (1.0, 0.75, 0.5, 0.25)
SPLIT = {"test": 0.1, "validation": 0.3}
TIME_LIMIT_S = 300
ACCURACY_SLACK = 0.001
#: the Redis database of the run's stack, flushed as it starts: not one of the test suite's (8–13 in two processes),
#: so the two can run at once
BENCH_REDIS_URL = os.environ.get("FAIRSOLVE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/15")
CORE = {"tables": ("adult_sex", "adult_race5", "bank_age", "compas_race"), "models": ("linear", "gbdt"),
        "kinds": ("demographic_parity", "equalized_odds"), "tolerances": (0.02, 0.05),
        "modes": ("default", "guarantee"), "seeds": tuple(range(8))}


def adult_population() -> pd.DataFrame:
    """adult.data + adult.test (48,842 rows): the test file's first line skipped and its labels' ``.`` dropped."""
    read = dict(header=None, names=ADULT_COLUMNS, skipinitialspace=True, na_values="?")
    train = pd.read_csv(data_dir() / "adult.data", **read).dropna(how="all")
    test = pd.read_csv(data_dir() / "adult.test", skiprows=1, **read).dropna(how="all")
    test["income"] = test["income"].str.rstrip(".")
    return pd.concat([train, test], ignore_index=True)


def bank_population() -> pd.DataFrame:
    """bank-full.csv (45,211 rows, ``;``-separated)."""
    return pd.read_csv(data_dir() / "bank-full.csv", sep=";")


def bank_additional_population() -> pd.DataFrame:
    """bank-additional-full.csv (41,188 rows, ``;``-separated): a table no default was tuned on."""
    from bench.common.datasets import bank

    return bank()


def synthetic_population(rows: int = 2_000_000, seed: int = 0) -> pd.DataFrame:
    """A generated population with a known gap: x ~ N(0, I₅), group B with probability 0.3, y ~ Bernoulli(σ(wᵀx −
    1 + 0.8·[B])): the Bayes classifier selects B more often (its DP gap on the population is printed by
    :func:`main` beside the runs)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 5))
    b = rng.random(rows) < 0.3
    logit = x @ np.array([1.0, -0.7, 0.5, 0.3, 0.0]) - 1.0 + 0.8 * b
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    table = pd.DataFrame(x, columns=[f"x{i}" for i in range(5)])
    table["group"] = np.where(b, "B", "A")
    table["y"] = y
    return table


_BANK_FEATURES = ["age", "job", "marital", "education", "default", "balance", "housing", "loan", "contact", "day",
                  "month", "campaign", "pdays", "previous", "poutcome"]   # `duration` is known only after the call


@dataclass(frozen=True)
class Population:
    load: Callable[[], pd.DataFrame]
    fields: dict[str, Any]   # the job spec's target, positive label, sensitive columns, group rules, features
    sample_rows: int


POPULATIONS: dict[str, Population] = {
    "adult_sex": Population(adult_population, {"target": "income", "positive_label": ">50K", "sensitive": ["sex"]},
                            20_000),
    "adult_race5": Population(adult_population, {"target": "income", "positive_label": ">50K",
                                                 "sensitive": ["race"]}, 20_000),
    "bank_age": Population(bank_population, {
        "target": "y", "positive_label": "yes", "sensitive": ["age"],
        "group_rules": {"age": {"ranges": {"25-60": [25, 61]}, "other": "other"}}, "features": _BANK_FEATURES},
        20_000),
    "bank_additional": Population(bank_additional_population, {   # every column but `duration`, as bank_age
        "target": "y", "positive_label": "yes", "sensitive": ["age"],
        "group_rules": {"age": {"ranges": {"25-60": [25, 61]}, "other": "other"}},
        "features": [c for c in _BANK_FEATURES if c not in ("balance", "day")] + [
            "day_of_week", "emp.var.rate", "cons.price.idx", "cons.conf.idx", "euribor3m", "nr.employed"]}, 20_000),
    "compas_race": Population(_compas_two_races, {
        "target": "two_year_recid", "positive_label": 1, "sensitive": ["race"],
        "features": ["race", "sex", "age", "juv_fel_count", "juv_misd_count", "juv_other_count", "priors_count",
                     "c_charge_degree"]}, 6_000),
    "synthetic": Population(synthetic_population, {"target": "y", "positive_label": 1, "sensitive": ["group"]},
                            20_000),
}


def table_population(path: Path, target: str, positive_label: str, sensitive: list[str],
                     group_rules: dict[str, Any] | None = None, features: list[str] | None = None,
                     sample_rows: int | None = None) -> tuple[str, Population]:
    """(name, population) of a CSV or Parquet file of one's own, read as an upload of it is (the service's sniffing
    and reader: :func:`app.datasets.storage.check_upload`, :func:`~app.datasets.storage.read_table`); the positive
    label is compared with the target's values as they are read (``"1"`` names the number 1 of a numeric column).
    Samples of ``sample_rows`` rows (default min(20,000, the table's rows))."""
    from app.datasets.storage import check_upload, read_table

    fmt, options = check_upload(path)
    table = read_table(path, fmt, options)

    def load() -> pd.DataFrame:
        return table

    name = path.stem
    load.__name__ = f"table_file:{path}"   # the Context's key of the loaded table
    missing = [c for c in [target, *sensitive, *(features or [])] if c not in table.columns]
    if missing:
        raise SystemExit(f"--table-file: no column {', '.join(map(repr, missing))} in {path.name}")
    label: Any = positive_label
    if pd.api.types.is_numeric_dtype(table[target]):
        try:
            label = int(positive_label) if float(positive_label).is_integer() else float(positive_label)
        except ValueError:
            raise SystemExit(f"--positive-label: {positive_label!r} is not a value of the numeric {target!r}")
    if not (table[target] == label).any():
        raise SystemExit(f"--positive-label: no row of {path.name} has {target} = {label!r}")
    fields: dict[str, Any] = {"target": target, "positive_label": label, "sensitive": sensitive}
    if group_rules:
        fields["group_rules"] = group_rules
    if features:
        fields["features"] = features
    return name, Population(load, fields, sample_rows or min(20_000, len(table)))


# ------------------------------------------------------------------ exact population metrics
def population_metrics(p: np.ndarray, y: np.ndarray, group: np.ndarray, n_groups: int) -> dict[str, float]:
    """Exact accuracy and gaps of decisions with P(ŷ = 1 | row) = ``p`` over every row (module docstring)."""
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    y = np.asarray(y).reshape(-1) == 1
    g = np.asarray(group, dtype=np.int64).reshape(-1)

    def rate(mask: np.ndarray) -> np.ndarray:
        n = np.bincount(g[mask], minlength=n_groups).astype(np.float64)
        s = np.bincount(g[mask], weights=p[mask], minlength=n_groups)
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)

    def gap(r: np.ndarray) -> float:
        return float(np.nanmax(r) - np.nanmin(r))

    everyone = np.ones_like(y)
    sr, tpr, fpr = rate(everyone), rate(y), rate(~y)
    return {"accuracy": expected_accuracy(p, y), "demographic_parity": gap(sr),
            "equal_opportunity": gap(tpr), "equalized_odds": max(gap(tpr), gap(fpr))}


def expected_accuracy(p: np.ndarray, y: np.ndarray) -> float:
    """mean(y p + (1 − y)(1 − p)): the exact accuracy of decisions with P(ŷ = 1 | row) = ``p``."""
    p = np.asarray(p, dtype=np.float64).reshape(-1)
    return float(np.mean(np.where(np.asarray(y).reshape(-1) == 1, p, 1.0 - p)))


def unseen_accuracy(p: np.ndarray, y: np.ndarray, drawn: np.ndarray) -> float:
    """Exact accuracy over the population's rows that no draw of the sample took (``drawn``: the sample's row
    positions): the part of P no fit saw, where memorising the sample buys nothing (module docstring)."""
    unseen = np.ones(len(y), dtype=bool)
    unseen[drawn] = False
    return expected_accuracy(np.asarray(p).reshape(-1)[unseen], np.asarray(y).reshape(-1)[unseen])


def sample_generator(seed: int) -> np.random.Generator:
    """The generator of sample ``seed``'s rows (apart from the job's own seeded split)."""
    return np.random.default_rng(10_000 + seed)


def bootstrap_rows(n_population: int, n: int, seed: int) -> np.ndarray:
    """Row positions of a bootstrap sample of ``n`` rows (with replacement), seeded."""
    return sample_generator(seed).integers(0, n_population, size=n)


def parity_rule_keep(kind: str, tolerance: float, y: np.ndarray, group: np.ndarray, n_groups: int) -> float | None:
    r"""P(population gap ≤ ε) of a rule fitted to EXACT parity on these fitting rows (labels ``y``, groups): its
    rates on the rows are equal, and the population's differ from them by the rows' sampling error, whose range
    over the groups has the law of a zero-gap model's gap on a split of these sizes
    (:func:`solvers.fairness.noise_floor.noise_floor`, at the pooled label rate). What any rule of thresholds on the
    features can keep at this size, however accurate its scores (a coin, which selects a fixed share of the
    population, has no such error: :mod:`solvers.fairness.group_coins`). None for a family without rates."""
    from solvers.fairness.noise_floor import RATE_FAMILIES, noise_floor, split_counts

    if kind not in RATE_FAMILIES:
        return None
    counts, positives = split_counts(y, group, n_groups)
    return noise_floor(kind, counts, positives, tolerance, repetitions=20_000).keep_probability


def spec_for(table: str, model: str, kind: str, tolerance: float, mode: str, seed: int) -> dict[str, Any]:
    spec = {**POPULATIONS[table].fields, "model": {"type": model}, "objective": "logistic",
            "constraints": [{"type": kind, "tolerance": tolerance}], "solver": {"name": "auto"},
            "split": {**SPLIT, "seed": seed}, "seed": seed, "time_limit_s": TIME_LIMIT_S, "device": "cpu"}
    if mode == "guarantee":
        spec["guarantee"] = {"confidence": 0.95}
    return spec


# ------------------------------------------------------------------ ONNX scoring of the population
def _feeds(session, table: pd.DataFrame) -> dict[str, np.ndarray]:
    """The session's inputs by name from ``table``'s columns, as the export documents."""
    from solvers.data.encoding import normalise_values

    return {node.name: (normalise_values(table[node.name]).astype(object) if node.type == "tensor(string)" else
                        table[node.name].to_numpy(dtype=np.float64, na_value=np.nan)).reshape(-1, 1)
            for node in session.get_inputs()}


def onnx_decisions(model_bytes: bytes, table: pd.DataFrame) -> np.ndarray:
    """The exported model's ``decision`` on every row of ``table`` (inputs fed by name, as the export documents)."""
    import onnxruntime as ort

    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    out = session.run(["decision"], _feeds(session, table))[0]
    return np.asarray(out).reshape(-1).astype(np.float64)


#: the name of the export's last step of a group-threshold rule (its names carry a counter)
RULE_OUTPUT = re.compile(r"thresholded_\d+")


def onnx_expected(model_bytes: bytes, table: pd.DataFrame) -> np.ndarray | None:
    r"""P(ŷ = 1 | x) of the exported model's randomised group-threshold rule over its draw, or None when the model
    has none outermost (its decision is then its expectation): the rule decides 1{h(x) > t_{g, J}} with J drawn
    from the group's weights (cumulative C_{g, j}), so P(ŷ = 1 | x) = Σ_j (C_{g, j} − C_{g, j−1}) 1{h(x) > t_{g, j}},
    read from the graph's own values of h, t_{g, ·} and C_{g, ·} (app/onnx_models/export.py, ``_group_thresholds``).
    The measure the peers get (their exact expectations); the decision (:func:`onnx_decisions`) is what the draw
    realises on these rows."""
    import onnx
    import onnxruntime as ort

    model = onnx.load_from_string(model_bytes)
    made = {out: node for node in model.graph.node for out in node.output}
    node = made.get("logit")                                 # Cast(Reshape(f)), f the outermost module's value
    while node is not None and not RULE_OUTPUT.fullmatch(node.output[0]) and node.op_type in ("Cast", "Reshape"):
        node = made.get(node.input[0])
    if node is None or not RULE_OUTPUT.fullmatch(node.output[0]):
        return None
    moved = made[node.input[0]]                              # Sub(h, t)
    h, t = moved.input
    gathered = made[t]                                       # GatherElements(rows, j)
    rows = gathered.input[0]
    j = made[gathered.input[1]]                              # Min(count, J − 1)
    count = made[j.input[0]]                                 # ReduceSum(Cast(LessOrEqual(cumulative, u)))
    cumulative = made[made[count.input[0]].input[0]].input[0]
    names = [h, rows, cumulative]
    model.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in names)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    hv, tv, cv = (np.asarray(v, dtype=np.float64) for v in session.run(names, _feeds(session, table)))
    weights = np.diff(np.concatenate([np.zeros((len(cv), 1)), cv], axis=1), axis=1)
    weights[:, -1] += 1.0 - cv[:, -1]                        # J is capped at its last component
    return (weights * (hv.reshape(-1, 1) > tv)).sum(axis=1)


# ------------------------------------------------------------------ peers
#: the constraints fairlearn's ThresholdOptimizer relaxes by ``tol``: ours → its name
TO_RELAXED = {"demographic_parity": "demographic_parity", "equal_opportunity": "true_positive_rate_parity"}
#: ours → fairlearn's reduction moment
EG_MOMENTS = {"demographic_parity": "DemographicParity", "equal_opportunity": "TruePositiveRateParity",
              "equalized_odds": "EqualizedOdds"}
#: ours → FairGBM's ``constraint_type`` (its constrained rates: it has no demographic parity)
FAIRGBM_CONSTRAINTS = {"equal_opportunity": "FNR", "equalized_odds": "FPR,FNR"}
#: OxonFair searches a grid over every group's threshold: on Adult by race (5 groups) one fit ran for over four
#: minutes, so it is not run on more groups than this
OXONFAIR_MAX_GROUPS = 3
#: the peer family each model's verdict is against (the issue's targets); the others are reported beside
TARGET_FAMILY = {"gbdt": "TO(LightGBM)", "linear": "EG(LR)", "mlp": "EG(LR)"}
#: the peer families fitted beside each model by default (``--peers`` chooses others)
DEFAULT_FAMILIES = {"gbdt": ("TO(LightGBM)", "OxonFair(LightGBM)", "FairGBM"),
                    "linear": ("EG(LR)", "OxonFair(LR)"), "mlp": ("EG(LR)", "OxonFair(LR)")}
#: a peer's name: its family, the word for what its aim sets, the aim ("TO(LightGBM) tol 0.75ε")
PEER_NAME = re.compile(r"^(?P<family>.+) (?:tol|bound|gap) [0-9.]+ε$")


def family_of(name: str) -> str:
    """The peer family of a peer's name (the name's first word when it does not follow :data:`PEER_NAME`)."""
    match = PEER_NAME.match(name)
    return match["family"] if match else name.split(" ")[0]


def _aimed_bound(kind: str, aim: float, y: np.ndarray, group: np.ndarray) -> float:
    """fairlearn's ``difference_bound`` that bounds the max − min gap by ``aim`` (module docstring)."""
    if kind == "demographic_parity":
        share = np.bincount(group).max() / len(group)
    else:   # per label class, the conditional moments (equal opportunity: the positives' only)
        share = max(np.bincount(group[y == c]).max() / max((y == c).sum(), 1)
                    for c in ((1,) if kind == "equal_opportunity" else (0, 1)))
    return float(aim * share)


def _lightgbm(seed: int):
    from lightgbm import LGBMClassifier

    return LGBMClassifier(n_jobs=1, verbose=-1, random_state=seed)


def _threshold_optimizer(kind, aim, tolerance, X, y, group, n_train, X_pop, group_pop, seed):
    """fairlearn's ThresholdOptimizer over LightGBM on every fitting row (``prefit=False``), ``tol`` = the aim where
    fairlearn relaxes the constraint (equalized odds: exact, at the aim ε only; None otherwise)."""
    from fairlearn.postprocessing import ThresholdOptimizer

    if kind not in TO_RELAXED and aim != 1.0:
        return None
    peer = ThresholdOptimizer(estimator=_lightgbm(seed), constraints=TO_RELAXED.get(kind, kind),
                              objective="accuracy_score", predict_method="predict_proba",
                              tol=aim * tolerance if kind in TO_RELAXED else None)
    peer.fit(X, y, sensitive_features=group)
    return lambda: np.asarray(peer._pmf_predict(X_pop, sensitive_features=group_pop))[:, 1]


def _exponentiated_gradient(estimator):
    def fit(kind, aim, tolerance, X, y, group, n_train, X_pop, group_pop, seed):
        """fairlearn's ExponentiatedGradient asked for the max − min gap aim × ε (:func:`_aimed_bound`)."""
        from fairlearn import reductions

        moment = getattr(reductions, EG_MOMENTS[kind])(difference_bound=_aimed_bound(kind, aim * tolerance, y, group))
        peer = reductions.ExponentiatedGradient(estimator(seed), moment)
        peer.fit(X, y, sensitive_features=group)
        return lambda: np.asarray(peer._pmf_predict(X_pop))[:, 1]
    return fit


def _logistic_regression(seed: int):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(max_iter=1000)


def _oxonfair(estimator):
    def fit(kind, aim, tolerance, X, y, group, n_train, X_pop, group_pop, seed):
        """OxonFair's ``FairPredictor``: the base fitted on the job's train rows, per-group thresholds chosen on its
        validation rows for the most accurate rule whose max − min gap there is ≤ aim × ε (the same quantity as
        ours: ``pos_pred_rate.max_diff``, ``true_pos_rate.max_diff``, ``equalized_odds_max``); not run above
        :data:`OXONFAIR_MAX_GROUPS` groups."""
        if len(np.unique(group)) > OXONFAIR_MAX_GROUPS:
            return None
        from oxonfair import DataDict, FairPredictor, group_metrics

        metric = {"demographic_parity": group_metrics.pos_pred_rate.max_diff,
                  "equal_opportunity": group_metrics.true_pos_rate.max_diff,
                  "equalized_odds": group_metrics.equalized_odds_max}[kind]
        base = estimator(seed).fit(X[:n_train], y[:n_train])
        fair = FairPredictor(base, DataDict(y[n_train:], X[n_train:], group[n_train:]))
        fair.fit(group_metrics.accuracy, metric, aim * tolerance)
        return lambda: np.asarray(fair.predict(DataDict(np.zeros(len(X_pop), dtype=np.int64), X_pop, group_pop)),
                                  dtype=np.float64)
    return fit


def _fairgbm(kind, aim, tolerance, X, y, group, n_train, X_pop, group_pop, seed):
    """FairGBM (Cruz et al., the authors' package): LightGBM's 100 rounds under its constrained cross-entropy, the
    group FNR (and FPR) gaps ≤ aim × ε as its tolerances, every fitting row; ŷ = 1{p > ½} (deterministic). Its
    scikit-learn wrapper does not run on today's scikit-learn, so its own ``train`` is called."""
    import fairgbm

    if kind not in FAIRGBM_CONSTRAINTS:
        return None
    params = {"objective": "constrained_cross_entropy", "constraint_type": FAIRGBM_CONSTRAINTS[kind],
              "constraint_fpr_tolerance": aim * tolerance, "constraint_fnr_tolerance": aim * tolerance, "num_threads": 1, "seed": seed,
              "verbose": -1}
    data = fairgbm.Dataset(X, label=y, constraint_group=np.asarray(group, dtype=np.int32))
    booster = fairgbm.train(params, data, num_boost_round=100)
    return lambda: (np.asarray(booster.predict(X_pop)) > 0.5).astype(np.float64)


#: family → (the word for what the aim sets, the fit: (kind, aim, ε, X, y, group, n_train, X_pop, group_pop, seed) →
#: a function giving P(ŷ = 1) on the population's rows, or None where the family has no such constraint)
PEER_FAMILIES: dict[str, tuple[str, Callable]] = {
    "TO(LightGBM)": ("tol", _threshold_optimizer),
    "OxonFair(LightGBM)": ("gap", _oxonfair(_lightgbm)),
    "FairGBM": ("tol", _fairgbm),
    "EG(LightGBM)": ("bound", _exponentiated_gradient(_lightgbm)),
    "EG(LR)": ("bound", _exponentiated_gradient(_logistic_regression)),
    "OxonFair(LR)": ("gap", _oxonfair(_logistic_regression)),
}


def peer_fits(model: str, kind: str, tolerance: float, X: np.ndarray, y: np.ndarray, group: np.ndarray,
              X_pop: np.ndarray, group_pop: np.ndarray, seed: int, n_train: int | None = None,
              families: tuple[str, ...] | None = None) -> dict[str, dict[str, Any]]:
    """name → {aim, p (population P(ŷ = 1)), fit_s} of each family (default :data:`DEFAULT_FAMILIES` of the model)
    at each aim; ``X`` the fitting rows, the first ``n_train`` of them the job's train split (a post-processor
    that needs a validation split takes the rest; default: two thirds)."""
    n_train = n_train if n_train is not None else (2 * len(y)) // 3
    out = {}
    for family in families or DEFAULT_FAMILIES[model]:
        word, fit = PEER_FAMILIES[family]
        for aim in AIMS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                started = time.perf_counter()
                predict = fit(kind, aim, tolerance, X, y, group, n_train, X_pop, group_pop, seed)
                fit_s = time.perf_counter() - started
                if predict is None:
                    continue
                out[f"{family} {word} {aim:g}ε"] = {"aim": aim, "p": predict(), "fit_s": fit_s}
    return out


# ------------------------------------------------------------------ one sample
def drawn_sample(ctx: "Context", table: str, seed: int) -> tuple[dict[str, Any], np.ndarray, pd.DataFrame]:
    """(the population, the sample's row positions in it, the sample's rows): the protocol's bootstrap sample."""
    pop = ctx.population(table)
    idx = bootstrap_rows(len(pop["table"]), POPULATIONS[table].sample_rows, seed)
    return pop, idx, pop["table"].iloc[idx].reset_index(drop=True)


def run_sample(ctx: "Context", table: str, model: str, kind: str, tolerance: float, mode: str, seed: int,
               with_peers: bool, families: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One job (and the peers on its rows): population accuracy and gaps, seconds, the ONNX check."""
    from solvers import ProblemSpec, prepare

    pop, idx, sample = drawn_sample(ctx, table, seed)
    P = pop["table"]
    spec = spec_for(table, model, kind, tolerance, mode, seed)
    groups_pop = pop["groups"][table]
    data = None   # the sample prepared as the job's spec splits it, once the job has succeeded
    row: dict[str, Any] = {"table": table, "model": model, "kind": kind, "tolerance": tolerance, "mode": mode,
                           "seed": seed, "n": len(sample)}
    job = ctx.job(sample, spec, f"{table}-{seed}")
    row.update({k: job[k] for k in ("status", "wall_s", "solver_s", "error") if k in job})
    if job.get("status") == "succeeded":
        p = onnx_decisions(job["onnx"], P)
        row["ours"] = population_metrics(p, pop["y"], groups_pop["index"], len(groups_pop["names"]))
        row["ours"]["unseen_accuracy"] = unseen_accuracy(p, pop["y"], idx)
        expected = onnx_expected(job["onnx"], P)
        if expected is not None:   # a randomised rule: also in expectation over its draw, as the peers are measured
            row["ours_expected"] = population_metrics(expected, pop["y"], groups_pop["index"],
                                                      len(groups_pop["names"]))
        data = prepare(sample, ProblemSpec.model_validate(spec))
        test = data.table_rows("test")
        row["onnx_check"] = abs(float(np.mean(p[idx[test]] == pop["y"][idx[test]])) - job["test_accuracy"])
        row["parity_keep"] = fitting_parity_keep(data, kind, tolerance)
        row["job"] = {k: job[k] for k in ("id", "test_accuracy", "selected", "guarantee", "enforcement_margin")
                      if k in job}
        if job.get("screened_out"):
            row["job"]["screened_out"] = job["screened_out"]
    if with_peers:
        row["peers"] = sample_peers(ctx, table, model, kind, tolerance, seed, (row.get("job") or {}).get(
            "screened_out") or [], families, data)
    return row


def sample_peers(ctx: "Context", table: str, model: str, kind: str, tolerance: float, seed: int,
                 screened_out: list[str], families: tuple[str, ...] | None = None,
                 data: Any = None) -> dict[str, dict[str, Any]]:
    """The peers of one sample (:func:`peer_fits`) on the rows the job may use (train ∪ validation, its split) and
    the columns it kept (``screened_out``: the columns the service's feature screen excluded), with their exact
    population metrics; ``data``: the sample already prepared with the job's spec (else prepared here)."""
    from solvers import ProblemSpec, prepare

    pop, idx, sample = drawn_sample(ctx, table, seed)
    P = pop["table"]
    spec = spec_for(table, model, kind, tolerance, "default", seed)
    if data is None:
        data = prepare(sample, ProblemSpec.model_validate(spec))
    if "features" not in spec and screened_out:   # the peers learn from the columns the job did
        features = [c for c in data.encoder.columns if c not in screened_out]
        data = prepare(sample, ProblemSpec.model_validate({**spec, "features": features}))
    groups_pop = pop["groups"][table]
    order = [groups_pop["names"].index(n) for n in data.group_names]    # sample's group order → population's
    train, validation = data.table_rows("train"), data.table_rows("validation")
    fit = np.concatenate([train, validation])
    X_pop = data.encoder.transform(P)
    g_fit = np.asarray(order, dtype=np.int64)[data.group[np.concatenate([data.splits["train"],
                                                                          data.splits["validation"]])]]
    peers = peer_fits(model, kind, tolerance, X_pop[idx[fit]], pop["y"][idx[fit]], g_fit, X_pop,
                      groups_pop["index"], seed, n_train=len(train), families=families)
    return {name: {"aim": v["aim"], "fit_s": v["fit_s"],
                   **population_metrics(v["p"], pop["y"], groups_pop["index"], len(groups_pop["names"])),
                   "unseen_accuracy": unseen_accuracy(v["p"], pop["y"], idx)}
            for name, v in peers.items()}


def sample_parity_keep(ctx: "Context", table: str, kind: str, tolerance: float, seed: int) -> float | None:
    """:func:`parity_rule_keep` on one sample's fitting rows (train ∪ validation of the job's split)."""
    from solvers import ProblemSpec, prepare

    _, _, sample = drawn_sample(ctx, table, seed)
    return fitting_parity_keep(prepare(sample, ProblemSpec.model_validate(
        spec_for(table, "linear", kind, tolerance, "default", seed))), kind, tolerance)


def fitting_parity_keep(data: Any, kind: str, tolerance: float) -> float | None:
    """:func:`parity_rule_keep` on a prepared sample's fitting rows (train ∪ validation)."""
    fit = np.concatenate([data.splits["train"], data.splits["validation"]])
    return parity_rule_keep(kind, tolerance, np.asarray(data.y)[fit], np.asarray(data.group)[fit],
                            len(data.group_names))


def add_peers(ctx: "Context", row: dict[str, Any], families: list[str] | None) -> None:
    """Fit the peer families a stored job's row lacks (default: its model's), on its sample, beside it."""
    wanted = tuple(families or DEFAULT_FAMILIES[row["model"]])
    have = {family_of(name) for name in row.get("peers") or {}}
    missing = tuple(f for f in wanted if f not in have)
    if missing:
        added = sample_peers(ctx, row["table"], row["model"], row["kind"], row["tolerance"], row["seed"],
                             (row.get("job") or {}).get("screened_out") or [], missing)
        row.setdefault("peers", {}).update(added)
        print(key_of(row), "peers added:", ", ".join(sorted({family_of(n) for n in added})) or "none", flush=True)


class Context:
    """The run's populations (loaded once) and its service stack (started on first use)."""

    def __init__(self) -> None:
        self.populations: dict[str, dict[str, Any]] = {}
        self.stack = self.client = self.drop = self.home = None
        self.uploaded: dict[str, str] = {}

    def population(self, table: str) -> dict[str, Any]:
        from solvers import ProblemSpec
        from solvers.data.encoding import build_groups, encode_labels

        p = POPULATIONS[table]
        key = p.load.__name__
        if key not in self.populations:
            self.populations[key] = {"table": p.load(), "groups": {}}
        pop = self.populations[key]
        if table not in pop["groups"]:
            f = p.fields
            rules = ProblemSpec.model_validate(spec_for(table, "linear", "demographic_parity", 0.05, "default",
                                                        0)).group_rules
            index, names = build_groups(pop["table"], f["sensitive"], rules)
            pop["groups"][table] = {"index": np.asarray(index, dtype=np.int64), "names": list(names)}
            pop.setdefault("y_of", {})[table] = encode_labels(pop["table"][f["target"]], f["positive_label"])
        return {**pop, "y": pop["y_of"][table]}

    def start(self) -> None:
        import redis

        from bench.common.stack import pg_database, start_stack

        redis.Redis.from_url(BENCH_REDIS_URL).flushdb()   # its own database: the test suite's stay as they are
        url, self.drop = pg_database()
        self.home = tempfile.TemporaryDirectory()
        self.stack = start_stack("population", Path(self.home.name), url, BENCH_REDIS_URL, workers=1,
                                 extra_env={"FAIRSOLVE_WORKER_NICE": "0"})
        # a job's wall is what a user of a running service waits for: the first one must not wait for the
        # worker's own start (the stack answers as soon as its API does)
        self.stack.until(lambda: " ready." in self.stack.log("worker"), 180, "the worker's start")
        self.client = self.stack.client()

    def close(self) -> None:
        from bench.common.stack import stop_stack

        if self.stack is not None:
            self.client.close()
            stop_stack(self.stack)
            self.drop()
            self.home.cleanup()

    def job(self, sample: pd.DataFrame, spec: dict[str, Any], name: str) -> dict[str, Any]:
        """Upload the sample (once per table and seed), submit the job, follow it to its end, fetch its ONNX model."""
        if self.stack is None:
            self.start()
        client = self.client
        if name not in self.uploaded:
            response = client.post("/api/v1/datasets", files={"file": (f"{name}.csv", sample.to_csv(index=False),
                                                                        "text/csv")})
            response.raise_for_status()
            self.uploaded[name] = response.json()["id"]
        started = time.perf_counter()
        answer = client.post("/api/v1/jobs", json={**spec, "dataset_id": self.uploaded[name]})
        if answer.status_code != 202:
            return {"status": "refused", "error": f"{answer.status_code}: {answer.text}"[:400]}
        job = self.stack.wait_job(client, answer.json()["id"], {"succeeded", "failed", "cancelled"},
                                  timeout=TIME_LIMIT_S + 120, wait_s=25.0)
        wall = time.perf_counter() - started
        out: dict[str, Any] = {"status": job["status"], "wall_s": wall, "id": job["id"]}
        if job["status"] != "succeeded":
            out["error"] = str(job.get("error"))[:400]
            return out
        result = job["result"]
        out["solver_s"] = result.get("solver_time_s")   # the solve alone: wall − solver_s is the service's share
        out["test_accuracy"] = job["metrics"]["test"]["accuracy"]
        used = job.get("spec") or {}
        out["features"] = used.get("features")   # with ``features: null``, the columns the feature screen kept
        out["screened_out"] = [note["column"] for note in used.get("feature_screen") or []
                               if note.get("action") == "excluded"]
        selected = [t for t in result.get("tried") or [] if t.get("selected")]
        if selected:
            out["selected"] = {k: selected[0].get(k) for k in ("solver", "params", "training_tolerances")}
        if result.get("guarantee"):
            out["guarantee"] = {k: result["guarantee"].get(k) for k in ("met", "best_bound", "verifiable",
                                                                         "certifiable", "rows_needed", "message")}
        margin = (result.get("enforcement") or {}).get("margin")
        if margin:
            out["enforcement_margin"] = margin
        onnx = client.get(f"/api/v1/jobs/{job['id']}/model.onnx", timeout=TIME_LIMIT_S)   # exported on request:
        # slow on a loaded machine (30 s, the client's default, ran out at load average 25)
        onnx.raise_for_status()
        out["onnx"] = onnx.content
        self._wait_idle(job["id"])
        return out

    def _wait_idle(self, job_id: str) -> None:
        """Wait for the job's unconstrained baseline (if any), so the next job starts on an idle worker."""
        job_settled(self.client, job_id, TIME_LIMIT_S)


# ------------------------------------------------------------------ the store and the report
def key_of(row: dict[str, Any]) -> str:
    return "|".join(str(row[k]) for k in ("table", "model", "kind", "tolerance", "mode", "seed"))


def load_store(path: Path = STORE) -> dict[str, Any]:
    return json.loads(gzip.decompress(path.read_bytes())) if path.exists() else {"jobs": {}}


def save_store(store: dict[str, Any], path: Path = STORE) -> None:
    """The store as compact JSON, gzipped (``mtime=0``: the same jobs give the same bytes), written whole then
    renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    text = json.dumps(store, sort_keys=True, separators=(",", ":"), default=float)
    tmp.write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))
    tmp.replace(path)


def summarise_cell(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A cell's figures (module docstring) from its samples."""
    kind, eps = rows[0]["kind"], rows[0]["tolerance"]
    ours = [r for r in rows if "ours" in r]
    out: dict[str, Any] = {"jobs": len(rows), "succeeded": len(ours)}
    if ours:
        gaps = [r["ours"][kind] for r in ours]
        out.update({"kept": sum(g <= eps for g in gaps) / len(ours), "accuracy": statistics.mean(
            r["ours"]["accuracy"] for r in ours), "gap": statistics.mean(gaps), "worst_gap": max(gaps),
            "wall_s": statistics.median(r["wall_s"] for r in ours),
            "solver_s": _median_of(r.get("solver_s") for r in ours),
            "unseen_accuracy": _mean_of(r["ours"].get("unseen_accuracy") for r in ours),
            "onnx_max_diff": max(r.get("onnx_check", 0.0) for r in ours)})
        keeps = [r.get("parity_keep") for r in ours]
        if all(k is not None for k in keeps):   # every job's sample has it (stored since)
            out["parity_keep"] = statistics.mean(keeps)
        expected = [r["ours_expected"] for r in ours if "ours_expected" in r]
        if len(expected) == len(ours):   # every job's rule measured in expectation too (jobs stored since)
            gaps_e = [e[kind] for e in expected]
            out["expected"] = {"kept": sum(g <= eps for g in gaps_e) / len(expected), "accuracy": statistics.mean(
                e["accuracy"] for e in expected), "gap": statistics.mean(gaps_e), "worst_gap": max(gaps_e)}
        guaranteed = [r for r in ours if (r.get("job") or {}).get("guarantee")]
        if guaranteed:
            met = [r for r in guaranteed if r["job"]["guarantee"].get("met")]
            out["met"] = len(met) / len(guaranteed)
            out["met_violations"] = sum(r["ours"][kind] > eps for r in met)
            out["met_jobs"] = len(met)
    peers: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        for name, v in (r.get("peers") or {}).items():
            peers.setdefault(name, []).append(v)
    out["peers"] = {name: {"aim": v[0]["aim"], "kept": sum(x[kind] <= eps for x in v) / len(v),
                           "accuracy": statistics.mean(x["accuracy"] for x in v),
                           "gap": statistics.mean(x[kind] for x in v),
                           "fit_s": statistics.median(x["fit_s"] for x in v),
                           "unseen_accuracy": _mean_of(x.get("unseen_accuracy") for x in v)}
                    for name, v in peers.items() if len(v) == len(rows)}   # a peer of every sample only
    target = TARGET_FAMILY.get(rows[0].get("model"))
    families = {family_of(name) for name in out["peers"]}
    verdict_peers = ({n: p for n, p in out["peers"].items() if family_of(n) == target} if target in families
                     else out["peers"])
    fair = _fair_peer(verdict_peers, out["expected"]["kept"]) if "expected" in out else None
    if fair is not None:   # the same comparison with ours in expectation, as the peers are measured
        name, p = fair
        out["expected"].update(fair_peer=name, verdict=out["expected"]["accuracy"] >= p["accuracy"] - ACCURACY_SLACK)
    if ours and out["peers"]:
        fair = _fair_peer(verdict_peers, out["kept"])
        if fair is not None:
            name, p = fair
            out["fair_peer"] = name
            out["verdict"] = out["accuracy"] >= p["accuracy"] - ACCURACY_SLACK
            if out["unseen_accuracy"] is not None and p["unseen_accuracy"] is not None:   # the same, on unseen rows
                out["unseen_verdict"] = out["unseen_accuracy"] >= p["unseen_accuracy"] - ACCURACY_SLACK
            out["time_ratio"] = out["wall_s"] / max(p["fit_s"], 1e-9)
        best = _best_peer(out["peers"], out["kept"])
        if best is not None and len(families) > 1:
            name, p = best
            out["best_peer"] = name
            out["best_verdict"] = out["accuracy"] >= p["accuracy"] - ACCURACY_SLACK
    return out


def _fair_peer(peers: dict[str, dict[str, Any]], kept: float) -> tuple[str, dict[str, Any]] | None:
    """(name, figures) of the peer at the largest aim that keeps ε at least as often as ``kept``, or None."""
    fair = [(name, p) for name, p in peers.items() if p["kept"] >= kept - 1e-12]
    return max(fair, key=lambda item: item[1]["aim"]) if fair else None


def _best_peer(peers: dict[str, dict[str, Any]], kept: float) -> tuple[str, dict[str, Any]] | None:
    """The most accurate of each family's fair peer (:func:`_fair_peer` within the family): the best peer in the
    run that keeps ε at least as often as ``kept``."""
    fair = [_fair_peer({n: p for n, p in peers.items() if family_of(n) == family}, kept)
            for family in sorted({family_of(n) for n in peers})]
    fair = [f for f in fair if f is not None]
    return max(fair, key=lambda item: item[1]["accuracy"]) if fair else None


def _mean_of(values) -> float | None:
    """The mean of the values that exist (None when none does: jobs stored before the figure was kept)."""
    present = [v for v in values if v is not None]
    return statistics.mean(present) if present else None


def _median_of(values) -> float | None:
    """The median of the values that exist (None when none does: jobs stored before the figure was kept)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def cells(store: dict[str, Any]) -> dict[tuple, dict[str, Any]]:
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for row in store["jobs"].values():
        grouped.setdefault(tuple(row[k] for k in ("table", "model", "kind", "tolerance", "mode", "n")), []).append(row)
    return {key: summarise_cell(rows) for key, rows in sorted(grouped.items(), key=lambda kv: str(kv[0]))}


def _f(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def guarantee_pooled(store: dict[str, Any]) -> list[str]:
    """The guarantee's targets pooled over every cell: met jobs and their population violations (≤ 5 % asked), and
    the jobs said certifiable before training, met in ≥ 90 % of cases asked."""
    rows = [r for r in store["jobs"].values() if "ours" in r and (r.get("job") or {}).get("guarantee")]
    if not rows:
        return []
    met = [r for r in rows if r["job"]["guarantee"].get("met")]
    violations = sum(r["ours"][r["kind"]] > r["tolerance"] for r in met)
    certifiable = [r for r in rows if r["job"]["guarantee"].get("certifiable")]
    certified_met = sum(bool(r["job"]["guarantee"].get("met")) for r in certifiable)
    share = f"{violations / len(met):.3f}" if met else "—"
    cert = f"{certified_met / len(certifiable):.2f}" if certifiable else "—"
    return ["", f"Guarantee, pooled over every cell: {len(met)} met of {len(rows)} jobs; population violations "
                f"among the met: {violations} ({share}); said certifiable before training: {len(certifiable)}, "
                f"met among them: {certified_met} ({cert})."]


def write_report(store: dict[str, Any], path: Path = REPORT) -> None:
    lines = ["# Population protocol (`python -m bench.quality.population`)", "",
             "Each job: a bootstrap sample of the table (n rows, seeded) through the service (API + Celery worker on "
             "PostgreSQL + Redis); its ONNX model scores every row of the table, so accuracy and gap are the exact "
             "population values. Peers on the same training rows in the same run; 'fair peer' = the peer of the "
             "issue's target family (TO(LightGBM) for gbdt, EG(LR) for linear and MLP) at the "
             "largest aim that keeps ε on the population at least as often as FairSolve; 'best peer of the run' = "
             "the most accurate of every family's fair peer (OxonFair, FairGBM, … where they ran); verdict: our mean accuracy "
             f"≥ the fair peer's − {ACCURACY_SLACK}. 'Rule at parity keeps': the mean over the samples of the "
             "probability that a rule fitted to exact parity on the sample's fitting rows keeps ε on the population "
             "(`parity_rule_keep`: their sampling error alone; what thresholds on any scores can keep at this size). "
             "Wall: job POST → succeeded (queue included), median, and in "
             "parentheses the solve's own seconds where recorded; peer: its fit, median.", "",
             f"Last written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
             f"now {os.getloadavg()[0]:.2f}.", "",
             "| table | model | constraint | ε | mode | n | jobs | kept ≤ ε | rule at parity keeps | accuracy | "
             "gap (mean / worst) | met "
             "(violations) | wall s (solve) | fair peer: kept / accuracy / gap / fit s | verdict | wall / peer fit | "
             "best peer of the run: kept / accuracy / gap / fit s | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (table, model, kind, eps, mode, n), c in cells(store).items():
        peer = c["peers"].get(c.get("fair_peer")) if c.get("fair_peer") else None
        peer_s = (f"{c['fair_peer']}: {_f(peer['kept'], 2)} / {_f(peer['accuracy'])} / {_f(peer['gap'])} / "
                  f"{_f(peer['fit_s'], 2)}") if peer else "—"
        best = c["peers"].get(c.get("best_peer")) if c.get("best_peer") else None
        best_s = (f"{c['best_peer']}: {_f(best['kept'], 2)} / {_f(best['accuracy'])} / {_f(best['gap'])} / "
                  f"{_f(best['fit_s'], 2)}") if best else "—"
        met = f"{_f(c['met'], 2)} ({c['met_violations']} of {c['met_jobs']})" if "met" in c else "—"
        solve = f" ({_f(c['solver_s'], 2)})" if c.get("solver_s") is not None else ""
        lines.append(f"| {table} | {model} | {kind} | {eps} | {mode} | {n} | {c['succeeded']}/{c['jobs']} | "
                     f"{_f(c.get('kept'), 2)} | {_f(c.get('parity_keep'), 2)} | {_f(c.get('accuracy'))} | "
                     f"{_f(c.get('gap'))} / "
                     f"{_f(c.get('worst_gap'))} | {met} | {_f(c.get('wall_s'), 2)}{solve} | {peer_s} | "
                     f"{_f(c.get('verdict'))} | {_f(c.get('time_ratio'), 2)} | {best_s} | {_f(c.get('best_verdict'))} |")
    lines += ["", "Every peer at every aim (kept / mean accuracy / mean gap / median fit s):", ""]
    for (table, model, kind, eps, mode, n), c in cells(store).items():
        parts = [f"{name} {_f(p['kept'], 2)} / {_f(p['accuracy'])} / {_f(p['gap'])} / {_f(p['fit_s'], 2)}"
                 for name, p in c["peers"].items()]
        if parts:
            lines.append(f"- {table} {model} {kind} ε={eps} {mode} n={n}: " + "; ".join(parts))
    unseen = [(key, c) for key, c in cells(store).items() if c.get("unseen_accuracy") is not None]
    if unseen:
        lines += ["", "Accuracy on the table's rows that no draw of the sample took (the part of the population no "
                      "fit saw; mean over the jobs that kept it), ours against the fair peer's on the same samples, and the "
                      f"verdict there (ours ≥ the peer's − {ACCURACY_SLACK}):",
                  ""]
        for (table, model, kind, eps, mode, n), c in unseen:
            peer = c["peers"].get(c.get("fair_peer")) if c.get("fair_peer") else None
            peer_s = (f"; {c['fair_peer']} {_f(peer.get('unseen_accuracy'))}: {_f(c['unseen_verdict'])}"
                      if "unseen_verdict" in c else "")
            lines.append(f"- {table} {model} {kind} ε={eps} {mode} n={n}: ours {_f(c['unseen_accuracy'])}{peer_s}")
    expected = [(key, c) for key, c in cells(store).items() if "expected" in c]
    if expected:
        lines += ["", "Ours in expectation over the rule's draw (`onnx_expected`: P(ŷ = 1 | x) read from the ONNX "
                      "model's own thresholds and weights; the measure the peers get), beside the draw the ONNX "
                      "decision realises on the table's rows (the table above): kept / accuracy / gap (mean / worst):",
                  ""]
        for (table, model, kind, eps, mode, n), c in expected:
            e = c["expected"]
            peer = c["peers"][e["fair_peer"]] if "fair_peer" in e else None
            peer_s = (f"; {e['fair_peer']} {_f(peer['kept'], 2)} / {_f(peer['accuracy'])}: {_f(e['verdict'])}" if peer
                      else "; no peer aim keeps ε as often")
            lines.append(f"- {table} {model} {kind} ε={eps} {mode} n={n}: in expectation {_f(e['kept'], 2)} / "
                         f"{_f(e['accuracy'])} / {_f(e['gap'])} / {_f(e['worst_gap'])}{peer_s}; realised "
                         f"{_f(c['kept'], 2)} / {_f(c['accuracy'])} / {_f(c['gap'])} / {_f(c['worst_gap'])}")
    screened = sorted({(r["table"], c) for r in store["jobs"].values() for c in (r.get("job") or {}).get("screened_out")
                       or []})
    if screened:
        lines += ["", "Columns the service's feature screen excluded from jobs without `features` (the peers of those jobs "
                      "were fitted on the columns the job kept): " + "; ".join(f"{t}: {c}" for t, c in screened) + "."]
    lines += guarantee_pooled(store)
    onnx = [c.get("onnx_max_diff") for c in cells(store).values() if c.get("onnx_max_diff") is not None]
    if onnx:
        lines += ["", f"ONNX check: the largest |ONNX test accuracy − job's stored test accuracy| over all jobs: "
                      f"{max(onnx):.2e}."]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--core", action="store_true", help="the core grid")
    parser.add_argument("--tables", nargs="+", default=["adult_sex"])
    parser.add_argument("--models", nargs="+", default=["gbdt"])
    parser.add_argument("--kinds", nargs="+", default=["demographic_parity"])
    parser.add_argument("--tolerances", nargs="+", type=float, default=[0.05])
    parser.add_argument("--modes", nargs="+", default=["default"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3])
    parser.add_argument("--rows", type=int, default=None, help="sample rows (default: the table's)")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--peers", nargs="+", choices=sorted(PEER_FAMILIES), default=None,
                        help="peer families (default: the model's, DEFAULT_FAMILIES)")
    parser.add_argument("--add-peers", action="store_true",
                        help="fit the --peers families a stored job of the grid lacks, beside it (no job is re-run)")
    parser.add_argument("--add-parity-keep", action="store_true",
                        help="compute `parity_rule_keep` for every stored job that lacks it (no job is re-run)")
    parser.add_argument("--rerun", action="store_true", help="replace stored jobs of the cells run")
    parser.add_argument("--report", action="store_true", help="only rewrite population.md")
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="folder of population.json.gz and population.md (default: the committed results)")
    own = parser.add_argument_group("a table of your own (its name: the file's stem; default --tables)")
    own.add_argument("--table-file", type=Path, help="CSV or Parquet, read as an upload of it is")
    own.add_argument("--target")
    own.add_argument("--positive-label")
    own.add_argument("--sensitive", nargs="+")
    own.add_argument("--group-rules", type=json.loads, help="the job spec's group_rules, as JSON")
    own.add_argument("--features", nargs="+")
    args = parser.parse_args(argv)
    if args.table_file is not None:
        if not (args.target and args.positive_label is not None and args.sensitive):
            parser.error("--table-file needs --target, --positive-label and --sensitive")
        name, POPULATIONS[name] = table_population(args.table_file, args.target, args.positive_label,
                                                   args.sensitive, args.group_rules, args.features, args.rows)
        if args.tables == parser.get_default("tables"):
            args.tables = [name]
    store_path, report_path = args.results / STORE.name, args.results / REPORT.name
    store = load_store(store_path)
    if args.report:
        write_report(store, report_path)
        return
    if args.add_parity_keep:
        ctx = Context()
        for row in store["jobs"].values():
            if "ours" in row and "parity_keep" not in row:
                if row["n"] != POPULATIONS[row["table"]].sample_rows:
                    POPULATIONS[row["table"]] = Population(POPULATIONS[row["table"]].load,
                                                           POPULATIONS[row["table"]].fields, row["n"])
                row["parity_keep"] = sample_parity_keep(ctx, row["table"], row["kind"], row["tolerance"],
                                                        row["seed"])
        save_store(store, store_path)
        write_report(store, report_path)
        return
    grid = CORE if args.core else {"tables": args.tables, "models": args.models, "kinds": args.kinds,
                                   "tolerances": args.tolerances, "modes": args.modes, "seeds": args.seeds}
    ctx = Context()
    try:
        for seed in grid["seeds"]:           # seeds outermost: a run cut short leaves whole seeds
            for table in grid["tables"]:
                if args.rows:
                    POPULATIONS[table] = Population(POPULATIONS[table].load, POPULATIONS[table].fields, args.rows)
                for model in grid["models"]:
                    for kind in grid["kinds"]:
                        for eps in grid["tolerances"]:
                            for mode in grid["modes"]:
                                probe = {"table": table, "model": model, "kind": kind, "tolerance": eps,
                                         "mode": mode, "seed": seed}
                                key = key_of(probe) + f"|{POPULATIONS[table].sample_rows}"
                                if args.add_peers:
                                    if key in store["jobs"] and store["jobs"][key].get("status") == "succeeded":
                                        add_peers(ctx, store["jobs"][key], args.peers)
                                        save_store(store, store_path)
                                    continue
                                if key in store["jobs"] and not args.rerun:
                                    continue
                                row = run_sample(ctx, table, model, kind, eps, mode, seed, not args.no_peers,
                                                 tuple(args.peers) if args.peers else None)
                                store["jobs"][key] = row
                                save_store(store, store_path)
                                ours = row.get("ours") or {}
                                print(key, row.get("status"), f"wall {row.get('wall_s', 0):.2f}s",
                                      f"solve {row.get('solver_s') or 0:.2f}s",
                                      {k: round(v, 4) for k, v in ours.items()}, flush=True)
    finally:
        ctx.close()
        write_report(store, report_path)


if __name__ == "__main__":
    main()
