"""Named-column access for the analytical models, which read their inputs by column name."""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

from gpuperf.datasets.schema import row_location
from gpuperf.errors import GpuperfError


def real_number(value: object) -> bool:
    """Whether ``value`` is a real number (a NumPy one too), not True or False, which Python counts as 1 and 0."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def whole_number(value: object) -> bool:
    """Whether ``value`` is a whole number (a NumPy integer too), not True or False."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def named_columns(X, names: dict[str, str | None], model: str) -> dict[str, np.ndarray | None]:
    """The float values of each named column of DataFrame ``X`` (None where the name is None).

    Raises GpuperfError naming every missing column, or the first row whose value is there but
    not a number; a missing value reads as NaN.
    """
    if not isinstance(X, pd.DataFrame):
        raise GpuperfError(f"{model}: expects a pandas DataFrame with named columns, got {type(X).__name__}")
    wanted = {role: column for role, column in names.items() if column is not None}
    # names as text: a DataFrame's columns (and so the names given) may be numbers
    missing = sorted({str(column) for column in wanted.values() if column not in X.columns})
    if missing:
        raise GpuperfError(f"{model}: missing column(s) {', '.join(missing)}")
    repeated = sorted({str(column) for column in wanted.values() if (X.columns == column).sum() > 1})
    if repeated:
        raise GpuperfError(f"{model}: column(s) {', '.join(repeated)} appear more than once; which one to read is unclear")
    values: dict[str, np.ndarray | None] = {role: None for role in names}
    for role, column in wanted.items():
        numbers = pd.to_numeric(X[column], errors="coerce")
        not_numbers = numbers.isna().to_numpy() & X[column].notna().to_numpy()
        if not_numbers.any():
            row = int(np.flatnonzero(not_numbers)[0])
            raise GpuperfError(f"{model}: {row_location(X, row)}: {column}={X[column].iloc[row]!r} is not a number")
        values[role] = numbers.to_numpy(dtype=float)
    return values


def fractions(values: np.ndarray | None, X: pd.DataFrame, column: str | None, model: str) -> None:
    """An error naming the first row where ``column`` (a hit rate) is not a fraction in [0, 1]: a
    profiler's percentage (nvprof's hit rates) must be divided by 100 first."""
    if values is None:
        return
    outside = np.flatnonzero(~np.isnan(values) & ((values < 0) | (values > 1)))
    if len(outside):
        row = int(outside[0])
        raise GpuperfError(f"{model}: {row_location(X, row)}: {column}={float(values[row])} is not a fraction in [0, 1] "
                           f"({len(outside)} such rows; a percentage must be divided by 100)")


def measured_times(y, rows: int, model: str) -> np.ndarray:
    """:func:`one_time_per_row`, where a time that is not a positive, finite number is an error naming
    its row."""
    times = one_time_per_row(y, rows, model)
    bad = np.flatnonzero(~(np.isfinite(times) & (times > 0)))
    if len(bad):
        raise GpuperfError(f"{model}: measured times must be positive, finite numbers; row {bad[0] + 1} of the "
                           f"fitted rows holds {times[bad[0]]} ({len(bad)} such rows)")
    return times


def one_time_per_row(y, rows: int, model: str) -> np.ndarray:
    """``y`` as one measured time per row: a 1-D array or Series, or a one-column table; any
    other shape, or another length than ``rows``, is an error naming ``model``."""
    if y is None:
        raise GpuperfError(f"{model}: needs one measured time per row ({rows} rows), got none")
    times = np.asarray(y, dtype=float)
    if times.ndim == 2 and times.shape[1] == 1:
        times = times.ravel()
    if times.ndim != 1:
        raise GpuperfError(f"{model}: needs one measured time per row ({rows} rows), got shape "
                           f"{times.shape}")
    if len(times) != rows:
        raise GpuperfError(f"{model}: {rows} rows but {len(times)} measured times")
    return times


def defined_score(model, X, y, sample_weight, name: str) -> float:  # noqa: ANN001 - an analytical model
    """R^2 of ``model``'s predictions of ``X`` against the times ``y``; an error where a row has no
    defined prediction (NaN), which scikit-learn's metrics would refuse as 'Input contains NaN'."""
    from sklearn.metrics import r2_score

    predicted = model.predict(X)
    undefined = np.isnan(predicted)
    if undefined.any():
        raise GpuperfError(f"{name}: {int(undefined.sum())} of {len(predicted)} rows have no predicted time (their "
                           f"inputs give none, the first row {int(np.argmax(undefined)) + 1}; see undefined_rows); "
                           "score the rows that have one")
    return float(r2_score(measured_times(y, len(X), name), predicted, sample_weight=sample_weight))


def check_positive(value: object, attribute: str, name: str) -> None:
    """An error where the fitted ``attribute`` is not a positive, finite number (a file edited by hand)."""
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value) and value > 0):
        raise GpuperfError(f"{name}: {attribute} is {value!r}, not a positive number")
