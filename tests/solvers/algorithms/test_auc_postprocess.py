"""auc_postprocess: the vectorised (ω₁, ω₂) grid against brute force, and reloading a saved
post-processed model (safetensors round trip) through the problem's model factory."""
import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from solvers import Problem, solve
from solvers.algorithms.auc_postprocess import (OMEGA1, OMEGA2, GroupShift, best_shift, is_shifted_state,
                                                restore_model, shift_table)
from solvers.auc import AUCParity, auc, fairness_gap


@pytest.mark.parametrize("variant", ["group", "inter", "intra", "aeg_positive", "bpsn_bnsp"])
def test_shift_table_matches_the_scores_it_stands_for(variant):
    rng = np.random.default_rng(1)
    n = 250
    y, prot = rng.integers(0, 2, n), rng.random(n) < 0.4
    h = np.round(rng.normal(size=n) + 0.7 * y, 1)          # many ties
    A, G = shift_table(y, h, prot, variant)
    assert A.shape == G.shape == (len(OMEGA1), len(OMEGA2))
    for i in (0, 1, 20, 57, 100):                            # ω₁ = 0 (all protected scores tie) included
        for j in (0, 13, 30, 60):
            s = np.where(prot, OMEGA1[i] * h + OMEGA2[j], h)
            assert A[i, j] == pytest.approx(auc(y, s), abs=1e-12)
            assert G[i, j] == pytest.approx(fairness_gap(y, s, prot, variant), abs=1e-12)


def test_best_shift_is_the_brute_force_choice():
    rng = np.random.default_rng(2)
    n = 120
    y, prot = rng.integers(0, 2, n), rng.random(n) < 0.5
    h = rng.normal(size=n) + y + 0.8 * prot
    kappa, best, key = 0.03, None, None
    for w1 in OMEGA1:
        for w2 in OMEGA2:
            s = np.where(prot, w1 * h + w2, h)
            a, g = auc(y, s), fairness_gap(y, s, prot, "group")
            k = (1, a) if g <= kappa else (0, -g)
            if key is None or k > key:
                key, best = k, (float(w1), float(w2), a, g)
    got = best_shift(y, h, prot, "group", kappa)
    assert got[:2] == best[:2] and got[2] == pytest.approx(best[2]) and got[3] == pytest.approx(best[3])


def _planted(n, seed):
    rng = np.random.default_rng(seed)
    group = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[:, 0] += 0.8 * group
    y = (X[:, 0] + 0.3 * X[:, 1] + 0.5 * rng.normal(size=n) > 0.5).astype(np.int64)
    return np.column_stack([X, (group == 0)]).astype(np.float32), y, group


@pytest.mark.parametrize("model_type", ["linear", "mlp"])
def test_saved_postprocessed_model_reloads_and_scores_new_data(tmp_path, model_type):
    from solvers.models import linear, mlp

    factory = linear if model_type == "linear" else (lambda d: mlp(d, [8], "tanh"))
    X, y, group = _planted(1200, 3)
    fam = AUCParity(0.02, {"variant": "group", "n_boot": 0})
    kw = dict(group_names=["a", "b"], model_factory=factory, model_type=model_type, device="cpu")
    problem = Problem(X=X[:900], y=y[:900], group=group[:900], constraints=[fam], **kw)
    val = Problem(X=X[900:], y=y[900:], group=group[900:], **kw)
    res = solve(problem, "auc_postprocess", max_iterations=200, validation=val)
    assert isinstance(res.model.net, GroupShift)
    shift = res.model.net.omega.tolist()
    assert shift != [1.0, 0.0]                               # a real shift was chosen (the model is unfair)
    # the saved artifact: tensors only, as the worker writes it
    path = tmp_path / "model.safetensors"
    save_file({k: v.detach().cpu().contiguous() for k, v in res.model.state_dict().items()}, str(path))
    state = load_file(str(path))
    assert is_shifted_state(state)
    with pytest.raises(RuntimeError):                        # a bare strict load cannot hold the shift
        problem.make_model().load_state_dict(state)
    reloaded = restore_model(problem.make_model(), state)
    Xn, yn, gn = _planted(500, 4)                            # new data
    with torch.no_grad():
        before, after = res.model(torch.as_tensor(Xn)), reloaded(torch.as_tensor(Xn))
    torch.testing.assert_close(after, before, rtol=0, atol=0)
    with torch.no_grad():
        base = reloaded.net.base(torch.as_tensor(Xn)).squeeze(-1)
    prot = torch.as_tensor(gn == 0)
    torch.testing.assert_close(after[prot], shift[0] * base[prot] + shift[1])
    torch.testing.assert_close(after[~prot], base[~prot])
    # warm start from the reloaded model: trains its network and shifts once (no nested shift)
    again = solve(problem, "auc_postprocess", max_iterations=50, validation=val, model=reloaded)
    assert isinstance(again.model.net, GroupShift) and not isinstance(again.model.net.base, GroupShift)


def test_restore_model_loads_other_solvers_states_unchanged():
    X, y, group = _planted(400, 5)
    problem = Problem(X=X, y=y, group=group, group_names=["a", "b"], device="cpu",
                      constraints=[AUCParity(0.05, {"variant": "group", "n_boot": 0})])
    res = solve(problem, {"name": "level_set", "params": {"inner_iterations": 50}}, max_iterations=100)
    state = res.model.state_dict()
    assert not is_shifted_state(state)
    reloaded = restore_model(problem.make_model(), state)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(problem.X), res.model(problem.X))


def test_penalty_selection_for_a_kappa_grid_in_one_run():
    X, y, group = _planted(1200, 6)
    fam = AUCParity(0.05, {"variant": "group", "n_boot": 0})
    problem = Problem(X=X[:900], y=y[:900], group=group[:900], group_names=["a", "b"], constraints=[fam],
                      device="cpu")
    val = Problem(X=X[900:], y=y[900:], group=group[900:], group_names=["a", "b"], device="cpu")
    res = solve(problem, {"name": "correlation_penalty", "params": {"lam": 3.0, "select_tolerances": [0.01, 0.2]}},
                max_iterations=300, validation=val)
    sel = res.model.selected_by_tolerance
    assert set(sel) == {0.01, 0.05, 0.2}
    for k, s in sel.items():
        assert s["feasible"] == (s["selection_gap"] <= k)
    feasible = [k for k in sorted(sel) if sel[k]["feasible"]]
    aucs = [sel[k]["selection_auc"] for k in feasible]
    assert aucs == sorted(aucs)                              # a looser κ never selects a worse AUC
    for name, value in res.model.state_dict().items():       # the returned model is the κ = 0.05 choice
        torch.testing.assert_close(value, sel[0.05]["state_dict"][name])
