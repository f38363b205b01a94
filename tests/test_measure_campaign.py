"""Campaigns on the OpenCL CPU device: measured and failed points, resume after kill -9, export."""

from __future__ import annotations

import re

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.kernels.catalog import get_kernel
from gpuperf.measure import campaign_status, export_store, load_campaign, run_campaign, store_table
from gpuperf.measure.store import Store

pytestmark = pytest.mark.slow

USER_KERNELS = '''
import loopy as lp
import numpy as np
from gpuperf.kernels.kernel import Kernel

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2


def _program(name, body):
    program = lp.make_kernel("{[i]: 0<=i<n}", body, [lp.GlobalArg("a,b,c", np.float32, shape="n"), "..."],
                             assumptions="n>=64 and n mod 64 = 0", name=name, lang_version=LANG)
    return lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")


def axpy():
    return Kernel("axpy", _program("axpy", "c[i] = 2*a[i] + b[i]"), ("n",),
                  reference=lambda x, s: {"c": 2 * x["a"] + x["b"]})


def wrong_reference():
    return Kernel("wrong_reference", _program("wrong_reference", "c[i] = a[i] + b[i]"), ("n",),
                  reference=lambda x, s: {"c": x["a"] - x["b"]})


def broken():
    return Kernel("broken", _program("broken", "c[i] = no_such_function(a[i]) + b[i]"), ("n",))


def no_reference():
    return Kernel("no_reference", _program("no_reference", "c[i] = a[i] + b[i]"), ("n",))
'''

TIMING = """
[timing]
warmup = 1
min_repeats = 5
min_time_s = 0.01
max_repeats = 200
max_retries = 1
"""


def write_campaign(folder: Path, body: str, name: str = "campaign.toml") -> Path:
    (folder / "kernels.py").write_text(USER_KERNELS)
    path = folder / name
    path.write_text(textwrap.dedent(body) + TIMING)
    return path


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, object]:
    folder = tmp_path_factory.mktemp("campaign")
    path = write_campaign(folder, """
        name = "pocl"
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 4096}, {n = 4194304}]
        [[kernels]]
        kernel = "kernels.py:axpy"
        product = {n = [1024, 65536]}
        [[kernels]]
        kernel = "kernels.py:wrong_reference"
        sizes = [{n = 1024}]
        [[kernels]]
        kernel = "kernels.py:broken"
        sizes = [{n = 1024}, {n = 2048}]
    """)
    store = folder / "store.sqlite"
    report = run_campaign(load_campaign(path), store, progress=False)
    return path, store, report


def _rows(store: Path) -> list[dict]:
    with Store(store, create=False) as opened:
        return opened.rows()


@pytest.mark.opencl
def test_campaign_measures_verifies_and_records_failures(measured) -> None:
    _, store, report = measured
    rows = {(r["kernel"], r["sizes"]["n"]): r for r in _rows(store)}
    assert len(rows) == 7 and report.planned == 7 and report.measured == 4
    assert report.failed == {"verify_failed": 1, "compile_failed": 2}
    small, large = rows[("vector_copy", 4096)], rows[("vector_copy", 4194304)]
    assert small["status"] == large["status"] == "ok" and small["verified"] and large["verified"]
    assert large["time_s"] > 20 * small["time_s"]  # 1024x the bytes
    assert large["geometry"] == "4194304x1x1/256x1x1"
    assert rows[("axpy", 65536)]["status"] == "ok" and rows[("axpy", 65536)]["verified"]
    assert len(rows[("axpy", 1024)]["samples"]) == rows[("axpy", 1024)]["repeats"]
    wrong = rows[("wrong_reference", 1024)]
    assert wrong["status"] == "verify_failed" and wrong["time_s"] is None
    assert "max relative error" in wrong["error"] and wrong["max_rel_error"] > 1.0
    for n in (1024, 2048):
        broken = rows[("broken", n)]
        assert broken["status"] == "compile_failed" and "no_such_function" in broken["error"]
    assert report.wall_s >= report.kernel_s > 0 and report.compile_s > 0


@pytest.mark.opencl
def test_status_counts_done_failed_and_remaining(measured) -> None:
    _, store, _ = measured
    (status,) = campaign_status(store)
    assert status["campaign"] == "pocl" and status["planned"] == 7
    assert (status["done"], status["failed"], status["remaining"]) == (4, 3, 0)
    assert (status["compile_failed"], status["verify_failed"], status["run_failed"]) == (2, 1, 0)


@pytest.mark.opencl
def test_campaign_provenance_summarises_the_ok_points(measured, monkeypatch) -> None:
    from gpuperf.measure.export import campaign_provenance

    _, store, _ = measured
    monkeypatch.setenv("GPUPERF_TEST_SETTING", "7")
    record = campaign_provenance(store, "pocl", ("GPUPERF_TEST_SETTING", "GPUPERF_UNSET_SETTING"))
    ok = [r for r in _rows(store) if r["status"] == "ok"]
    assert record["ok_points"] == len(ok) == 4
    assert record["measured_from"] == min(r["measured_at"] for r in ok) <= record["measured_to"]
    assert record["environment"] == {"GPUPERF_TEST_SETTING": "7"}
    assert record["device"] and "timestamp" not in record["provenance"]
    assert len(record["timing_settings"]) == 1


@pytest.mark.opencl
def test_rerun_takes_nothing_twice_and_retry_failed_retakes_failures(measured) -> None:
    path, store, _ = measured
    before = _rows(store)
    again = run_campaign(load_campaign(path), store, progress=False)
    assert again.already_stored == 7 and again.measured == 0 and not again.failed
    assert _rows(store) == before
    retried = run_campaign(load_campaign(path), store, progress=False, retry_failed=True)
    assert retried.already_stored == 4 and retried.failed == {"verify_failed": 1, "compile_failed": 2}
    after = _rows(store)
    assert len(after) == 7
    assert [r for r in after if r["status"] == "ok"] == [r for r in before if r["status"] == "ok"]


@pytest.mark.opencl
def test_a_retry_stopped_before_it_retook_a_failure_keeps_that_failures_record(measured, monkeypatch) -> None:
    """--retry-failed forgot every failure before measuring anything: a run killed at once lost them all."""
    from gpuperf.measure import campaign as campaign_module

    path, store, _ = measured
    before = _rows(store)
    assert sum(r["status"] != "ok" for r in before) == 3

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(campaign_module, "_take", killed)
    with pytest.raises(KeyboardInterrupt):
        run_campaign(load_campaign(path), store, progress=False, retry_failed=True)
    assert _rows(store) == before


@pytest.mark.opencl
def test_a_campaign_timed_with_other_settings_does_not_reuse_the_stored_points(measured) -> None:
    path, store, _ = measured
    other = path.parent / "other.toml"  # another file, the same campaign name, longer timing
    other.write_text(path.read_text().replace("min_time_s = 0.01", "min_time_s = 0.02"))
    before = _rows(store)
    with pytest.raises(GpuperfError, match=r"campaign 'pocl' was timed there with other settings \(min_time_s"):
        run_campaign(load_campaign(other), store, progress=False)
    assert _rows(store) == before


@pytest.mark.opencl
def test_retry_failed_with_other_settings_is_refused_before_any_failure_is_forgotten(measured) -> None:
    path, store, _ = measured
    other = path.parent / "other_retry.toml"
    other.write_text(path.read_text().replace("min_time_s = 0.01", "min_time_s = 0.03"))
    before = _rows(store)
    assert sum(r["status"] != "ok" for r in before) == 3
    with pytest.raises(GpuperfError, match=r"campaign 'pocl' was timed there with other settings"):
        run_campaign(load_campaign(other), store, progress=False, retry_failed=True)
    assert _rows(store) == before  # the failures' records, errors and all, are still there


def _older_store(store: Path, copy: Path, forget: Callable[[dict], object]) -> Path:
    """A copy of ``store`` whose points' provenance lacks what ``forget`` removes, as an older gpuperf stored them."""
    with sqlite3.connect(store) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with sqlite3.connect(copy) as db:
        for row_id, text in db.execute("SELECT id, provenance FROM points").fetchall():
            provenance = json.loads(text)
            forget(provenance)
            db.execute("UPDATE points SET provenance=? WHERE id=?", (json.dumps(provenance), row_id))
    return copy


@pytest.mark.opencl
def test_points_stored_before_a_timing_setting_existed_count_as_taken_with_its_default(measured, tmp_path) -> None:
    path, store, _ = measured
    copy = _older_store(store, tmp_path / "old.sqlite", lambda provenance: provenance["timing"].pop("cycles"))
    again = run_campaign(load_campaign(path), copy, progress=False)
    assert again.already_stored == 7 and again.measured == 0


@pytest.mark.opencl
def test_a_campaign_rerun_with_another_seed_does_not_reuse_the_stored_points(measured) -> None:
    """Only [timing] was compared: points drawn from seed 0's inputs passed for seed 1's."""
    path, store, _ = measured
    other = path.parent / "other_seed.toml"
    other.write_text('seed = 1\n' + path.read_text())
    before = _rows(store)
    with pytest.raises(GpuperfError, match=r"campaign 'pocl' was measured there with seed 0, and .*other_seed.toml "
                                           r"has seed 1 .*or set seed = 0$"):
        run_campaign(load_campaign(other), store, progress=False, retry_failed=True)
    assert _rows(store) == before


@pytest.mark.opencl
def test_points_stored_before_their_seed_was_recorded_are_reused(measured, tmp_path) -> None:
    path, store, _ = measured
    copy = _older_store(store, tmp_path / "old.sqlite", lambda provenance: provenance.pop("seed"))
    other = path.parent / "old_seed.toml"
    other.write_text('seed = 1\n' + path.read_text())
    assert run_campaign(load_campaign(other), copy, progress=False).already_stored == 7


def _run_unverified_then_verifying(tmp_path: Path, name: str, *kernels: str) -> tuple[Path, Path]:
    """A campaign of ``kernels`` at n=1024 run with verify = false into a new store, then switched to
    verify = true: (campaign file, store)."""
    entries = "".join(f'[[kernels]]\nkernel = "{kernel}"\nsizes = [{{n = 1024}}]\n' for kernel in kernels)
    path = write_campaign(tmp_path, f'name = "{name}"\nverify = false\n{entries}')
    store = tmp_path / "store.sqlite"
    run_campaign(load_campaign(path), store, progress=False)
    path.write_text(path.read_text().replace("verify = false", "verify = true"))
    return path, store


@pytest.mark.opencl
def test_a_campaign_verifying_points_stored_unverified_is_refused(tmp_path: Path) -> None:
    """verify = true after a run with verify = false kept the unverified points as if checked."""
    path, store = _run_unverified_then_verifying(tmp_path, "checked", "vector_copy", "kernels.py:broken")
    before = _rows(store)
    with pytest.raises(GpuperfError, match=r"campaign 'checked' holds vector_copy at n=1024 measured there "
                                           r"unverified \(verify = false\), and .*campaign.toml verifies them; use "
                                           r"another store, .*or set verify = false$"):
        run_campaign(load_campaign(path), store, progress=False)
    assert _rows(store) == before
    path.write_text(path.read_text().replace("verify = true", "verify = false"))
    assert run_campaign(load_campaign(path), store, progress=False).already_stored == 2


@pytest.mark.opencl
def test_export_csv_and_parquet_in_dataset_shape(measured, tmp_path: Path) -> None:
    from gpuperf.datasets.schema import KEY_COLUMNS, check_dataset

    _, store, _ = measured
    csv = export_store(store, tmp_path / "points.csv", "csv")
    parquet = export_store(store, tmp_path / "points.parquet")
    for frame in (pd.read_csv(tmp_path / "points.csv"), pd.read_parquet(tmp_path / "points.parquet")):
        assert len(frame) == 7
        assert list(frame.columns[: len(KEY_COLUMNS)]) == list(KEY_COLUMNS)
        for column in ("n", "time_s", "time_s_min", "time_s_iqr", "repeats", "status", "verified", "error"):
            assert column in frame.columns
        check_dataset(frame, "export")
        ok = frame[frame["status"] == "ok"]
        assert len(ok) == 4 and (ok["time_s"] > 0).all()
        assert frame.loc[frame["status"] != "ok", "time_s"].isna().all()
        assert set(frame["kernel"]) == {"vector_copy", "axpy", "wrong_reference", "broken"}
        assert (frame["source"] == "gpuperf:pocl").all() and frame["device"].str.startswith("opencl:").all()
    stored = {(r["kernel"], r["sizes"]["n"]): r["time_s"] for r in _rows(store) if r["status"] == "ok"}
    exported = {(k, n): t for k, n, t in csv.loc[csv["status"] == "ok", ["kernel", "n", "time_s"]].itertuples(index=False)}
    assert exported == stored  # values exported unaltered
    assert parquet["n"].dtype == "Int64"
    # a failed point's counts stay whole numbers, and outputs found different are not verified
    assert parquet["repeats"].dtype == "Int64" and parquet["retries"].dtype == "Int64"
    assert "1000.0" not in (tmp_path / "points.csv").read_text().split("\n")[1]
    assert (parquet.loc[parquet["status"] == "verify_failed", "verified"] == False).all()  # noqa: E712
    # each point's provenance travels with it: the timer, the machine, the software and the inputs' seed
    assert parquet["input_seed"].dtype == "Int64" and (parquet["input_seed"] == 0).all()  # failed points too
    ok = parquet[parquet["status"] == "ok"]
    assert (ok["timer"] == "kernel_event").all() and ok["device_name"].str.len().gt(0).all()
    assert ok["host"].notna().all() and ok["gpuperf_version"].notna().all() and ok["driver_version"].notna().all()
    from gpuperf.features import extract_features

    expected = set(extract_features(get_kernel("vector_copy"), {"n": 4096}))
    assert expected and expected <= set(csv.columns)
    copy_rows = csv[csv["kernel"] == "vector_copy"]
    assert copy_rows[sorted(expected - {"n"})].notna().any(axis=None)


CLI = "import sys; from gpuperf.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.opencl
def test_killed_campaign_resumes_without_losing_or_repeating_points(tmp_path: Path) -> None:
    sizes = ", ".join(f"{{n = {256 * k}}}" for k in range(1, 41))
    path = write_campaign(tmp_path, f"""
        name = "resume"
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{sizes}]
    """)
    path.write_text(path.read_text().replace("min_time_s = 0.01", "min_time_s = 0.05"))
    store = tmp_path / "store.sqlite"
    process = subprocess.Popen([sys.executable, "-c", CLI, "campaign", "run", str(path), "--store", str(store),
                                "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 40
        count = 0
        while count < 3 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
            if store.exists():
                with sqlite3.connect(store) as db:
                    try:
                        count = db.execute("SELECT COUNT(*) FROM points").fetchone()[0]
                    except sqlite3.OperationalError:  # schema not yet created
                        count = 0
        assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL
    before = _rows(store)
    assert 3 <= len(before) < 40
    report = run_campaign(load_campaign(path), store, progress=False)
    assert report.already_stored == len(before) and report.measured == 40 - len(before)
    after = _rows(store)
    assert len(after) == 40
    assert sorted(r["sizes"]["n"] for r in after) == [256 * k for k in range(1, 41)]
    assert after[: len(before)] == before  # finished points kept as they were
    assert all(r["status"] == "ok" and r["verified"] for r in after)
    assert np.all(np.diff([r["id"] for r in after]) > 0)


def test_space_variants_skip_sizes_outside_their_assumptions() -> None:
    from gpuperf.errors import GpuperfError
    from gpuperf.measure.campaign import _resolved_sizes

    copy = get_kernel("vector_copy")
    table = {"sizes": [{"n": 1000}, {"n": 4096}]}
    skipped: list[str] = []
    assert _resolved_sizes(copy, table, "f.toml: spaces[0]", skipped) == [{"n": 4096}]
    assert skipped == ["vector_copy at n=1000: outside its assumptions"]
    with pytest.raises(GpuperfError, match=r"f.toml: spaces\[0\].sizes\[0\]: kernel 'vector_copy' has no size parameter q"):
        _resolved_sizes(copy, {"sizes": [{"q": 1}]}, "f.toml: spaces[0]", skipped)
    with pytest.raises(GpuperfError, match=r"f.toml: kernels\[0\].sizes\[0\]: .*violate its assumptions"):
        _resolved_sizes(copy, table, "f.toml: kernels[0]")
    # a size no variant could take is the file's error in spaces too, as in kernels (it was left out)
    for where in ("f.toml: spaces[0]", "f.toml: kernels[0]"):
        with pytest.raises(GpuperfError, match=rf"{re.escape(where)}.sizes\[0\]: size parameter n=0 must be a positive"):
            _resolved_sizes(copy, {"sizes": [{"n": 0}]}, where, [] if "spaces" in where else None)


def test_two_kernels_of_one_name_from_different_files_are_refused(tmp_path: Path) -> None:
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "kernels.py").write_text(USER_KERNELS)
    path = write_campaign(tmp_path, """
        [[kernels]]
        kernel = "kernels.py:axpy"
        sizes = [{n = 1024}]
        [[kernels]]
        kernel = "v2/kernels.py:axpy"
        sizes = [{n = 1024}]
    """)
    with pytest.raises(GpuperfError, match=r"campaign.toml: kernels '.*kernels.py:axpy' and '.*v2/kernels.py:axpy' are both called 'axpy'"):
        load_campaign(path)


@pytest.mark.opencl
def test_a_campaign_moved_with_its_kernels_and_store_resumes_there(tmp_path: Path) -> None:
    """The store keeps a user kernel's absolute path: a project folder moved (or copied) elsewhere was
    refused ('holds points of axpy from /old/kernels.py:axpy'), though nothing but its place changed."""
    old, body = tmp_path / "old", """
        name = "moved"
        [[kernels]]
        kernel = "kernels.py:axpy"
        sizes = [{n = 1024}]
    """
    old.mkdir()
    run_campaign(load_campaign(write_campaign(old, body)), old / "store.sqlite", progress=False)
    copied = tmp_path / "copied"
    shutil.copytree(old, copied)  # the old folder still there
    (copied / "kernels.py").write_text(USER_KERNELS + "\n# edited\n")  # another text beside the old one
    with pytest.raises(GpuperfError, match=r"campaign 'moved' holds points of 'axpy' from '.*/old/kernels.py:axpy'"):
        run_campaign(load_campaign(copied / "campaign.toml"), copied / "store.sqlite", progress=False)
    (copied / "kernels.py").write_text(USER_KERNELS)  # the same text: a copy
    assert run_campaign(load_campaign(copied / "campaign.toml"), copied / "store.sqlite", progress=False).measured == 0
    moved = tmp_path / "moved"
    old.rename(moved)  # the stored file gone: the folder moved with it
    (moved / "campaign.toml").write_text(textwrap.dedent(body.replace("{n = 1024}", "{n = 1024}, {n = 2048}")) + TIMING)
    report = run_campaign(load_campaign(moved / "campaign.toml"), moved / "store.sqlite", progress=False)
    assert report.measured == 1  # the stored point kept, the new size measured
    again = run_campaign(load_campaign(moved / "campaign.toml"), moved / "store.sqlite", progress=False)
    assert again.measured == 0  # and every later run resumes too
    assert {row["kernel_spec"] for row in _rows(moved / "store.sqlite")} == {f"{moved / 'kernels.py'}:axpy"}
    exported = export_store(moved / "store.sqlite", tmp_path / "moved.csv")  # features from the file where it is
    assert "global_loads" in exported.columns and exported["global_loads"].notna().all()


@pytest.mark.opencl
def test_a_kernel_of_a_stored_name_from_another_file_is_refused_in_a_later_run(tmp_path: Path) -> None:
    """Run 1 stores axpy from kernels.py; run 2 of the same campaign names axpy from v2/kernels.py:
    its points would pass for the stored ones, so it is refused before anything is measured."""
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "kernels.py").write_text(USER_KERNELS)
    body = """
        name = "same"
        [[kernels]]
        kernel = "{file}:axpy"
        sizes = [{{n = 1024}}]
    """
    store = tmp_path / "store.sqlite"
    run_campaign(load_campaign(write_campaign(tmp_path, body.format(file="kernels.py"), "one.toml")), store,
                 progress=False)
    other = load_campaign(write_campaign(tmp_path, body.format(file="v2/kernels.py"), "two.toml"))
    with pytest.raises(GpuperfError, match=r"campaign 'same' holds points of 'axpy' from '.*/kernels.py:axpy', and "
                                           r".*two.toml names '.*/v2/kernels.py:axpy' by the same name"):
        run_campaign(other, store, progress=False)
    assert len(_rows(store)) == 1


@pytest.mark.parametrize("cycles", [1, 3])
@pytest.mark.opencl
def test_a_point_that_loses_the_device_is_stored_and_stops_the_campaign(tmp_path: Path, monkeypatch, cycles) -> None:
    """CUDA's sticky errors (an illegal address) make every later call fail: the campaign stores the
    culprit as failed and stops with one error, instead of storing every later point as failed;
    run again, it goes on with the others."""
    from gpuperf.measure.devices import DeviceLost
    from gpuperf.measure.opencl import OpenCLLaunch

    path = write_campaign(tmp_path, """
        name = "lost"
        [[kernels]]
        kernel = "kernels.py:axpy"
        sizes = [{n = 1024}, {n = 2048}]
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 1024}]
    """)
    path.write_text(path.read_text() + f"cycles = {cycles}\n")
    if cycles > 1:
        path.write_text(path.read_text().replace('name = "lost"', 'name = "lost"\ninterleave = "campaign"'))
    run_many = OpenCLLaunch.run_many

    def faulting(self, count):
        if self.compiled.kernel.name == "axpy" and self.values["n"] == 2048:
            raise DeviceLost("kernel 'axpy' failed to run: CUDARuntimeError: cudaErrorIllegalAddress")
        return run_many(self, count)

    monkeypatch.setattr(OpenCLLaunch, "run_many", faulting)
    store = tmp_path / "store.sqlite"
    with pytest.raises(GpuperfError, match=r"axpy at n=2048: DeviceLost: .*cudaErrorIllegalAddress\. After this "
                                           r"error the device fails every later call .* stored as run_failed"):
        run_campaign(load_campaign(path), store, progress=False)
    stored = {(r["kernel_name"], r["sizes"]["n"]): r["status"] for r in _rows(store)}
    assert stored[("axpy", 2048)] == "run_failed" and "run_failed" not in {s for k, s in stored.items() if k != ("axpy", 2048)}
    monkeypatch.setattr(OpenCLLaunch, "run_many", run_many)  # a fresh process: the device works again
    report = run_campaign(load_campaign(path), store, progress=False)
    assert report.failed == {}
    assert {(r["kernel_name"], r["sizes"]["n"]): r["status"] for r in _rows(store)} == {
        ("axpy", 1024): "ok", ("axpy", 2048): "run_failed", ("vector_copy", 1024): "ok"}


@pytest.mark.opencl
def test_a_second_run_on_a_store_being_measured_into_is_refused(tmp_path: Path) -> None:
    """Two runs at once would time their points on a shared, loaded device; the second is refused,
    naming the process that holds the store, and runs once the first has ended."""
    path = write_campaign(tmp_path, """
        name = "one_at_a_time"
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 4096}]
    """)
    store = tmp_path / "store.sqlite"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from gpuperf.measure.store import measuring_into\n"
         f"with measuring_into({str(store)!r}):\n    print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    link = tmp_path / "link.sqlite"
    link.symlink_to(store)  # the same store by another name takes the same lock
    try:
        assert holder.stdout.readline() == "held\n"
        for name in (store, link):
            with pytest.raises(GpuperfError, match=rf"another campaign run \(process {holder.pid}\) is measuring into it"):
                run_campaign(load_campaign(path), name, progress=False)
        assert _rows(store) == []
    finally:
        holder.communicate("")
    assert run_campaign(load_campaign(path), store, progress=False).measured == 1


@pytest.mark.opencl
def test_a_store_on_a_file_system_without_locks_still_runs(tmp_path: Path, monkeypatch) -> None:
    """Some network file systems (Lustre, NFS mounted without locks) refuse flock: runs go on unguarded."""
    import errno
    import fcntl

    def no_locks(handle, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    path = write_campaign(tmp_path, """
        name = "no_locks"
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 4096}]
    """)
    assert run_campaign(load_campaign(path), tmp_path / "store.sqlite", progress=False).measured == 1


def test_sizes_a_campaign_leaves_out_are_named_with_the_defaults_they_take(tmp_path: Path, capsys) -> None:
    """Before, a kernel listed with n only was measured at the default m = 4096 without a word."""
    from gpuperf.cli import main

    path = write_campaign(tmp_path, """
        [[kernels]]
        kernel = "jacobi2d_5pt"
        sizes = [{n = 256}, {n = 256, m = 256}]
        [[spaces]]
        space = "jacobi2d_5pt"
        limit = 3
        sizes = [{n = 512}]
    """)
    campaign = load_campaign(path)
    assert campaign.defaulted == (
        f"{path}: kernels[0].sizes[0]: m=4096 (not given) from jacobi2d_5pt's defaults",
        f"{path}: spaces[0].sizes[0]: m=4096 (not given) from jacobi2d_5pt's defaults",  # once for its 3 variants
    )
    assert main(["campaign", "run", str(path), "--store", str(tmp_path / "s.sqlite"), "--device", "nowhere:9"]) == 2
    assert f"note: {path}: kernels[0].sizes[0]: m=4096 (not given)" in capsys.readouterr().err


def test_a_campaign_with_an_empty_name_is_refused(tmp_path: Path) -> None:
    path = write_campaign(tmp_path, """
        name = " "
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 1024}]
    """)
    with pytest.raises(GpuperfError, match=r"campaign.toml: name is empty"):
        load_campaign(path)


def test_one_catalog_variant_typed_two_ways_is_one_kernel(tmp_path: Path) -> None:
    """Its parameters in another order were refused as two kernels called by one name (and a catalog
    variant cannot be renamed)."""
    path = write_campaign(tmp_path, """
        [[kernels]]
        kernel = "jacobi2d_5pt[unroll=1,local_x=4,local_y=1,outputs_y=1,prefetch=0]"
        sizes = [{n = 256, m = 256}]
        [[kernels]]
        kernel = "jacobi2d_5pt[local_x=4,local_y=1,outputs_y=1,prefetch=0,unroll=1]"
        sizes = [{n = 512, m = 512}]
    """)
    assert len(load_campaign(path).points("cpu")) == 2


@pytest.mark.parametrize(("sizes", "message"), [
    ('sizes = [{n = "4096"}]', r"kernels\[0\].sizes\[0\].n: expected an integer, got the string '4096'"),
    ("sizes = [{n = true}]", r"kernels\[0\].sizes\[0\].n: expected an integer, got true"),
    ('product = {n = ["4096"]}', r"kernels\[0\].product.n: expected an integer, got the string '4096'"),
    ("product = {}", r"kernels\[0\]: missing sizes \(the product is empty\)"),
])
def test_a_size_that_is_no_toml_integer_is_refused_by_its_key(tmp_path: Path, sizes: str, message: str) -> None:
    path = write_campaign(tmp_path, f"""
        [[kernels]]
        kernel = "vector_copy"
        {sizes}
    """)
    with pytest.raises(GpuperfError, match=message):
        load_campaign(path)


def test_a_point_listed_twice_is_noted(tmp_path: Path) -> None:
    """The second listing (verify = false here) was dropped without a word."""
    path = write_campaign(tmp_path, """
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 4096}, {n = 8192}]
        [[kernels]]
        kernel = "vector_copy"
        verify = false
        sizes = [{n = 4096}]
    """)
    with pytest.warns(UserWarning, match="vector_copy at n=4096 listed more than once: each is measured once, with "
                                         "the settings of its first listing"):
        campaign = load_campaign(path)
    assert len(campaign.points("cpu")) == 2


def test_a_campaign_file_is_read_as_utf8_whatever_the_locale(tmp_path):
    """TOML is UTF-8: under a non-UTF-8 locale a comment 'Größe' made the file 'not valid TOML'."""
    import subprocess
    import sys

    path = tmp_path / "campaign.toml"
    path.write_text('# Größe: sizes\nname = "größen"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 1024}]\n',
                    encoding="utf-8")
    code = "import sys; from gpuperf.measure import load_campaign; print(ascii(load_campaign(sys.argv[1]).name))"
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ascii("größen")


@pytest.mark.opencl
def test_an_export_reports_its_progress_and_gives_a_point_measured_again_the_same_features(measured, tmp_path):
    """An export of 80,000 points ran a minute with no progress shown; features were recomputed per point."""
    _, store, _ = measured
    seen: list[tuple[int, int]] = []
    frame = export_store(store, tmp_path / "points.csv", progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (len(frame), len(frame))
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.measure.export import _Features, geometry_text

    calls = []
    features = _Features(lambda kernel, sizes, gpu=None: calls.append(sizes) or {"flops": 1.0})
    geometry = geometry_text(*get_kernel("vector_copy").launch({"n": 4096}))
    assert features("vector_copy", {"n": 4096}, None, geometry) == {"flops": 1.0}
    assert features("vector_copy", {"n": 4096}, None, geometry) == {"flops": 1.0} and len(calls) == 1


@pytest.mark.opencl
def test_an_export_gives_each_point_its_own_features_and_the_campaigns_seed(tmp_path: Path) -> None:
    """Two points of one launch geometry (k is a loop trip, not a launch size) have their own counts."""
    path = write_campaign(tmp_path, """
        name = "seeded"
        seed = 7
        [[kernels]]
        kernel = "arith_f32_add"
        sizes = [{n = 1024, k = 8}, {n = 1024, k = 512}]
    """)
    store = tmp_path / "store.sqlite"
    run_campaign(load_campaign(path), store, progress=False)
    frame = store_table(store).set_index("k")
    assert (frame["status"] == "ok").all() and (frame["input_seed"] == 7).all()
    assert frame.loc[512, "flops"] == 64 * frame.loc[8, "flops"] > 0


def test_a_whole_float_size_skips_the_variants_it_does_not_fit_as_the_integer_does(tmp_path) -> None:
    """sizes = [{n = 32.0}] in a [[spaces]] table aborted the campaign on the variant whose tile does
    not divide 32, where n = 32 skips it (32.0 measures as 32 everywhere else)."""
    (tmp_path / "twice.py").write_text(
        "import loopy as lp\nimport numpy as np\nfrom gpuperf.kernels.space import VariantSpace\n\n\n"
        "def _twice(config):\n"
        "    program = lp.make_kernel('{[i]: 0<=i<n}', 'b[i] = 2*a[i]', [lp.GlobalArg('a,b', np.float32, shape='n'),"
        " '...'], assumptions=f\"n >= 1 and n mod {config['local_x']} = 0\", name='twice', lang_version=(2018, 2))\n"
        "    return lp.split_iname(program, 'i', config['local_x'], outer_tag='g.0', inner_tag='l.0')\n\n\n"
        "def space():\n"
        "    return VariantSpace(name='twice', parameters={'local_x': [16, 32, 64]}, defaults={'local_x': 16},\n"
        "                        check=lambda c: None, make=_twice)\n")
    loaded = {}
    for size in ("32", "32.0"):
        path = tmp_path / f"c{size}.toml"
        path.write_text(f'[[spaces]]\nspace = "twice.py:space"\nsizes = [{{n = {size}}}]\n')
        loaded[size] = load_campaign(path)
    for size, campaign in loaded.items():
        assert [entry.kernel.key for entry in campaign.entries] == ["twice[local_x=16]", "twice[local_x=32]"], size
        assert [list(entry.sizes) for entry in campaign.entries] == [[{"n": 32}], [{"n": 32}]], size
        assert len(campaign.skipped) == 1 and campaign.skipped[0].startswith("twice[local_x=64] at n=32"), size


@pytest.mark.opencl
def test_points_no_verification_could_check_do_not_stop_a_verifying_rerun(tmp_path: Path) -> None:
    """A failed point, and one of a kernel without a reference, are stored unverified whatever the
    setting: a rerun with verify = true takes them as they are."""
    path, store = _run_unverified_then_verifying(tmp_path, "unverifiable", "kernels.py:broken",
                                                 "kernels.py:no_reference")
    assert run_campaign(load_campaign(path), store, progress=False).measured == 0


def test_a_yaml_campaign_file_is_refused_as_yaml_not_as_bad_toml(tmp_path):
    """A .yaml campaign got 'not valid TOML (Expected '=' after a key ...)'."""
    path = tmp_path / "c.yaml"
    path.write_text("name: t\nkernels:\n  - kernel: vector_copy\n")
    with pytest.raises(GpuperfError, match=r"c\.yaml: a campaign file is TOML \(YAML is not read\); write it as c\.toml"):
        load_campaign(path)


@pytest.mark.parametrize("name", ["c.yml", "c.YAML"])
def test_a_yml_or_upper_case_yaml_campaign_file_is_refused_as_yaml_too(tmp_path, name):
    path = tmp_path / name
    path.write_text("name: t\nkernels:\n  - kernel: vector_copy\n")
    with pytest.raises(GpuperfError, match=r"a campaign file is TOML \(YAML is not read\); write it as c\.toml"):
        load_campaign(path)
