r"""The exact metrics an audit checks, computed from raw scores f(x), labels and groups.

Every metric is one small class registered in :data:`AUDIT_METRICS` (the solver library's
:class:`~solvers.registry.Registry`), with

* ``direction``: ``"max"`` — the threshold is an upper bound (a gap: pass iff value ≤ threshold) —
  or ``"min"`` — a lower bound (accuracy, AUC, the minority's share: pass iff value ≥ threshold);
* ``Options``: the metric's extra spec fields (pydantic, unknown fields are errors);
* ``compute(scored, options) -> (value, by_group)``: the overall value and, per group, the
  metric's per-group statistics ``{stat: {group: value}}`` (selection rate, TPR, ...).

The rate metrics (accuracy, balanced accuracy, the DP / equal opportunity / equalized odds gaps, the
minority's share: :class:`CellMetric`; the gaps :class:`RateGap`) read only the counts of the cells group × label × decision
(:mod:`app.audits.cells`, tested against :func:`solvers.metrics.group_fairness` and ``minority_rate``). The
others are the solver library's: ``loss_gap``; :mod:`solvers.partial.metrics` (pSP, pDP and the partial EOp /
EOdds / group AUC on a percentile ``interval``, scores = raw f as in training); :mod:`solvers.auc.metrics` (AUĈ
and the AUC-fairness ``variant``); log loss is scikit-learn's. Predictions are ŷ = 1{f > 0} = 1{σ(f) > ½}, as
everywhere in FairSolve.

**What a metric reads** (``needs``): ``"label"`` (the outcome y) and / or ``"score"`` (a continuous score f
rather than the decision alone). A prediction log (:mod:`app.audits.logs`) without a label column or with only a
decision column offers only the metrics whose needs it meets; the others are refused naming the missing field.

**Confidence intervals** (:func:`bootstrap`), 95% (``LEVEL``). The rate gaps (``demographic_parity``,
``equal_opportunity``, ``equalized_odds``: :class:`RateGap`) take the job fairness report's interval: the exact
Clopper–Pearson construction of :mod:`solvers.fairness.intervals` (:func:`~solvers.fairness.intervals.rate_gap_ci`)
on the run's cell counts, hits = predicted positives and counts = rows per group (DP one row of selection rates,
equal opportunity the TPRs, equalized odds the TPR and the FPR rows), and each per-group rate the exact binomial
interval of its cell; nothing is resampled for them, so they do not depend on ``N_BOOT`` or ``SEED``. Every other
metric has a percentile bootstrap interval over ``N_BOOT = 200`` resamples, seeded with ``SEED = 0`` so a report
is reproducible. The other rate metrics' resamples are ``N_BOOT`` multinomial draws of the cell counts (:func:`app.audits.cells.resample`: the same distribution as
the cell counts of a row resample, at O(B · 4K) cost instead of O(B · n)); the ROC AUC's are multinomial draws
of the cells group × label × score bin (:class:`BinnedMetric`); the other metrics' are row resamples
drawn from ``numpy.random.default_rng(SEED)`` (one (n,) index row at a time, the rows of one (B, n) draw:
:class:`Resamples`). Within each kind every metric of a run is evaluated on the same resamples. A resample
where a value is undefined (e.g. a group with no positives) is left out of that value's interval.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from solvers.auc.metrics import VARIANTS, auc, fairness_gap, protected_index
from solvers.fairness.intervals import clopper_pearson, rate_gap_ci
from solvers.metrics import loss_gap
from solvers.partial.intervals import validate_interval
from solvers.partial.metrics import (partial_dp, partial_equal_opportunity, partial_equalized_odds,
                                     partial_group_auc, partial_sp)
from solvers.registry import Registry

from . import cells

N_BOOT = 200
SEED = 0
LEVEL = 0.95

AUDIT_METRICS: Registry = Registry("metric type")
ByGroup = dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class Scored:
    """What every metric reads: labels y ∈ {0, 1}, raw scores f, group index per row and the group names.

    ``decisions``: the decisions ŷ when they are not 1{f > 0} (a prediction log's own threshold or decision
    column); None for FairSolve's models."""

    y: np.ndarray
    logits: np.ndarray
    group: np.ndarray
    group_names: list[str]
    decisions: np.ndarray | None = None

    def take(self, rows: np.ndarray) -> "Scored":
        return Scored(self.y[rows], self.logits[rows], self.group[rows], self.group_names,
                      None if self.decisions is None else self.decisions[rows])

    @property
    def proba(self) -> np.ndarray:
        return np.exp(-np.logaddexp(0.0, -self.logits))  # σ(f) without overflow

    @property
    def pred(self) -> np.ndarray:
        return (self.logits > 0).astype(np.int64) if self.decisions is None else self.decisions

    @property
    def n_groups(self) -> int:
        return len(self.group_names)


def _num(value: Any) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _per_group(scored: Scored, stat: Callable[[Scored], float | None]) -> dict[str, float | None]:
    """``stat`` on each group's rows (a loop over the K groups, each call vectorised over rows): the rows are
    sorted by group once (stable) and each group is a view of its contiguous slice, not a masked copy."""
    counts = np.bincount(scored.group, minlength=scored.n_groups)
    ends = np.cumsum(counts)
    small = scored.group.astype(np.int16) if scored.n_groups < 2**15 else scored.group  # numpy radix-sorts ≤ 16 bits
    by_group = scored.take(np.argsort(small, kind="stable"))
    return {name: _num(stat(by_group.take(slice(end - n, end)))) if n else None
            for name, n, end in zip(scored.group_names, counts, ends)}


class MetricOptions(BaseModel):
    """Extra fields of a metric spec; none by default."""

    model_config = ConfigDict(extra="forbid")


class AuditMetric:
    """One metric: see the module docstring."""

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]]
    description: ClassVar[str]
    direction: ClassVar[Literal["max", "min"]]
    needs: ClassVar[frozenset[str]] = frozenset({"label", "score"})
    drift: ClassVar[str | None] = None  # the statistic of :mod:`app.audits.drift` a drift metric reads
    Options: ClassVar[type[MetricOptions]] = MetricOptions

    @staticmethod
    def compute(scored: Scored, options: Any) -> tuple[float | None, ByGroup]:
        raise NotImplementedError


class CellMetric(AuditMetric):
    """A rate metric: a function of the cell counts c[g, y, ŷ] alone (:mod:`app.audits.cells`)."""

    @staticmethod
    def on_cells(counts: np.ndarray, options: Any, group_names: list[str]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``(value (...), {stat: (..., K)})`` for counts (..., K, 2, 2) with any leading axes (NaN: undefined)."""
        raise NotImplementedError

    @classmethod
    def from_counts(cls, counts: np.ndarray, options: Any, group_names: list[str]) -> tuple[float | None, ByGroup]:
        """``compute``'s answer from one run's (K, 2, 2) counts."""
        value, by_group = cls.on_cells(counts, options, group_names)
        return _num(value), {stat: dict(zip(group_names, map(_num, v))) for stat, v in by_group.items()}

    @classmethod
    def compute(cls, scored: Scored, options: Any) -> tuple[float | None, ByGroup]:
        counts = cells.cell_counts(scored.y, scored.pred, scored.group, scored.n_groups)
        return cls.from_counts(counts, options, scored.group_names)


def _cell_metric(name: str, direction: str, description: str, value: Callable[[np.ndarray], np.ndarray],
                 stats: dict[str, Callable[[np.ndarray], np.ndarray]], needs: frozenset[str]) -> None:
    """Register a rate metric: its value and per-group statistics as functions of the counts."""

    @AUDIT_METRICS.register(name, description=description, direction=direction, needs=needs)
    class Rate(CellMetric):
        @staticmethod
        def on_cells(counts: np.ndarray, options: Any, group_names: list[str]):
            return value(counts), {stat: of(counts) for stat, of in stats.items()}


# -- performance ---------------------------------------------------------------------------------------------

def _log_loss(s: Scored) -> float | None:
    from sklearn import metrics as skm

    return skm.log_loss(s.y, np.clip(s.proba, 1e-15, 1 - 1e-15), labels=[0, 1]) if s.y.size else None


def _auc(s: Scored) -> float | None:
    return auc(s.y, s.logits)


LABEL, SCORE = frozenset({"label"}), frozenset({"label", "score"})


def _performance(name: str, stat: Callable[[Scored], float | None], direction: str, description: str,
                 aliases: tuple[str, ...] = (), needs: frozenset[str] = SCORE) -> None:
    """Register an overall performance metric whose per-group statistic is itself on the group's rows."""

    @AUDIT_METRICS.register(name, aliases=aliases, description=description, direction=direction, needs=needs)
    class Performance(AuditMetric):
        @staticmethod
        def compute(scored: Scored, options: Any) -> tuple[float | None, ByGroup]:
            return _num(stat(scored)), {name: _per_group(scored, stat)}


_cell_metric("accuracy", "min", "Share of correct predictions 1{f > 0} = y.", cells.accuracy,
             {"accuracy": cells.group_accuracy}, LABEL)
_cell_metric("balanced_accuracy", "min", "Mean of TPR and TNR.", cells.balanced_accuracy,
             {"balanced_accuracy": cells.group_balanced_accuracy}, LABEL)


class RateGap(CellMetric):
    """A rate gap (DP, equal opportunity, equalized odds): max − min over the groups of each of its ``rates``
    (:data:`app.audits.cells.RATES`), the largest of them. Its interval is not drawn: it is the job fairness
    report's exact Clopper–Pearson interval (:func:`solvers.fairness.intervals.rate_gap_ci`) on the run's cells
    (hits = predicted positives, counts = rows: :func:`app.audits.cells.rate_cells`), and each per-group rate's is
    that cell's exact binomial interval (:func:`solvers.fairness.intervals.clopper_pearson`)."""

    rates: ClassVar[tuple[str, ...]]

    @classmethod
    def on_cells(cls, counts: np.ndarray, options: Any, group_names: list[str]):
        gaps = [cells.gap(cells.RATES[rate](counts)) for rate in cls.rates]
        value = gaps[0] if len(gaps) == 1 else np.fmax(*gaps)
        return value, {rate: cells.RATES[rate](counts) for rate in cls.rates}

    @classmethod
    def exact_intervals(cls, counts: np.ndarray, level: float) -> tuple[list[float] | None, dict[str, np.ndarray]]:
        """``(ci, {rate: (K, 2) per-group [lo, hi]})`` at ``level`` from one run's (K, 2, 2) counts (None / NaN:
        undefined)."""
        hits, n = cells.rate_cells(counts, cls.rates)
        lo, hi = rate_gap_ci(hits, n, level)
        cell_lo, cell_hi = clopper_pearson(hits, n, 1.0 - level)
        ci = [float(lo), float(hi)] if np.isfinite(lo) and np.isfinite(hi) else None
        return ci, {rate: np.stack([cell_lo[j], cell_hi[j]], axis=-1) for j, rate in enumerate(cls.rates)}


def _rate_gap(name: str, description: str, over: tuple[str, ...], needs: frozenset[str]) -> None:
    """Register a rate gap over the rates ``over`` (:class:`RateGap`)."""

    @AUDIT_METRICS.register(name, description=description, direction="max", needs=needs)
    class Gap(RateGap):
        rates = over


class BinnedMetric(AuditMetric):
    """A metric of the scores' order (the ROC AUC): its value is exact on the rows; its interval is drawn from the
    cells group × label × score bin (:func:`app.audits.cells.auc_of_bins`), each multinomial draw's binned value
    shifted by the binning's error on the run's own counts (exact − binned), so it is centred as the row
    bootstrap's."""

    @staticmethod
    def on_bins(counts: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """``(value (...), {stat: (..., K)})`` for counts (..., K, 2, M)."""
        raise NotImplementedError


@AUDIT_METRICS.register("roc_auc", aliases=("auc",), description="ROC AUC AUĈ(D+, D−) of the raw scores (ties ½).",
                        direction="min", needs=SCORE)
class RocAuc(BinnedMetric):
    @staticmethod
    def compute(scored: Scored, options: Any) -> tuple[float | None, ByGroup]:
        return _num(_auc(scored)), {"roc_auc": _per_group(scored, _auc)}

    @staticmethod
    def on_bins(counts: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return cells.pooled_auc_of_bins(counts), {"roc_auc": cells.auc_of_bins(counts)}


_performance("log_loss", _log_loss, "max", "Mean binary cross-entropy of σ(f).")


# -- group fairness of predictions ---------------------------------------------------------------------------

_rate_gap("demographic_parity", "max_g Pr(ŷ=1 | g) − min_g Pr(ŷ=1 | g).", ("selection_rate",), frozenset())
_rate_gap("equal_opportunity", "max_g TPR_g − min_g TPR_g.", ("tpr",), LABEL)
_rate_gap("equalized_odds", "max(TPR gap, FPR gap) over groups.", ("tpr", "fpr"), LABEL)


class LossOptions(MetricOptions):
    loss: Literal["bce", "logistic", "hinge", "truncated_logistic"] = Field(
        "bce", description="Per-sample loss ℓ(f, y) of the groups' mean losses.")


@AUDIT_METRICS.register("loss_gap", description="max_g (L_g − L): a group's mean loss above the overall mean.",
                        direction="max")
class LossGap(AuditMetric):
    Options = LossOptions

    @staticmethod
    def compute(scored: Scored, options: LossOptions) -> tuple[float | None, ByGroup]:
        out = loss_gap(scored.y, scored.logits, scored.group, scored.group_names, options.loss)
        return out["loss_gap"], {"loss_gap": {g: out["loss_gap_by_group"].get(g) for g in scored.group_names}}


class MinorityOptions(MetricOptions):
    minority: str | None = Field(None, description="The minority group's name (None: the smallest group present).")


@AUDIT_METRICS.register("minority_rate", description="The minority's share of the positive predictions "
                        "P_min / P (a lower bound).", direction="min", needs=frozenset())
class MinorityRate(CellMetric):
    Options = MinorityOptions

    @staticmethod
    def on_cells(counts: np.ndarray, options: MinorityOptions, group_names: list[str]):
        if options.minority is not None and options.minority not in group_names:
            value = np.full(counts.shape[:-3], np.nan)
        else:
            value = cells.minority_share(counts, None if options.minority is None
                                         else group_names.index(options.minority))
        present = cells.sizes(counts) > 0
        return value, {"share": np.where(present, cells.positive_shares(counts), np.nan)}


# -- partial fairness on percentile intervals ----------------------------------------------------------------

class IntervalOptions(MetricOptions):
    interval: Any = Field([0.0, 1.0], description="Percentile interval I (top-down within each group): [a, b], a "
                          "union [[a1, b1], ...] or per group {group: [a, b], '*': [a, b]}. 'auto' is a training "
                          "rule and is not accepted here.")
    score_threshold: float = Field(0.0, description="Decision threshold θ̂ on the raw score f for the pDP-type "
                                   "metrics (FairSolve's partial families' `threshold`).")

    @field_validator("interval")
    @classmethod
    def _interval(cls, value: Any) -> Any:
        if value == "auto":
            raise ValueError("'auto' is resolved when training; give the interval the job resolved")
        return validate_interval(value)


def _partial(name: str, aliases: tuple[str, ...], description: str,
             value: Callable[[Scored, IntervalOptions], float], needs: frozenset[str] = SCORE) -> None:
    @AUDIT_METRICS.register(name, aliases=aliases, description=description, direction="max", needs=needs)
    class Partial(AuditMetric):
        Options = IntervalOptions

        @staticmethod
        def compute(scored: Scored, options: IntervalOptions) -> tuple[float | None, ByGroup]:
            result = value(scored, options)
            if isinstance(result, dict):  # pdp: also the per-group rates above θ̂
                return _num(result["value"]), {"rate_above_threshold": {
                    g: _num(r) if np.any(scored.group == k) else None
                    for k, (g, r) in enumerate(zip(scored.group_names, result["rates"]))}}
            return _num(result), {}


def _psp(s: Scored, o: IntervalOptions) -> float:
    return partial_sp(s.logits, s.group, o.interval, s.n_groups, s.group_names)["value"]


def _pdp(s: Scored, o: IntervalOptions) -> dict:
    return partial_dp(s.logits, s.group, o.interval, o.score_threshold, s.n_groups, s.group_names)


def _pgauc(s: Scored, o: IntervalOptions) -> float:
    return partial_group_auc(s.logits, s.group, o.interval, s.n_groups, s.group_names)["value"]


def _peop(s: Scored, o: IntervalOptions) -> float:
    return partial_equal_opportunity(s.logits, s.group, s.y, o.interval, o.score_threshold, s.n_groups, s.group_names)


def _peod(s: Scored, o: IntervalOptions) -> float:
    return partial_equalized_odds(s.logits, s.group, s.y, o.interval, o.score_threshold, s.n_groups, s.group_names)


_partial("partial_statistical_parity", ("psp", "partial_sp"),
         "pSP: max over group pairs of the KS distance of the scores kept in each group's interval.", _psp,
         frozenset({"score"}))
_partial("partial_demographic_parity", ("pdp", "partial_dp"),
         "pDP: max over group pairs of |Pr(f > θ̂)| differences among the scores kept in the interval.", _pdp,
         frozenset({"score"}))
_partial("partial_group_auc", (), "max over group pairs of |Pr(f_i ≥ f_j) − ½| on the kept scores.", _pgauc,
         frozenset({"score"}))
_partial("partial_equal_opportunity", (), "pDP among the positives (y = 1), ranks within (group, y=1).", _peop)
_partial("partial_equalized_odds", (), "max over y ∈ {0, 1} of the per-label pDP.", _peod)


# -- AUC fairness --------------------------------------------------------------------------------------------

class AUCOptions(MetricOptions):
    variant: Literal[VARIANTS] = Field("group", description="AUC fairness variant: " + ", ".join(VARIANTS) + ".")  # type: ignore[valid-type]
    protected: str | None = Field(None, description="The group taking γ = +1 (None: the first group).")


@AUDIT_METRICS.register("auc_parity", aliases=("auc_fairness",), direction="max",
                        description="|AUĈ(G1, G1') − AUĈ(G2, G2')| of the variant, protected group vs the rest; "
                        "per group: the same with each group as the protected one.")
class AUCParity(AuditMetric):
    Options = AUCOptions

    @staticmethod
    def compute(scored: Scored, options: AUCOptions) -> tuple[float | None, ByGroup]:
        k = protected_index(scored.group_names, options.protected)
        value = fairness_gap(scored.y, scored.logits, scored.group == k, options.variant)
        by_group = {g: _num(fairness_gap(scored.y, scored.logits, scored.group == i, options.variant))
                    if np.any(scored.group == i) else None for i, g in enumerate(scored.group_names)}
        return _num(value), {"one_vs_rest": by_group}


# -- score drift between runs (computed by app.audits.drift, not from one run's rows) -------------------------

class DriftOptions(MetricOptions):
    against: Literal["previous", "baseline"] = Field("previous", description="The reference run: the previous "
                                                     "succeeded run, or the audit's pinned baseline run.")


def _drift(name: str, stat: str, description: str) -> None:
    @AUDIT_METRICS.register(name, description=description, direction="max", needs=frozenset(), drift=stat)
    class Drift(AuditMetric):
        Options = DriftOptions

        @staticmethod
        def compute(scored: Scored, options: Any) -> tuple[float | None, ByGroup]:
            raise TypeError(f"{name} compares two runs: see app.audits.drift")


_drift("score_ks", "ks", "max over groups of the Kolmogorov-Smirnov statistic sup_x |F_run(x) − F_ref(x)| of the "
       "group's scores against the reference run (no value, no verdict on an audit's first run).")
_drift("score_psi", "psi", "max over groups of the population stability index Σ_b (p_b − q_b) ln(p_b / q_b) over "
       "10 bins cut at the reference run's deciles of the group's scores.")


# -- specs ---------------------------------------------------------------------------------------------------

class MetricSpec(BaseModel):
    """``{"type": ..., "threshold": ..., **options}``; ``threshold`` None = reported, never breached."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(description="A metric type of GET /api/v1/audits/metrics (or an alias).")
    threshold: float | None = Field(None, allow_inf_nan=False, description="Upper bound for 'max' metrics, lower "
                                    "bound for 'min' metrics.")

    @field_validator("type")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in AUDIT_METRICS:
            raise ValueError(f"unknown metric type {value!r}; known: {', '.join(AUDIT_METRICS.names())}")
        return AUDIT_METRICS.get(value).name

    @model_validator(mode="after")
    def _options(self) -> "MetricSpec":
        metric = AUDIT_METRICS.get(self.type)
        try:
            metric.Options.model_validate(self.model_extra or {})
        except Exception as exc:
            errors = exc.errors() if hasattr(exc, "errors") else [{"loc": (), "msg": str(exc)}]
            first = errors[0]
            field = ".".join(map(str, first["loc"])) or "options"
            raise ValueError(f"{self.type}: field {field!r}: {first['msg']}") from None
        return self

    @property
    def metric(self) -> type[AuditMetric]:
        return AUDIT_METRICS.get(self.type)

    @property
    def options(self) -> MetricOptions:
        return self.metric.Options.model_validate(self.model_extra or {})

    @property
    def key(self) -> str:
        """The metric's identity within an audit (type plus non-default options), e.g. ``psp[interval=[0, 0.2]]``."""
        opts = self.options.model_dump(exclude_defaults=True)
        return self.type + ("[" + ", ".join(f"{k}={v}" for k, v in sorted(opts.items())) + "]" if opts else "")


def describe_metrics() -> list[dict[str, Any]]:
    """The catalog: every metric type with aliases, direction, description and its options' JSON schema."""
    return [{"type": m.name, "aliases": list(m.aliases), "direction": m.direction, "description": m.description,
             "needs": sorted(m.needs), "options_schema": m.Options.model_json_schema()}
            for m in AUDIT_METRICS.classes()]


# -- bootstrap -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Resamples:
    """The row indices of ``n_boot`` bootstrap resamples of n rows: iterating draws them one (n,) row at a time
    from a fresh ``default_rng(seed)``, the same rows as one (n_boot, n) draw (numpy's stream is the same), so
    every metric sees the same resamples while only one row of indices is held (8 MB for 1M rows, not 1.6 GB)."""

    n: int
    n_boot: int
    seed: int

    def __iter__(self):
        if self.n == 0:
            return
        rng = np.random.default_rng(self.seed)
        for _ in range(self.n_boot):
            yield rng.integers(0, self.n, size=self.n)

    def __len__(self) -> int:
        return self.n_boot if self.n else 0


def resamples(n: int, n_boot: int = N_BOOT, seed: int = SEED) -> Resamples:
    """The bootstrap resamples' row indices (see :class:`Resamples`)."""
    return Resamples(n, n_boot, seed)


def percentile_ci(values, level: float = LEVEL) -> list[float] | None:
    """Percentile interval of the defined values (None, NaN and infinities left out; None when none is defined)."""
    defined = np.array([np.nan if v is None else v for v in values], dtype=float)
    defined = defined[np.isfinite(defined)]
    if defined.size == 0:
        return None
    lo, hi = np.quantile(defined, [(1 - level) / 2, 1 - (1 - level) / 2])
    return [float(lo), float(hi)]


def _result(value: Any, by_group: ByGroup, replicates: Any, replicates_by_group: dict[str, dict[str, Any]]) -> dict:
    return {"value": _num(value), "ci": percentile_ci(replicates),
            "by_group": {stat: {g: {"value": _num(v), "ci": percentile_ci(replicates_by_group.get(stat, {}).get(g, ()))}
                                for g, v in groups.items()}
                         for stat, groups in by_group.items()}}


def _exact_result(metric: type[RateGap], value: float | None, by_group: ByGroup, counts: np.ndarray
                  ) -> dict[str, Any]:
    """A rate gap's :func:`_result` with its exact Clopper–Pearson intervals at ``LEVEL`` (:class:`RateGap`)."""
    ci, cell_cis = metric.exact_intervals(counts, LEVEL)
    return {"value": value, "ci": ci,
            "by_group": {stat: {g: {"value": v, "ci": None if v is None else [float(x) for x in cell_cis[stat][k]]}
                                for k, (g, v) in enumerate(groups.items())}
                         for stat, groups in by_group.items()}}


def on_cells(specs: list[MetricSpec], counts: np.ndarray, names: list[str], n_boot: int = N_BOOT,
             seed: int = SEED) -> list[dict[str, Any]]:
    """The rate metrics (:class:`CellMetric`) as :func:`bootstrap_all` gives them: values on the run's (K, 2, 2)
    cell counts; the rate gaps' intervals exact Clopper–Pearson ones from the counts (:class:`RateGap`, no
    draws), the others' over ``n_boot`` multinomial draws of them (:func:`app.audits.cells.resample`, seeded),
    each metric one array operation over the draws."""
    draws = None
    out = []
    for spec in specs:
        value, by_group = spec.metric.from_counts(counts, spec.options, names)
        if issubclass(spec.metric, RateGap):
            out.append(_exact_result(spec.metric, value, by_group, counts))
            continue
        draws = cells.resample(counts, n_boot, seed) if draws is None else draws
        reps, reps_by_group = spec.metric.on_cells(draws, spec.options, names)
        out.append(_result(value, by_group, reps, {stat: dict(zip(names, v.T)) for stat, v in reps_by_group.items()}))
    return out


def _on_score_bins(specs: list[MetricSpec], scored: Scored, n_boot: int, seed: int) -> list[dict[str, Any]]:
    """The :class:`BinnedMetric` s: exact values, intervals over ``n_boot`` multinomial draws of the cells
    group × label × score bin, shifted by the binning's error on the run (exact − binned)."""
    names = scored.group_names
    m = cells.n_score_bins(scored.n_groups, n_boot)
    counts = cells.binned_counts(scored.y, cells.score_bins(scored.logits, m), scored.group, scored.n_groups, m)
    draws = cells.resample(counts, n_boot, seed)

    def shifted(replicates: np.ndarray, exact: float | None, binned: float) -> np.ndarray:
        return replicates + (exact - binned if exact is not None and np.isfinite(binned) else 0.0)

    out = []
    for spec in specs:
        value, by_group = spec.metric.compute(scored, spec.options)
        binned, binned_by_group = spec.metric.on_bins(counts)
        reps, reps_by_group = spec.metric.on_bins(draws)
        out.append(_result(value, by_group, shifted(reps, value, binned), {
            stat: {g: shifted(reps_by_group[stat][:, k], by_group[stat].get(g), binned_by_group[stat][k])
                   for k, g in enumerate(names)} for stat in by_group}))
    return out


def _on_rows(specs: list[MetricSpec], scored: Scored, rows: Resamples) -> list[dict[str, Any]]:
    """The other metrics: values on all rows, intervals over the row resamples ``rows`` (a loop over the
    resamples, each resample's rows taken once for every metric, each metric vectorised over rows)."""
    full = [spec.metric.compute(scored, spec.options) for spec in specs]
    replicates: list[list[tuple[float | None, ByGroup]]] = [[] for _ in specs]
    for r in rows if specs else ():
        resample = scored.take(r)
        for spec, out in zip(specs, replicates):
            out.append(spec.metric.compute(resample, spec.options))
    return [_result(value, by_group, [v for v, _ in reps],
                    {stat: {g: [b.get(stat, {}).get(g) for _, b in reps] for g in groups}
                     for stat, groups in by_group.items()})
            for (value, by_group), reps in zip(full, replicates)]


def bootstrap_all(specs: list[MetricSpec], scored: Scored, rows: Resamples) -> list[dict[str, Any]]:
    """Each metric on all rows and its 95% intervals (module docstring: the rate gaps' exact Clopper–Pearson ones;
    over ``len(rows)`` resamples for the others, the rate metrics' multinomial draws of the cell counts seeded
    ``rows.seed``, the others' the row resamples ``rows``):
    ``[{"value", "ci", "by_group": {stat: {group: {"value", "ci"}}}}]`` in the order of ``specs``."""
    rates = [s for s in specs if issubclass(s.metric, CellMetric)]
    binned = [s for s in specs if issubclass(s.metric, BinnedMetric)]
    on_rows = [s for s in specs if not issubclass(s.metric, (CellMetric, BinnedMetric))]
    done = {}
    if rates:
        counts = cells.cell_counts(scored.y, scored.pred, scored.group, scored.n_groups)
        done.update(zip(map(id, rates), on_cells(rates, counts, scored.group_names, len(rows), rows.seed)))
    if binned:
        done.update(zip(map(id, binned), _on_score_bins(binned, scored, len(rows), rows.seed)))
    done.update(zip(map(id, on_rows), _on_rows(on_rows, scored, rows)))
    return [done[id(spec)] for spec in specs]


def bootstrap(spec: MetricSpec, scored: Scored, rows: Resamples) -> dict[str, Any]:
    """One metric's :func:`bootstrap_all`."""
    return bootstrap_all([spec], scored, rows)[0]


def passes(direction: str, value: float | None, threshold: float | None) -> bool | None:
    """True / False against the threshold; None without a threshold. An undefined value fails a threshold."""
    if threshold is None:
        return None
    if value is None:
        return False
    return value <= threshold if direction == "max" else value >= threshold
