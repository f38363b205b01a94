"""Per-optimization speedup models (after Taheri, Qasem & Burtscher), chosen and calibrated by inner CV.

For one optimization and one kind of target (GPUs, or one measured device) the training pairs
fit, on one feature set:

- k-NN regression of log2(speedup) with k = 10 (as Weka's IBk with ``-K 10``), neighbours weighted
  by 1/distance (IBk's ``-I``);
- an M5P model tree of log2(speedup) (``gpuperf.models.m5p.M5PRegressor``);
- logistic regression of the sign: P(speedup > 1).

Features are put on a log scale (``signed_log1p``), gaps filled with the training median and
standardised. M5P's linear leaf models see features clipped to the training range, and their
prediction is kept within a factor of 2 of the speedups the 10 nearest training pairs measured.

Which feature set (``FEATURE_SETS``: everything; the before kernel only, as in the paper; without
the problem-size features; only what the optimization changes) and which regression (k-NN, M5P or
their log-mean) predict the speedup is chosen by grouped cross-validation on the training pairs
alone (``INNER_FOLDS`` folds over the groups of ``pair_groups``: a pair's program and input, so a
held-out input is unseen, as in the outer evaluation): highest sign accuracy, then lowest log2 error.

Confidence is calibrated on the same inner folds plus, where the training pairs come from several
program families, folds that hold out one family each (so the calibration also sees predictions for
unseen programs): a logistic regression from the out-of-fold predictions' margin (|log2 predicted
speedup|), the share of the 10 nearest training pairs on the predicted side of 1, and familiarity
(the 90th percentile of the training pairs' mean distance to their 10 nearest neighbours over the
query's, capped at 1; a query within ``SAME_POINT`` of them is familiar, even where the training pairs coincide
and lie at distance 0 from one another) to whether the predicted sign was right.
So a confidence of 0.9 means about 9 in 10 such predictions got the sign right on held-out training
groups. A query less familiar than 95 % of the held-out groups of known programs (the inner folds)
is scaled down by its familiarity over that 5th percentile, whatever the held-out families showed. With too few groups to cross-validate, the defaults (all features, log-mean) are used and
confidence is the uncalibrated mean of model agreement and neighbour consistency, times familiarity.

A query that is the very pair of a training pair measured on some GPU (the same kernel, change,
configuration and input; the query then carries those columns) is predicted from those measurements
instead (``pair_transfer``), from the query's own GPU's alone where it measured it
(``Prediction.measured_here``); ``Prediction.model_speedup`` keeps what the models predicted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sklearn.dummy import DummyClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from gpuperf.datasets.schema import text_cells
from gpuperf.decisions.advice_features import ADVICE_FEATURES, CHANGE_FEATURES, GPU_FEATURES, MODEL_FEATURES
from gpuperf.decisions.pair_transfer import PairTransfer
from gpuperf.decisions.sign_confidence import fit_sign_calibrator, p_sign_right
from gpuperf.errors import GpuperfError
from gpuperf.models.learned import log_features
from gpuperf.models.m5p import M5PRegressor

NEIGHBOURS = 10
LOCAL_MARGIN = 1.0  # log2: M5P may predict at most 2x beyond what the nearest pairs measured
FAMILIAR_QUANTILE = 0.9  # a query as close to its neighbours as 90 % of the training pairs is familiar
SAME_POINT = 0.01  # standardised distance within which a query is its neighbours' point (rounding, not novelty)
INNER_FOLDS = 3
FLOOR_QUANTILE = 0.05  # queries less familiar than 95 % of held-out training groups get less confidence
INNER_MAX_PAIRS = 1500  # inner CV runs on at most this many training pairs (a fixed random sample)
SIZE_FEATURES = ("threads", "work_groups", "change_threads", "change_work_groups")
FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "all": MODEL_FEATURES,
    "before": ADVICE_FEATURES + GPU_FEATURES,
    "without_size": tuple(f for f in MODEL_FEATURES if f not in SIZE_FEATURES),
    "change": CHANGE_FEATURES + GPU_FEATURES,
}
REGRESSIONS = ("mean", "knn", "m5p")
DEFAULT_CHOICE = ("all", "mean")


def pair_groups(pairs: pd.DataFrame) -> np.ndarray:
    """Inner-CV group of each pair: program family and input (its configuration when it has none)."""
    inputs = text_cells(pairs["input"])
    within = inputs.where(inputs.ne(""), text_cells(pairs["configuration"]))
    return (pairs["family"].astype(str) + "|" + within).to_numpy()


def inner_cv_sample(pairs: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """The pairs inner CV and calibration run on: all of ``pairs``, or a fixed random sample of
    :data:`INNER_MAX_PAIRS` of them (in their order)."""
    if len(pairs) <= INNER_MAX_PAIRS:
        return pairs
    return pairs.iloc[np.sort(np.random.default_rng(seed).choice(len(pairs), INNER_MAX_PAIRS, replace=False))]


def _prepare() -> Pipeline:
    return make_pipeline(log_features(), SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler())


@dataclass
class Prediction:
    """Predictions for each query row."""

    speedup: np.ndarray  # the chosen regression's
    knn: np.ndarray
    m5p: np.ndarray
    p_faster: np.ndarray  # logistic regression's P(speedup > 1)
    confidence: np.ndarray  # calibrated P(predicted sign is right)
    familiarity: np.ndarray  # typical neighbour distance among training pairs / this row's (at most 1)
    neighbours: list[np.ndarray]  # per row, positions of the nearest training pairs
    model_speedup: np.ndarray | None = None  # the chosen regression's, where ``speedup`` is transferred
    measured_on: list[tuple[str, ...]] = field(default_factory=list)  # per row, GPUs that measured its pair
    measured_here: np.ndarray | None = None  # per row, whether ``measured_on`` is the query's own GPU


@dataclass
class _Regressions:
    """k-NN, M5P and logistic regression fitted on one feature set."""

    prepare: Pipeline
    knn: KNeighborsRegressor
    m5p: M5PRegressor
    sign: Any
    z_range: np.ndarray
    y_range: np.ndarray
    typical_distance: float
    log2_speedup: np.ndarray

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, neighbours: int, weights: str) -> _Regressions:
        prepare = _prepare().fit(X)
        Z = prepare.transform(X)
        k = min(neighbours, len(Z))
        knn = KNeighborsRegressor(n_neighbors=k, weights=weights).fit(Z, y)
        # each pair's distance to its nearest others (all others where there are no more than k)
        if len(Z) > k:
            own, _ = knn.kneighbors()
        elif len(Z) > 1:
            own, _ = knn.kneighbors(n_neighbors=len(Z) - 1)
        else:
            own = np.zeros((1, 1))
        labels = y > 0
        if labels.all() or not labels.any():
            sign = DummyClassifier(strategy="most_frequent").fit(Z, labels)
        else:
            sign = LogisticRegression(max_iter=2000).fit(Z, labels)
        return cls(prepare, knn, M5PRegressor().fit(Z, y), sign, np.stack([Z.min(axis=0), Z.max(axis=0)]),
                   np.array([y.min(), y.max()]), float(np.quantile(own.mean(axis=1), FAMILIAR_QUANTILE)), y)

    def predict(self, X: np.ndarray) -> dict[str, np.ndarray]:
        Z = self.prepare.transform(X)
        knn = self.knn.predict(Z)
        distance, near = self.knn.kneighbors(Z)
        measured = self.log2_speedup[near]
        low = np.maximum(measured.min(axis=1) - LOCAL_MARGIN, self.y_range[0])
        high = np.minimum(measured.max(axis=1) + LOCAL_MARGIN, self.y_range[1])
        m5p = np.clip(self.m5p.predict(np.clip(Z, *self.z_range)), low, high)
        proba = self.sign.predict_proba(Z)
        classes = list(self.sign.classes_)
        p_faster = proba[:, classes.index(True)] if True in classes else np.zeros(len(Z))
        mean_distance = distance.mean(axis=1)  # no farther than a typical pair from its neighbours: familiar
        typical = max(self.typical_distance, SAME_POINT)  # training pairs that coincide: a rounding away is theirs
        familiarity = np.where(mean_distance <= typical, 1.0, typical / np.maximum(mean_distance, 1e-12))
        return {"knn": knn, "m5p": m5p, "mean": (knn + m5p) / 2, "p_faster": p_faster,
                "familiarity": familiarity, "near": near, "faster_share": (measured > 0).mean(axis=1)}


def _evidence(regressed: dict[str, np.ndarray], log2_speedup: np.ndarray) -> np.ndarray:
    """Calibration inputs per row: margin, neighbours on the predicted side, familiarity."""
    faster = log2_speedup > 0
    consistency = np.where(faster, regressed["faster_share"], 1 - regressed["faster_share"])
    return np.column_stack([np.abs(log2_speedup), consistency, regressed["familiarity"]])


def _raw_confidence(regressed: dict[str, np.ndarray], log2_speedup: np.ndarray) -> np.ndarray:
    faster = log2_speedup > 0
    votes = np.stack([regressed["knn"] > 0, regressed["m5p"] > 0, regressed["p_faster"] > 0.5])
    agreement = (votes == faster).mean(axis=0)
    consistency = _evidence(regressed, log2_speedup)[:, 1]
    return (agreement + consistency) / 2 * regressed["familiarity"]


def inner_cv(pairs: pd.DataFrame, neighbours: int = NEIGHBOURS, weights: str = "distance",
             seed: int = 0) -> tuple[pd.DataFrame, dict[tuple[str, str], np.ndarray]]:
    """Out-of-fold scores of every (feature set, regression) on ``pairs`` and each one's evidence.

    Returns the score table (feature_set, regression, sign_accuracy, log2_mae; empty with fewer than
    two groups) and, per candidate, rows of [margin, consistency, familiarity, sign right]."""
    pairs = inner_cv_sample(pairs, seed)
    groups = pair_groups(pairs)
    distinct = np.unique(groups)
    if len(distinct) < 2:
        return pd.DataFrame(columns=["feature_set", "regression", "sign_accuracy", "log2_mae"]), {}
    y = np.log2(pairs["speedup"].to_numpy(dtype=float))
    folds = list(GroupKFold(n_splits=min(INNER_FOLDS, len(distinct))).split(y, groups=groups))
    rows, evidence = [], {}
    for name, features in FEATURE_SETS.items():
        X = pairs[list(features)].to_numpy(dtype=float)
        out = {r: np.full(len(y), np.nan) for r in REGRESSIONS}
        parts = {r: np.zeros((len(y), 3)) for r in REGRESSIONS}
        for train, test in folds:
            regressed = _Regressions.fit(X[train], y[train], neighbours, weights).predict(X[test])
            for regression in REGRESSIONS:
                out[regression][test] = regressed[regression]
                parts[regression][test] = _evidence(regressed, regressed[regression])
        for regression in REGRESSIONS:
            right = (out[regression] > 0) == (y > 0)
            rows.append({"feature_set": name, "regression": regression, "sign_accuracy": float(right.mean()),
                         "log2_mae": float(np.abs(out[regression] - y).mean())})
            evidence[(name, regression)] = np.column_stack([parts[regression], right])
    return pd.DataFrame(rows), evidence


def family_evidence(pairs: pd.DataFrame, choice: tuple[str, str], neighbours: int = NEIGHBOURS,
                    weights: str = "distance", seed: int = 0) -> np.ndarray:
    """Evidence rows of ``choice`` with each program family held out in turn (none with one family).

    What a prediction for an unseen program looks like: usually less familiar, and less often right."""
    pairs = inner_cv_sample(pairs, seed)
    family = pairs["family"].astype(str).to_numpy()
    if len(np.unique(family)) < 2:
        return np.zeros((0, 4))
    X = pairs[list(FEATURE_SETS[choice[0]])].to_numpy(dtype=float)
    y = np.log2(pairs["speedup"].to_numpy(dtype=float))
    rows = []
    for held in np.unique(family):
        train, test = family != held, family == held
        regressed = _Regressions.fit(X[train], y[train], neighbours, weights).predict(X[test])
        predicted = regressed[choice[1]]
        rows.append(np.column_stack([_evidence(regressed, predicted), (predicted > 0) == (y[test] > 0)]))
    return np.concatenate(rows)


class SpeedupModel:
    """k-NN, M5P and logistic regression on the feature set and regression inner CV chose; the same
    pair's measurements on other GPUs where the training pairs hold them."""

    def __init__(self, neighbours: int = NEIGHBOURS, weights: str = "distance", select: bool = True) -> None:
        self.neighbours = neighbours
        self.weights = weights
        self.select = select

    def fit(self, pairs: pd.DataFrame) -> SpeedupModel:
        if pairs.empty:
            raise GpuperfError("speedup model: no training pairs")
        with threadpool_limits(limits=1):  # small least-squares problems: threads only add overhead
            return self._fit(pairs)

    def _fit(self, pairs: pd.DataFrame) -> SpeedupModel:
        self.pairs = pairs.reset_index(drop=True)
        self.choice, self.calibrator, self.familiarity_floor = DEFAULT_CHOICE, None, 1.0
        self.scores = pd.DataFrame()
        if self.select:
            self.scores, evidence = inner_cv(self.pairs, self.neighbours, self.weights)
            if not self.scores.empty:
                best = self.scores.sort_values(["sign_accuracy", "log2_mae"], ascending=[False, True],
                                               kind="stable").iloc[0]
                self.choice = (str(best["feature_set"]), str(best["regression"]))
                seen = np.concatenate([evidence[self.choice],
                                       family_evidence(self.pairs, self.choice, self.neighbours, self.weights)])
                self.calibrator = fit_sign_calibrator(seen)
                within = evidence[self.choice][:, 2]  # familiarity of held-out inputs of known programs
                self.familiarity_floor = float(max(np.quantile(within, FLOOR_QUANTILE), 1e-6))
        X = self.pairs[list(FEATURE_SETS[self.choice[0]])].to_numpy(dtype=float)
        y = np.log2(self.pairs["speedup"].to_numpy(dtype=float))
        self.regressions = _Regressions.fit(X, y, self.neighbours, self.weights)
        self.transfer = PairTransfer().fit(self.pairs)
        return self

    def parts(self) -> dict[str, Any]:
        """The fitted components, for saving (``gpuperf.models.persistence``); pairs are kept apart."""
        r = self.regressions
        return {"prepare": r.prepare, "knn": r.knn, "m5p": r.m5p, "sign": r.sign, "z_range": r.z_range,
                "y_range": r.y_range, "typical_distance": r.typical_distance, "calibrator": self.calibrator,
                "familiarity_floor": self.familiarity_floor,
                "feature_set": self.choice[0], "regression": self.choice[1],
                "neighbours": self.neighbours, "weights": self.weights}

    @classmethod
    def from_parts(cls, parts: dict[str, Any], pairs: pd.DataFrame) -> SpeedupModel:
        """A model rebuilt from ``parts()`` and the pairs it was fitted on."""
        model = cls(parts["neighbours"], parts["weights"])
        model.pairs = pairs.reset_index(drop=True)
        y = np.log2(model.pairs["speedup"].to_numpy(dtype=float))
        if parts["knn"].n_samples_fit_ != len(y) or parts["feature_set"] not in FEATURE_SETS:
            raise GpuperfError("speedup model: saved model and pairs differ")
        model.regressions = _Regressions(
            parts["prepare"], parts["knn"], parts["m5p"], parts["sign"], np.asarray(parts["z_range"]),
            np.asarray(parts["y_range"]), float(parts["typical_distance"]), y)
        model.choice, model.calibrator = (parts["feature_set"], parts["regression"]), parts["calibrator"]
        model.familiarity_floor = float(parts["familiarity_floor"])
        model.scores = pd.DataFrame()
        model.transfer = PairTransfer().fit(model.pairs)
        return model

    @property
    def features(self) -> tuple[str, ...]:
        return FEATURE_SETS[self.choice[0]]

    def predict(self, features: pd.DataFrame) -> Prediction:
        regressed = self.regressions.predict(features[list(self.features)].to_numpy(dtype=float))
        chosen = regressed[self.choice[1]]
        if self.calibrator is None:
            confidence = _raw_confidence(regressed, chosen)
        else:
            unseen = np.minimum(1.0, regressed["familiarity"] / self.familiarity_floor)
            confidence = p_sign_right(self.calibrator, _evidence(regressed, chosen)) * unseen
        transferred = self.transfer.predict(features)
        measured = ~np.isnan(transferred.log2_speedup)
        return Prediction(
            speedup=np.exp2(np.where(measured, transferred.log2_speedup, chosen)),
            knn=np.exp2(regressed["knn"]), m5p=np.exp2(regressed["m5p"]), p_faster=regressed["p_faster"],
            confidence=np.where(measured, transferred.confidence, confidence),
            familiarity=regressed["familiarity"], neighbours=list(regressed["near"]),
            model_speedup=np.exp2(chosen), measured_on=transferred.gpus, measured_here=transferred.here,
        )
