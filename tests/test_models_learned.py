"""The learned models honour the scikit-learn estimator contract and fit what they should."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator
from threadpoolctl import threadpool_limits

from gpuperf.errors import GpuperfError
from gpuperf.models.learned import MODEL_NAMES, LogTarget, PcaKnnRegressor, make_model, signed_log1p
from gpuperf.models.m5p import M5PRegressor


@pytest.fixture(autouse=True)
def one_thread():
    """Small fits: OpenMP worker threads of the boosted trees would only slow them down."""
    with threadpool_limits(1):
        yield


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.uniform(1, 10, (n, 4)), columns=["a", "b", "c", "d"])
    y = 1e-4 * X["a"] ** 2 * X["b"]
    return X, y.to_numpy()


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_every_model_clones_fits_and_predicts_positive_times(name):
    X, y = _data()
    model = make_model(name, log_target=True, log_inputs=True)
    copy = clone(model)
    assert copy.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    copy.fit(X, y)
    predicted = copy.predict(X)
    assert predicted.shape == y.shape
    assert np.all(predicted > 0)
    assert np.median(np.abs(predicted - y) / y) < 0.5


def test_unknown_model_name_suggests_the_nearest():
    with pytest.raises(GpuperfError, match="random_forest"):
        make_model("random_forrest")


@pytest.mark.parametrize(("cli", "library"), [("lr", "linear"), ("rf", "random_forest"), ("knn", "pca_knn"),
                                              ("svr", "svr_rbf")])
def test_the_command_lines_model_names_build_the_same_models(cli, library):
    """gpuperf fit --model lr|rf|knn|svr: the same names in the library (they were unknown models)."""
    assert repr(make_model(cli, log_target=False)) == repr(make_model(library, log_target=False))


def test_log_target_fits_power_law_exactly_with_linear_model_on_log_inputs():
    X, y = _data()
    model = LogTarget(make_pipeline(StandardScaler(), LinearRegression()))
    model.fit(np.log(X), y)
    assert np.allclose(model.predict(np.log(X)), y, rtol=1e-8)
    assert model.get_params(deep=False) == {"regressor": model.regressor, "bound_factor": 8.0}


def test_log_target_bounds_runaway_extrapolation_to_the_widened_training_range():
    """A log-target linear model extrapolates exponentially; predictions stay within
    [min(y) / 8, max(y) * 8] of the training times, while in-range predictions are untouched."""
    x = np.linspace(0.0, 1.0, 50).reshape(-1, 1)
    y = np.exp2(20.0 * x.ravel() - 10.0)  # 2^-10 .. 2^10
    far = np.array([[50.0], [-50.0], [0.5]])
    unbounded = LogTarget(LinearRegression(), bound_factor=None).fit(x, y).predict(far)
    assert unbounded[0] > 1e250 and unbounded[1] < 1e-250  # 2^990 and 2^-1010
    bounded = LogTarget(LinearRegression()).fit(x, y).predict(far)
    assert bounded[0] == pytest.approx(y.max() * 8) and bounded[1] == pytest.approx(y.min() / 8)
    assert bounded[2] == pytest.approx(1.0)
    assert clone(LogTarget(LinearRegression(), bound_factor=2.0)).bound_factor == 2.0
    assert LogTarget(LinearRegression()).fit(x, y).predict_bounded(far)[1].tolist() == [True, True, False]
    assert not LogTarget(LinearRegression(), bound_factor=None).fit(x, y).predict_bounded(far)[1].any()


def test_log_target_set_params_and_nested_params():
    model = make_model("random_forest")
    model.set_params(regressor__n_estimators=7)
    assert model.regressor.n_estimators == 7
    assert clone(model).regressor.n_estimators == 7


def test_models_work_inside_a_pipeline_with_a_scaler():
    X, y = _data()
    pipeline = make_pipeline(StandardScaler(), M5PRegressor())
    predicted = pipeline.fit(X, y).predict(X)
    assert predicted.shape == y.shape
    assert np.median(np.abs(predicted - y) / y) < 0.1  # y = 1e-4 a^2 b, piecewise linear in leaves
    assert np.allclose(predicted, M5PRegressor().fit(X, y).predict(X), rtol=1e-6)  # splits ignore the scale


def test_signed_log1p_keeps_sign_and_zero():
    assert np.allclose(signed_log1p([-np.e + 1, 0.0, np.e - 1]), [-1.0, 0.0, 1.0])


def test_log_inputs_keep_a_sparse_matrix_sparse_for_the_next_step_to_take_or_refuse():
    """A sparse matrix reaches the model behind the log scale, whose own message says whether it takes
    one, instead of numpy's 'setting an array element with a sequence'."""
    from scipy import sparse

    X = sparse.random(12, 3, density=0.5, format="csc", random_state=0)
    X.data = X.data * 50 - 10  # negative counts too: the sign is kept
    scaled = signed_log1p(X)
    assert sparse.issparse(scaled) and np.allclose(scaled.toarray(), signed_log1p(X.toarray()))
    results = check_estimator(make_model("linear", log_inputs=True), on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []


@pytest.mark.parametrize("bound_factor", ["8", True, [8.0]])
def test_a_bound_factor_that_is_no_number_is_named(bound_factor):
    """Text ('8', from a config file or a grid) or a list met Python's "'<=' not supported", and True
    was taken as a factor of 1, clipping every prediction to the training range."""
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    X, y = np.arange(8.0).reshape(-1, 1), np.linspace(1.0, 2.0, 8)
    with pytest.raises(GpuperfError, match="bound_factor must be a finite number at least 1"):
        LogTarget(LinearRegression(), bound_factor=bound_factor).fit(X, y)
    train = pd.DataFrame({"x": X[:, 0], REFERENCE_COLUMN: 0.0})
    with pytest.raises(GpuperfError, match="bound_factor must be a finite number at least 1"):
        ReferenceResidual(LinearRegression(), bound_factor=bound_factor).fit(train, y)


@pytest.mark.parametrize("n_neighbors", ["5", None, True, 0, 2.0])
def test_pca_knn_names_a_neighbour_count_that_is_no_whole_number(n_neighbors):
    """'5' or None met Python's "'<' not supported", and True fitted one neighbour."""
    X, y = np.random.default_rng(0).normal(size=(10, 3)), np.arange(10.0)
    with pytest.raises(GpuperfError, match=r"PcaKnnRegressor: n_neighbors .* a whole number of at least 1"):
        PcaKnnRegressor(n_neighbors=n_neighbors).fit(X, y)


def test_pca_knn_passes_sklearn_estimator_checks():
    check_estimator(PcaKnnRegressor())


def test_pca_knn_keeps_components_for_95_percent_of_the_variance():
    rng = np.random.default_rng(1)
    base = rng.normal(size=(200, 2))
    X = np.hstack([base, base @ rng.normal(size=(2, 3)) + 1e-3 * rng.normal(size=(200, 3))])
    model = PcaKnnRegressor().fit(X, base[:, 0])
    assert model.pipeline_.named_steps["pca"].n_components_ == 2


@pytest.mark.parametrize("name", ["svr_linear", "svr_rbf"])
def test_svr_on_times_in_seconds_follows_them(name):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"n": rng.uniform(1, 100, 200)})
    y = 2e-6 * X["n"].to_numpy()  # microseconds: far inside an unscaled epsilon of 0.1
    predicted = make_model(name, log_target=False).fit(X, y).predict(X)
    assert np.corrcoef(predicted, y)[0, 1] > 0.99
    assert np.median(np.abs(predicted - y) / y) < 0.2


@pytest.mark.parametrize("name", ["linear", "m5p"])
def test_log_target_models_pass_the_scikit_learn_checks_for_positive_targets(name):
    """A log-target model declares positive targets, so sklearn's checks feed it times, and one
    output (it declared its regressor's multi-output support, then refused a second column)."""
    results = check_estimator(make_model(name), on_fail=None)
    assert [r["check_name"] for r in results if r["status"] == "failed"] == []


def test_log_target_refuses_non_positive_times_and_bad_bounds():
    X, y = np.arange(8.0).reshape(-1, 1), np.linspace(1.0, 2.0, 8)
    with pytest.raises(GpuperfError, match="positive, finite times"):
        LogTarget(LinearRegression()).fit(X, y - 1.5)
    with pytest.raises(GpuperfError, match="bound_factor must be a finite number at least 1"):
        LogTarget(LinearRegression(), bound_factor=0.5).fit(X, y)


def test_pca_knn_keeps_95_percent_of_the_variance_not_less():
    from gpuperf.models.learned import PcaKnnRegressor

    # Nine copies of a and one of b (a, b orthogonal, zero mean, equal variance): after scaling the
    # correlation matrix has eigenvalues 9 and 1, i.e. 90 % and 10 % of the variance. 95 % needs
    # both components; 80 % (or 90 %) would keep one.
    a = np.tile([1.0, -1.0], 4)
    b = np.tile([1.0, 1.0, -1.0, -1.0], 2)
    X = np.column_stack([a] * 9 + [b])
    model = PcaKnnRegressor().fit(X, np.arange(8.0))
    pca = model.pipeline_.named_steps["pca"]
    assert pca.explained_variance_ratio_[:2] == pytest.approx([0.9, 0.1])
    assert pca.n_components_ == 2


def test_pca_knn_names_a_variance_outside_0_to_1_and_keeps_every_component_at_1():
    from gpuperf.models.learned import PcaKnnRegressor

    X, y = np.random.default_rng(0).normal(size=(12, 3)), np.arange(12.0)
    for variance in (0, 1.5, -0.1, "0.9", True):
        with pytest.raises(GpuperfError, match=r"PcaKnnRegressor: variance .* a number in \(0, 1\]"):
            PcaKnnRegressor(variance=variance).fit(X, y)
    assert PcaKnnRegressor(variance=1).fit(X, y).pipeline_.named_steps["pca"].n_components_ == 3


def test_pca_knn_averages_five_neighbours():
    from gpuperf.models.learned import PcaKnnRegressor

    # x = y = 0..9: the 5 nearest rows of x = 0 are 0..4, mean 2.0 (3 neighbours would give 1.0).
    x = np.arange(10, dtype=float)[:, None]
    assert PcaKnnRegressor().fit(x, x[:, 0]).predict([[0.0]]).tolist() == [2.0]


def test_pca_knn_is_unit_free():
    from gpuperf.models.learned import PcaKnnRegressor

    # Standardised first, so rescaling one feature (seconds -> milliseconds) cannot change which
    # rows are neighbours; unscaled, the x1000 column would dominate the distances and the PCA.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 3)), rng.normal(size=60)
    scaled = X * [1.0, 1000.0, 1.0]
    first = PcaKnnRegressor().fit(X, y).predict(X)
    second = PcaKnnRegressor().fit(scaled, y).predict(scaled)
    assert second == pytest.approx(first, rel=1e-9)


def test_random_forest_is_amaris_settings():
    from gpuperf.models.learned import make_model

    forest = make_model("random_forest").regressor
    assert forest.n_estimators == 50 and forest.max_features == 3


def test_random_forest_on_times_in_seconds_does_not_depend_on_the_time_unit():
    """Trees take a node under 2.2e-16 variance as pure: sub-microsecond times in seconds split as in ns."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"n": rng.uniform(1, 100, 80)})
    y = 3e-7 * X["n"].to_numpy() ** 1.5 * rng.uniform(0.8, 1.2, 80)
    asked = pd.DataFrame({"n": rng.uniform(0, 110, 50)})
    predicted = make_model("random_forest", log_target=False).fit(X, y).predict(asked)
    for factor in (1e-9, 1e3):
        scaled = make_model("random_forest", log_target=False).fit(X, y * factor).predict(asked)
        np.testing.assert_allclose(scaled / factor, predicted, rtol=1e-9)
    X4, y4 = _data(100)  # several features: ties between features fall by rounding, but the trees are as deep
    nodes = [[tree.tree_.node_count for tree in make_model("random_forest", log_target=False)
              .fit(X4, y4 * factor).regressor_.estimators_] for factor in (1.0, 1e-9)]
    assert nodes[0] == nodes[1]


def test_reference_residual_clips_a_runaway_residual_and_says_which():
    """Residuals 0..1 (log2) in training; x = 50 extrapolates to 50: clipped to 1 + log2(8) = 4."""
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    train = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11), REFERENCE_COLUMN: 0.0})
    model = ReferenceResidual(LinearRegression()).fit(train, np.exp2(train["x"]))
    far = pd.DataFrame({"x": [50.0, 0.5], REFERENCE_COLUMN: [1.0, 1.0]})
    predicted, clipped = model.predict_bounded(far)
    assert clipped.tolist() == [True, False]
    assert predicted == pytest.approx([2.0 ** (1 + 4), 2.0 ** 1.5]) and model.predict(far) == pytest.approx(predicted)


def test_log_target_refitted_on_an_array_forgets_the_column_names_of_its_last_fit():
    """A stale feature_names_in_ would let a saved model pass its name check and read the wrong columns."""
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [4.0, 1.0, 3.0, 2.0]})
    model = make_model("linear").fit(X, [1.0, 2.0, 3.0, 4.0])
    assert list(model.feature_names_in_) == ["a", "b"]
    model.fit(X[["b", "a"]].to_numpy(), [1.0, 2.0, 3.0, 4.0])
    assert not hasattr(model, "feature_names_in_") and model.n_features_in_ == 2


def test_log_target_takes_missing_features_exactly_when_its_regressor_does():
    from sklearn.utils import get_tags

    assert get_tags(make_model("gbt", log_target=True)).input_tags.allow_nan
    assert not get_tags(make_model("linear", log_target=True)).input_tags.allow_nan


def test_reference_residual_records_its_features_and_refuses_what_log_target_refuses():
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    train = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11), REFERENCE_COLUMN: 0.0})
    model = ReferenceResidual(LinearRegression()).fit(train, np.exp2(train["x"]))
    assert list(model.feature_names_in_) == ["x", REFERENCE_COLUMN] and model.n_features_in_ == 2
    with pytest.raises(GpuperfError, match="bound_factor must be a finite number at least 1"):
        ReferenceResidual(LinearRegression(), bound_factor=0.5).fit(train, np.exp2(train["x"]))
    with pytest.raises(GpuperfError, match="the target must be positive, finite times"):
        ReferenceResidual(LinearRegression()).fit(train, train["x"])  # x = 0 in the first row


def test_reference_residual_takes_a_column_of_times_as_one_time_per_row():
    """A one-column table of times (``df[["time"]]``) fits as its Series does, not as an n x n target
    broadcast against the reference; a time count other than the row count is a gpuperf error."""
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    train = pd.DataFrame({"x": np.linspace(0.0, 1.0, 6), REFERENCE_COLUMN: np.linspace(-10.0, -9.0, 6)})
    times = pd.DataFrame({"time": np.exp2(train[REFERENCE_COLUMN] + train["x"])})
    by_series = ReferenceResidual(LinearRegression()).fit(train, times["time"])
    by_column = ReferenceResidual(LinearRegression()).fit(train, times)
    assert by_column.predict(train).shape == (6,)
    assert by_column.predict(train) == pytest.approx(by_series.predict(train))
    assert by_column.residual_bounds_ == pytest.approx(by_series.residual_bounds_)
    with pytest.raises(GpuperfError, match="6 rows but 5 measured times"):
        ReferenceResidual(LinearRegression()).fit(train, times["time"][:5])


def test_sample_weight_reaches_the_final_step_of_every_model_that_takes_weights():
    """make_model('lr').fit(X, y, sample_weight=w) failed: the Pipeline wanted linearregression__sample_weight."""
    rng = np.random.default_rng(0)
    X = rng.uniform(1, 10, (60, 3))
    y = np.where(np.arange(60) < 30, 1e-3, 4e-3) * X[:, 0]
    weights = np.where(np.arange(60) < 30, 1.0, 1e-6)  # the second half barely counts
    for name in ("lr", "svr", "svr_linear", "rf", "gbt"):
        weighted = make_model(name).fit(X, y, sample_weight=weights).predict(X[:30])
        plain = make_model(name).fit(X, y).predict(X[:30])
        assert np.mean(np.abs(weighted / y[:30] - 1)) < np.mean(np.abs(plain / y[:30] - 1)), name
    assert make_model("lr", log_inputs=True).fit(X, y, sample_weight=weights).predict(X[:1]).shape == (1,)
    for name, model in (("m5p", "M5PRegressor"), ("knn", "PcaKnnRegressor")):
        with pytest.raises(GpuperfError, match=f"{model} takes no sample weights"):
            make_model(name).fit(X, y, sample_weight=weights)


def test_sample_weight_reaches_a_meta_estimator_that_passes_its_fit_keywords_on():
    """GridSearchCV's fit(X, y, **params) gives the weights to its estimator: LogTarget refused them
    ("GridSearchCV takes no sample weights") where TransformedTargetRegressor takes them."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV

    rng = np.random.default_rng(0)
    X = rng.uniform(1, 10, (60, 3))
    y = np.where(np.arange(60) < 30, 1e-3, 4e-3) * X[:, 0]
    weights = np.where(np.arange(60) < 30, 1.0, 1e-6)
    search = GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=3)
    ours = LogTarget(search, bound_factor=None).fit(X, y, sample_weight=weights).predict(X)
    plain = TransformedTargetRegressor(clone(search), func=np.log2, inverse_func=np.exp2, check_inverse=False)
    np.testing.assert_allclose(ours, plain.fit(X, y, sample_weight=weights).predict(X), rtol=1e-12)


@pytest.mark.parametrize("name", ["m5p", "random_forest", "linear"])
def test_log_scaled_inputs_refuse_columns_renamed_or_in_another_order(name):
    """With log_inputs the log scale took any columns by position: reordered ones predicted 8.6x off."""
    X, y = _data()
    model = make_model(name, log_inputs=True).fit(X, y)
    assert np.allclose(model.predict(X), clone(model).fit(X, y).predict(X))
    for wrong in (X[["d", "c", "b", "a"]], X.rename(columns={"a": "z"})):
        with pytest.raises(ValueError, match="feature names should match"):
            model.predict(wrong)


def test_reference_residual_names_bad_reference_values_and_refuses_reordered_columns():
    from gpuperf.models.reference import REFERENCE_COLUMN, ReferenceResidual

    train = pd.DataFrame({"x": np.linspace(0.0, 1.0, 11), "w": np.linspace(1.0, 0.0, 11), REFERENCE_COLUMN: 0.0})
    model = ReferenceResidual(LinearRegression()).fit(train, np.exp2(train["x"]))
    with pytest.raises(GpuperfError, match=r"not the fitted ones, in the fitted order: \['x', 'w'"):
        model.predict(train[["w", "x", REFERENCE_COLUMN]])
    for bad, shown in ((np.inf, "inf"), ("fast", "'fast'")):
        rows = train.astype({REFERENCE_COLUMN: object})
        rows.loc[3, REFERENCE_COLUMN] = bad
        with pytest.raises(GpuperfError, match=rf"{REFERENCE_COLUMN} must be a finite log2 time in every row; "
                                               rf"1 rows are not, the first at position 3: {shown}"):
            ReferenceResidual(LinearRegression()).fit(rows, np.exp2(train["x"]))


def test_an_infinite_bound_factor_is_refused_when_fitted_as_a_saved_model_could_not_hold_it():
    X, y = _data()
    with pytest.raises(GpuperfError, match="bound_factor must be a finite number at least 1 .or None for no bounds., got inf"):
        make_model("m5p").set_params(bound_factor=float("inf")).fit(X, y)
    assert make_model("m5p").set_params(bound_factor=None).fit(X, y).predict(X).shape == y.shape


def test_a_bad_time_is_named_by_its_position():
    X, y = _data()
    y = y.copy()
    y[[7, 9]] = [0.0, np.nan]
    with pytest.raises(GpuperfError, match="2 of 300 are not, the first at position 7: 0.0"):
        make_model("m5p").fit(X, y)


def test_log_target_takes_weights_through_metadata_routing():
    from sklearn import config_context

    X, y = _data()
    weights = np.linspace(0.1, 1.0, len(y))
    with config_context(enable_metadata_routing=True):
        scaler = StandardScaler().set_fit_request(sample_weight=False)
        regressor = LinearRegression().set_fit_request(sample_weight=True)
        routed = LogTarget(make_pipeline(scaler, regressor)).fit(X, y, sample_weight=weights)
    direct = LogTarget(LinearRegression()).fit(StandardScaler().fit_transform(X), y, sample_weight=weights)
    assert np.allclose(routed.predict(X), direct.predict(StandardScaler().fit(X).transform(X)))


def test_pca_knn_fits_one_row_without_a_numpy_warning():
    """One row made PCA divide by n - 1 = 0 (a RuntimeWarning under default filters); it predicts its one time."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = PcaKnnRegressor().fit(np.array([[1.0, 2.0, 3.0]]), [1e-3])
    assert model.predict(np.array([[5.0, 6.0, 7.0], [1.0, 2.0, 3.0]])).tolist() == [1e-3, 1e-3]


def test_the_log_flags_of_make_model_are_true_or_false():
    from gpuperf.errors import GpuperfError

    with pytest.raises(GpuperfError, match="log_target is True or False, not 'no'"):
        make_model("rf", log_target="no")
    with pytest.raises(GpuperfError, match="log_inputs is True or False, not 1"):
        make_model("rf", log_inputs=1)
    assert make_model("rf", log_target=np.bool_(False)).regressor.__class__.__name__ == "RandomForestRegressor"
    from gpuperf.models import CLI_ALIASES  # the docstring's pointer resolves

    assert CLI_ALIASES["rf"] == "random_forest"


def test_pca_knn_takes_the_covariance_eigenvectors_for_many_rows_and_predicts_as_the_full_svd_does():
    """The full SVD of every row cost most of ``evaluate --model knn``; for thousands of rows, ten or more
    per feature, the covariance's eigenvectors give the same components, neighbours and predictions."""
    from sklearn.decomposition import PCA
    from sklearn.neighbors import KNeighborsRegressor

    rng = np.random.default_rng(0)
    base = rng.normal(size=(2000, 3))
    X = np.hstack([base, base @ rng.normal(size=(3, 5)) + 0.05 * rng.normal(size=(2000, 5))])
    y = rng.normal(size=2000)
    model = PcaKnnRegressor().fit(X, y)
    assert model.pipeline_.named_steps["pca"].svd_solver == "covariance_eigh"
    full = make_pipeline(StandardScaler(), PCA(0.95, svd_solver="full"), KNeighborsRegressor(5)).fit(X, y)
    assert model.pipeline_.named_steps["pca"].n_components_ == full.named_steps["pca"].n_components_
    assert np.array_equal(model.predict(X), full.predict(X))
    assert PcaKnnRegressor().fit(X[:1999], y[:1999]).pipeline_.named_steps["pca"].svd_solver == "full"  # few rows
