"""GPU descriptor features joined to a dataset table by its ``gpu`` column."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError
from gpuperf.hardware.specs import get_gpu

GPU_COLUMN = "gpu"


def gpu_feature_table(names) -> pd.DataFrame:
    """One row per GPU name (as given) with its numeric descriptor features (``gpu_*``, NaN if unknown)
    and the clock it is taken to run at, ``gpu_clock_mhz`` and ``gpu_clock_hz``: its boost clock
    (:func:`gpuperf.evaluation.tables.with_base_clocks` sets the base clock instead, for data whose
    GPUs ran at it). Raises GpuperfError for a name with no
    descriptor."""
    rows = []
    for name in names:
        features = get_gpu(str(name)).as_features()
        features["gpu_clock_mhz"] = features["gpu_boost_clock_mhz"]
        features["gpu_clock_hz"] = features["gpu_clock_mhz"] * 1e6
        rows.append({GPU_COLUMN: name, **features})
    return pd.DataFrame(rows)


def with_gpu_features(frame: pd.DataFrame, where: str) -> pd.DataFrame:
    """``frame`` with every row's GPU descriptor features (see :func:`gpu_feature_table`).

    Rows keep their index and order; ``gpu_*`` columns already in ``frame`` are replaced by the
    descriptor's. An empty or unknown GPU name raises GpuperfError naming ``where`` (the file), the
    first row with it and the known GPUs with the nearest names.
    """
    if GPU_COLUMN not in frame.columns:
        raise GpuperfError(f"{where}: missing column {GPU_COLUMN} (needed for the GPU features)")
    names = frame[GPU_COLUMN]
    blank = names.isna() | names.astype(str).str.strip().eq("")
    if blank.any():
        raise GpuperfError(f"{where}: row {_row_number(blank)}: column {GPU_COLUMN} is empty")
    unique = list(dict.fromkeys(names.tolist()))
    for name in unique:
        try:
            get_gpu(str(name))
        except GpuperfError as error:
            raise GpuperfError(f"{where}: row {_row_number(names.eq(name))}: {error}") from None
    descriptors = gpu_feature_table(unique)
    kept = frame.drop(columns=[c for c in descriptors.columns if c != GPU_COLUMN and c in frame.columns])
    joined = kept.merge(descriptors, on=GPU_COLUMN, how="left", validate="many_to_one")
    joined.index = frame.index
    return joined


def _row_number(mask: pd.Series) -> int:
    """The 1-based row number of the first true entry: its integer index label + 1 (a table read
    from a file keeps its rows' 0-based labels through filtering), else its position + 1."""
    position = int(mask.to_numpy().nonzero()[0][0])
    label = mask.index[position]
    return int(label) + 1 if isinstance(label, (int, np.integer)) else position + 1
