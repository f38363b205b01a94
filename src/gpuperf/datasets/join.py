"""GPU descriptor features joined to a dataset table by its ``gpu`` column."""

from __future__ import annotations

import functools

import pandas as pd

from gpuperf.datasets.schema import row_location
from gpuperf.errors import GpuperfError
from gpuperf.hardware.specs import NUMERIC_FIELDS, get_gpu

GPU_COLUMN = "gpu"
# The gpu_* columns a descriptor join adds beyond the descriptor's numeric fields: GpuSpec.as_features'
# derived ones, gpu_feature_table's clock and join_gpu_descriptors' architecture (a name).
DERIVED_DESCRIPTOR_COLUMNS = ("gpu_compute_capability", "gpu_cores", "gpu_flops_per_byte", "gpu_clock_mhz",
                              "gpu_clock_hz", "gpu_architecture")


@functools.cache  # asked once per column a table offers as a feature
def descriptor_columns() -> frozenset[str]:
    """The ``gpu_*`` columns a GPU descriptor join produces (:func:`gpu_feature_table`,
    :func:`gpuperf.evaluation.tables.join_gpu_descriptors`); other ``gpu_*`` names are a table's own."""
    return frozenset(f"gpu_{name}" for name in NUMERIC_FIELDS) | frozenset(DERIVED_DESCRIPTOR_COLUMNS)


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
        raise GpuperfError(f"{where}: {row_location(frame, _first(blank))}: column {GPU_COLUMN} is empty")
    unique = list(dict.fromkeys(names.tolist()))
    for name in unique:
        try:
            get_gpu(str(name))
        except GpuperfError as error:
            raise GpuperfError(f"{where}: {row_location(frame, _first(names.eq(name)))}: {error}") from None
    descriptors = gpu_feature_table(unique)
    kept = frame.drop(columns=[c for c in descriptors.columns if c != GPU_COLUMN and c in frame.columns])
    joined = kept.merge(descriptors, on=GPU_COLUMN, how="left", validate="many_to_one")
    joined.index = frame.index
    joined.attrs = dict(frame.attrs)  # merge drops them; errors still number the rows as the file does
    return joined


def _first(mask: pd.Series) -> int:
    """The position of the first true entry."""
    return int(mask.to_numpy().nonzero()[0][0])
