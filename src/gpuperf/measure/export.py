"""The store as a dataset table (CSV or Parquet), in gpuperf's dataset shape.

Columns: the keys ``kernel``, ``variant``, ``gpu``, ``device``, ``source``; the size parameters and the
variant's tunable parameters, one column each; the kernel's static features
(``gpuperf.features.extract_features``, with registers and occupancy where the GPU is known);
``time_s``, ``time_s_min``, ``time_s_iqr``, ``repeats``, ``status``; then the campaign, the store's key
and source of the kernel (``kernel_key``; ``kernel_spec``, a user's ``file.py:function``), launch
geometry, verification, compile time and error text; on request an interleaved point's per-cycle times
(``cycle_times_s``) and the identifier of the cycles they were taken in (``cycle_group``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.files import refuse_existing, whole_numbers, with_whole_numbers, write_csv, written_whole
from gpuperf.kernels.kernel import Kernel
from gpuperf.measure.store import CYCLE_GROUP, OK, Store, geometry_text

KEY_COLUMNS = ("kernel", "variant", "gpu", "device", "source")
CYCLE_TIMES = "cycle_times_s"  # an interleaved point's per-cycle round medians, ';'-separated
TIMING_COLUMNS = ("time_s", "time_s_min", "time_s_iqr", "repeats", "status")
# kernel_spec: where the kernel came from, as the campaign named it (a catalog name or variant, or a user's
# file.py:function, its file made absolute): ``kernel`` is only its name, which a user's kernel may share.
DETAIL_COLUMNS = ("campaign", "kernel_key", "kernel_spec", "geometry", "retries", "stable", "verified",
                  "max_rel_error", "compile_s", "measured_at", "error")
# How each point was taken, from its stored provenance (export column -> provenance key): the timer
# tells a gated CUDA time from a span's upper bound; the rest, the machine, software and inputs' seed.
PROVENANCE_COLUMNS = {"timer": "timer", "device_name": "device_name", "driver_version": "driver_version",
                      "host": "host", "gpuperf_version": "gpuperf", "input_seed": "seed"}
FORMATS = ("csv", "parquet")

FeatureFunction = Callable[..., dict[str, Any]]  # extract_features(kernel, sizes, gpu=None)


def _feature_function() -> FeatureFunction:
    from gpuperf.features import extract_features  # imported when asked for: loopy's statistics load slowly

    return extract_features


def known_gpu(provenance: dict[str, Any] | None, device: str) -> tuple[str, str | None]:
    """(name for the ``gpu`` column, canonical GPU name or None): the recorded device name is kept
    where gpuperf's GPU descriptors do not know it."""
    from gpuperf.hardware.specs import canonical_gpu_name

    name = (provenance or {}).get("device_name") or device
    canonical = canonical_gpu_name(name)
    return canonical or name, canonical


class _Features:
    """Static features per (kernel spec, sizes), rebuilding each kernel once; failures leave NaN."""

    def __init__(self, extract: FeatureFunction) -> None:
        self.extract = extract
        self.kernels: dict[str, Kernel | None] = {}
        self.failed: set[str] = set()
        self.points: dict[tuple, dict[str, Any]] = {}  # a point measured again has the same features

    def __call__(self, spec: str, sizes: dict[str, int], gpu: str | None, geometry: str) -> dict[str, Any]:
        key = (spec, tuple(sorted(sizes.items())), gpu, geometry)
        if key not in self.points:
            self.points[key] = self._features(spec, sizes, gpu, geometry)
        return dict(self.points[key])

    def _features(self, spec: str, sizes: dict[str, int], gpu: str | None, geometry: str) -> dict[str, Any]:
        from gpuperf.kernels.catalog import get_kernel

        if spec not in self.kernels:
            try:
                self.kernels[spec] = get_kernel(spec)
            except Exception as exc:  # noqa: BLE001 - e.g. a user's kernel file that has moved
                self._warn(spec, exc)
                self.kernels[spec] = None
        kernel = self.kernels[spec]
        if kernel is None:
            return {}
        try:
            rebuilt = geometry_text(*kernel.launch(sizes))
        except Exception as exc:  # noqa: BLE001 - sizes the kernel as it is now refuses
            self._warn(spec, exc)
            return {}
        if rebuilt != geometry:  # the kernel's file changed since: its features would describe other code
            self._warn(spec, GpuperfError(f"it launches {rebuilt} now, where {geometry} was measured (its file "
                                          "changed since?)"))
            return {}
        if gpu is not None:
            try:
                return dict(self.extract(kernel, sizes, gpu=gpu))
            except Exception as exc:  # noqa: BLE001 - e.g. a GPU too old for NVRTC: keep the static part
                self._warn(f"{spec} on {gpu}", exc)
        try:
            return dict(self.extract(kernel, sizes))
        except Exception as exc:  # noqa: BLE001 - a kernel loopy cannot count has no features
            self._warn(spec, exc)
            return {}

    def _warn(self, what: str, exc: Exception) -> None:
        if what not in self.failed:
            self.failed.add(what)
            shown = str(exc) if isinstance(exc, GpuperfError) else f"{type(exc).__name__}: {exc}"
            warnings.warn(GpuperfNote(f"features incomplete for {what}: {shown}"), stacklevel=3)


def store_table(store_path: str | Path, campaign: str | None = None, features: bool = True,
                cycle_times: bool = False, progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """Every stored point as one row of a dataset table; with ``cycle_times``, a ``cycle_times_s``
    column holds an interleaved point's per-cycle round medians ';'-separated, in cycle order (empty
    for a failed point, and for a point timed on its own, whose launches pair with no other point's),
    and ``cycle_group`` the identifier of the cycles it was timed in (empty where the store has none).
    ``progress(done, total)`` is called as points are read."""
    with Store(store_path, create=False) as store:
        rows = store.rows(campaign, samples=cycle_times)
        if campaign is not None and campaign not in store.campaigns():
            raise GpuperfError(f"store '{store_path}' has no campaign '{campaign}'; it has: "
                               f"{', '.join(store.campaigns()) or 'none'}")
    extract = _feature_function() if features else None
    feature_of = _Features(extract) if extract else None
    records, size_names, param_names, feature_names = [], {}, {}, {}
    for done, row in enumerate(rows, 1):
        if progress is not None and (done % 200 == 0 or done == len(rows)):
            progress(done, len(rows))
        gpu, canonical = known_gpu(row["provenance"], row["device"])
        record: dict[str, Any] = {
            "kernel": row["kernel_name"], "variant": row["variant"], "gpu": gpu, "device": row["device"],
            "source": f"gpuperf:{row['campaign']}",
        }
        for name, value in row["sizes"].items():
            size_names.setdefault(name, None)
            record[name] = value
        for name, value in row["variant_params"].items():
            param_names.setdefault(name, None)
            record.setdefault(name, value)
        if feature_of is not None:
            for name, value in feature_of(row["kernel_spec"], row["sizes"], canonical, row["geometry"]).items():
                if name not in record:
                    feature_names.setdefault(name, None)
                    record[name] = value
        record.update({c: row[c] for c in TIMING_COLUMNS})
        record.update({"kernel_key": row["kernel"], **{c: row[c] for c in DETAIL_COLUMNS if c != "kernel_key"}})
        given = row["provenance"] or {}
        record.update({column: given.get(key) for column, key in PROVENANCE_COLUMNS.items()})
        if cycle_times:
            record.update(_cycles(row))
        records.append(record)
    columns = [*KEY_COLUMNS, *size_names, *(n for n in param_names if n not in size_names),
               *(n for n in feature_names if n not in size_names and n not in param_names),
               *TIMING_COLUMNS, *DETAIL_COLUMNS, *PROVENANCE_COLUMNS,
               *([CYCLE_TIMES, CYCLE_GROUP] if cycle_times else [])]
    frame = pd.DataFrame.from_records(records, columns=columns)
    if feature_names:
        from gpuperf.features.table import with_zero_counts

        frame = with_zero_counts(frame, list(feature_names))
    frame["time_s"] = pd.to_numeric(frame["time_s"], errors="coerce").astype(float)
    for column in [*size_names, *param_names, "repeats", "retries", "input_seed"]:
        frame[column] = whole_numbers(frame[column])
    # outputs compared and found different: not verified (the store leaves a failed point's flag empty)
    frame["verified"] = frame["verified"].astype(object).where(frame["status"] != "verify_failed", False)
    return frame


def _cycles(row: dict[str, Any]) -> dict[str, str]:
    """A stored point's ``cycle_times_s`` and ``cycle_group`` (both empty unless timed interleaved)."""
    origin = row["provenance"] or {}
    if row["status"] != OK or (origin.get("timing") or {}).get("cycles", 1) <= 1:
        return {CYCLE_TIMES: "", CYCLE_GROUP: ""}
    return {CYCLE_TIMES: ";".join(repr(float(t)) for t in row["samples"] or ()),
            CYCLE_GROUP: str(origin.get(CYCLE_GROUP) or "")}


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns that mix numbers and text (e.g. a parameter that is sometimes a name) become text."""
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            kinds = {type(v) for v in frame[column] if v is not None and not (isinstance(v, float) and np.isnan(v))}
            if len(kinds) > 1:
                frame[column] = frame[column].map(lambda v: None if v is None else str(v))
    return frame


def _format_of(path: Path) -> str | None:
    """The table format a file name promises (``.csv``, ``.csv.gz``; ``.parquet``, ``.pq``), if any."""
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return "csv"
    return "parquet" if name.endswith((".parquet", ".pq")) else None


def export_store(store_path: str | Path, out: str | Path, fmt: str | None = None, campaign: str | None = None,
                 features: bool = True, cycle_times: bool = False,
                 progress: Callable[[int, int], None] | None = None, replace: bool = False) -> pd.DataFrame:
    """Write the store's table to ``out`` as CSV or Parquet (``fmt`` defaults to the file's suffix), a
    new file unless ``replace`` (never the store itself); ``features``, ``cycle_times`` and ``progress``
    as in :func:`store_table`."""
    out = Path(out)
    if out.exists() and Path(store_path).exists() and out.samefile(store_path):
        raise GpuperfError(f"--out {out}: the store itself; the table goes to a file of its own")
    refuse_existing(out, "table", replace)
    named = _format_of(out)
    if fmt is None and named is None:
        raise GpuperfError(f"--out {out}: its name ends in neither .csv (.csv.gz) nor .parquet; name the file so, "
                           "or give --format csv or --format parquet")
    fmt = (fmt or named).lower()
    if fmt not in FORMATS:
        raise GpuperfError(f"--format: unknown export format '{fmt}'; use csv or parquet")
    if named is not None and named != fmt:
        raise GpuperfError(f"--out {out}: a {named} name for a {fmt} table; name it to match --format")
    absent = not out.exists()  # a file that appears there meanwhile (another run's, a user's) is kept
    frame = store_table(store_path, campaign, features, cycle_times, progress)
    _note_a_run_measuring(store_path, len(frame))
    out.parent.mkdir(parents=True, exist_ok=True)
    from gpuperf.features.table import FEATURE_COUNTS

    written = with_whole_numbers(frame, [c for c in frame.columns if c in FEATURE_COUNTS])  # 256, not 256.0
    with written_whole(out, new=absent) as temporary:  # a failed or killed export leaves no partial table
        if fmt == "csv":
            write_csv(written, temporary, out)
        else:
            _parquet_safe(written).to_parquet(temporary, index=False)
    return frame


def _note_a_run_measuring(store_path: str | Path, points: int) -> None:
    """A note where a campaign run is measuring into the store now: the table lacks the points to come."""
    from gpuperf.files import lock_holder

    holder = lock_holder(store_path)
    if holder is not None:
        warnings.warn(GpuperfNote(f"a campaign run (process {holder}) is still measuring into {store_path}: the "
                                  f"table holds the {points} point(s) stored so far; export again when it ends"),
                      stacklevel=3)


def campaign_provenance(store_path: str | Path, campaign: str, environment: tuple[str, ...] = ()) -> dict[str, Any]:
    """Where a campaign's points come from: device, timing settings (the first ok point's ``provenance``
    names the measuring host), the measurement dates, the gpuperf version and processor architecture
    (``x86_64``) exporting them, and the values of the ``environment`` variables set now. Records written
    by earlier versions (the bundled ``data/*.provenance.json``) hold that architecture under ``host``."""
    import datetime
    import json
    import os
    import platform

    import gpuperf

    with Store(store_path, create=False) as store:
        rows = [r for r in store.rows(campaign) if r["status"] == "ok"]
    first = dict(rows[0]["provenance"]) if rows else {}
    for own in ("timestamp", CYCLE_GROUP):  # the first point's own, not the campaign's
        first.pop(own, None)
    timings = {json.dumps(r["provenance"].get("timing"), sort_keys=True) for r in rows}
    dates = sorted(r["measured_at"] for r in rows)
    return {
        "device": first.get("device_name"),
        "provenance": first,
        "timing_settings": [json.loads(t) for t in sorted(timings)],
        "measured_from": dates[0] if dates else None,
        "measured_to": dates[-1] if dates else None,
        "written": datetime.date.today().isoformat(),
        "gpuperf_version": gpuperf.__version__,
        "architecture": platform.machine(),  # not the host: the points' provenance names that
        "environment": {k: os.environ[k] for k in environment if k in os.environ},
        "ok_points": len(rows),
    }
