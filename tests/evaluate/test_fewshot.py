"""The few-shot linear probe's maths: separable features -> ~100%, random labels -> chance, exact LOO."""
import numpy as np
import pytest

from vitjax.evaluate import fewshot


def _clusters(rng, n, num_classes=10, dim=32, spread=0.5):
    centres = np.random.default_rng(123).normal(size=(num_classes, dim))
    labels = rng.integers(0, num_classes, n)
    return centres[labels] + spread * rng.normal(size=(n, dim)), labels


def test_separable_features_are_classified_almost_perfectly():
    rng = np.random.default_rng(0)
    pool, test = _clusters(rng, 600), _clusters(rng, 2000)
    results = fewshot.evaluate_features(*pool, *test, 10, shots=(1, 5, 10, 25), seeds=3)
    for k in (1, 5, 10, 25):
        assert results[f"{k}shot"] >= 0.98, results


def test_random_labels_give_chance_accuracy():
    rng = np.random.default_rng(1)
    pool = rng.normal(size=(1000, 32)), rng.integers(0, 10, 1000)
    test = rng.normal(size=(4000, 32)), rng.integers(0, 10, 4000)
    results = fewshot.evaluate_features(*pool, *test, 10, shots=(1, 5, 25), seeds=3)
    for k in (1, 5, 25):
        assert abs(results[f"{k}shot"] - 0.1) < 0.03, results  # chance is 1/10; 4000 draws: sd 0.005


def test_leave_one_out_shortcut_matches_refitting():
    rng = np.random.default_rng(2)
    x, labels = _clusters(rng, 12, num_classes=3, dim=20, spread=2.0)
    targets = 2.0 * np.eye(3)[labels] - 1.0
    for l2 in (0.1, 3.0):
        residuals = []
        for i in range(len(x)):
            keep = np.arange(len(x)) != i
            xc = x[keep] - x[keep].mean(0)
            w = np.linalg.solve(xc.T @ xc + l2 * np.eye(x.shape[1]), xc.T @ (targets[keep] - targets[keep].mean(0)))
            prediction = (x[i] - x[keep].mean(0)) @ w + targets[keep].mean(0)
            residuals.append(targets[i] - prediction)
        brute = float(np.mean(np.square(residuals)))
        assert fewshot.leave_one_out_errors(x, targets, [l2])[0] == pytest.approx(brute, rel=1e-8)


def test_fit_matches_the_normal_equations_and_ignores_feature_scale():
    rng = np.random.default_rng(3)
    x, labels = _clusters(rng, 40, num_classes=4, dim=8)
    fit = fewshot.fit_ridge(x, labels, 4, l2=0.7)
    xc = x - x.mean(0)
    targets = 2.0 * np.eye(4)[labels] - 1.0
    expected = np.linalg.solve(xc.T @ xc + 0.7 * np.eye(8), xc.T @ (targets - targets.mean(0)))
    np.testing.assert_allclose(fit.weights, expected, rtol=1e-8, atol=1e-10)
    # The L2 grid is relative to the features' scale: scaling features changes no prediction.
    test, _ = _clusters(rng, 200, num_classes=4, dim=8)
    np.testing.assert_array_equal(fewshot.fit_ridge(x, labels, 4).predict(test),
                                  fewshot.fit_ridge(1000 * x, labels, 4).predict(1000 * test))


def test_draws_are_balanced_seeded_and_checked():
    labels = np.repeat(np.arange(5), 30)
    idx = fewshot.draw_shots(labels, 4, 5, seed=0)
    assert np.bincount(labels[idx]).tolist() == [4] * 5 and len(set(idx)) == 20
    assert np.array_equal(idx, fewshot.draw_shots(labels, 4, 5, seed=0))
    assert not np.array_equal(idx, fewshot.draw_shots(labels, 4, 5, seed=1))
    with pytest.raises(ValueError, match="needs 31 examples of class 0"):
        fewshot.draw_shots(labels, 31, 5, seed=0)
