"""Recompute the static feature columns of bundled measurement tables with this checkout's gpuperf.

A table exported from a measurement store carries the static features of each row's kernel as
gpuperf computed them then. When a feature's definition is corrected, the rows of the tables that
hold it are recomputed here so that models trained on them and kernels analysed now speak of the
same quantity. Only the static feature columns that ``extract_features`` gives without a GPU are
touched, and only the cells whose value changes (beyond 1e-12 relative): times, counters and every
other column keep their text byte for byte. Each table's provenance file records the refresh.

    python benchmarks/refresh_stored_features.py                 # report what would change
    python benchmarks/refresh_stored_features.py --write --why "..."
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import math
import subprocess
import sys
from datetime import date
from pathlib import Path

from gpuperf.datasets.provenance import provenance_path, write_provenance
from gpuperf.errors import GpuperfError

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def stored_tables() -> list[Path]:
    """Bundled tables exported by gpuperf with static feature columns and each row's kernel and variant."""
    found = []
    for path in sorted(DATA.glob("*.csv.gz")):
        with gzip.open(path, "rt", newline="") as handle:
            header = next(csv.reader(handle))
        if {"kernel", "variant", "sectors_per_warp_access"} <= set(header):
            found.append(path)
    return found


def _differs(old: str, new: float) -> bool:
    try:
        value = float(old) if old else math.nan  # an empty cell is how pandas writes NaN
    except ValueError:
        return True
    if math.isnan(value) and math.isnan(new):
        return False
    return not math.isclose(value, new, rel_tol=1e-12, abs_tol=1e-12)


def _text(value: float) -> str:
    return "" if math.isnan(value) else repr(float(value))


def refresh(path: Path) -> tuple[str, dict[str, int], int]:
    """(the table's text with changed cells replaced, changed cells per column, rows changed)."""
    from gpuperf.features import extract_features
    from gpuperf.kernels.catalog import get_kernel

    with gzip.open(path, "rt", newline="") as handle:
        text = handle.read()
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    column = {name: i for i, name in enumerate(header)}
    cache: dict[tuple, dict[str, float]] = {}
    changed: dict[str, int] = {}
    rows_changed = 0
    for line, row in enumerate(body, start=2):
        where = f"{path.name}, line {line}"
        if len(row) != len(header):
            raise GpuperfError(f"{where}: {len(row)} fields where the header names {len(header)}")
        spec = f"{row[column['kernel']]}[{row[column['variant']]}]" if row[column["variant"]] else row[column["kernel"]]
        try:
            kernel = get_kernel(spec)
            missing = [name for name in kernel.params if name not in column or not row[column[name]]]
            if missing:
                raise GpuperfError(f"no value for size {', '.join(missing)}")
            sizes = {name: int(float(row[column[name]])) for name in kernel.params}
            key = (spec, tuple(sorted(sizes.items())))
            if key not in cache:
                cache[key] = extract_features(kernel, sizes)
        except (GpuperfError, ValueError) as exc:
            raise GpuperfError(f"{where} ({spec}): {exc}") from exc
        touched = False
        for name, value in cache[key].items():
            if name in column and _differs(row[column[name]], value):
                row[column[name]] = _text(value)
                changed[name] = changed.get(name, 0) + 1
                touched = True
        rows_changed += touched
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue(), changed, rows_changed


def write_refreshed(path: Path, text: str, refresh_record: dict) -> None:
    """Rewrite ``path`` as ``text`` and add ``refresh_record`` to its provenance's ``features_refreshed``,
    with the rewritten file's rows and sha256."""
    with gzip.open(path, "wt", newline="") as handle:
        handle.write(text)
    record = json.loads(provenance_path(path).read_text())
    record.setdefault("features_refreshed", []).append(refresh_record)
    write_provenance(path, record)


def main() -> None:

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the tables and note it in their provenance")
    parser.add_argument("--why", default="", help="what changed in gpuperf (recorded in the provenance)")
    args = parser.parse_args()
    if args.write and not args.why:
        parser.error("--write needs --why")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "src"], cwd=ROOT, capture_output=True, text=True).stdout
    if args.write and dirty.strip():
        parser.error("src/ has uncommitted changes: commit them first, so that the provenance names the code")
    for path in stored_tables():
        provenance = provenance_path(path)
        if args.write and not provenance.exists():
            parser.error(f"{path.name} has no {provenance.name} to record the refresh in")
        text, changed, rows = refresh(path)
        print(f"{path.name}: {rows} rows changed; " + (", ".join(f"{k} {v}" for k, v in sorted(changed.items()))
                                                      or "nothing"))
        if not args.write or not changed:
            continue
        write_refreshed(path, text, {
            "date": date.today().isoformat(), "gpuperf_commit": commit, "why": args.why,
            "cells_changed": changed, "rows_changed": rows,
            "command": "python benchmarks/refresh_stored_features.py --write"})


if __name__ == "__main__":
    try:
        main()
    except GpuperfError as exc:
        sys.exit(f"refresh_stored_features: {exc}")
