"""Static features of small kernels against counts worked out by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpuperf.features.table import extract_features
from gpuperf.kernels import get_kernel

KERNELS = Path(__file__).parent / "data" / "feature_kernels.py"


def features(name: str) -> dict:
    return extract_features(get_kernel(f"{KERNELS}:{name}"), {"n": 4096})


def test_an_index_read_in_a_stores_subscript_is_a_load():
    counted = features("scatter")
    assert counted["global_loads_per_thread"] == 2 and counted["global_stores_per_thread"] == 1


def test_every_work_item_that_reaches_a_guard_evaluates_it():
    assert features("partial_lane")["ifs_per_thread"] == 1
    inside = features("partial_lane_in_loop")
    assert inside["ifs_per_thread"] == 8 and inside["loop_iterations_per_thread"] == 8


@pytest.mark.parametrize("seed", ["0", "2"])
def test_loop_iterations_do_not_depend_on_the_hash_seed(seed):
    code = ("import json, sys; from gpuperf.features.table import extract_features; from gpuperf.kernels import get_kernel;"
            f"print(json.dumps(extract_features(get_kernel(sys.argv[1] + ':partial_lane_in_loop'), {{'n': 4096}})"
            "['loop_iterations_per_thread']))")
    out = subprocess.run([sys.executable, "-c", code, str(KERNELS)], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": seed})
    assert json.loads(out.stdout) == 8


def test_the_innermost_loop_is_found_by_nesting_not_by_name():
    from gpuperf.models.properties import kernel_properties

    lines = [kernel_properties(get_kernel(f"{KERNELS}:{name}"), {"n": 256}, ["loop_lines"])["loop_lines"]
             for name in ("row_sums_r_c", "row_sums_a_b")]
    assert lines == [256 * 64 * 64 * 4 / 64] * 2  # the inner loop walks consecutive floats: 16 to a line


def test_an_integer_argument_the_domains_never_name_is_a_size_too():
    counted = extract_features(get_kernel(f"{KERNELS}:runtime_stride"), {"n": 4096, "s": 2})
    # a: 32 floats 8 bytes apart, 2 lines and 8 sectors; out: 1 line and 4 sectors
    assert counted["cache_lines_per_warp_access"] == 1.5 and counted["sectors_per_warp_access"] == 6
