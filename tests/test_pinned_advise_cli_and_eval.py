"""``gpuperf advise`` / ``optimizations`` and the advisor's evaluation (``advise_eval``), pinned where
mutation testing found them unchecked: which arguments reach the advisor, the subject line, the JSON
sections' rounding and filtering, the text view, the database listing; the evaluation's folds, its
constant predictor, the per-model columns, grouped summaries and repeatability."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions import advise_eval
from gpuperf.errors import GpuperfError

# -- gpuperf advise, with the advisor replaced ------------------------------------------------------


def _suggestion(name: str, speedup: float, confidence: float, **apply):
    from gpuperf.decisions.advisor import Suggestion

    return Suggestion(optimization=name, title=name, predicted_speedup=speedup, confidence=confidence,
                      explanation={"summary": f"why {name}"}, apply={"summary": f"do {name}", **apply})


def _fake_advisor(monkeypatch, advice=None):
    """``advise_kernel`` and ``advise_profile`` replaced: each records what it was asked and returns
    ``advice`` (default: no suggestion)."""
    from gpuperf.decisions.advisor import Advice

    calls = {}
    result = advice or Advice([], [], [], [])

    def kernel(kernel, sizes, gpu, device, threshold, entries, **options):  # noqa: ANN001, ANN202
        calls.update(kind="kernel", kernel=kernel.key, sizes=dict(sizes), gpu=gpu, device=device, threshold=threshold,
                     entries=[e.name for e in entries], **options)
        return result

    def profile(launch, gpu, threshold, entries, **options):  # noqa: ANN001, ANN202
        calls.update(kind="profile", launch=dict(launch), gpu=gpu, threshold=threshold,
                     entries=[e.name for e in entries], **options)
        return result

    monkeypatch.setattr("gpuperf.decisions.advisor.advise_kernel", kernel)
    monkeypatch.setattr("gpuperf.decisions.advisor.advise_profile", profile)
    return calls


ROW = {"grid.x": 64, "grid.y": 1, "block.x": 256, "block.y": 1, "gld_inst_32bit": 1 << 20}


@pytest.fixture
def two_rows(tmp_path):
    """A profile table of two launches, kernels ``first`` and ``second``, neither naming its GPU."""
    path = tmp_path / "launches.csv"
    pd.DataFrame([{"kernel": "first", **ROW}, {"kernel": "second", **ROW, "block.x": 128}]).to_csv(path, index=False)
    return path


def test_a_kernel_and_a_profile_together_are_refused(monkeypatch, capsys, two_rows):
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "vector_copy", "--profile", str(two_rows)]) == 2
    assert "give a KERNEL or --profile ROW.csv (one of them)" in capsys.readouterr().err
    assert calls == {}


def test_a_profile_without_row_advises_its_first_row_and_says_so(monkeypatch, capsys, two_rows):
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "--profile", str(two_rows), "--json"]) == 0
    assert calls["launch"]["kernel"] == "first" and calls["where"] == f"{two_rows}: row 1"
    assert json.loads(capsys.readouterr().out)["subject"] == f"{two_rows}, row 1 (first)"


def test_the_row_asked_for_is_the_one_advised_and_named(monkeypatch, capsys, two_rows):
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "--profile", str(two_rows), "--row", "2", "--json", "--threshold", "1.3",
                 "--min-confidence", "0.7"]) == 0
    assert calls["launch"]["kernel"] == "second" and calls["launch"]["block.x"] == 128
    assert calls["where"] == f"{two_rows}: row 2"
    assert (calls["threshold"], calls["min_confidence"]) == (1.3, 0.7)
    assert json.loads(capsys.readouterr().out)["subject"] == f"{two_rows}, row 2 (second)"


def test_a_gpu_alias_for_a_profile_row_naming_none_is_named_in_full(monkeypatch, capsys, two_rows):
    """The row names no GPU: --gpu gtx970 names it, and the subject says which GPU that is."""
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "--profile", str(two_rows), "--gpu", "gtx970", "--json"]) == 0
    assert calls["gpu"] == "gtx970"
    assert json.loads(capsys.readouterr().out)["subject"] == f"{two_rows}, row 1 (first, GTX 970)"


@pytest.mark.parametrize("extra", [["-p", "n=4096"], ["--device", "opencl:0"]])
def test_a_profile_takes_no_sizes_and_no_device(monkeypatch, capsys, two_rows, extra):
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "--profile", str(two_rows), *extra]) == 2
    assert "--profile takes no -p or --device: the profile row describes the launch" in capsys.readouterr().err
    assert calls == {}


def test_a_kernel_subject_names_its_sizes_and_the_device_or_the_gpu_in_full(monkeypatch, capsys):
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "vector_copy", "-p", "n=4096", "--device", "opencl:0", "--json", "--threshold", "1.2",
                 "--min-confidence", "0.8"]) == 0
    assert json.loads(capsys.readouterr().out)["subject"] == "vector_copy at n=4096 on opencl:0"
    assert (calls["device"], calls["threshold"], calls["min_confidence"]) == ("opencl:0", 1.2, 0.8)
    assert main(["advise", "vector_copy", "-p", "n=4096", "--gpu", "gtx970", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["subject"] == "vector_copy at n=4096 on GTX 970"


def test_a_variant_is_advised_within_its_space(monkeypatch, capsys):
    calls = _fake_advisor(monkeypatch)
    assert main(["advise", "stencil2d[local_x=32]", "-p", "n=512", "-p", "m=512", "--json"]) == 0
    assert calls["space"] == "stencil2d"


def test_a_gpu_that_names_several_boards_says_which_it_took_on_stderr(monkeypatch, capsys):
    _fake_advisor(monkeypatch)
    assert main(["advise", "vector_copy", "-p", "n=4096", "--gpu", "H100", "--json"]) == 0
    captured = capsys.readouterr()
    assert "'H100' is taken as the H100 SXM" in captured.err and "H100" not in captured.out.split('"subject"')[0]
    assert json.loads(captured.out)["subject"] == "vector_copy at n=4096 on H100 SXM"


def _advice():
    """One suggestion just above the bounds, one abstained above the threshold, one below it and one
    assessed exactly at the threshold but abstained; one optimization skipped."""
    from gpuperf.decisions.advisor import Advice

    fast = _suggestion("fast", 1.400001, 0.95, variant="stencil2d[local_x=32]")
    edge = _suggestion("edge", 1.050004, 0.50004)  # 4 and 3 decimals would round them onto the bounds
    unsure = _suggestion("unsure", 1.3, 0.2)
    slow = _suggestion("slow", 0.8, 0.9)
    at = _suggestion("at", 1.05, 0.3)
    return Advice([fast, edge], [fast, edge, unsure, slow, at],
                  [("unsure", "abstained: predicted 1.3x"), ("at", "abstained: predicted 1.05x"),
                   ("gone", "does not apply")], ["a note"])


def test_json_keeps_the_advisors_order_and_rounds_no_value_onto_its_bound(monkeypatch, capsys):
    _fake_advisor(monkeypatch, _advice())
    assert main(["advise", "vector_copy", "-p", "n=4096", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [s["optimization"] for s in data["suggestions"]] == ["fast", "edge"]  # fastest first, as ranked
    edge = data["suggestions"][1]
    assert (edge["predicted_speedup"], edge["confidence"]) == (1.050004, 0.50004)
    assert data["suggestions"][0]["predicted_speedup"] == 1.4  # 4 decimals where they keep it apart
    # below_threshold: assessed below 1.05 only; an abstained 1.3x and an abstained 1.05x are not "below"
    assert [s["optimization"] for s in data["below_threshold"]] == ["slow"]
    assert [n["optimization"] for n in data["not_suggested"]] == ["unsure", "at", "gone"]


def test_the_text_view_lists_suggestions_their_variant_below_threshold_and_skipped(monkeypatch, capsys):
    _fake_advisor(monkeypatch, _advice())
    assert main(["advise", "vector_copy", "-p", "n=4096"]) == 0
    out = capsys.readouterr().out
    assert "no optimization is predicted" not in out
    assert "stencil2d[local_x=32]" in out  # the apply column shows the variant, not the summary
    assert "slow: predicted 0.80x, below the threshold 1.05x" in out
    assert "at: predicted" not in out  # at the threshold, abstained: not "below"
    assert "unsure: abstained: predicted 1.3x" in out and "gone: does not apply" in out


def test_the_text_view_says_when_nothing_is_suggested(monkeypatch, capsys):
    _fake_advisor(monkeypatch)
    assert main(["advise", "vector_copy", "-p", "n=4096", "--threshold", "1.2", "--min-confidence", "0.6"]) == 0
    assert "no optimization is predicted at or above 1.2x with confidence >= 0.6" in capsys.readouterr().out


def test_optimizations_lists_each_entry_with_its_apply_kind_pairs_and_file(capsys):
    from gpuperf.decisions.optimizations import load_optimizations

    assert main(["optimizations", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    coalescing = rows["coalescing"]
    entry = load_optimizations()["coalescing"]
    assert coalescing["apply"] == "loopy"
    assert coalescing["pairs"][:3] == ["MMGU -> MMGC", "MMSU -> MMSC", "MAU -> MAC"]
    assert coalescing["file"] == str(entry.path) and coalescing["file"].endswith("coalescing.toml")
    assert main(["optimizations"]) == 0
    table = capsys.readouterr().out
    line = next(line for line in table.splitlines() if " coalescing " in f" {line} ")
    assert f" {len(entry.pairs)} " in line


# -- the evaluation ---------------------------------------------------------------------------------


def _stub(trained: list | None = None, model_speedup=None, measured_on=None):
    """A model factory: predicts 1.5 (k-NN 2, M5P 0.5); ``trained`` collects each fit's pairs."""

    class Stub:
        choice = ("all", "mean")

        def fit(self, pairs):
            if trained is not None:
                trained.append(pairs)
            return self

        def predict(self, pairs):
            n = len(pairs)
            return SimpleNamespace(
                speedup=np.full(n, 1.5), knn=np.full(n, 2.0), m5p=np.full(n, 0.5), p_faster=np.full(n, 0.6),
                confidence=np.full(n, 0.8), model_speedup=None if model_speedup is None else np.full(n, model_speedup),
                measured_on=measured_on(n) if measured_on else [()] * n)

    return Stub


def _pairs(**columns):
    base = {"optimization": "o", "target": "gpu", "gpu": "A100", "family": "f", "input": "", "configuration": "",
            "speedup": 2.0}
    return pd.DataFrame({**base, **columns})


def test_inputs_are_held_out_per_program_not_across_programs():
    """Families a and b share the inputs n=1 and n=2: four (family, input) groups, four folds, each
    testing one pair while the other family's pair at the same input trains."""
    trained = []
    pairs = _pairs(family=["a", "a", "b", "b"], input=["n=1", "n=2", "n=1", "n=2"], speedup=[2.0, 3.0, 4.0, 5.0])
    results = advise_eval.evaluate(pairs, "inputs", _stub(trained))
    assert len(results) == 4 and results["fold"].nunique() == 4
    assert all(len(train) == 3 for train in trained)


def test_inputs_are_split_four_fold_however_many_there_are():
    pairs = _pairs(input=[f"n={i}" for i in range(1, 7)])
    results = advise_eval.evaluate(pairs, "inputs", _stub())
    assert sorted(results["fold"].unique()) == [0, 1, 2, 3] and len(results) == 6


def test_a_single_input_gives_no_fold():
    """One (family, input) group: nothing to hold it out against, so no result (and no error)."""
    assert advise_eval.evaluate(_pairs(input=["n=1", "n=1"], configuration=["c1", "c2"]), "inputs", _stub()).empty


def test_an_inputs_fold_trains_on_the_tuning_pairs_too():
    """One family: inputs n=1 and n=2 and a tuning pair without an input: holding n=1 out trains on
    the n=2 pair and the tuning pair (the tuning pair is never tested in this split)."""
    trained = []
    pairs = _pairs(input=["n=1", "n=2", ""], configuration=["", "", "c1"])
    results = advise_eval.evaluate(pairs, "inputs", _stub(trained))
    assert len(results) == 2
    assert sorted(len(train) for train in trained) == [2, 2]
    assert all("c1" in set(train["configuration"]) for train in trained)


def test_an_input_left_empty_as_none_is_a_tuning_pair():
    pairs = _pairs(input=[None, None, None], configuration=["c1", "c2", "c3"])
    assert len(advise_eval.evaluate(pairs, "configurations", _stub())) == 3


def test_the_constant_is_the_geometric_mean_not_the_median_of_the_training_speedups():
    """Family b is tested after training on family a's speedups 2, 2 and 0.5 (log2 1, 1, -1): the
    constant is 2 ** (1/3) = 1.26 (the median would give 2)."""
    pairs = _pairs(family=["a", "a", "a", "b"], speedup=[2.0, 2.0, 0.5, 3.0])
    results = advise_eval.evaluate(pairs, "programs", _stub())
    assert results.loc[results["family"] == "b", "constant"].iloc[0] == pytest.approx(2 ** (1 / 3))
    assert list(results["measured"]) == [2.0, 2.0, 0.5, 3.0]  # each test pair beside its own speedup


def test_each_models_prediction_and_the_transfer_columns_come_from_the_model():
    """k-NN 2 and M5P 0.5 keep their own columns; ``model_speedup`` is the models' own prediction
    where a transfer replaced it; ``measured_elsewhere`` is true where the pair was measured on other GPUs."""
    pairs = _pairs(family=["a", "b"], speedup=[2.0, 0.5])
    transferred = advise_eval.evaluate(pairs, "programs", _stub(model_speedup=0.25, measured_on=lambda n: [("V100",)] * n))
    assert list(transferred["knn"]) == [2.0, 2.0] and list(transferred["m5p"]) == [0.5, 0.5]
    assert list(transferred["model_speedup"]) == [0.25, 0.25] and list(transferred["predicted"]) == [1.5, 1.5]
    assert list(transferred["measured_elsewhere"]) == [True, True]
    plain = advise_eval.evaluate(pairs, "programs", _stub())
    assert list(plain["model_speedup"]) == [1.5, 1.5] and list(plain["measured_elsewhere"]) == [False, False]
    assert advise_eval.summarise(transferred).iloc[0]["sign_accuracy_models"] == 0.5  # 0.25 on 2 and 0.5


def test_gpu_and_device_pairs_of_one_optimization_are_evaluated_apart():
    trained = []
    pairs = _pairs(target=["gpu", "gpu", "device:pocl", "device:pocl"], family=["a", "b", "a", "b"])
    results = advise_eval.evaluate(pairs, "programs", _stub(trained))
    assert sorted(results["target"]) == ["device", "device", "gpu", "gpu"]
    assert all(len(train) == 1 for train in trained)  # the other family of the same target class only


def test_an_unknown_split_is_refused():
    with pytest.raises(GpuperfError, match="sizes"):
        advise_eval.evaluate(_pairs(input=["n=1", "n=2"]), "sizes", _stub())


def test_a_grouped_summary_names_its_groups_and_shares_within_each():
    """Optimization x: measured 2 and 1.05 (one outside the noise band); y: 3 (outside)."""
    results = pd.DataFrame({"optimization": ["x", "x", "y"], "measured": [2.0, 1.05, 3.0],
                            "predicted": [1.5, 1.5, 1.5], "knn": [1.5] * 3, "m5p": [1.5] * 3,
                            "constant": [1.5] * 3, "p_faster": [0.6] * 3, "confidence": [0.9] * 3})
    summary = advise_eval.summarise(results, by=["optimization"])
    assert list(summary["optimization"]) == ["x", "y"]
    assert list(summary["clear_share"]) == [0.5, 1.0] and list(summary["pairs"]) == [2, 1]


def test_a_noise_band_edge_counts_as_no_effect():
    """docs: pairs whose measured speedup lies in [1/1.1, 1.1] are "no effect"; 1.1 is inside."""
    results = pd.DataFrame({"measured": [1.1, 2.0], "predicted": [0.5, 1.5], "knn": [1.5] * 2, "m5p": [1.5] * 2,
                            "constant": [1.5] * 2, "p_faster": [0.6] * 2, "confidence": [0.9] * 2})
    row = advise_eval.summarise(results).iloc[0]
    assert row["clear_share"] == 0.5 and row["sign_accuracy_clear"] == 1.0


def _runs(speedups: list[tuple[float, float]], targets=None):
    keys = {"optimization": "o", "family": "f", "change": "c", "configuration": ""}
    targets = targets or ["gpu"] * len(speedups)
    first = pd.DataFrame([{**keys, "target": t, "input": str(i), "speedup": a}
                          for i, ((a, _), t) in enumerate(zip(speedups, targets))])
    second = pd.DataFrame([{**keys, "target": t, "input": str(i), "speedup": b}
                           for i, ((_, b), t) in enumerate(zip(speedups, targets))])
    return first, second


def test_a_speedup_of_exactly_one_is_not_faster_in_repeatability():
    """1.0 then 0.9: neither run faster, so they agree; 2 then 3 agree too."""
    row = advise_eval.repeatability(*_runs([(1.0, 0.9), (2.0, 3.0)])).iloc[0]
    assert row["sign_agreement"] == 1.0


def test_repeatability_takes_the_median_factor_per_target():
    """Factors 1, 2 and 4 on the GPU: median 2 (the mean would be 2.33); one device pair apart."""
    first, second = _runs([(1.0, 1.0), (2.0, 1.0), (1.0, 4.0), (3.0, 3.0)], ["gpu", "gpu", "gpu", "device"])
    table = advise_eval.repeatability(first, second).set_index("target")
    assert table.loc["gpu", "median_factor"] == pytest.approx(2.0) and table.loc["gpu", "pairs"] == 3
    assert table.loc["device", "pairs"] == 1 and table.loc["device", "median_factor"] == 1.0


def test_inputs_left_empty_in_a_csv_give_no_fold_not_a_type_error():
    """pandas reads a column of empty cells as float NaN: the input folds added strings to it and
    raised TypeError; pairs with no input are tuning pairs, so the inputs split has no fold."""
    import io

    from gpuperf.decisions import advise_eval
    from gpuperf.decisions.speedup_models import SpeedupModel

    csv = "optimization,target,gpu,family,input,configuration,speedup\n" + "".join(
        f"o,gpu,A100,f,,c{i},{1.5 if i % 2 else 0.7}\n" for i in range(8))
    pairs = pd.read_csv(io.StringIO(csv))
    assert pairs["input"].isna().all()
    assert advise_eval.evaluate(pairs, "inputs", lambda: SpeedupModel(select=False)).empty
