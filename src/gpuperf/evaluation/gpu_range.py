"""Whether a GPU to price lies among the GPUs a model with GPU descriptors was fitted on.

A learned model sees a GPU only through its descriptor columns (``gpu_*``). Priced for a GPU of
another vendor, or one with a descriptor outside the training GPUs' range, it extrapolates: a tree
model gives it the times of the nearest training GPU (an H100 priced by a model of Kepler and
Maxwell GPUs gets a Titan X's times). :func:`unlike_training_gpus` says which GPU and why, for a
note; it never fails on a GPU gpuperf cannot describe (it leaves that one out).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pandas as pd

from gpuperf.datasets.join import gpu_feature_table
from gpuperf.errors import GpuperfError
from gpuperf.evaluation.tables import with_base_clocks
from gpuperf.hardware.specs import get_gpu


PLATEAU_MODELS = ("knn", "rf", "gbt")  # a GPU beyond the range gets the nearest training GPU's times


def unlike_training_gpus(trained_on: Sequence[str], features: Sequence[str], asked: Sequence[str],
                         base_clock: bool = False, model: str | None = None) -> list[tuple[str, str]]:
    """Every GPU of ``asked`` (not among ``trained_on``) unlike every training GPU, with why: of
    another vendor, or with descriptors of ``features`` (``gpu_*`` columns) outside the training
    GPUs' range (their base clocks with ``base_clock``, as the model was fitted). Empty where each
    lies within, or fewer than two training GPUs are described. ``model`` (a ``gpuperf fit
    --model`` name) says how its predictions behave there."""
    known = _described(trained_on)
    if len(known) < 2:
        return []
    table = _descriptors(known, base_clock)
    vendors = {get_gpu(name).vendor for name in known}
    unlike = []
    for name in _described([gpu for gpu in asked if gpu not in set(trained_on)]):
        vendor = get_gpu(name).vendor
        if vendor not in vendors:
            unlike.append((name, f"the model was fitted on {', '.join(sorted(vendors))} GPUs only ({len(known)}: "
                                 f"{', '.join(known)}); its predictions for an {vendor} GPU are an extrapolation"))
            continue
        values = _descriptors([name], base_clock).iloc[0]
        outside = []
        for feature in (f for f in features if f in table.columns):
            low, high, value = table[feature].min(), table[feature].max(), values[feature]
            if value < low or value > high:
                outside.append(f"its {feature} {value:.4g} lies {'above' if value > high else 'below'} the "
                               f"{low:.4g} to {high:.4g}")
        if outside:
            unlike.append((name, f"{'; '.join(outside)} of the {len(known)} GPUs the model was fitted on; its "
                                 f"predictions there are an extrapolation{_behaviour(model)}"))
    return unlike


def _behaviour(model: str | None) -> str:
    if model in PLATEAU_MODELS:
        return " (a tree or k-NN model's stay at the nearest training GPU's)"
    if model is None:
        return ""
    return " (a linear, SVR or model-tree model carries its slopes beyond the range, to any size)"


def _described(names: Sequence[str]) -> list[str]:
    """The canonical names of those of ``names`` gpuperf describes, sorted."""
    found = set()
    for name in names:
        try:
            found.add(get_gpu(str(name)).name)
        except GpuperfError:
            continue
    return sorted(found)


def _descriptors(names: Sequence[str], base_clock: bool) -> pd.DataFrame:
    table = gpu_feature_table(names)
    if base_clock:
        with warnings.catch_warnings():  # a GPU without a base clock: its boost clock, as at fit time
            warnings.simplefilter("ignore")
            table = with_base_clocks(table)
    return table
