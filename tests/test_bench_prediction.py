"""benchmarks/bench_prediction.py: the target is judged on models fitted on the whole table."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd


def _bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_prediction.py"
    spec = importlib.util.spec_from_file_location("bench_prediction_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _table(rows: int) -> tuple[pd.DataFrame, list[str]]:
    rng = np.random.default_rng(rows)
    table = pd.DataFrame(rng.uniform(1, 10, (rows, 3)), columns=["a", "b", "c"])
    return table.assign(time_s=1e-5 * table["a"] * table["b"]), ["a", "b", "c"]


def test_the_linear_and_knn_models_are_also_fitted_on_the_whole_table_and_judged_there(monkeypatch, capsys):
    bench = _bench()
    monkeypatch.setattr(bench, "stencil_table", lambda: _table(40))
    monkeypatch.setattr(bench, "rodinia_bsp_table", lambda: _table(300))
    monkeypatch.setattr("sys.argv", ["bench_prediction.py", "--rows", "500", "--repeats", "1", "--train-rows", "100"])
    assert bench.main() == 0
    out = capsys.readouterr().out
    first, second = out.split("== ")[1:]
    assert "fitted on 40 rows (the whole table)" in first and "fitted on the whole table" not in first
    assert "fitted on 100 rows of 300" in second
    sampled, whole = second.split("fitted on the whole table (300 rows):")
    assert [line.split()[0] for line in whole.strip().splitlines()[:2]] == ["knn", "lr"]
    assert "100,000/s" not in sampled.split("\n", 1)[1]  # judged on the whole table only
    assert all("100,000/s" in line for line in whole.strip().splitlines()[:2])


def test_only_a_targeted_model_is_judged(capsys):
    bench, (table, features) = _bench(), _table(50)
    assert bench.measure("knn", table, features, table[features], 1) is True
    assert "100,000/s" not in capsys.readouterr().out
    bench.measure("knn", table, features, table[features], 1, targeted=True)
    assert "100,000/s" in capsys.readouterr().out
