"""Named-column access for the analytical models, which read their inputs by column name."""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError


def named_columns(X, names: dict[str, str | None], model: str) -> dict[str, np.ndarray | None]:
    """The float values of each named column of DataFrame ``X`` (None where the name is None).

    Raises GpuperfError naming every missing column.
    """
    if not isinstance(X, pd.DataFrame):
        raise GpuperfError(f"{model}: expects a pandas DataFrame with named columns, got {type(X).__name__}")
    wanted = {role: column for role, column in names.items() if column is not None}
    missing = sorted({column for column in wanted.values() if column not in X.columns})
    if missing:
        raise GpuperfError(f"{model}: missing column(s) {', '.join(missing)}")
    values: dict[str, np.ndarray | None] = {role: None for role in names}
    for role, column in wanted.items():
        values[role] = pd.to_numeric(X[column], errors="coerce").to_numpy(dtype=float)
    return values
