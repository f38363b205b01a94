"""Inputs gpuperf did not write (a table, a model, a name from someone else): a bounded cost, one clear
error, and no code run that the docs do not say runs."""

from __future__ import annotations

import time

import pytest

from gpuperf.datasets.tables import read_csv, repeated_names
from gpuperf.errors import GpuperfError


def test_a_wide_headers_repeated_columns_are_found_in_linear_time(tmp_path):
    """A CSV header of 200,000 columns (a 3 MB file) is checked for repeated names in well under a second:
    counting each name over the whole header took hours."""
    names = [f"c{i}" for i in range(200_000)] + ["c7", "c3", "c7"]
    start = time.perf_counter()
    assert repeated_names(names) == ["c3", "c7"]
    assert time.perf_counter() - start < 5.0
    table = tmp_path / "twice.csv"
    table.write_text("kernel,x,time_s,x\nk,1,0.5,2\n")
    with pytest.raises(GpuperfError, match="the header names column x more than once"):
        read_csv(table)
