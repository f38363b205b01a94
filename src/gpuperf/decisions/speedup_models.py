"""Per-optimization speedup models on the before kernel's features (after Taheri, Qasem & Burtscher).

For one optimization and one kind of target (GPUs, or one measured device) three models learn
from the training pairs:

- k-NN regression of log2(speedup) with k = 10 (as Weka's IBk with ``-K 10``), neighbours weighted
  by 1/distance (IBk's ``-I``): near-identical kernels dominate, far ones still vote;
- an M5P model tree of log2(speedup) (``gpuperf.models.m5p.M5PRegressor``);
- logistic regression of the sign: P(speedup > 1).

Features are put on a log scale (``signed_log1p``), gaps filled with the training median and
standardised. M5P's linear leaf models see features clipped to the training range, and their
prediction is kept within a factor of 2 of the speedups the 10 nearest training pairs measured
(and within the training range), so a kernel unlike every training pair cannot extrapolate to
absurd speedups. The predicted speedup is 2 ** (mean of the two regressions' log2 predictions).
Confidence is the mean of two shares, of the three models that agree with the predicted sign and
of the 10 nearest training pairs whose measured speedup lies on the same side of 1, times the
familiarity of the kernel: the 90th percentile of the training pairs' mean distance to their 10
nearest neighbours over the query's (capped at 1), so a kernel unlike every training pair gets
little confidence whatever the models say.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.dummy import DummyClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from gpuperf.decisions.advice_features import MODEL_FEATURES
from gpuperf.errors import GpuperfError
from gpuperf.models.learned import log_features
from gpuperf.models.m5p import M5PRegressor

NEIGHBOURS = 10
LOCAL_MARGIN = 1.0  # log2: M5P may predict at most 2x beyond what the nearest pairs measured
FAMILIAR_QUANTILE = 0.9  # a query as close to its neighbours as 90 % of the training pairs is familiar


def _prepare() -> Pipeline:
    return make_pipeline(log_features(), SimpleImputer(strategy="median", keep_empty_features=True), StandardScaler())


@dataclass
class Prediction:
    """Predictions for each query row."""

    speedup: np.ndarray  # combined: 2 ** mean(log2 kNN, log2 M5P)
    knn: np.ndarray
    m5p: np.ndarray
    p_faster: np.ndarray  # logistic regression's P(speedup > 1)
    confidence: np.ndarray
    familiarity: np.ndarray  # typical neighbour distance among training pairs / this row's (at most 1)
    neighbours: list[np.ndarray]  # per row, positions of the nearest training pairs


class SpeedupModel:
    """k-NN, M5P and logistic regression fitted on one optimization's training pairs."""

    def __init__(self, neighbours: int = NEIGHBOURS, weights: str = "distance") -> None:
        self.neighbours = neighbours
        self.weights = weights

    def fit(self, pairs: pd.DataFrame) -> SpeedupModel:
        if pairs.empty:
            raise GpuperfError("speedup model: no training pairs")
        self.pairs = pairs.reset_index(drop=True)
        X = self.pairs[list(MODEL_FEATURES)].to_numpy(dtype=float)
        y = np.log2(self.pairs["speedup"].to_numpy(dtype=float))
        self.prepare = _prepare().fit(X)
        Z = self.prepare.transform(X)
        k = min(self.neighbours, len(Z))
        self.knn = KNeighborsRegressor(n_neighbors=k, weights=self.weights).fit(Z, y)
        own, _ = self.knn.kneighbors() if len(Z) > k else (np.zeros((1, 1)), None)
        self.typical_distance = float(np.quantile(own.mean(axis=1), FAMILIAR_QUANTILE))
        self.m5p = M5PRegressor().fit(Z, y)
        self.z_range = np.stack([Z.min(axis=0), Z.max(axis=0)])
        self.y_range = np.array([y.min(), y.max()])
        labels = y > 0
        if labels.all() or not labels.any():
            self.sign = DummyClassifier(strategy="most_frequent").fit(Z, labels)
        else:
            self.sign = LogisticRegression(max_iter=2000).fit(Z, labels)
        self._measured_sign = labels
        self._log2_speedup = y
        return self

    def parts(self) -> dict[str, Any]:
        """The fitted components, for saving (``gpuperf.models.persistence``); pairs are kept apart."""
        return {"prepare": self.prepare, "knn": self.knn, "m5p": self.m5p, "sign": self.sign,
                "measured_sign": self._measured_sign, "typical_distance": self.typical_distance,
                "z_range": self.z_range, "y_range": self.y_range,
                "neighbours": self.neighbours, "weights": self.weights}

    @classmethod
    def from_parts(cls, parts: dict[str, Any], pairs: pd.DataFrame) -> SpeedupModel:
        """A model rebuilt from ``parts()`` and the pairs it was fitted on."""
        model = cls(parts["neighbours"], parts["weights"])
        model.pairs = pairs.reset_index(drop=True)
        model.prepare, model.knn, model.m5p, model.sign = parts["prepare"], parts["knn"], parts["m5p"], parts["sign"]
        model._measured_sign = np.asarray(parts["measured_sign"], dtype=bool)
        model._log2_speedup = np.log2(model.pairs["speedup"].to_numpy(dtype=float))
        model.typical_distance = float(parts["typical_distance"])
        model.z_range, model.y_range = np.asarray(parts["z_range"]), np.asarray(parts["y_range"])
        if len(model._measured_sign) != len(model.pairs):
            raise GpuperfError("speedup model: saved model and pairs differ in length")
        return model

    def predict(self, features: pd.DataFrame) -> Prediction:
        Z = self.prepare.transform(features[list(MODEL_FEATURES)].to_numpy(dtype=float))
        knn = self.knn.predict(Z)
        distance, near = self.knn.kneighbors(Z)
        measured = self._log2_speedup[near]
        low = np.maximum(measured.min(axis=1) - LOCAL_MARGIN, self.y_range[0])
        high = np.minimum(measured.max(axis=1) + LOCAL_MARGIN, self.y_range[1])
        m5p = np.clip(self.m5p.predict(np.clip(Z, *self.z_range)), low, high)
        proba = self.sign.predict_proba(Z)
        classes = list(self.sign.classes_)
        p_faster = proba[:, classes.index(True)] if True in classes else np.zeros(len(Z))
        combined = (knn + m5p) / 2
        faster = combined > 0
        votes = np.stack([knn > 0, m5p > 0, p_faster > 0.5])
        agreement = (votes == faster).mean(axis=0)
        consistency = np.array([(self._measured_sign[rows] == f).mean() for rows, f in zip(near, faster)])
        spread = distance.mean(axis=1)
        familiarity = np.minimum(1.0, self.typical_distance / np.maximum(spread, 1e-12))
        return Prediction(
            speedup=np.exp2(combined), knn=np.exp2(knn), m5p=np.exp2(m5p), p_faster=p_faster,
            confidence=(agreement + consistency) / 2 * familiarity, familiarity=familiarity, neighbours=list(near),
        )
