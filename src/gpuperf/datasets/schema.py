"""The one dataset shape every source lands in: a long pandas table, one row per measured point.

Columns:
- keys: ``kernel`` (name), ``variant`` (``a=1,b=2`` label, empty for the base kernel), ``gpu``
  (canonical descriptor name where known, else the device name as given), ``device`` (the device
  string as recorded), ``source`` (where the row came from);
- the size parameters and tunable parameters, one column each, named as the kernel names them;
- feature columns (static features, profiler counters), named as documented;
- target: ``time_s`` (seconds; NaN where the point failed), with ``status`` (``ok`` or the failure
  kind) and, where known, ``time_s_min``, ``time_s_iqr``, ``repeats``.
"""

from __future__ import annotations

import pandas as pd

from gpuperf.errors import GpuperfError

KEY_COLUMNS = ("kernel", "variant", "gpu", "device", "source")
TARGET = "time_s"
STATUS = "status"
OK = "ok"


def check_dataset(frame: pd.DataFrame, where: str, require_time: bool = True) -> pd.DataFrame:
    """Validate a dataset table; errors name ``where`` (a file) and the row or column at fault.

    With ``require_time`` every row whose status is ok must have a positive, finite ``time_s``.
    """
    missing = [c for c in ("kernel", TARGET) if c not in frame.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)}")
    if require_time:
        ok = frame[STATUS].eq(OK) if STATUS in frame.columns else pd.Series(True, index=frame.index)
        times = pd.to_numeric(frame[TARGET], errors="coerce")
        bad = ok & ~(times > 0)
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise GpuperfError(
                f"{where}: row {row + 1}: time_s={frame[TARGET].iloc[row]!r} is not a positive number"
            )
    return frame
