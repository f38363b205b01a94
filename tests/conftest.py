"""Shared test set-up: private caches so tests never touch the user's ~/.cache, none of the user's own gpuperf
settings; shared checks as fixtures."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

_CACHE = tempfile.mkdtemp(prefix="gpuperf-test-cache-")
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
os.environ.setdefault("POCL_CACHE_DIR", os.path.join(_CACHE, "pocl"))
os.environ.setdefault("XDG_CACHE_HOME", _CACHE)
os.environ.setdefault("GPUPERF_CACHE_DIR", os.path.join(_CACHE, "gpuperf"))
os.environ.setdefault("PYOPENCL_CTX", "0")
os.environ.setdefault("MPLBACKEND", "Agg")
# A user's own GPUs, optimization entries and data folder change what gpuperf reads: tests that want them set them
for _variable in ("GPUPERF_GPUS", "GPUPERF_OPTIMIZATIONS", "GPUPERF_DATA_DIR"):
    os.environ.pop(_variable, None)



def opencl_problem() -> str | None:
    """Why the OpenCL device the tests measure on (PYOPENCL_CTX) cannot build kernels, or None when it can."""
    from gpuperf.errors import GpuperfError
    from gpuperf.measure.devices import open_device

    try:
        open_device("opencl:0")
    except GpuperfError as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items) -> None:
    """Tests marked ``opencl`` build kernels on the OpenCL device: where it can build none (pocl's LLVM on a
    CPU newer than it knows), they are skipped with the device's own error as the reason."""
    marked = [item for item in items if item.get_closest_marker("opencl")]
    problem = opencl_problem() if marked else None
    if problem:
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=f"no kernel builds on the OpenCL device here: {problem}"))

TILED_SPACE = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.space import VariantSpace


def _tiled(config):
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions=f"n >= 1 and n mod {config['local_x']} = 0", name="twice",
                             lang_version=(2018, 2))
    return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")


def tiled():
    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64]}, defaults={"local_x": 64},
                        check=lambda c: None, make=_tiled)
'''


@pytest.fixture
def tiled_space(tmp_path) -> str:
    """A user's variant space ``file.py:tiled`` of a 1D kernel whose ``make`` returns a TranslationUnit:
    each variant assumes n is a multiple of its ``local_x`` (16, 32 or the default 64)."""
    path = tmp_path / "tiled.py"
    path.write_text(TILED_SPACE)
    return f"{path}:tiled"


@pytest.fixture
def held_out_ignores_own_times():
    """A check: scrambling a held-out GPU's measured times (reversed, x100) leaves its predictions as
    they were and moves the other folds' (it trains them). Returns (before, held-out mask)."""
    from gpuperf.evaluation.reproduce import run_protocol

    def check(frame, scenario: str, gpu: str, max_train_rows: int):
        before = run_protocol(frame, scenario, "linear", "gpu", max_train_rows=max_train_rows).predictions
        mine = frame["gpu"] == gpu
        changed = frame.copy()
        changed.loc[mine, "time_s"] = changed.loc[mine, "time_s"].to_numpy()[::-1] * 100
        after = run_protocol(changed, scenario, "linear", "gpu", max_train_rows=max_train_rows).predictions
        held_out = before["fold"] == gpu
        assert np.array_equal(before.loc[held_out, "predicted"], after.loc[held_out, "predicted"])
        assert not np.allclose(before.loc[~held_out, "predicted"], after.loc[~held_out, "predicted"])
        return before, held_out

    return check


@pytest.fixture
def counting_int() -> type[int]:
    """An int class whose values count the equality comparisons made with them (its ``comparisons``,
    from 0 in each test): a check for a repeat is counted in comparisons, not timed (searching a list
    makes one per earlier item, a set about one)."""

    class CountingInt(int):
        comparisons = 0
        __hash__ = int.__hash__

        def __eq__(self, other: object) -> bool:
            CountingInt.comparisons += 1
            return int(self) == other

    return CountingInt


@pytest.fixture
def studies(monkeypatch, tmp_path):
    """Every ``reproduce`` study replaced by a fake that records its call and writes a two-file report:
    a test of a refusal checks the list is empty (no study ran) rather than waiting for a real one. The
    test runs in ``tmp_path``: a study without --out writes gpuperf-reproduce/STUDY/ there, not over the
    checkout's own reports."""
    monkeypatch.chdir(tmp_path)
    import gpuperf.decisions.reports as reports
    import gpuperf.evaluation.linear_report as linear_report
    import gpuperf.evaluation.rodinia_report as rodinia_report

    calls = []

    def report(name, out, echo, **asked):
        calls.append({"study": name, "out": str(out), **asked})
        echo(f"{name}: working")
        folder = Path(out)
        (folder / "report.md").write_text("# report\n")
        (folder / "metrics.json").write_text(json.dumps({"metrics": {"study": name}}))
        return {"markdown": folder / "report.md", "json": folder / "metrics.json"}

    monkeypatch.setattr(rodinia_report, "reproduce_rodinia", lambda out, echo, **o: report("rodinia", out, echo, **o))
    monkeypatch.setattr(linear_report, "linear_study",
                        lambda out, device, echo: report("linear", out, echo, device=device))
    monkeypatch.setattr(reports, "exploration_study",
                        lambda out, family, echo: (None, report("exploration", out, echo, family=family)))
    monkeypatch.setattr(reports, "advisor_study",
                        lambda out, splits, echo, **o: (None, report("advisor", out, echo, splits=splits, **o)))
    monkeypatch.setattr(reports, "geometry_study", lambda out, echo: (None, report("geometry", out, echo)))
    return calls
