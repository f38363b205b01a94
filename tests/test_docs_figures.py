"""Figures the docs quote, recomputed from the bundled data by the code that prints them: a figure that
moves when the code changes must move in the docs too."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from gpuperf.datasets import load_dataset
from gpuperf.evaluation.elsewhere import one_launch_calibration

ROOT = Path(__file__).parents[1]


def _one(text: str) -> str:
    """``text`` with its line breaks as spaces, so a figure's sentence may wrap anywhere."""
    return " ".join(text.split())


def test_the_one_timed_stencil_variant_figures_are_the_ones_bench_predict_gpu_prints():
    """One variant per stencil timed on the other GPU (H100 <-> H200): the mean per-stencil MAPE docs/models.md
    and bench_predict_gpu.py quote is what it gives now (the calibration launch no longer scored), and the
    stencils where it loses to the other GPU's time as it is are counted per GPU as the docstring says."""
    table = pd.concat([load_dataset(name) for name in ("stencil_spaces_h100", "stencil_spaces_h200")],
                      ignore_index=True)
    one = one_launch_calibration(table, ["kernel", "variant"], draws=200)
    means = {f"{value:.3f}" for value in one.groupby("gpu")["mape"].mean()}
    assert len(means) == 1  # "either way"
    [figure] = means
    assert f"MAPE of {figure} on average either way" in _one((ROOT / "docs" / "models.md").read_text("utf-8"))
    bench = _one((ROOT / "benchmarks" / "bench_predict_gpu.py").read_text("utf-8"))
    assert f"mean per-stencil MAPE of {figure} for either GPU" in bench
    times = table.groupby(["kernel", "variant", "gpu"])["time_s"].median().unstack("gpu").dropna()
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    losses = {}
    for gpu in times.columns:
        [other] = [g for g in times.columns if g != gpu]
        as_is = ((times[other] - times[gpu]).abs() / times[gpu]).groupby(level="kernel").mean()
        timed = one[one["gpu"] == gpu].set_index("kernel")["mape"]
        losses[gpu] = words[int((timed > as_is.reindex(timed.index)).sum())]
    said = (f"loses on {losses['H100 SXM']} stencils for each GPU" if losses["H100 SXM"] == losses["H200"]
            else f"loses on {losses['H100 SXM']} stencils for the H100 and {losses['H200']} for the H200")
    assert said in bench
