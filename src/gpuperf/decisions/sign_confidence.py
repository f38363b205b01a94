"""Calibrated confidence: P(a predicted speedup's sign is right) from evidence about the prediction.

Evidence rows are ``[margin, consistency, familiarity or support, right]``: three numbers known at
prediction time and whether the sign turned out right on held-out pairs. A logistic regression maps
the three to the chance of being right; with only right (or only wrong) rows, the base rate.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.dummy import DummyClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler


def fit_sign_calibrator(evidence: np.ndarray) -> Any:
    """P(sign right) from the first three columns of ``evidence``; the fourth says whether it was."""
    right = evidence[:, 3].astype(bool)
    if right.all() or not right.any():
        return DummyClassifier(strategy="prior").fit(evidence[:, :3], right)
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(evidence[:, :3], right)


def p_sign_right(calibrator: Any, evidence: np.ndarray) -> np.ndarray:
    """The calibrated chance that each row's predicted sign is right."""
    proba = calibrator.predict_proba(evidence[:, :3])
    classes = list(calibrator.classes_)
    return proba[:, classes.index(True)] if True in classes else np.zeros(len(evidence))
