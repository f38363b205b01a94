"""Every outside source by format name, and writing a dataset table to CSV whole or not at all."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from gpuperf.datasets.kernel_tuner import read_kernel_tuner_cache
from gpuperf.datasets.ncu import import_ncu
from gpuperf.datasets.nvprof import import_nvprof
from gpuperf.datasets.schema import require_frame, with_whole_counts
from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.files import refuse_existing, write_csv, written_whole

IMPORTERS: dict[str, Callable[..., pd.DataFrame]] = {
    "kernel-tuner": read_kernel_tuner_cache,
    "nvprof": import_nvprof,
    "ncu": import_ncu,
}


def import_file(format_name: str, path: str | Path, **options) -> pd.DataFrame:
    """``path`` read by the importer of ``format_name`` (kernel-tuner, nvprof, ncu), in the dataset shape."""
    if format_name not in IMPORTERS:
        raise unknown_name_error("import format", format_name, IMPORTERS)
    return IMPORTERS[format_name](path, **options)


def write_dataset_csv(frame: pd.DataFrame, path: str | Path, replace: bool = False) -> Path:
    """Write ``frame`` as CSV (tuples of repeat times as JSON lists, counts as whole numbers: see
    :func:`~gpuperf.datasets.schema.with_whole_counts`) via a temporary file and a rename; an existing
    file at ``path`` is an error unless ``replace`` (a run rewriting its own table)."""
    path = Path(path)
    require_frame(frame, str(path))
    refuse_existing(path, "table", replace)
    frame = with_whole_counts(frame)
    table = frame  # copied only where a column of tuples is rewritten (a million rows: a gigabyte saved)
    for column in frame.columns:
        if frame[column].dtype != object:  # numbers, strings, categories: no tuple there
            continue
        if frame[column].map(lambda v: isinstance(v, (tuple, list))).any():
            table = frame.copy() if table is frame else table
            table[column] = frame[column].map(lambda v: json.dumps(list(v)) if isinstance(v, (tuple, list)) else v)
    if not path.parent.exists():
        raise GpuperfError(f"{path}: folder {path.parent} does not exist")
    if path.is_dir():
        raise GpuperfError(f"{path}: is a folder; give a file name for the CSV")
    with written_whole(path, new=not replace) as temporary:  # a file that appeared meanwhile is kept
        write_csv(table, temporary, path)
    return path

