"""M5P model tree: contract, piecewise-linear fits, pruning and smoothing."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.utils.estimator_checks import check_estimator

from gpuperf.models.m5p import M5PRegressor


def _kinked(n, seed):
    """y = x0 below 5, then slope 4; x1 and x2 are noise features."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 10, (n, 3))
    y = np.where(X[:, 0] < 5, X[:, 0], 5 + 4 * (X[:, 0] - 5))
    return X, y


def test_m5p_passes_sklearn_estimator_checks():
    check_estimator(M5PRegressor())


def test_m5p_fits_piecewise_linear_function_better_than_one_linear_model():
    X, y = _kinked(300, seed=0)
    X_test, y_test = _kinked(300, seed=1)
    noisy = y + 0.1 * np.random.default_rng(2).normal(size=len(y))
    tree_error = np.mean(np.abs(M5PRegressor().fit(X, noisy).predict(X_test) - y_test))
    line_error = np.mean(np.abs(LinearRegression().fit(X, noisy).predict(X_test) - y_test))
    assert tree_error < line_error / 4


def test_pruning_turns_a_linear_target_into_a_single_linear_leaf():
    rng = np.random.default_rng(3)
    X = rng.uniform(0, 10, (200, 2))
    y = 3 * X[:, 0] - 2
    model = M5PRegressor().fit(X, y)
    assert model.n_leaves_ == 1
    assert np.allclose(model.predict(X), y, atol=1e-8)
    unpruned = M5PRegressor(prune=False).fit(X, y)
    assert unpruned.n_leaves_ > 1


def test_unsmoothed_leaves_extrapolate_each_piece_linearly():
    X, y = _kinked(400, seed=4)
    model = M5PRegressor(smooth=False).fit(X, y)
    far = np.array([[12.0, 1.0, 1.0]])
    assert abs(model.predict(far)[0] - (5 + 4 * 7)) < 0.5


def test_constant_target_gives_one_leaf_and_clone_keeps_parameters():
    X = np.arange(40, dtype=float).reshape(20, 2)
    model = M5PRegressor(min_samples_leaf=2, smoothing=5.0).fit(X, np.full(20, 7.0))
    assert model.n_leaves_ == 1 and np.allclose(model.predict(X), 7.0)
    assert clone(model).get_params()["smoothing"] == 5.0


def test_models_above_a_pruned_subtree_keep_the_attributes_it_tested():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, 2))
    y = 10.0 * (X[:, 0] > 0.5) + 5.0 * X[:, 1]  # a step in x0, slope 5 in x1 on both sides
    model = M5PRegressor().fit(X, y)
    # the x1 splits below the x0 split are pruned into linear leaves; the root's model still uses
    # x1 (fixed when the tree was grown), so smoothing keeps the leaves' slope near 5
    assert model.n_leaves_ == 2
    np.testing.assert_allclose(model.coef_[model.feature_ < 0][:, 1], 5.0, atol=0.1)


def test_m5p_error_estimate_uses_pruning_multiplier_two():
    from gpuperf.models.m5p import M5PRegressor

    model = M5PRegressor()
    assert model.get_params()["pruning_multiplier"] == 2.0
    # mean |residual| 1, n = 6, v = 2: (6 + 2 * 2) / (6 - 2) = 2.5; n <= v: factor 10.
    assert model._estimated_error(np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0]), 2) == pytest.approx(2.5)
    assert model._estimated_error(np.array([1.0, -1.0]), 2) == pytest.approx(10.0)


def test_m5p_needs_twice_min_samples_leaf_rows_to_split():
    from gpuperf.models.m5p import M5PRegressor

    # A step at x = 2.5. Six rows < 2 * 4: no split, one constant leaf: the mean, 5.0. Eight rows
    # split (4 + 4) into two exact constant leaves (smoothing blends them with the root's model).
    x6 = np.arange(6, dtype=float)[:, None]
    model = M5PRegressor().fit(x6, [0, 0, 0, 10, 10, 10])
    assert model.n_leaves_ == 1
    assert model.predict(x6) == pytest.approx(np.full(6, 5.0))
    x8 = np.arange(8, dtype=float)[:, None]
    assert M5PRegressor().fit(x8, [0, 0, 0, 0, 10, 10, 10, 10]).n_leaves_ == 2
