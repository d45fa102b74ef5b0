import numpy as np

from solvers import CONSTRAINTS, Observer, Problem, RecordingObserver, solve


def _problem():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    return Problem(X, (X[:, 0] > 0).astype(int), rng.integers(0, 2, 200), ["a", "b"],
                   constraints=[CONSTRAINTS.get("dp")(0.05)], device="cpu")


def test_every_iteration_is_reported():
    obs = RecordingObserver()
    res = solve(_problem(), "plada", obs, max_iterations=25)
    assert [r.iteration for r in obs.records] == list(range(1, 26))
    elapsed = [r.elapsed_s for r in obs.records]
    assert all(b >= a for a, b in zip(elapsed, elapsed[1:]))
    assert obs.records[-1].samples_seen == 25 * 200
    assert obs.info["constraint_names"] == ["demographic_parity"] and obs.info["n_train"] == 200
    assert set(obs.records[0].duals) >= {"lambda", "mu", "abs_lambda_minus_mu", "u"}
    assert res.status == "completed" and res.stop_reason is None


class Cancel(RecordingObserver):
    def should_stop(self):
        return "cancelled" if len(self.records) >= 7 else None


def test_should_stop_stops_cleanly():
    obs = Cancel()
    res = solve(_problem(), "penalty", obs, max_iterations=100)
    assert res.status == "stopped" and res.stop_reason == "cancelled"
    assert res.iterations == 7 and len(obs.records) == 7


def test_time_limit_stops():
    res = solve(_problem(), "erm", Observer(), max_iterations=10**7, time_limit_s=0.2)
    assert res.status == "stopped" and res.stop_reason == "time_limit" and res.iterations < 10**7
