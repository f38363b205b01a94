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


def _step8():
    """x = 0..7, y = 0 for x < 4 and 10 from x = 4: one split at 3.5 into two leaves of 4 rows."""
    return np.arange(8, dtype=float)[:, None], np.array([0, 0, 0, 0, 10, 10, 10, 10], dtype=float)


def test_a_split_threshold_lies_midway_between_the_values_it_separates():
    X, y = _step8()
    model = M5PRegressor().fit(X, y)
    assert model.feature_[0] == 0 and model.threshold_[0] == 3.5


def test_max_depth_zero_keeps_the_root_a_leaf():
    X, y = _step8()
    assert M5PRegressor(max_depth=0).fit(X, y).n_leaves_ == 1
    assert M5PRegressor(max_depth=1).fit(X, y).n_leaves_ == 2


def test_a_split_needs_min_samples_leaf_rows_on_both_sides():
    """Eight rows, y steps at x = 6 (0 x 6, then 10, 10), min_samples_leaf 4: only the 4 + 4 split at
    x = 3.5 is allowed (left std 0, right [0, 0, 10, 10] std 5: weighted 2.5 < root std 4.33), not
    the 6 + 2 split at 5.5 that would isolate the step exactly."""
    X = np.arange(8, dtype=float)[:, None]
    y = np.array([0, 0, 0, 0, 0, 0, 10, 10], dtype=float)
    model = M5PRegressor(prune=False).fit(X, y)
    assert model.threshold_[0] == 3.5 and model.n_leaves_ == 2


def test_smoothing_blends_each_leaf_with_its_parent_weighted_by_the_leafs_rows():
    """The step data: the root's model (on x, the attribute it splits on) is least squares on
    x = 0..7: slope cov/var = 80/42 = 40/21, intercept 5 - 40/21 * 3.5 = -5/3; its error
    mean|res| * (8 + 2*2)/(8 - 2) = 4.05 beats the constant's 5 * 10/7, so it keeps x. Each leaf is
    constant (0 and 10) and exact, so the split stays. Smoothing with k = 15 and the leaf's
    n = 4 rows: coef = (4*0 + 15 * 40/21) / 19 = 600/399; intercepts (4*0 + 15*(-5/3))/19 = -25/19
    and (4*10 + 15*(-5/3))/19 = 15/19."""
    X, y = _step8()
    model = M5PRegressor().fit(X, y)
    leaves = model.apply(np.array([[0.0], [7.0]]))
    np.testing.assert_allclose(model.coef_[leaves, 0], [600 / 399, 600 / 399])
    np.testing.assert_allclose(model.intercept_[leaves], [-25 / 19, 15 / 19])
    np.testing.assert_allclose(model.predict(np.array([[0.0]])), [-25 / 19])


def _linear_model(X, y, features):
    model = M5PRegressor()
    model._X, model._y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    return model._linear_model(np.arange(len(y)), features)


def test_the_constant_model_pays_for_its_one_parameter():
    """x = 0..5, y = 0,0,0,1,1,1. Least squares: slope 4.5/17.5 = 9/35, residuals
    1/7, -4/35, -13/35 and mirrored, mean |r| = 22/105; error 22/105 * (6 + 2*2)/(6 - 2) = 11/21.
    The constant (mean 1/2): mean |r| = 1/2 times (6 + 2*1)/(6 - 1) = 8/5: 4/5 > 11/21, so x stays."""
    coef, intercept, error = _linear_model(np.arange(6.0)[:, None], [0, 0, 0, 1, 1, 1], [0])
    assert coef[0] == pytest.approx(9 / 35) and intercept == pytest.approx(0.5 - 9 / 35 * 2.5)
    assert error == pytest.approx(11 / 21)


def test_attributes_are_dropped_smallest_standardised_coefficient_first():
    """y = 0.5 x1 + 10 x0 + r with x0 = 0.001 * [1, -1, 0, 0, -1, 1] and r = 0.1 * [1, 1, -2, -2, 1, 1],
    x0, x1 - mean and r orthogonal, so least squares gives exactly 10 and 0.5, residual r: mean |r|
    = 0.8/6, error (0.8/6) * (6 + 2*3)/(6 - 3) = 0.533. x0's standardised weight 10 * std(x0) = 0.008
    is far below x1's 0.5 * std(x1) = 0.85 (although its raw coefficient is larger): x0 goes first.
    Without it the residual r + 0.01 * [1, -1, 0, 0, -1, 1] has mean |.| = 0.8/6 and the error
    (0.8/6) * 2.5 = 1/3 < 0.533, so the drop stands; dropping x1 then costs 0.75 * 1.6 = 1.2: stop."""
    x0 = 0.001 * np.array([1, -1, 0, 0, -1, 1.0])
    x1 = np.arange(6.0)
    r = 0.1 * np.array([1, 1, -2, -2, 1, 1.0])
    y = 0.5 * x1 + 10 * x0 + r
    coef, _, error = _linear_model(np.column_stack([x0, x1]), y, [0, 1])
    assert coef[0] == 0 and coef[1] == pytest.approx(0.5)
    assert error == pytest.approx(1 / 3)


@pytest.mark.parametrize("params", [{"smoothing": -8.0}, {"min_samples_leaf": 0}, {"min_samples_leaf": 2.5},
                                    {"max_depth": -1}, {"prune": "yes"}])
def test_parameters_out_of_range_are_refused_by_name(params):
    X = np.random.default_rng(0).uniform(size=(64, 2))
    with pytest.raises(ValueError, match=f"The '{next(iter(params))}' parameter of M5PRegressor must be"):
        M5PRegressor(**params).fit(X, X[:, 0])


def test_a_split_between_adjacent_floats_leaves_no_side_empty():
    """The mean of 3.0 and the float just below it rounds to 3.0, so a threshold at the mean would send
    every row to the left and fit the right leaf's model on no rows (NaN predictions)."""
    below = np.nextafter(3.0, 0.0)
    X = np.array([[below]] * 10 + [[3.0]] * 10)
    y = np.array([0.0] * 10 + [5.0] * 10)
    model = M5PRegressor(min_samples_leaf=2, smooth=False).fit(X, y)
    assert list(model.predict(X[[0, -1]])) == [0.0, 5.0]


def test_units_change_nothing_however_far_apart_the_columns_scales():
    """Columns 1e15 apart in scale lost the small one in the leaves' least squares: 41 leaves, 3x the error."""
    rng = np.random.default_rng(0)
    U = rng.uniform(1, 2, size=(300, 2))
    y = np.where(U[:, 0] < 1.5, 1.0, 3.0) + U[:, 0] + 5 * U[:, 1]
    plain = M5PRegressor().fit(U, y)
    scaled = M5PRegressor().fit(U * np.array([1e12, 1e-3]), y)
    assert scaled.n_leaves_ == plain.n_leaves_
    assert np.allclose(scaled.predict(U * np.array([1e12, 1e-3])), plain.predict(U), rtol=1e-9, atol=1e-9)


def test_a_split_minimises_the_row_weighted_sum_of_the_two_sides_standard_deviations():
    """M5's standard-deviation reduction: sd(left) n_left / n + sd(right) n_right / n, not the
    pooled variance (which here would split at 5.5)."""
    y = np.array([0, 0, 0, 1, 5, 9, 9, 9, 20], dtype=float)
    x = np.arange(1, 10, dtype=float)[:, None]

    def weighted_sd(size: int) -> float:
        return (size * y[:size].std() + (len(y) - size) * y[size:].std()) / len(y)

    def pooled(size: int) -> float:
        return np.sqrt((size * y[:size].var() + (len(y) - size) * y[size:].var()) / len(y))

    allowed = [4, 5]  # at least 4 rows a side
    assert min(allowed, key=weighted_sd) == 4 and min(allowed, key=pooled) == 5
    assert M5PRegressor(prune=False).fit(x, y).threshold_[0] == 4.5


def test_smoothing_blends_a_leaf_with_every_ancestor_up_to_the_root():
    """p' = (n p + k q) / (n + k) at each step from the leaf to the root (k = 15, n the rows below;
    q the node's own least-squares line: one feature, kept by every node here)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 8, 400)
    y = np.where(x < 2, x, np.where(x < 4, 10 - 2 * x, np.where(x < 6, 3 * x - 10, 30 - 2 * x)))
    model = M5PRegressor().fit(x[:, None], y)
    leaves_only = M5PRegressor(smooth=False).fit(x[:, None], y)
    assert np.array_equal(model.threshold_, leaves_only.threshold_)
    deepest = 0
    for probe in (1.0, 3.0, 5.0, 7.0):
        path, rows = [0], [np.ones(len(x), dtype=bool)]  # the nodes from the root to the leaf, and their rows
        while model.feature_[path[-1]] >= 0:
            node, threshold = path[-1], model.threshold_[path[-1]]
            left = probe <= threshold
            rows.append(rows[-1] & ((x <= threshold) == left))
            path.append(model.left_[node] if left else model.right_[node])
        deepest = max(deepest, len(path))
        predicted = leaves_only.predict([[probe]])[0]
        for depth in range(len(path) - 1, 0, -1):
            n = int(rows[depth].sum())
            assert n == model.n_samples_[path[depth]]
            slope, intercept = np.polyfit(x[rows[depth - 1]], y[rows[depth - 1]], 1)
            predicted = (n * predicted + 15.0 * (slope * probe + intercept)) / (n + 15.0)
        assert model.predict([[probe]])[0] == pytest.approx(predicted, rel=1e-9)
    assert deepest >= 3  # some leaf has a grandparent, so stopping at the parent would show


def _split_feature_by_feature(tree: M5PRegressor, X: np.ndarray, y: np.ndarray) -> tuple[int, float] | None:
    """The root split as M5P chose it before all features were scanned at once: one feature at a time."""
    y = y - y.mean()
    n, m, node_std = len(y), tree.min_samples_leaf, float(np.std(y))
    best, best_gain = None, 0.0
    sizes = np.arange(1, n)
    for feature in range(X.shape[1]):
        order = np.argsort(X[:, feature], kind="stable")
        xs, ys = X[order, feature], y[order]
        s1, s2 = np.cumsum(ys)[:-1], np.cumsum(ys**2)[:-1]
        t1, t2 = ys.sum(), (ys**2).sum()
        var_left = np.maximum(s2 / sizes - (s1 / sizes) ** 2, 0.0)
        var_right = np.maximum((t2 - s2) / (n - sizes) - ((t1 - s1) / (n - sizes)) ** 2, 0.0)
        weighted = sizes / n * np.sqrt(var_left) + (n - sizes) / n * np.sqrt(var_right)
        valid = (xs[1:] > xs[:-1]) & (sizes >= m) & (n - sizes >= m)
        if not valid.any():
            continue
        weighted = np.where(valid, weighted, np.inf)
        i = int(np.argmin(weighted))
        gain = node_std - weighted[i]
        if gain > best_gain + 1e-12 * (abs(best_gain) + 1.0):
            middle = float((xs[i] + xs[i + 1]) / 2)
            best, best_gain = (feature, middle if middle < xs[i + 1] else float(xs[i])), gain
    return best


def test_the_split_scan_over_all_features_at_once_picks_what_one_feature_at_a_time_picked():
    """The advisor's speedup models spent most of their fitting time scanning features one by one;
    scanned together, each feature's sums are still its own, so every split (ties, constant columns
    and tiny units included) is the very same."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        n, features = int(rng.integers(8, 300)), int(rng.integers(1, 25))
        X = rng.normal(size=(n, features)) * 10.0 ** rng.integers(-8, 8, features)
        X[:, ::3] = np.round(X[:, ::3])
        X[:, 0] = 1.0 if trial % 4 == 0 else X[:, 0]
        y = np.sin(X[:, -1]) + rng.normal(size=n) * 10.0 ** -rng.integers(1, 12)
        tree = M5PRegressor(min_samples_leaf=int(rng.integers(1, 6)))
        tree._X, tree._y, tree._X_by_feature = X, y, np.ascontiguousarray(X.T)
        assert tree._best_split(np.arange(n)) == _split_feature_by_feature(tree, X, y)


def test_equal_gains_split_on_the_first_feature():
    """Two identical columns reduce the standard deviation equally: the split is on column 0."""
    x = np.arange(40, dtype=float)
    tree = M5PRegressor(prune=False).fit(np.column_stack([x, x]), np.where(x < 20, 0.0, 5.0))
    assert tree.feature_[0] == 0 and tree.threshold_[0] == 19.5


def test_a_fitted_model_keeps_no_copy_of_its_training_data():
    X = np.random.default_rng(0).normal(size=(50, 3))
    tree = M5PRegressor().fit(X, X[:, 0])
    assert not [a for a in ("_X", "_X_by_feature", "_y", "_nodes", "_root_std") if hasattr(tree, a)]


def _tied(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Features that are multiples of each other (equal split gains, equal attribute weights)."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(1, 10, (n, 3))
    X = np.column_stack([base[:, 0], 2 * base[:, 0], base[:, 1], 0.5 * base[:, 1], -3 * base[:, 0], base[:, 2]])
    y = np.where(base[:, 0] < 5, base[:, 0], 20 - 2 * base[:, 0]) + base[:, 1] + 0.05 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("seed", range(6))
def test_m5p_fitted_on_permuted_columns_predicts_the_same(seed):
    X, y = _tied(120, seed=0)
    X_test = np.random.default_rng(9).uniform(0, 11, (50, X.shape[1]))  # multiples no longer: ties show
    order = np.random.default_rng(seed).permutation(X.shape[1])
    model, permuted = M5PRegressor().fit(X, y), M5PRegressor().fit(X[:, order], y)
    np.testing.assert_array_equal(permuted.predict(X_test[:, order]), model.predict(X_test))
    np.testing.assert_array_equal(permuted.coef_[:, np.argsort(order)], model.coef_)


def test_m5p_on_permuted_named_columns_picks_the_same_of_identical_columns():
    import pandas as pd

    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.uniform(0, 10, 80)})
    X["b"] = X["a"]  # identical in training, different when predicting: only the name tells them apart
    y = np.where(X["a"] < 5, 1.0, 8.0) + rng.normal(size=80) * 0.01
    X_test = pd.DataFrame({"a": [2.0, 8.0], "b": [8.0, 2.0]})
    forward, backward = M5PRegressor().fit(X, y), M5PRegressor().fit(X[["b", "a"]], y)
    np.testing.assert_array_equal(backward.predict(X_test[["b", "a"]]), forward.predict(X_test))


def test_m5p_sums_a_predictions_terms_in_an_order_its_columns_positions_do_not_change():
    rng = np.random.default_rng(3)
    X = rng.uniform(0.1, 1e3, (200, 12)) * np.logspace(-3, 3, 12)  # one leaf of many terms of mixed sizes
    y = X @ rng.normal(size=12) + 1.0
    X_test = rng.uniform(0.1, 1e3, (300, 12)) * np.logspace(-3, 3, 12)
    model = M5PRegressor().fit(X, y)
    for seed in range(4):
        order = np.random.default_rng(seed).permutation(12)
        np.testing.assert_array_equal(M5PRegressor().fit(X[:, order], y).predict(X_test[:, order]),
                                      model.predict(X_test))


def test_m5p_of_two_columns_splitting_alike_splits_the_one_smaller_in_the_first_row():
    x = np.random.default_rng(2).uniform(0.5, 9.5, 80)
    x[0], x[-1] = 2.0, 8.0  # b = x**2 / 5 (same order, same splits) is below a = x in the first row, above in the last
    y = np.where(x < 5, 1.0, 8.0)
    tree = M5PRegressor().fit(np.column_stack([x, x**2 / 5]), y)
    assert tree.feature_[0] == 1
    import pandas as pd

    named = M5PRegressor().fit(pd.DataFrame({"a": x, "b": x**2 / 5}), y)  # values first, then names
    assert named.feature_[0] == 1
