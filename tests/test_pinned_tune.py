"""What gpuperf tune reports, checked on hand-worked runs: a user's space of known variants, measured
in table order by a fake clock (no device time), so every figure of --json can be worked out."""

from __future__ import annotations

import json
import types

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.decisions.tune import GuidedSearch, TuneResult, Trial, tune_space
from gpuperf.errors import GpuperfError

FOUR_WIDTHS = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.space import VariantSpace


def _make(config):
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions="n >= 1 and n mod 128 = 0", name="twice", lang_version=(2018, 2))
    return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")


def widths():
    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64, 128]}, defaults={"local_x": 64},
                        check=lambda c: None, make=_make)


def many():
    return VariantSpace(name="twice", parameters={"local_x": [16, 32], "copy": list(range(12))},
                        defaults={"local_x": 16, "copy": 0}, check=lambda c: None, make=_make)
'''

# local_x -> seconds; None: the run fails
TIMES = {16: 3e-4, 32: None, 64: 1e-4, 128: 2e-4}


class _InOrder:
    """A search asking for the configurations in table order (what it is told only marks them measured)."""

    def __init__(self, configs, *args, **options):
        self.size, self.measured = len(configs), []

    def __len__(self) -> int:
        return self.size

    def ask(self) -> int:
        return next(i for i in range(self.size) if i not in self.measured)

    def tell(self, index: int, time) -> None:
        self.measured.append(index)


@pytest.fixture
def in_order(tmp_path, monkeypatch):
    """The space file (``widths`` and ``many``), searched in order, each variant timed by ``TIMES``."""
    from gpuperf.decisions import tune
    from gpuperf.measure import timing
    from gpuperf.measure.devices import RunFailed

    def measure(kernel, sizes, **options):
        width = int(str(kernel.key).split("local_x=")[1].split(",")[0].rstrip("]"))
        if TIMES[width] is None:
            raise RunFailed("launch refused", "out of resources\nmore lines")
        return types.SimpleNamespace(time_s=TIMES[width], provenance={"device_name": "pocl"}, verified=True)

    monkeypatch.setattr(timing, "measure", measure)
    monkeypatch.setattr(tune, "GuidedSearch", _InOrder)
    (tmp_path / "space.py").write_text(FOUR_WIDTHS)
    return tmp_path / "space.py"


def _tune(capsys, *argv) -> dict:
    assert main(["tune", *argv, "-p", "n=1024", "--start", "random", "--no-progress", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.opencl
def test_tune_json_counts_failures_and_names_the_best_trial_by_its_1_based_position(in_order, capsys):
    result = _tune(capsys, f"{in_order}:widths", "--budget", "4")
    assert result["evaluated"] == 4 and result["failed"] == 1  # local_x=32 failed
    assert result["best"] == {"local_x": 64} and result["best_time"] == 1e-4
    assert result["best_at"] == 3  # the third trial: 16, 32, 64
    assert result["sizes"] == {"n": 1024} and result["time_column"] == "time_s"
    assert [(t["local_x"], t["time"], t["status"]) for t in result["trials"]] == [
        (16, 3e-4, "ok"), (32, None, "run_failed"), (64, 1e-4, "ok"), (128, 2e-4, "ok")]


@pytest.mark.opencl
def test_tune_json_after_every_trial_failed_has_no_best(in_order, capsys, monkeypatch):
    monkeypatch.setitem(TIMES, 16, None)
    result = _tune(capsys, f"{in_order}:widths", "--budget", "2")
    assert result["failed"] == 2 and result["best"] is None and result["best_time"] is None
    assert result["best_at"] is None


@pytest.mark.opencl
def test_tune_notes_its_failed_trials_by_kind_with_the_first_ones_error(in_order, capsys, monkeypatch):
    """A run whose trials all failed said nothing of why: one note per failure status names how many
    and the first trial's configuration and error, as campaign run notes its points'."""
    monkeypatch.setitem(TIMES, 16, None)
    assert main(["tune", f"{in_order}:widths", "-p", "n=1024", "--start", "random", "--no-progress",
                 "--budget", "3"]) == 0
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert notes == [f"note: {in_order}:widths: 2 trial(s) run_failed, the first (local_x=16): out of resources"]
    result = TuneResult("s", {"n": 1}, "opencl:0", "online (gp)", [
        Trial({"x": 1}, None, "compile_failed", "no compiler"), Trial({"x": 2}, 1e-4, "ok"),
        Trial({"x": 3}, None, "verify_failed", ""), Trial({"x": 4}, None, "compile_failed", "again")])
    assert result.failure_notes() == ["2 trial(s) compile_failed, the first (x=1): no compiler",
                                      "1 trial(s) verify_failed, the first (x=3): no error recorded"]


@pytest.mark.opencl
def test_tune_measures_20_variants_without_budget(in_order, capsys):
    """--budget defaults to 20, as the docs and --help say."""
    result = _tune(capsys, f"{in_order}:many")
    assert result["evaluated"] == 20 and len(result["trials"]) == 20


@pytest.mark.opencl
def test_tune_resumed_with_a_budget_its_trials_already_fill_notes_it(in_order, capsys, tmp_path):
    out = tmp_path / "trials.csv"
    _tune(capsys, f"{in_order}:widths", "--budget", "2", "--out", str(out))
    assert main(["tune", f"{in_order}:widths", "-p", "n=1024", "--start", "random", "--no-progress", "--json",
                 "--budget", "2", "--out", str(out), "--resume"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["evaluated"] == 2
    assert f"note: {out} holds 2 trials already, --budget 2: nothing more is measured" in captured.err


@pytest.mark.opencl
def test_the_failed_trials_detail_is_the_first_line_of_the_error(in_order):
    result = tune_space(f"{in_order}:widths", {"n": 1024}, budget=2)
    assert [(t.status, t.detail) for t in result.trials] == [("ok", ""), ("run_failed", "out of resources")]


def test_the_best_trial_is_the_fastest_that_ran():
    result = TuneResult("s", {"n": 1}, "opencl:0", "online (gp)", [
        Trial({"x": 1}, 3e-4, "ok"), Trial({"x": 2}, None, "run_failed"), Trial({"x": 3}, 1e-4, "ok"),
        Trial({"x": 4}, 2e-4, "ok")])
    assert result.best() is result.trials[2]


@pytest.mark.opencl
def test_the_ranked_start_is_3_picks_as_the_docs_say(monkeypatch):
    """The docs: without --train the first 3 picks follow the ranking; the method names them."""
    from gpuperf.decisions.tune import candidate_configurations
    from gpuperf.measure import timing

    monkeypatch.setattr(timing, "measure", lambda kernel, sizes, **options: types.SimpleNamespace(
        time_s=1e-4 * (1 + len(str(kernel.key)) % 7), provenance={"device_name": "pocl"}, verified=True))
    ranking = candidate_configurations("jacobi2d_5pt").iloc[::-1].head(10)
    result = tune_space("jacobi2d_5pt", {"n": 128, "m": 128}, budget=3, ranking=ranking)
    assert result.method == "online (gp), first 3 picks ranked by other kernels"
    assert [tuple(t.config.values()) for t in result.trials] == [
        tuple(row) for row in ranking.head(3).itertuples(index=False)]


def test_a_start_pick_one_past_the_last_configuration_is_refused():
    configs = pd.DataFrame({"x": [1, 2, 3]})
    with pytest.raises(GpuperfError, match=r"start: 3 is not a label of the 3 configurations \(0 to 2\)"):
        GuidedSearch(configs, ["x"], start=[0, 3])


def test_ranked_positions_skips_ranked_rows_that_are_not_configurations():
    from gpuperf.decisions.tune import ranked_positions

    configs = pd.DataFrame({"x": [1, 2, 3]})
    assert ranked_positions(configs, pd.DataFrame({"x": [3, 9, 1]})) == [2, 0]


ROW = {"kernel": "jacobi2d_5pt", "device": "opencl:0", "gpu": "pocl", "n": 128, "m": 128, "local_x": 16, "local_y": 4,
       "outputs_y": 1, "prefetch": 0, "unroll": 1, "time_s": 1e-4, "status": "ok"}


@pytest.mark.parametrize("column", ["kernel", "device", "gpu"])
def test_resuming_refuses_a_table_of_two_devices_kernels_or_gpus(column):
    from gpuperf.decisions.tune import earlier_trials

    other = {**ROW, "local_x": 32, column: "opencl:1" if column == "device" else "elsewhere"}
    with pytest.raises(GpuperfError, match=f"trials.csv: 2 values of {column}; a tuning run's table has one"):
        earlier_trials(pd.DataFrame([ROW, other]), "trials.csv")


def test_resuming_refuses_a_failed_trial_with_a_time_naming_its_line():
    from gpuperf.decisions.tune import earlier_trials

    failed = {**ROW, "local_x": 32, "status": "run_failed", "time_s": 2e-4}
    with pytest.raises(GpuperfError, match=r"trials.csv: row 2: status run_failed with time_s 0.0002: a trial that "
                                           r"ran has a time, a failed one none"):
        earlier_trials(pd.DataFrame([ROW, failed]), "trials.csv")
    resumed = earlier_trials(pd.DataFrame([ROW, {**failed, "time_s": None}]), "trials.csv")
    assert [(t.time_s, t.status) for t in resumed.trials] == [(1e-4, "ok"), (None, "run_failed")]


def test_the_default_variant_is_timed_again_when_its_trial_failed(monkeypatch):
    from gpuperf.decisions.tune import default_variant_time
    from gpuperf.kernels.space import get_space

    monkeypatch.setattr("gpuperf.measure.timing.measure", lambda *args, **kwargs: types.SimpleNamespace(time_s=5e-4))
    defaults = dict(get_space("jacobi2d_5pt").defaults)
    assert default_variant_time("jacobi2d_5pt", {"n": 128, "m": 128},
                                trials=[Trial(defaults, None, "run_failed")]) == 5e-4


@pytest.mark.opencl
def test_tune_json_counts_the_trials_made_when_the_space_runs_out_before_the_budget(in_order, capsys):
    result = _tune(capsys, f"{in_order}:widths", "--budget", "10")
    assert result["evaluated"] == 4 and [t["local_x"] for t in result["trials"]] == [16, 32, 64, 128]


@pytest.mark.opencl
def test_a_resumed_trial_whose_status_reads_ok_in_capitals_is_not_counted_as_failed(in_order, capsys, tmp_path):
    out = tmp_path / "trials.csv"
    _tune(capsys, f"{in_order}:widths", "--budget", "1", "--out", str(out))
    table = pd.read_csv(out)
    table["status"] = " OK"  # as another tool or an editor wrote it
    table.to_csv(out, index=False)
    result = _tune(capsys, f"{in_order}:widths", "--budget", "1", "--out", str(out), "--resume")
    assert result["failed"] == 0 and result["best_at"] == 1
    assert [t["status"] for t in result["trials"]] == ["ok"]


@pytest.mark.opencl
def test_tune_says_once_when_its_trials_outputs_are_not_checked(in_order, monkeypatch, capsys):
    """A space of one's own without a NumPy reference: every trial 'ok', and nothing said that none was checked."""
    from gpuperf.measure import timing

    monkeypatch.setattr(timing, "measure", lambda kernel, sizes, **options: types.SimpleNamespace(
        time_s=1e-3, provenance={"device_name": "pocl"}, verified=False))
    assert main(["tune", f"{in_order}:widths", "-p", "n=1024", "--start", "random", "--budget", "3", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.count("outputs not checked (verified false): the kernel has no NumPy reference") == 1
