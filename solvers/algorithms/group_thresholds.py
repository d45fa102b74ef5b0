r"""``group_thresholds``: post-processing by group-specific, possibly randomised thresholds of maximal accuracy
under demographic parity, equal opportunity or equalized odds (Hardt, Price & Srebro 2016; the "relaxed group
thresholds" of Cruz & Hardt, ICLR 2024), solved exactly as a linear programme over the groups' ROC points
(:mod:`solvers.fairness.threshold_lp`, where the LP is stated).

**Base scores.** Either a fresh model — ``erm`` on the train split (its update rule: Adam, or gradient descent,
on F; these iterations are the trajectory) — or the weights of an existing job (``base_job_id``: the worker
loads them as the start model, no training step is taken; the API checks that job has the same dataset, split,
target, features and model). A warm start from a ``group_thresholds`` model post-processes its base again.

**Selection rows.** The thresholds are chosen on the VALIDATION split's scores (expected accuracy, or balanced
accuracy, under every constraint family's exact gap ≤ ε' there). Without a validation split they are chosen on
the training rows — the base model's own rows, whose scores are optimistic; the job then overfits the thresholds
to train as any in-sample post-processing does. Two options reduce the noise of that choice:

* **Cross-fitting** (``cross_fit``, off by default; gbdt bases the job trains only — linear / MLP bases would cost
  K solves, ``base_job_id`` has no training): the thresholds are chosen on EVERY train and
  validation row, each scored out of fold by a model boosted on the other folds (:mod:`solvers.models.gbdt.cross_fit`);
  the stored base is then boosted again on all of them (``cross_fit_model: refit``) or is the model boosted on the
  train split (``train``); by default ``train`` for a randomised rule and ``refit`` for deterministic thresholds
  (below). With a validation split the validation rows are one fold, whose model
  is the base boosted on the train split: K − 1 fold models are boosted, not K (:meth:`_Thresholded._cross_fitted`;
  as accurate as K fold models on the population protocol). Four to five times the rows: the fitted rates' noise
  shrinks by about half. The rule is fitted to the fold models' scores and applied to the stored model's (below).
  It costs K + 1 more fits: with the tuned base below, 5 folds change the mean test
  accuracy little at about three times the CPU of the job on the validation split alone
  (``python -m bench.quality.gbdt_defaults``), so it is off by default (``auto`` turns it on for gbdt).
  **Which model is stored.** Each fold model is boosted on the other folds, about as many rows as the train split
  (as many with 3 folds and the population protocol's 60 / 30 split: a train fold of 30 % and the validation's
  30 %), so the model of the train split scores unseen rows as the fold models do, and the refitted model (half as
  many rows again there, more confident) does not. A
  randomised rule, a mixture of two thresholds fitted to match two rates (equalized odds), does not carry over to
  the refitted model's scores: on bank (age), equalized odds ≤ 0.05, 12 bootstrap samples, the refitted model kept
  ε on the population in 7 (0.9028 accurate), the model of the train split in 10 (0.9011); Adult (sex) 11 and 11
  (0.8775, 0.8744); COMPAS 8 and 7 (0.7148, 0.7040), every figure at least as accurate as ThresholdOptimizer over
  LightGBM (``python -m bench.quality.population_parts``, docs/architecture.md, "Measured choices"). With one
  threshold per group (demographic parity) the refitted model keeps ε as often or more and is the more accurate:
  11 against 10 of 12 on bank (0.9043 against 0.9020), 12 against 11 on Adult (0.8663, 0.8644), 10 and 10 on
  COMPAS (0.7155, 0.7035). So ``cross_fit_model`` None stores the train split's model for a randomised rule (one
  fit fewer) and the refitted model otherwise — except over LightGBM's own capacity chosen by ``base_model:
  "select"`` (below), whose refit carries the randomised rule as well: equalized odds ≤ 0.05, 16 bootstrap samples
  each, kept on the population in 14 / 13 / 11 (Adult / bank / COMPAS) against 13 / 14 / 11 for its model of the
  train split, 0.8771 / 0.9002 / 0.7032 accurate against 0.8752 / 0.8987 / 0.6942.
* **Train and validation rows** (``threshold_rows: train_validation``, linear bases only): the thresholds are
  chosen on the base's scores of every train and validation row, the train rows in sample (a logistic model's
  in-sample scores are distributed as unseen rows' up to O(d/n)); ``auto`` does so for linear models.
* **Safety margin** (``margin_delta``, default δ = 0.1): the rule is chosen at ε' = ε − m, m the smallest margin
  whose normal bound on P(the rule's exact gap on the POPULATION > ε) is ≤ δ — the sampling error of the rates it
  is fitted on, not a share of ε (``margin_rows``: a fresh sample of that many rows instead), at most 0.9 ε
  (``margin_max_share``)
  (:mod:`solvers.fairness.threshold_margin` states the bound; the report's ``margin`` records δ, ε', the bound
  and whether it is met). Chosen at exactly ε, the unseen gap exceeds ε about half the time.

**Repeated rows** (``repeats``; with cross-fitting and the refit stored). Out-of-fold scores are what the refit
shows rows whose features it never saw; a future row whose features repeat a fitting row's gets that row's
in-sample score instead (sharper: the refit has fitted its label). The rule is then fitted to a sample of what the
population shows the stored model: each fitting row's in-sample score with probability ρ̂, Good–Turing's share of
future rows whose features a fitting row holds (ρ̂ = 1 − N₁/n, N₁ the fitting rows whose features occur once:
0 for rows that never repeat, where nothing changes; :mod:`solvers.data.repeats`), else its out-of-fold score. The
report's ``repeats`` gives ρ̂. Measured (``group_thresholds`` with ``auto``'s gbdt settings, in process, the
population protocol, ε = 0.05, 12 bootstrap samples a cell, kept on the population / mean accuracy, off → on):
demographic parity on COMPAS 11 → 12 (0.7043 → 0.7061), Adult 10 → 10 (0.8638 → 0.8639), bank 12 → 12 (0.8993
both), bank-additional 12 → 12 (0.9050 both), every mean gap lower but Adult's; equalized odds (a randomised rule)
on COMPAS 9 → 8 (0.7004 → 0.7096), bank 10 → 9 (0.8967 → 0.8961), Adult 12 → 11 (0.8766 → 0.8772),
bank-additional 11 → 11 (0.9017 → 0.9025): more accurate but kept less often. So ``repeats`` None is on for
deterministic thresholds and off for a randomised rule. Each cell: ``python -m bench.quality.population_parts
--table compas_race --kind demographic_parity --seeds 0 1 … 11 --thresholds '{"cross_fit": 3, "base_model":
"select", "margin_delta": 0.05, "repeats": true}'`` (and ``false``).

**Tuned base** (``base_model: "tuned"``, the default, for a gbdt base the job trains): the base is boosted with
:data:`solvers.models.gbdt.threshold_base.TUNED` (100 trees of 15 leaves on half the features) in place of the model
spec's hyper-parameters that are still LightGBM's defaults: about half the default fit's time and more accurate
after the thresholds (:mod:`solvers.models.gbdt.threshold_base`); the report's
``base_params`` lists what was replaced. ``"spec"``: the model spec's hyper-parameters as they are. ``"select"`` (with
``cross_fit``; ``auto``'s gbdt setting): the tuned base or LightGBM's own defaults, whichever gives the more
accurate rule at the asked tolerances on rows its model did not see (why that is the right judge:
:mod:`solvers.models.gbdt.threshold_base`). With a validation split the bases are judged first on it, each by its
model of the train split (the tuned base this solve boosts, the other base's fold-0 model): when the paired z of
the two rules' per-row expected objectives there is decisive the choice is made and only the chosen base is
cross-fitted; closer, both are, and judged on every fitting row out of fold
(:meth:`_Thresholded._selected_on_validation`, :meth:`_Thresholded._selected`). The base likelier to win is
cross-fitted ahead of the choice — LightGBM's capacity when the fitting rows' repeat share ρ̂ is at least
:data:`SPECULATE_SHARE` (rows that repeat are what it memorises), else the tuned base —, the other's fits wait
(:class:`~solvers.models.gbdt.cross_fit.CrossFit`'s ``held``): the order changes the time, never the model (a
test checks a job decided on the validation fold stores, bit for bit, the model judging every row stores).
Decisive is |z| ≥ :data:`DECISIVE_Z` = 1 for the base that waits and z ≥ :data:`DECISIVE_Z_AHEAD` = 0.5 in
favour of the one ahead: the fold's verdict then confirms what ρ̂ predicted, and only the other base's waiting fits
are saved or spent. Measured on 80 samples (Adult, bank, COMPAS, bank-additional; bootstrap and fresh draws, seeds
0–9, the same jobs in process under each rule): one choice differed from judging every row (Adult, bootstrap,
seed 4: validation z −0.59 for capacity, every row +0.29 for the tuned base; the capacity rule was the more
accurate on the population, 0.8638 against the tuned base's 0.8618), 17 more samples were decided on the
validation fold, and those took 0.90 s against 1.05 s (means). ``python -m bench.quality.capacity --tables
adult_sex bank_age compas_race bank_additional --seeds 0 1 2 3 4 5 6 7`` (``bench/quality/results/capacity.md``):
decided on the validation fold in 47 of 64; the base more accurate on the judging rows in 57, the seven others
within 0.003 (five within 0.001). With one threshold of 0.5 for both bases (an earlier measurement), a bank
sample was decided early for the base 0.0026 less accurate on the population.
The report's ``base_selection`` holds both objectives, the rows judged, z and the choice (and the validation
fold's verdict when it was too close to call).

Hardt et al.'s post-processor is the rule itself (per-group thresholds of best accuracy under the constraint on
held-out scores); cross-fitting and the margin change which scores and which ε' it is fitted to, not the rule;
``cross_fit: 0, margin_delta: null`` is the paper's procedure on the validation split. Supported families: ``demographic_parity``, ``equal_opportunity``,
``equalized_odds`` (both aggregates: max(TPR gap, FPR gap) ≤ ε and the two gaps ≤ ε are the same set); several
families at once. A base model is trained (or boosted, gbdt) as ``erm`` trains it.

**Partial parity on an interval (IDCA's types).** Both keep, in each group, the rows whose rank by the OUTPUT
score lies in the percentile interval I. ``partial_demographic_parity`` (pDP) bounds, over the kept rows, the gap
of the shares with f' > θ̂. For DETERMINISTIC thresholds f' = f − t_g keeps each group's ranks, so the kept set is
that of the base score and the share is a rate of the rule on a fixed subset, monotone along the ROC points:
one more band, exact (the sweep alone, the mixed-integer programme with other families) — supported, with
deterministic thresholds (the default when pDP is asked) and θ̂ = 0 (the paper's; with θ̂ ≠ 0 the share
{f − t_g > θ̂} depends on where t_g lies between two scores, not on the rule alone: refused). A randomised rule gives the rows of one group different
shifts, reorders them and moves the kept set, so pDP is not linear in the mixture weights: refused with
``randomized: true``. ``partial_statistical_parity`` (pSP) bounds the KS distance between the kept rows' score
distributions — the whole distribution of f', which a per-group threshold only translates: not a rate of the
rule, not a programme over ROC points, refused (422). So are loss and AUC gaps.

**The stored model** (:class:`~solvers.models.thresholded.ThresholdNet`, wrapping the base network): f'(x) = f(x) − t_{g(x), J(x)} with

* g(x) the group, read from the features like :class:`~solvers.models.thresholded.GroupShift` does, by a codebook fitted
  on the fitting rows (train and validation): the columns constant inside every group and varying across them
  (the one-hots of the sensitive columns, their intersections and merged values) give each row a code; when the
  codes alone do not tell the groups apart (range rules, e.g. age bands), the numeric column along which the
  groups form the fewest runs (value bands, at most ``MAX_RUNS_PER_GROUP`` per group) is added. Each run of one
  group along (code, value) is a codebook row m with the code and the value interval [lo_m, hi_m], and
  g(x) = label of argmin_m Σ_c s_c dist(x_c, [lo_{m,c}, hi_{m,c}]) (s_c = 10⁶ on code columns: the category
  first, then the nearest value band). Exact on the fitting rows; an unseen category goes to the nearest code.
  No such columns (the sensitive columns are not features): the solve fails and says so;
* J(x) the component drawn for the row: u(x) = frac(43758.5453 · sin(κᵀx)) (float64, κ a seeded random vector
  stored with the model) and J = #{j : W_{g,j} ≤ u} with W the cumulative mixture weights. The draw is a
  deterministic function of the features: the same row always gets the same decision, on any machine, and
  P(J = j) = w_{g,j} over rows whose κᵀx spread over many periods. Rows with the same features share their draw,
  so on fitting rows that repeat feature rows κ is the one of 64 seeded keys whose draw realises the fitted rates
  there best (:mod:`solvers.fairness.mixture_draw`; the weights are never changed; the report's ``draw``). ``randomized:
  false`` stores one threshold per group (the deterministic optimum) and no draw happens.

**Decision rule (the default, ``randomized: null``).** Deterministic thresholds for one rate band (demographic
parity, equal opportunity): exact on the selection split, no draw, found by an exact sweep in milliseconds, and
within a thousandth of the LP's randomised optimum in validation accuracy, while the drawn randomised rule's
realised gap can exceed ε (the draw's noise over the few rows between two thresholds;
``python -m bench.quality.threshold_rules``). Randomised for equalized odds
and several families, where matching two rates generally needs a mixture (Hardt et al., §4) and the
deterministic problem is a mixed-integer programme.

So "predict 1 when f'(x) > 0" is the rule, and every metric, chart, audit and export reads f' as any other score.
Its state_dict holds ``net.base.*`` and the buffers ``net.columns``, ``net.scale``, ``net.lo``, ``net.hi``,
``net.label`` (the codebook), ``net.thresholds``, ``net.cumulative``, ``net.key``;
:func:`~solvers.models.thresholded.restore_model` rebuilds it (safetensors, no pickle).
"""
from __future__ import annotations

import copy
import math
import time
import weakref

import numpy as np
import torch
from torch import nn

from ..catalog.postprocess import SHARE_LIMIT
from ..fairness.exact import exact_gaps
from ..fairness.group_coins import coin_shift, with_coins
from ..fairness.mixture_draw import best_key, candidate_keys
from ..fairness.threshold_lp import (
    DETERMINISTIC_ONLY,
    FAMILY_RATES,
    ThresholdSolution,
    expected_predictions,
    prepare,
    randomized_by_default,
    solve_thresholds,
)
from ..fairness.threshold_margin import denominators, with_margin
from ..models.thresholded import ThresholdNet, row_draw, unwrapped
from .base import ALGORITHMS
from .erm import ERM

_EXACT = 1e6          # weight of a mismatch in a column constant inside each group (category before value)
MAX_RUNS_PER_GROUP = 20  # a numeric column reads the groups when its value bands are at most this many per group
#: base_model "select" decides on the validation fold when the paired z of the two rules' objectives there is at
#: least this (:meth:`_Thresholded._selected_on_validation`); closer, both bases are cross-fitted and judged out of fold
DECISIVE_Z = 1.0
#: ... or at least this in favour of the base cross-fitted ahead of the choice (the one :data:`SPECULATE_SHARE`
#: expects to win: the evidence confirms the expectation, and that base's fits are already running)
DECISIVE_Z_AHEAD = 0.5
#: base_model "select" cross-fits LightGBM's capacity ahead of the choice when the fitting rows' repeat share ρ̂
#: (solvers.data.repeats) is at least this, else the tuned base (where rows repeat, capacity memorises them and wins)
SPECULATE_SHARE = 0.1


class GroupReadError(ValueError):
    """The groups cannot be read from the model's features."""


def group_reader(X: np.ndarray, group: np.ndarray, n_groups: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(columns (c,), scale (c,), lo (M, c), hi (M, c), label (M,)): the codebook of the module docstring,
    fitted on rows (X, group); raises :class:`GroupReadError` when no such columns exist."""
    X = np.asarray(X)
    X = X if X.dtype.kind == "f" else X.astype(np.float64)   # min / max are exact in the rows' own float type
    group = np.asarray(group).astype(np.int64)
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])[sizes > 0]
    rows = X[order]
    lo, hi = np.minimum.reduceat(rows, starts, axis=0), np.maximum.reduceat(rows, starts, axis=0)
    varies = hi.max(0) > lo.min(0)
    fixed = np.flatnonzero((lo == hi).all(0) & varies)
    code = _row_codes(X[:, fixed])
    if fixed.size and _functional(code, group, n_groups):   # categories alone tell the groups apart
        return _codebook(X, group, fixed, None, code)
    best, best_runs = None, None
    for j in np.flatnonzero(varies & ~np.isin(np.arange(X.shape[1]), fixed)):   # set-up: one sort per column
        runs = _runs(code, X[:, j], group)
        if runs is not None and (best_runs is None or runs < best_runs):
            best, best_runs = j, runs
    if best is None or best_runs > MAX_RUNS_PER_GROUP * n_groups:
        raise GroupReadError("group_thresholds reads each row's group from the features: include the sensitive "
                             "columns among the model's features (they are by default)")
    return _codebook(X, group, fixed, best, code)


def _row_codes(A: np.ndarray) -> np.ndarray:
    """(n,) int64 index of each row of ``A`` among its distinct rows in lexicographic order: ``np.unique(A, axis=0,
    return_inverse=True)``'s inverse, from one ``lexsort`` (column 0 first) instead of a sort of row records."""
    n = len(A)
    if A.ndim != 2 or A.shape[1] == 0 or n == 0:
        return np.zeros(n, dtype=np.int64)
    order = np.lexsort(A.T[::-1])
    ranked = A[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    code = np.empty(n, dtype=np.int64)
    code[order] = np.cumsum(new) - 1
    return code


def _functional(code: np.ndarray, group: np.ndarray, n_groups: int) -> bool:
    """Whether each code value holds one group only (codes 0..m−1: m distinct (code, group) pairs)."""
    return len(np.unique(code * max(n_groups, 1) + group)) == int(code.max(initial=-1)) + 1


def _runs(code: np.ndarray, x: np.ndarray, group: np.ndarray) -> int | None:
    """The number of runs of equal group along (code, x) sorted; None when one (code, x) holds two groups."""
    order = np.lexsort((group, x, code))
    c, v, g = code[order], x[order], group[order]
    if ((c[1:] == c[:-1]) & (v[1:] == v[:-1]) & (g[1:] != g[:-1])).any():
        return None
    return 1 + int(((c[1:] != c[:-1]) | (g[1:] != g[:-1])).sum())


def _codebook(X, group, fixed, numeric, code):
    """One codebook row per run of equal group along (code, numeric value): its fixed columns' values and the
    run's interval [lo, hi] of the numeric column (``numeric`` None: one row per code)."""
    columns = fixed if numeric is None else np.concatenate([fixed, [numeric]])
    x = np.zeros(len(X)) if numeric is None else X[:, numeric]
    order = np.lexsort((x, code))
    c, g = code[order], group[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (c[1:] != c[:-1]) | (g[1:] != g[:-1])
    starts = np.flatnonzero(first)
    Z = X[:, columns][order].astype(np.float64)
    lo, hi = np.minimum.reduceat(Z, starts, axis=0), np.maximum.reduceat(Z, starts, axis=0)
    scale = np.where(np.arange(len(columns)) < len(fixed), _EXACT, 1.0)
    return columns, scale, lo, hi, g[starts]


def threshold_net(net: nn.Module, solution: ThresholdSolution, reader: tuple, n_features: int, seed: int,
                  device: torch.device) -> ThresholdNet:
    """Wrap ``net`` with the rule of ``solution`` and the group codebook ``reader`` (:func:`group_reader`)."""
    cumulative = np.cumsum(solution.weights, axis=1)
    used = (solution.weights > 0).sum(1)
    cumulative = np.where(np.arange(cumulative.shape[1])[None] >= used[:, None] - 1, 1.0, cumulative)  # ends at 1
    generator = torch.Generator().manual_seed(int(seed))
    key = torch.rand(n_features, generator=generator, dtype=torch.float64) * 1000.0
    return ThresholdNet(net, *reader, solution.thresholds, cumulative, key).to(device)


class _Thresholded:
    """The base solver's steps (or none, from ``base_job_id``'s model), then the exact threshold LP in
    :meth:`finish`; mixed into ``erm``'s rule of the model type (:class:`GroupThresholds`)."""

    def __init__(self, problem, config, model, seed: int = 0) -> None:
        super().__init__(problem, config, unwrapped(model), seed)
        self.seed = seed
        self.families = [(f.name, float(f.tolerance)) for f in problem.constraints]
        unsupported = [name for name, _ in self.families if name not in FAMILY_RATES]
        if unsupported:
            raise ValueError(f"group_thresholds supports {sorted(FAMILY_RATES)} constraints, not {unsupported}")
        self.pretrained = self.config.base_job_id is not None
        partial = any(name in DETERMINISTIC_ONLY for name, _ in self.families)
        self.randomized = (self.config.randomized if self.config.randomized is not None
                           else randomized_by_default([name for name, _ in self.families]))
        if partial and self.randomized:
            raise ValueError("group_thresholds: partial_demographic_parity needs deterministic thresholds "
                             "(randomized: false)")
        own_gbdt = problem.model_type == "gbdt" and not self.pretrained
        asked = self.config.cross_fit
        if asked and not own_gbdt:
            raise ValueError("group_thresholds: cross_fit applies to a gbdt base trained by the job (not to "
                             "base_job_id or a linear / mlp base)")
        self.folds = asked or 0
        chosen = self.config.cross_fit_model   # the stored model of a cross-fitting (module docstring)
        self.cross_fit_model = chosen if chosen is not None else "train" if self.randomized else "refit"
        self.all_rows = self.config.threshold_rows == "train_validation"
        if self.all_rows and (self.folds or (problem.model_type != "linear" and not self.pretrained)):
            raise ValueError("group_thresholds: threshold_rows 'train_validation' applies to a linear base without "
                             "cross_fit (an mlp or gbdt base scores its own train rows optimistically)")
        self.base_params: dict = {}
        self.ahead = None   # the cross-fitting started with the base (:meth:`start`)
        self.other = None   # (spec, replaced fields) of the other base of base_model "select" (:meth:`_selected`)
        self.other_fit = None   # its cross-fitting, started with the base
        self.speculated = "tuned"   # the base of "select" cross-fitted ahead of the choice (:meth:`start`)
        self.tuned_fit = None   # the base's cross-fitting, once its fold models have ended
        self.selection: dict | None = None   # the report's record of the choice
        self.in_sample: np.ndarray | None = None   # the stored refit's scores of the fitting rows (:meth:`_store`)
        self.repeats: dict | None = None   # the report's repeat share (:meth:`_with_repeats`)
        self._rows: tuple | None = None   # :meth:`_fitting_rows`, once built
        self._share: float | None = None   # :meth:`_repeat_share`, once computed
        if self.config.base_model == "select" and not (own_gbdt and self.folds):
            raise ValueError("group_thresholds: base_model 'select' chooses between two gbdt bases by their "
                             "cross-fitted scores: it needs a gbdt base trained by the job and cross_fit")
        if own_gbdt and self.config.base_model in ("tuned", "select"):   # solvers.models.gbdt.threshold_base
            from ..models.gbdt.threshold_base import CAPACITY, tuned_spec

            spec = self.model.spec
            self.model.spec, self.base_params = tuned_spec(spec)
            if self.config.base_model == "select":
                other, replaced = tuned_spec(spec, CAPACITY)
                if other != self.model.spec:
                    self.other = (other, replaced)

    def start(self, current) -> None:
        super().start(current)
        self.converged = self.pretrained   # the base job's model is post-processed as it is
        p, v = self.problem, self.validation   # the group codebook first: no training when it cannot exist
        X = p.X if v is None else torch.cat([p.X, v.X])
        group = p.group if v is None else torch.cat([p.group, v.group])
        self.reader = group_reader(X.cpu().numpy(), group.cpu().numpy(), len(p.group_names))
        self.ahead = None   # cross-fitting started beside the base's boosting (:meth:`_cross_fitted`)
        fresh = not self.pretrained and getattr(self.model, "booster", None) is None   # a gbdt base with no tree
        # base_model "select" with a validation split judges the bases on the validation fold first
        # (:meth:`_selected_on_validation`): the base likelier to win — LightGBM's capacity where the rows repeat
        # (solvers.data.repeats), else the tuned one — is cross-fitted from now on, the other's only once chosen
        judged_early = self.other is not None and v is not None and fresh
        capacity_first = judged_early and self._repeat_share() >= SPECULATE_SHARE
        self.speculated = "capacity" if capacity_first else "tuned"
        if self.folds and v is not None and fresh and not capacity_first:
            self.ahead = self._cross_fit(self.model.spec.n_estimators)
            weakref.finalize(self, self.ahead.cancel)   # an abandoned solve stops its fits
        if self.other is not None and fresh:   # its fold-0 model now (the judge), the rest as above
            spec, refit = self.other[0], self.config.cross_fit_model != "train"
            held = tuple(range(1, self.folds)) + ((None,) if refit else ()) if judged_early and not capacity_first \
                else ()
            self.other_fit = self._cross_fit(spec.n_estimators, spec, known=False, refit=refit, held=held)
            weakref.finalize(self, self.other_fit.cancel)

    def step(self, k, current):
        if self.pretrained:
            return current, None
        return super().step(k, current)

    @torch.no_grad()
    def finish(self):
        super().finish()
        p, v = self.problem, self.validation
        fit = v if v is not None else p
        K = len(p.group_names)
        rows = [p.X, v.X] if v is not None and (self.folds or self.all_rows) else [fit.X]   # the fitting rows
        if self.folds:   # every train and validation row, scored out of fold (solvers.models.gbdt.cross_fit)
            if self.other_fit is not None and v is not None:   # base_model "select", judged on the validation fold
                scores, y, g = self._selected_on_validation()
            else:
                scores, y, g = self._cross_fitted()
                if self.other_fit is not None:
                    scores = self._selected(scores, y, g)
            repeats = self.config.repeats if self.config.repeats is not None else not self.randomized
            if self.in_sample is not None and repeats:
                scores = self._with_repeats(scores)
        elif self.all_rows and v is not None:   # every train and validation row (threshold_rows)
            scores = torch.cat([self.model(p.X), self.model(v.X)]).double().cpu().numpy()
            y, g = torch.cat([p.y, v.y]).cpu().numpy(), torch.cat([p.group, v.group]).cpu().numpy()
        else:
            scores = self.model(fit.X).double().cpu().numpy()
            y, g = fit.y.cpu().numpy(), fit.group.cpu().numpy()
        kept, theta = self._partial(scores, g)
        fitted = _Fitted(self, scores, y, g, kept, theta, rows)
        margin = None
        if self.config.margin_delta is None:
            solution = fitted.solve(self.families)
        else:
            rows = self.config.margin_rows if self.config.margin_rows is not None else math.inf   # the population
            cap = self.config.margin_max_share if self.config.margin_max_share is not None else SHARE_LIMIT
            counts = denominators(y, g, K)
            from ..models.gbdt.model import parallel_fits   # the cores the fits had: the search's threads now

            solution, margin = with_margin(fitted.solve, self.families, counts, self.config.margin_delta, rows, cap,
                                           workers=parallel_fits())
            if not margin.met and self.config.coins:   # groups too small for a threshold: coins (group_coins)
                seen = scores if self.in_sample is None else np.concatenate([scores, self.in_sample])   # + the refit's
                coined = with_coins(fitted.solve, self.families, counts, self.config.margin_delta, rows, cap,
                                    coin_shift(seen))
                if coined is not None:
                    solution, margin = coined
                    margin.coins = {p.group_names[c]: q for c, q in solution.info["coins"].items()}
        self.model = fitted.apply(self.model, solution, margin)
        return p.evaluate(self.model)

    def mip_seconds(self) -> float:
        """The time limit of the next deterministic MIP solve (three rate bands or more over three groups or more;
        the margin's search makes up to 1 + 8·7 of them): the option ``time_limit_s`` of one solve, at most what is
        left of the job's own (:attr:`deadline`). HiGHS returns the best point it has found when it runs out; with
        none left (≤ 0) no MIP runs (:func:`~solvers.fairness.threshold_lp.constant_rule`), status ``time_limit``
        either way: only the solve under way when the job's limit passes may run past it."""
        left = math.inf if self.deadline is None else self.deadline - time.perf_counter()
        return min(self.config.time_limit_s, left)

    def _cross_fit(self, rounds: int, spec=None, known: bool = True, refit: bool | None = None, held=()):
        """The :class:`~solvers.models.gbdt.cross_fit.CrossFit` of the train and validation rows at ``rounds``
        rounds with ``spec``'s hyper-parameters (default the base's), its fits started (:meth:`_cross_fitted`), the
        rows binned once on its own threads; ``known``: the validation fold's scores are the base's (else its model
        is boosted too: the other base of :meth:`_selected`); ``refit``: the refit on every row is boosted with the
        fold models (default: when ``cross_fit_model`` is ``refit``); ``held``: fits that wait for its
        ``release``."""
        from ..models.gbdt.cross_fit import CrossFit, fold_of

        p, v = self.problem, self.validation
        spec = self.model.spec if spec is None else spec
        X, y, g = self._fitting_rows()
        fold = None
        if v is not None:   # validation = fold 0, scored by the base of the train split
            n_train = len(p.y)
            fold = np.concatenate([1 + fold_of(y[:n_train], g[:n_train], self.folds - 1, self.seed),
                                   np.zeros(len(v.y), dtype=np.int64)])
        return CrossFit(X, y, g, spec, rounds, self.folds, self.seed, fold=fold,
                        known_folds=(0,) if v is not None and known else (), binned=True,
                        with_refit=self.cross_fit_model == "refit" if refit is None else refit, held=held)

    def _selected_on_validation(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``base_model: "select"`` with a validation split (:mod:`solvers.models.gbdt.threshold_base`): the bases
        are judged first on the validation fold, where each has a model boosted on the train split alone — the
        tuned base this solve boosted, the other base's fold-0 model —, by each one's rule at the asked tolerances
        on those rows (:meth:`_choice`). When the difference is decisive (|z| ≥ :data:`DECISIVE_Z`) only the chosen
        base is cross-fitted: the other base's fold models and refit are boosted from :meth:`start` on, beside the
        tuned base (cancelled when the tuned base is chosen), the tuned base's once it is chosen. Otherwise both
        are cross-fitted and judged on every fitting row out of fold (:meth:`_selected`). Returns (scores, y,
        group) of the train and validation rows, out of fold, as :meth:`_cross_fitted` does."""
        v = self.validation
        judged = (v.y.cpu().numpy(), v.group.cpu().numpy())
        tuned_scores = self.model(v.X).double().cpu().numpy()
        chosen, z = self._choice(tuned_scores, self.other_fit.fold_scores(0), *judged, "validation")
        decisive = DECISIVE_Z_AHEAD if chosen == self.speculated else DECISIVE_Z
        if abs(z) < decisive:   # too close to call on these rows: every fitting row, out of fold
            first = self.selection
            self.other_fit.release()
            scores, y, g = self._cross_fitted()
            scores = self._selected(scores, y, g)
            self.selection["validation"] = first
            return scores, y, g
        other, self.other_fit = self.other_fit, None
        if chosen == "tuned":
            other.cancel()   # its fits stop at their next round
            return self._cross_fitted()
        if self.ahead is not None:   # the tuned base's, started in case
            self.ahead.cancel()
            self.ahead = None
        other.release()
        self._adopt(other)
        scores = other.scores({})
        if self.cross_fit_model == "refit":
            self._store(*other.refit())
        return scores, *self._fitting_labels()

    def _selected(self, scores: np.ndarray, y: np.ndarray, g: np.ndarray) -> np.ndarray:
        """``base_model: "select"`` judged on every fitting row (no validation split, or its fold too close to
        call): the out-of-fold scores of the base whose rule at the asked tolerances is the more accurate on them
        (:meth:`_choice`, each row scored by a model that did not see it); when it is the other base, its model
        becomes the stored one (:meth:`_adopt`). Both refits are boosted beside the fold models, before the
        choice; the unchosen one is cancelled."""
        other, self.other_fit = self.other_fit, None
        other_scores = other.scores({})
        chosen, _ = self._choice(scores, other_scores, y, g, "out_of_fold")
        fit, unchosen = (self.tuned_fit, other) if chosen == "tuned" else (other, self.tuned_fit)
        unchosen.cancel()   # its refit (boosted beside the fold models, in case) stops at its next round
        if chosen == "capacity":
            self._adopt(other)
        if self.cross_fit_model == "refit":
            self._store(*fit.refit())
        return scores if chosen == "tuned" else other_scores

    def _choice(self, tuned: np.ndarray, capacity: np.ndarray, y: np.ndarray, g: np.ndarray,
                rows: str) -> tuple[str, float]:
        """("tuned" or "capacity", z): the base whose scores (of the same rows ``y``, ``g``) give the rule of the
        higher objective at the asked tolerances on those rows (ties: the tuned base), and how decisive that is:
        z = d̄ / (s_d / √n) over the rows' differences d_i of expected objective (:func:`_row_objective`), the
        paired test of the two rules on these rows. Recorded in :attr:`selection`."""
        K = len(self.problem.group_names)

        def solved(s: np.ndarray) -> ThresholdSolution:
            kept_rows, theta = self._partial(s, g)
            return solve_thresholds(s, y, g, K, self.families, self.config.objective, self.randomized,
                                    self.mip_seconds(), kept_rows, theta)

        a, b = solved(tuned), solved(capacity)
        chosen = "capacity" if b.objective > a.objective else "tuned"
        d = _row_objective(tuned, g, y, a, self.config.objective) - _row_objective(capacity, g, y, b,
                                                                                 self.config.objective)
        spread = float(d.std(ddof=1)) if len(d) > 1 else 0.0
        mean = float(d.mean())
        z = mean / (spread / math.sqrt(len(d))) if spread > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean))
        self.selection = {"tuned": float(a.objective), "capacity": float(b.objective), "chosen": chosen,
                          "rows": rows, "z": z}
        return chosen, z

    def _adopt(self, other) -> None:
        """The other base (its cross-fitting ``other``) becomes the stored one: its spec, and its refit — for a
        randomised rule too, unless ``cross_fit_model: train`` asks for fold 0's model (module docstring)."""
        self.model.spec, self.base_params = self.other
        if self.config.cross_fit_model is None:
            self.cross_fit_model = "refit"
        if self.cross_fit_model == "train":   # boosted on the train split: the stored "train" model
            self.model.booster = other.fold_booster(0)

    def _store(self, booster, kept: np.ndarray) -> None:
        """``booster`` becomes the stored base; ``kept``, its raw scores of the train then the validation rows,
        answer later forward passes over these rows."""
        from ..models.gbdt.model import num_threads
        from ..models.gbdt.tree_scores import KeptScores

        self.model.booster = booster
        self.in_sample = kept
        at = 0
        for q in [self.problem] + ([self.validation] if self.validation is not None else []):
            rows = q.X.cpu().numpy()
            self.model.keep_scores(KeptScores(rows, num_threads()).start_from(kept[at:at + len(rows)],
                                                                            booster.current_iteration()))
            at += len(rows)

    def _with_repeats(self, scores: np.ndarray) -> np.ndarray:
        """The scores the population shows the stored refit (``repeats``, :mod:`solvers.data.repeats`): each fitting
        row's in-sample score with probability ρ̂ — Good–Turing's share of future rows whose features a fitting row
        holds — else its out-of-fold one. ρ̂ = 0 (no repeated feature row) leaves the out-of-fold scores."""
        from ..data.repeats import mixed_scores

        share = self._repeat_share()
        self.repeats = {"share": share}
        return mixed_scores(scores, self.in_sample, share, self.seed)

    def _repeat_share(self) -> float:
        """Good–Turing's ρ̂ of the fitting rows (:func:`solvers.data.repeats.repeat_share`), computed once."""
        if self._share is None:
            from ..data.repeats import repeat_share

            self._share = repeat_share(self._fitting_rows()[0])
        return self._share

    def _partial(self, scores: np.ndarray, g: np.ndarray) -> tuple[np.ndarray | None, float]:
        """(kept rows, θ̂) of a partial demographic parity family — the kept rows of the base score (a shift keeps
        the ranks) — or (None, 0) without one."""
        kept, theta = None, 0.0
        for family in self.problem.constraints:
            if family.name in DETERMINISTIC_ONLY:
                from ..metrics.partial import kept_mask

                kept, theta = kept_mask(scores, g, family.intervals), float(family.config.threshold)
        return kept, theta

    def _fitting_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(X float64, y, group) of the train rows, then the validation rows; built once per solve (both bases'
        cross-fittings and the repeat share read the same rows)."""
        if self._rows is None:
            parts = [self.problem] + ([self.validation] if self.validation is not None else [])
            X = np.concatenate([q.X.cpu().numpy() for q in parts]).astype(np.float64, copy=False)
            self._rows = (X, *self._fitting_labels())
        return self._rows

    def _fitting_labels(self) -> tuple[np.ndarray, np.ndarray]:
        """(y, group) of the train rows, then the validation rows."""
        parts = [self.problem] + ([self.validation] if self.validation is not None else [])
        return np.concatenate([q.y.cpu().numpy() for q in parts]), np.concatenate([q.group.cpu().numpy()
                                                                                  for q in parts])

    def _cross_fitted(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(scores, y, group) of the train and validation rows, scores out of fold; with ``cross_fit_model:
        refit`` the stored base is boosted again on all of them.

        With a validation split the validation rows are one fold and the train rows are dealt to the other K − 1
        (stratified by group and label, :func:`~solvers.models.gbdt.cross_fit.fold_of`): the model boosted on the folds
        without the validation fold is the base this solve boosted on the train split, so its validation scores
        (kept round by round) are that fold's out-of-fold scores and K − 1 fold models are boosted, not K. All
        fits share one binning of the rows (:func:`~solvers.models.gbdt.cross_fit._binned`), and the fold models and
        the refit are boosted at once (:class:`~solvers.models.gbdt.cross_fit.CrossFit`) — for a base boosted from
        no tree, from :meth:`start` on, beside the base, at its ``n_estimators`` rounds; a base that ended with
        another number of trees (LightGBM found no split, a time limit) has them boosted again at its count. The
        refitted model's scores of the train and validation rows are kept for every later forward pass."""
        v = self.validation
        rounds = max(self.model.num_trees, 1)
        cross_fit, self.ahead = self.ahead, None
        if cross_fit is None or cross_fit.rounds != rounds:
            if cross_fit is not None:
                cross_fit.cancel()
            cross_fit = self._cross_fit(rounds)
        y, g = self._fitting_labels()
        known = {0: self.model(v.X).double().cpu().numpy()} if v is not None else {}
        self.tuned_fit = cross_fit
        scores = cross_fit.scores(known)
        if cross_fit.with_refit and self.other_fit is None:   # under base_model "select", once the choice is made
            self._store(*cross_fit.refit())
        return scores, y, g


def _row_objective(scores: np.ndarray, g: np.ndarray, y: np.ndarray, solution: ThresholdSolution,
                   objective: str) -> np.ndarray:
    """(n,) each row's share of the rule's expected objective, whose mean is ``solution.objective`` on these rows:
    e_i = y_i p_i + (1 − y_i)(1 − p_i) with p_i = P(ŷ_i = 1) (:func:`expected_predictions`), for balanced accuracy
    weighted by n / (2 P) on positives and n / (2 N) on negatives."""
    y = (np.asarray(y) > 0.5).astype(np.float64)
    p = expected_predictions(scores, g, solution)
    e = y * p + (1 - y) * (1 - p)
    if objective == "balanced_accuracy":
        positives = max(float(y.sum()), 1.0)
        negatives = max(float(len(y) - y.sum()), 1.0)
        e = e * np.where(y > 0, len(y) / (2 * positives), len(y) / (2 * negatives))
    return e


class _Fitted:
    """The scores a rule is chosen on (cross-fitted, validation or train rows) and how it is applied to a model.

    :meth:`solve` chooses the rule at the given tolerances; :meth:`apply` wraps a model's base with it and attaches
    the job's ``enforcement`` record. The wrapper keeps this object as its ``refit_at`` (not saved with the model):
    the rule fitted again at other tolerances on the SAME scores, around the same base — how the guarantee makes its
    candidates (:mod:`solvers.fairness.guarantee`, thresholded candidates), where solving again would boost the
    base on (more trees) and cross-fit it once more, a different model from the one whose scores were cross-fitted.
    Shared, never copied: a deep copy of the model keeps the same one."""

    def __init__(self, solver: _Thresholded, scores, y, g, kept, theta, rows: list[torch.Tensor]) -> None:
        self.solver, self.scores, self.y, self.g, self.kept, self.theta = solver, scores, y, g, kept, theta
        self.rows = rows   # the fitting rows' features, in the order of ``scores`` (the draw's key is chosen on them)
        self.prepared = None   # the scores' ROC points, computed by the first solve for every later one

    def __deepcopy__(self, memo) -> _Fitted:
        return self

    def solve(self, families) -> ThresholdSolution:
        s = self.solver
        if self.prepared is None:
            self.prepared = prepare(self.scores, self.y, self.g, len(s.problem.group_names), s.config.objective,
                                    s.randomized, self.kept, self.theta)
        return solve_thresholds(self.scores, self.y, self.g, len(s.problem.group_names), families, s.config.objective,
                                s.randomized, s.mip_seconds(), self.kept, self.theta, self.prepared)

    @torch.no_grad()
    def apply(self, model: nn.Module, solution: ThresholdSolution, margin=None,
              tolerances: list[float] | None = None) -> nn.Module:
        """``model`` (its base: a rule it carries is replaced) under ``solution``, with its record; ``tolerances``:
        those the rule was chosen at (default the problem's)."""
        s = self.solver
        p, v = s.problem, s.validation
        fit = v if v is not None else p

        def wrap(net):
            wrapper = threshold_net(net, solution, s.reader, p.n_features, s.seed, p.device)
            wrapper.refit_at = self
            if solution.randomized:   # the draw's key: realised rates ≈ fitted ones on these rows (mixture_draw)
                keys = candidate_keys(wrapper.key, sum(len(x) for x in self.rows), s.seed)
                kinds = [kind for name, _ in s.families for kind in FAMILY_RATES[name]]
                key, wrapper.draw_record = best_key(keys, self.rows, row_draw, wrapper.cumulative.cpu().numpy(),
                                                    solution.thresholds, self.scores, self.y, self.g, kinds)
                wrapper.key.copy_(key.to(wrapper.key))
            return wrapper

        if isinstance(getattr(model, "net", None), nn.Module):   # a ScoreModel: its network is wrapped
            if isinstance(model.net, ThresholdNet):             # a rule fitted again: a copy of the model
                model = copy.deepcopy(model)
            model.net = wrapper = wrap(unwrapped(model).net)
        else:                                                    # a model without one (gbdt): all of it
            model = wrapper = wrap(unwrapped(model))
        realised = model(fit.X).double().cpu().numpy()
        y, g = fit.y.cpu().numpy(), fit.group.cpu().numpy()
        gaps = exact_gaps(p.constraints, y, realised, g, p.group_names)
        eps = [f.tolerance for f in p.constraints] if tolerances is None else tolerances
        wrapper.report = {   # the job's ``enforcement`` record (solvers.pipeline.keep_promise)
            "method": "group_thresholds",
            "split": "train+validation" if v is not None and (s.folds or s.all_rows) else
            "validation" if v is not None else "train",
            "cross_fit": {"folds": s.folds, "model": s.cross_fit_model} if s.folds else None,
            "base_params": s.base_params or None,
            "base_selection": s.selection,
            "repeats": s.repeats,
            "margin": None if margin is None else margin.summary(),
            "objective_name": s.config.objective, **solution.summary(),
            "realised_accuracy": float(((realised > 0) == (y > 0.5)).mean()),
            "realised_gaps": dict(zip([f.name for f in p.constraints], gaps.tolist(), strict=True)),
            "draw": getattr(wrapper, "draw_record", None),
            "met": bool((gaps <= eps).all()),
        }
        return model

    def __call__(self, model: nn.Module, tolerances) -> nn.Module:
        """``model``'s base under the rule chosen at ``tolerances`` (one per constraint, no margin): a new model."""
        families = [(name, float(t)) for (name, _), t in zip(self.solver.families, tolerances, strict=True)]
        return self.apply(model, self.solve(families), None, [float(t) for t in tolerances])


@ALGORITHMS.implements("group_thresholds")
class GroupThresholds(_Thresholded, ERM):
    """``erm`` (Adam / gradient descent on F) then the threshold LP; a gbdt model is boosted instead
    (:meth:`for_model`: LightGBM's own logistic objective, as ``erm`` does)."""

    @classmethod
    def for_model(cls, model_type: str):
        if model_type == "gbdt":
            return _boosted()
        return cls


_BOOSTED: list[type] = []


def _boosted() -> type:
    """``group_thresholds`` over :class:`~.boosting.GradientBoosting` (LightGBM imported on first use)."""
    if not _BOOSTED:
        from .boosting import GradientBoosting

        names = ("name", "aliases", "Config", "entry", *GroupThresholds.entry.metadata)
        attrs = {k: getattr(GroupThresholds, k) for k in names}
        _BOOSTED.append(type("GroupThresholdsBoosted", (_Thresholded, GradientBoosting), attrs))
    return _BOOSTED[0]
