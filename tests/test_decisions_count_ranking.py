"""Ranking a variant space with a calibrated linear count model (``gpuperf rank --model``)."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from scipy.stats import spearmanr

from gpuperf.cli import main
from gpuperf.datasets.bundled import data_dir
from gpuperf.decisions.count_ranking import rank_space_by_counts
from gpuperf.evaluation.linear_eval import evaluate_linear_table, variant_predictions
from gpuperf.kernels.space import get_space

H100 = data_dir() / "linear_model_h100.csv.gz"
SIZES = {"n": 4096, "m": 4096}  # the size the H100 stencil variants were measured at


@pytest.fixture(scope="module")
def calibration():
    return evaluate_linear_table(H100).calibration


@pytest.fixture(scope="module")
def ranked(calibration) -> pd.DataFrame:
    return rank_space_by_counts("jacobi2d_5pt", SIZES, calibration.model)


def test_every_valid_variant_is_ranked_fastest_first(ranked) -> None:
    space = get_space("jacobi2d_5pt")
    assert len(ranked) == len(space.variants()) and ranked["variant"].is_unique
    assert ranked["predicted_time_s"].is_monotonic_increasing and (ranked["predicted_time_s"] > 0).all()
    assert ranked["predicted_performance"].iloc[0] == 1.0
    assert ranked["predicted_performance"].between(0, 1).all()
    assert list(ranked.columns[1:6]) == list(space.parameters)


def test_the_ranking_predicts_what_the_table_evaluation_does_and_orders_the_measured_variants(calibration, ranked) -> None:
    measured = pd.read_csv(data_dir() / "stencil_spaces_h100.csv.gz").query("kernel == 'jacobi2d_5pt'")
    judged = variant_predictions(calibration, measured)
    judged["variant"] = "jacobi2d_5pt[" + judged["variant"] + "]"
    both = judged.merge(ranked, on="variant")
    assert len(both) == len(judged) == 24  # every measured variant is in the ranked space
    assert both["predicted_s"].to_numpy() == pytest.approx(both["predicted_time_s"].to_numpy())
    assert spearmanr(both["predicted_time_s"], both["time_s"]).statistic > 0.5  # measured on the H100
    fastest = both.loc[both["predicted_time_s"].idxmin(), "time_s"]
    assert fastest < both["time_s"].mean()  # the first measured pick beats a random one


def test_rank_command_with_a_calibrated_model(tmp_path, capsys) -> None:
    model = tmp_path / "h100.json"
    assert main(["calibrate", "--table", str(H100), "--out", str(model)]) == 0
    capsys.readouterr()
    args = ["rank", "jacobi2d_5pt", "-p", "n=4096", "-p", "m=4096", "--model", str(model), "--limit", "12"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["device_name"] == "H100 SXM" and result["sizes"] == SIZES
    times = [v["predicted_time_s"] for v in result["variants"]]
    assert len(times) == 12 and times == sorted(times)
    assert main([*args, "--top", "3", "--no-progress"]) == 0
    assert "fastest predicted first (linear count model of H100 SXM)" in " ".join(capsys.readouterr().out.split())


def test_rank_command_refuses_a_model_with_training_data_or_a_file_that_is_no_count_model(tmp_path, capsys) -> None:
    assert main(["rank", "jacobi2d_5pt", "--model", "m.json", "--train", "t.csv"]) != 0
    assert "give one" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text("{}")
    assert main(["rank", "jacobi2d_5pt", "--model", str(other)]) != 0
    assert str(other) in capsys.readouterr().err


def test_unroll_siblings_share_one_counted_row_and_rank_as_if_each_were_counted(calibration, monkeypatch) -> None:
    """Unrolling changes no count (the stencil spaces' count-neutral parameter): the variants that differ
    only in it are each built and ranked, but their properties are computed once."""
    from gpuperf.models import properties

    counted = []
    real = properties.kernel_properties
    monkeypatch.setattr(properties, "kernel_properties",
                        lambda kernel, *a, **k: counted.append(kernel) or real(kernel, *a, **k))
    ranked = rank_space_by_counts("jacobi2d_5pt", SIZES, calibration.model, limit=20)
    groups = ranked.drop(columns=["variant", "unroll", "predicted_time_s", "predicted_performance"]).drop_duplicates()
    assert len(ranked) == 20 and len(counted) == len(groups) == 8
    each = pd.DataFrame([real(get_space("jacobi2d_5pt").build(dict(zip(ranked.columns[1:6], row))), SIZES,
                              calibration.model.property_names_) for row in ranked.iloc[:, 1:6].to_numpy()])
    assert list(ranked["predicted_time_s"]) == pytest.approx(list(calibration.model.predict(each)), rel=1e-12)


def test_variants_measure_would_refuse_are_ranked_with_a_note(calibration) -> None:
    """At 65536 x 65536 every variant's arrays pass its int32 indices' reach; at 65536 x 1024 the variants with
    one row per block have 65,536 blocks along y, past CUDA's limit, noted only for a CUDA-calibrated model."""
    from gpuperf.errors import GpuperfNote

    with pytest.warns(GpuperfNote, match=r"jacobi2d_5pt: 8 of 8 variants would be refused by measure at these sizes.*"
                                         r"array 'a' holds 4,295,229,444 elements"):
        assert len(rank_space_by_counts("jacobi2d_5pt", {"n": 65536, "m": 65536}, calibration.model, limit=8)) == 8
    with pytest.warns(GpuperfNote, match=r"of 8 variants would be refused .* its grid has 65,536 along y"):
        rank_space_by_counts("jacobi2d_5pt", {"n": 65536, "m": 1024}, calibration.model, limit=8, cuda=True)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        rank_space_by_counts("jacobi2d_5pt", {"n": 65536, "m": 1024}, calibration.model, limit=8)
        rank_space_by_counts("jacobi2d_5pt", SIZES, calibration.model, limit=8, cuda=True)
