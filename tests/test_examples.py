"""Every script in examples/ runs, and what it returns and prints holds up.

Each script's ``main()`` is called (its module loaded as ``python examples/NAME.py`` would, minus
the ``__main__`` guard) and its result checked by the function of the same name in ``CHECKS``: a
script added without a check fails here.
"""

from __future__ import annotations

import math
import re
import runpy
import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))


def check_fit_model(result: dict[str, float], output: str) -> None:
    assert len(result) == 7  # the Rodinia table's GPUs, each held out
    assert all(math.isfinite(mape) and 0 < mape < 1 for mape in result.values()), result
    assert "saved and reloaded rodinia_forest.json" in output


def check_guided_search(result: dict[str, float | None], output: str) -> None:
    assert result["evals_to_90"] is not None
    assert result["evals_to_90"] < result["random_expected_evals_to_90"] < result["configurations"]
    assert f"guided {result['evals_to_90']}," in output


def check_user_kernel(result: dict[str, float], output: str) -> None:
    assert list(result) == ["moving_average[work_group_size=32]", "moving_average[work_group_size=256]"]
    assert all(math.isfinite(time) and time > 0 for time in result.values()), result
    assert output.count("outputs verified: True") == 2


def check_launch_geometry(result: list[dict[str, object]], output: str) -> None:
    assert {row["gpu"] for row in result} == {"H100 SXM", "Instinct MI300X"}
    assert not any(row["policy"] == "libomptarget" and row["gpu"] == "Instinct MI300X" for row in result)
    for row in result:
        assert 1 <= row["threads"] <= 1024 and row["blocks"] >= 1, row
        if row["policy"] == "llvm":  # LLVM's default work-group: 128 threads on NVIDIA, 256 on AMD
            threads = 256 if row["gpu"] == "Instinct MI300X" else 128
            assert (row["threads"], row["blocks"]) == (threads, math.ceil(row["trip"] / threads))
    short = [row for row in result if row["policy"] == "heuristic" and row["trip"] == 100]
    assert all((row["threads"], row["blocks"], row["class"]) == (1, 100, "short") for row in short)
    assert "(long loop)" in output


def check_advise_kernel(result: dict[str, float], output: str) -> None:
    assert result, "the advisor suggested nothing for the Jacobi variant"
    assert result["predicted_speedup"] >= 1.05  # the advisor's default threshold
    assert math.isfinite(result["measured_speedup"]) and result["measured_speedup"] > 0
    assert "suggested: Use larger work-groups" in output


def check_measure_by_hand(result: dict[str, object], output: str) -> None:
    import pandas as pd

    measured = result["measured"]
    assert len(measured) == 8 and len({(c["tile_x"], c["tile_y"]) for c in measured}) == 8  # 4 rounds of 2
    table = pd.read_csv(result["table"])
    assert table["time_s"].notna().sum() == 8 and len(table) == 36
    fastest = table.loc[table["time_s"].idxmin()]
    assert result["best"] == {"tile_x": fastest["tile_x"], "tile_y": fastest["tile_y"]}
    assert result["best_time"] == fastest["time_s"]
    assert output.count("round ") == 4 and "8 of 36 configurations measured" in output
    lines = Path(result["table"]).read_text().splitlines()  # each pick is named by its line, as gpuperf ask names it
    for line, x, y in re.findall(r"line (\d+): tile (\d+)x(\d+)", output):
        assert lines[int(line) - 1].split(",")[:2] == [x, y]
    best = re.search(r"best tile (\d+)x(\d+) at [\d.]+ ms \(line (\d+) of", output)
    assert lines[int(best[3]) - 1].split(",")[:2] == [best[1], best[2]]
    assert len(re.findall(r"line (\d+): tile", output)) == 8
    assert f"the table: {result['table']}" in output
    shutil.rmtree(Path(result["table"]).parent)  # the example leaves it for its user


def check_price_on_another_gpu(result: dict[str, float], output: str) -> None:
    assert len(result) == 6  # the Rodinia kernels, each calibrated by one launch timed on the K20
    assert all(math.isfinite(mape) and 0 <= mape < 0.5 for mape in result.values()), result
    assert sum(result.values()) / len(result) < 0.15  # the leave-one-GPU-out models give 0.13 on the K20
    assert "8661 launches predicted from 6 timed on it (one per kernel)" in output


CHECKS = {
    "price_on_another_gpu": check_price_on_another_gpu,
    "fit_model": check_fit_model,
    "guided_search": check_guided_search,
    "measure_by_hand": check_measure_by_hand,
    "user_kernel": check_user_kernel,
    "launch_geometry": check_launch_geometry,
    "advise_kernel": check_advise_kernel,
}
# Scripts that run kernels on the OpenCL device.
SLOW = {"user_kernel", "advise_kernel"}


def test_there_are_examples():
    assert len(SCRIPTS) >= 3


@pytest.mark.parametrize(
    "script",
    [pytest.param(path, id=path.stem, marks=[pytest.mark.slow, pytest.mark.opencl] if path.stem in SLOW else [])
     for path in SCRIPTS],
)
def test_example_runs(script: Path, capsys):
    assert script.stem in CHECKS, f"examples/{script.name} has no check in tests/test_examples.py"
    source = script.read_text()
    assert f"python examples/{script.name}" in source.split('"""')[1]  # the docstring says how to run it
    assert 'if __name__ == "__main__":\n    main()' in source
    result = runpy.run_path(str(script), run_name="example")["main"]()
    CHECKS[script.stem](result, capsys.readouterr().out)
