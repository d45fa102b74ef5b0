"""solvers.fairness.noise_floor: the test gap of a model whose population gap is 0, checked against a direct
simulation (rows, labels, the model's draws, the exact metric of solvers.fairness.exact) and an exact formula."""
import numpy as np
import pytest
from scipy.stats import binom

from solvers.fairness.exact import exact_gaps
from solvers.fairness.noise_floor import noise_floor, split_counts, zero_gap_gaps
from solvers.spec import ConstraintSpec

COUNTS, POSITIVES = np.array([420, 640]), np.array([165, 335])  # a COMPAS-sized test split (race)


def _direct(family: str, tolerance: float, reps: int, tpr=0.6, fpr=0.3, rate=0.45, seed=11):
    """``reps`` test splits of COUNTS rows with POSITIVES positives per group; a model predicting 1 with the same
    probability in every group (given the label for EO): its exact gap by exact_gaps, one split at a time."""
    family_obj = [ConstraintSpec(type=family, tolerance=tolerance).build()]
    group = np.repeat([0, 1], COUNTS)
    y = np.concatenate([np.r_[np.ones(p), np.zeros(n - p)] for n, p in zip(COUNTS, POSITIVES)]).astype(int)
    p = np.where(y == 1, tpr, fpr) if family != "demographic_parity" else np.full(len(y), rate)
    rng = np.random.default_rng(seed)
    return np.array([exact_gaps(family_obj, y, np.where(rng.random(len(y)) < p, 1.0, -1.0), group, ["a", "b"])[0]
                     for _ in range(reps)])


@pytest.mark.parametrize("family,tolerance", [("demographic_parity", 0.02), ("equalized_odds", 0.05),
                                              ("equal_opportunity", 0.03)])
def test_matches_a_direct_simulation_of_a_zero_gap_model(family, tolerance):
    reps = 1500
    direct = _direct(family, tolerance, reps)
    floor = noise_floor(family, COUNTS, POSITIVES, tolerance, rate=0.45, tpr=0.6, fpr=0.3, repetitions=40_000)
    share = float(np.mean(direct <= tolerance + 1e-12))
    se = np.sqrt(share * (1 - share) / reps) + floor.standard_error
    assert 0.05 < share < 0.95  # a tolerance inside the noise: the comparison can fail
    assert abs(floor.keep_probability - share) <= 4 * se
    assert floor.expected_gap == pytest.approx(direct.mean(), abs=4 * direct.std() / np.sqrt(reps))


def test_two_group_dp_equals_the_exact_binomial_sum():
    """K = 2: P(|S_0/n_0 − S_1/n_1| ≤ ε) = Σ_s P(S_0 = s) P(S_1/n_1 ∈ [s/n_0 − ε, s/n_0 + ε]) exactly."""
    n0, n1, p, eps = 420, 640, 0.45, 0.03
    s = np.arange(n0 + 1)
    hi = np.floor((s / n0 + eps) * n1 + 1e-9)
    lo = np.ceil((s / n0 - eps) * n1 - 1e-9)
    exact = float(np.sum(binom.pmf(s, n0, p) * (binom.cdf(hi, n1, p) - binom.cdf(lo - 1, n1, p))))
    floor = noise_floor("demographic_parity", [n0, n1], [100, 100], eps, rate=p, repetitions=200_000)
    assert abs(floor.keep_probability - exact) <= 4 * floor.standard_error


def test_gap_shrinks_with_the_split_and_the_default_rate_is_the_label_rate():
    small = noise_floor("demographic_parity", COUNTS, POSITIVES, 0.02)
    large = noise_floor("demographic_parity", 20 * COUNTS, 20 * POSITIVES, 0.02)
    assert large.keep_probability > small.keep_probability + 0.3
    assert large.expected_gap < small.expected_gap / 3
    pooled = POSITIVES.sum() / COUNTS.sum()
    same = noise_floor("demographic_parity", COUNTS, POSITIVES, 0.02, rate=pooled)
    assert same.keep_probability == small.keep_probability  # same seed, same rate


def test_loss_gap_matches_a_direct_simulation_of_iid_losses():
    """Per-sample losses i.i.d. (an exponential, sd 0.7) in both groups: one-sided gap max_g (L_g − L)."""
    rng = np.random.default_rng(2)
    reps, sd = 3000, 0.7
    group = np.repeat([0, 1], COUNTS)
    losses = rng.exponential(sd, (reps, len(group)))
    means = np.stack([losses[:, group == g].mean(1) for g in (0, 1)], 1)
    direct = (means - losses.mean(1)[:, None]).max(1)
    floor = noise_floor("loss_gap", COUNTS, POSITIVES, 0.02, loss_sd=sd, repetitions=40_000)
    share = float(np.mean(direct <= 0.02))
    assert abs(floor.keep_probability - share) <= 4 * (np.sqrt(share * (1 - share) / reps) + floor.standard_error)


def test_split_counts_and_bad_input():
    y, group = np.array([1, 0, 1, 1, 0]), np.array([0, 0, 1, 1, 1])
    n, p = split_counts(y, group, 3)
    assert n.tolist() == [2, 3, 0] and p.tolist() == [1, 2, 0]
    with pytest.raises(ValueError, match="family"):
        noise_floor("auc_parity", n, p, 0.02)
    with pytest.raises(ValueError, match="positives"):
        noise_floor("demographic_parity", [10, 10], [11, 0], 0.02)
    with pytest.raises(ValueError, match="repetitions"):
        noise_floor("demographic_parity", [10, 10], [1, 1], 0.02, repetitions=10**9)
    with pytest.raises(ValueError, match="loss_sd"):
        noise_floor("loss_gap", [10, 10], [1, 1], 0.02)
    assert zero_gap_gaps("equalized_odds", [10, 0], [5, 0], repetitions=7).tolist() == [0.0] * 7  # one group only


def test_excess_chance_over_jobs_is_the_product_of_their_splits_chances():
    """bench.quality.noise_floor.excess_chance: with two groups of 100,000 rows a zero-gap model never passes DP 0.02 + 0.01;
    with groups of 50 rows it often does, and P(none of k jobs) is the k-th power of one job's chance."""
    from bench.quality.noise_floor import excess_chance, keeps

    big = {"counts": [100_000, 100_000], "positives": [30_000, 30_000], "rate": 0.3, "tpr": 0.6, "fpr": 0.1,
           "loss_sd": 0.5}
    small = {**big, "counts": [50, 50], "positives": [15, 15]}
    job = {"dataset": "t", "constraint": "demographic_parity", "tolerance": 0.02}
    out = excess_chance([{**job, "seed": 0}] * 3, {"t|0": big}, 0.01)
    assert out["mean_keep"] == 1.0 and out["expected_beyond"] == 0.0 and out["none_beyond"] == 1.0
    out = excess_chance([{**job, "seed": 0}] * 3, {"t|0": small}, 0.01)
    one = keeps(small, "demographic_parity", 0.03)["keep_probability"]
    assert 0.0 < one < 0.5
    assert out["none_beyond"] == pytest.approx(one ** 3) and out["expected_beyond"] == pytest.approx(3 * (1 - one))
