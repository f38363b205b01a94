"""The same pair measured on other GPUs: plain transfer for the advisor.

A query is the same pair as a training pair when its kernel and change are equal and so are the
``name=value`` settings its configuration and input give together (compared as a set, whatever their
order and whichever of the two columns names a size). Where the
training pairs hold such a measurement, its speedup predicts the query's better than the models do:
the mean of their log2 speedups, the GPUs weighted by how alike they are to the query's
(``gpu_similarity.prior_weights``; equal weights for an unnamed GPU). Leaving each GPU out of the
bundled GPU pairs, this transfer had the sign right on 68.7 % of the 7,110 pairs measured on another
GPU, where the models had 64.9 % (``python benchmarks/bench_advise.py --split gpus --target gpu``); on
the H100's stencil pairs measured again on an H200, 89 % against 67 %
(``benchmarks/bench_advise_stencils.py``).

Its confidence is calibrated as the models' is (``sign_confidence``): a logistic regression from
[margin |log2 speedup|, the weighted share of the other GPUs' speedups on the predicted side, log2(1 +
number of GPUs)] to whether the sign was right, fitted on the training pairs measured on several
GPUs, each of their GPUs left out in turn. Training pairs measured on one GPU (or device) each give no
such check, and then nothing is transferred: the models predict (k-NN returns a training pair's own
speedup for a query at distance 0 anyway).

Where the query's own GPU measured the pair, that measurement is the answer, not a prediction: the mean
of its own log2 speedups alone, other GPUs' left aside (whatever their number or likeness, and with or
without a calibration), its confidence the share of its own measurements on that side (1 for one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import text_cells
from gpuperf.decisions.gpu_similarity import prior_weights
from gpuperf.decisions.pairs import number_text
from gpuperf.decisions.sign_confidence import fit_sign_calibrator, p_sign_right
from gpuperf.hardware.specs import canonical_gpu_name

KEY_COLUMNS = ("kernel", "change", "configuration", "input")


def _settings(configuration: object, input_: object) -> str:
    """The ``name=value`` parts of both texts, distinct and sorted: one spelling for one set of settings."""
    parts = set()
    for text in (configuration, input_):
        if isinstance(text, str):
            parts.update(part.strip() for part in text.split(",") if part.strip())
    return ",".join(sorted(parts))


def labelled(values: Mapping[str, Any]) -> str:
    """``name=value`` of each entry, as the pair tables write a configuration."""
    return ",".join(f"{name}={number_text(value)}" for name, value in values.items())


def pair_keys(frame: pd.DataFrame) -> pd.Series | None:
    """Each row's pair identity, or None when ``frame`` lacks one of ``KEY_COLUMNS``."""
    if any(column not in frame.columns for column in KEY_COLUMNS):
        return None
    kernel = text_cells(frame["kernel"])
    change = text_cells(frame["change"])
    settings = [_settings(c, i) for c, i in zip(frame["configuration"], frame["input"])]
    return kernel + "|" + change + "|" + pd.Series(settings, index=frame.index)


@dataclass
class Transferred:
    """Per query row: log2 speedup (NaN where the pair was measured nowhere), confidence, the GPUs, and
    whether they are the query's own GPU (its measurement, not a transfer)."""

    log2_speedup: np.ndarray
    confidence: np.ndarray
    gpus: list[tuple[str, ...]]
    here: np.ndarray | None = None


def _gpu_name(value: object) -> str | None:
    return None if value is None or pd.isna(value) else str(value)


def _same_gpu(measured: str, query: str | None) -> bool:
    """Whether a pair's GPU is the query's (by gpuperf's canonical names where it knows them)."""
    if query is None or not measured:
        return False
    return (canonical_gpu_name(measured) or measured) == (canonical_gpu_name(query) or query)


class PairTransfer:
    """Predicts a pair from the same pair's speedups measured on other GPUs."""

    def fit(self, pairs: pd.DataFrame) -> PairTransfer:
        keys = pair_keys(pairs)
        self.log2_speedup = np.log2(pairs["speedup"].to_numpy(dtype=float))
        self.gpus = [str(g) for g in pairs["gpu"]] if "gpu" in pairs.columns else [""] * len(pairs)
        self.index: dict[str, np.ndarray] = {}
        if keys is not None:
            self.index = {key: np.asarray(rows) for key, rows in keys.groupby(keys.to_numpy()).indices.items()}
        evidence = self._held_out_evidence()
        self.calibrator = fit_sign_calibrator(evidence) if len(evidence) else None
        return self

    def _transfer(self, rows: np.ndarray, gpu: str | None) -> tuple[float, np.ndarray]:
        """(weighted mean log2 speedup, evidence [margin, consistency, support]) of ``rows`` for ``gpu``."""
        measured = self.log2_speedup[rows]
        weights = prior_weights(gpu, [self.gpus[r] for r in rows])
        mean = float(weights @ measured)
        consistency = float(weights @ ((measured > 0) == (mean > 0)))
        return mean, np.array([abs(mean), consistency, np.log2(1 + len(rows))])

    def _held_out_evidence(self) -> np.ndarray:
        """Evidence rows (with whether the sign was right) of each pair measured on several GPUs, its
        own GPU's measurements left out."""
        rows = []
        for members in self.index.values():
            gpus = np.array([self.gpus[r] for r in members])
            if len(set(gpus)) < 2:
                continue
            for position, row in enumerate(members):
                others = members[gpus != gpus[position]]
                mean, evidence = self._transfer(others, self.gpus[row])
                rows.append(np.append(evidence, (mean > 0) == (self.log2_speedup[row] > 0)))
        return np.array(rows) if rows else np.zeros((0, 4))

    def predict(self, queries: pd.DataFrame) -> Transferred:
        count = len(queries)
        log2_speedup, confidence = np.full(count, np.nan), np.full(count, np.nan)
        gpus: list[tuple[str, ...]] = [()] * count
        here = np.zeros(count, dtype=bool)
        keys = pair_keys(queries)
        if keys is None:
            return Transferred(log2_speedup, confidence, gpus, here)
        query_gpus = queries["gpu"].to_numpy() if "gpu" in queries.columns else [None] * count
        evidence = np.zeros((count, 3))
        for position, (key, gpu) in enumerate(zip(keys, query_gpus)):
            rows = self.index.get(key)
            if rows is None:
                continue
            own = rows[[_same_gpu(self.gpus[r], _gpu_name(gpu)) for r in rows]]
            if len(own):  # measured on this very GPU: its measurement, not a prediction
                measured = self.log2_speedup[own]
                log2_speedup[position] = measured.mean()
                confidence[position] = float(np.mean((measured > 0) == (measured.mean() > 0)))
                here[position], rows = True, own
            elif self.calibrator is None:
                continue
            else:
                log2_speedup[position], evidence[position] = self._transfer(rows, _gpu_name(gpu))
            gpus[position] = tuple(dict.fromkeys(self.gpus[r] for r in rows))
        transferred = ~np.isnan(log2_speedup) & ~here
        if transferred.any():
            confidence[transferred] = p_sign_right(self.calibrator, evidence[transferred])
        return Transferred(log2_speedup, confidence, gpus, here)
