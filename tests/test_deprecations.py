"""gpuperf's own calls into loopy, islpy and pymbolic use none of their deprecated forms
(deprecated forms stop working when those libraries drop them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import warnings
warnings.filterwarnings("error", category=DeprecationWarning, module="gpuperf")
from gpuperf.features import extract_features
from gpuperf.kernels import get_kernel, get_space
from gpuperf.measure.timing import measure

sizes = {"n": 256, "m": 256}
extract_features(get_kernel("jacobi2d_5pt"), sizes)
space = get_space("jacobi2d_5pt")
large = [c for c in space.configurations() if c["local_x"] * c["local_y"] <= 1024 and c["outputs_y"] > 1]
for config in large[-2:]:  # tiled: boxed domains and assumptions to check
    variant = space.build(config)
    assert not variant.entry.assumptions.plain_is_universe()
    variant.resolve_sizes(sizes)
    extract_features(variant, sizes)
print(measure("vector_copy", {"n": 4096}).verified)
"""


@pytest.mark.opencl
def test_own_calls_raise_no_deprecation_warnings():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "True"


LIBRARY_SCRIPT = """
import warnings
from gpuperf.features import extract_features
from gpuperf.kernels import get_kernel

warnings.simplefilter("error", DeprecationWarning)  # the libraries' too, as a library user sees them
print(extract_features(get_kernel("jacobi2d_5pt"), {"n": 256, "m": 256})["flops"])
"""


def test_static_features_reach_a_library_user_without_deprecation_warnings():
    """loopy's stride finder calls an islpy form deprecated "until 2026" on every domain: gpuperf keeps
    that warning (loopy's own) from a library user who sees DeprecationWarnings."""
    done = subprocess.run([sys.executable, "-c", LIBRARY_SCRIPT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert float(done.stdout.strip()) > 0
