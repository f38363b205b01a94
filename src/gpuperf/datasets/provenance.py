"""A measured table's ``.provenance.json``: where it lies beside the table, and the fields that tie it to
the table's bytes (``file``, ``rows``, ``sha256``), so that a provenance file is known to describe the
table beside it and not an earlier one.

``write_provenance(table, record)`` is how every writer of gpuperf's measured tables (the campaign and
GPU-session exporters, ``benchmarks/refresh_stored_features.py``) writes one; it is called after the table
is written, each time the table is.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import zlib
from pathlib import Path
from typing import Any

from gpuperf.errors import GpuperfError
from gpuperf.files import written_whole

SUFFIX = ".provenance.json"


def provenance_path(table: str | Path) -> Path:
    """The provenance file beside ``table`` (``x.csv.gz`` and ``x.csv`` both have ``x.provenance.json``)."""
    table = Path(table)
    return table.with_name(table.name.removesuffix(".gz").removesuffix(".csv") + SUFFIX)


def table_identity(table: str | Path) -> dict[str, Any]:
    """``file`` (the table's name), ``rows`` (its CSV records after the header) and ``sha256`` (of the
    file's bytes) of a ``.csv`` or ``.csv.gz`` table, read once."""
    table = Path(table)
    try:
        data = table.read_bytes()
        text = (gzip.decompress(data) if table.name.endswith(".gz") else data).decode("utf-8")
        records = sum(1 for record in csv.reader(io.StringIO(text, newline="")) if record)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, csv.Error) as exc:
        raise GpuperfError(f"{table}: cannot read the table to record its rows and sha256 ({exc})") from exc
    return {"file": table.name, "rows": max(records - 1, 0), "sha256": hashlib.sha256(data).hexdigest()}


def write_provenance(table: str | Path, record: dict[str, Any]) -> Path:
    """Write ``record`` with ``table``'s identity (``file``, ``rows``, ``sha256``) as the provenance file
    beside ``table``; returns that file's path."""
    path = provenance_path(table)
    text = json.dumps({**record, **table_identity(table)}, indent=2, default=str, ensure_ascii=False)
    with written_whole(path) as temporary:  # a run stopped while rewriting it (each trial) keeps the last one whole
        temporary.write_text(text + "\n", encoding="utf-8")
    return path
