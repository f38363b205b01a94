"""Campaign files, their store and export, device names, and variant spaces: behaviour that mutation
testing of ``gpuperf.measure.campaign``, ``store``, ``export``, ``devices`` and ``gpuperf.kernels.space``
/ ``calibration`` / ``testsuite`` / ``parallel_loops`` showed untested. Devices, clocks and launches are
faked (no kernel is timed); each expected value is worked out by hand in a comment."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpuperf.errors import GpuperfError
from gpuperf.measure import campaign as campaign_module
from gpuperf.measure.campaign import load_campaign, run_campaign
from gpuperf.measure.store import Store

USER_KERNELS = '''
import loopy as lp
import numpy as np
from gpuperf.kernels.kernel import Kernel


def _program(name):
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions="n>=64 and n mod 64 = 0", name=name, lang_version=(2018, 2))
    return lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")


def vector_copy():
    return Kernel("vector_copy", _program("vector_copy"), ("n",), reference=lambda x, s: {"b": x["a"].copy()})


def axpy():
    return Kernel("axpy", _program("axpy"), ("n",), reference=lambda x, s: {"b": x["a"].copy()})


def axpy_again():
    return Kernel("axpy", _program("axpy"), ("n",), reference=lambda x, s: {"b": x["a"].copy()})
'''


def _campaign_file(folder: Path, body: str, name: str = "c.toml") -> Path:
    (folder / "kernels.py").write_text(USER_KERNELS)
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return path


def _fake_device(compiled: list | None = None) -> SimpleNamespace:
    """A device that records what it is asked to compile and measures nothing."""
    compiled = [] if compiled is None else compiled
    return SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compiled.append, provenance=dict)


# -- the campaign file ------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "message"), [
    ("seed = -1", r"seed must not be negative, not -1"),          # the boundary: -1 is the first refused
    ("seed = true", r"seed: expected an integer, got true"),      # TOML's true is no integer (bool is int in Python)
])
def test_a_negative_or_boolean_seed_is_refused(tmp_path: Path, line: str, message: str) -> None:
    path = _campaign_file(tmp_path, f'{line}\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{{n = 4096}}]\n')
    with pytest.raises(GpuperfError, match=message):
        load_campaign(path)
    path.write_text('seed = 0\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n')
    assert load_campaign(path).seed == 0  # 0 is the smallest seed taken


def test_a_space_limit_of_zero_is_refused(tmp_path: Path) -> None:
    path = _campaign_file(tmp_path, '[[spaces]]\nspace = "stencil2d"\nlimit = 0\nsizes = [{n = 64, m = 64}]\n')
    with pytest.raises(GpuperfError, match=r"spaces\[0\]\.limit: expected a positive integer, got 0"):
        load_campaign(path)


def test_an_empty_product_list_is_refused_even_beside_a_sizes_list(tmp_path: Path) -> None:
    """``product = {n = []}`` has no combinations: a mistake, not a table to drop silently."""
    path = _campaign_file(tmp_path, '[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\nproduct = {n = []}\n')
    with pytest.raises(GpuperfError, match=r"kernels\[0\]\.product: expected a table of non-empty lists"):
        load_campaign(path)


def test_a_product_size_the_kernel_refuses_is_named_as_the_products(tmp_path: Path) -> None:
    """sizes holds one set (index 0); the product's set comes after it and is named ``.product``, not
    ``.sizes[1]`` (vector_copy takes multiples of 256 only: 1000 is refused)."""
    path = _campaign_file(tmp_path, '[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n'
                                    'product = {n = [1000]}\n')
    with pytest.raises(GpuperfError, match=r"c\.toml: kernels\[0\]\.product: kernel 'vector_copy': sizes n=1000 "
                                           r"violate its assumptions"):
        load_campaign(path)


def test_a_users_kernel_named_as_a_catalog_kernel_is_refused(tmp_path: Path) -> None:
    """The store keys points by kernel name: the catalog's vector_copy and a user's kernel called
    vector_copy would pass for each other."""
    path = _campaign_file(tmp_path, """
        [[kernels]]
        kernel = "vector_copy"
        sizes = [{n = 4096}]
        [[kernels]]
        kernel = "kernels.py:vector_copy"
        sizes = [{n = 4096}]
    """)
    with pytest.raises(GpuperfError, match=r"kernels 'vector_copy' and '.*kernels\.py:vector_copy' are both called "
                                           r"'vector_copy'"):
        load_campaign(path)


def test_a_stored_kernel_from_another_function_of_a_gone_file_of_the_same_name_is_refused(
        tmp_path: Path, monkeypatch) -> None:
    """Stored: 'axpy' from gone/kernels.py:axpy (that file no longer exists). The campaign names
    kernels.py:axpy_again, whose kernel is also called 'axpy', in a file of the same name beside it.
    A moved file keeps its function's name: another function is another kernel, so the run is refused
    before anything is compiled."""
    folder = tmp_path / "here"
    folder.mkdir()
    path = _campaign_file(folder, 'name = "c"\n[[kernels]]\nkernel = "kernels.py:axpy_again"\nsizes = [{n = 64}]\n')
    with Store(tmp_path / "s.db") as store:
        store.add({"campaign": "c", "kernel": "axpy", "sizes": {"n": 64}, "device": "fake:0", "geometry": "64x1x1/64x1x1",
                   "kernel_name": "axpy", "variant": "", "variant_params": {},
                   "kernel_spec": f"{tmp_path / 'gone' / 'kernels.py'}:axpy", "status": "ok", "time_s": 1e-3})
    compiled: list = []
    monkeypatch.setattr(campaign_module, "open_device", lambda name: _fake_device(compiled))
    with pytest.raises(GpuperfError, match=r"campaign 'c' holds points of 'axpy' from '.*gone/kernels\.py:axpy'"):
        run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    assert compiled == []


def test_a_space_whose_every_variant_refuses_the_sizes_is_named_so(tmp_path: Path) -> None:
    """stencil2d's variants assume n and m are multiples of 16 (at least 16): at n = m = 2 both of
    its first two variants are left out, nothing is left to measure, and the error says it is the
    space's sizes, not a missing [[kernels]] table."""
    path = _campaign_file(tmp_path, '[[spaces]]\nspace = "stencil2d"\nlimit = 2\nsizes = [{n = 2, m = 2}]\n')
    with pytest.raises(GpuperfError, match=r"no points to measure: every variant of its spaces breaks its "
                                           r"assumptions at the sizes given \(e\.g\. stencil2d\["):
        load_campaign(path)


# -- interleaved groups on a fake device -------------------------------------------------------------
def _fake_measurement(sizes: dict, kernel_total_s: float = 0.5):
    from gpuperf.measure.timing import Measurement

    return Measurement(kernel="vector_copy", sizes=dict(sizes), device="fake:0", time_s=1e-3, time_s_min=1e-3,
                       time_s_iqr=0.0, repeats=4, retries=0, stable=True, verified=True, max_rel_error=0.0,
                       compile_s=0.0, first_launch_s=0.0, kernel_total_s=kernel_total_s, round_wall_s=1.0,
                       global_size=(sizes["n"], 1, 1), local_size=(256, 1, 1), samples=(1e-3, 1e-3),
                       provenance={"timer": "kernel_event"})


INTERLEAVED = """
name = "c"
interleave = "campaign"
[timing]
cycles = 2
[[kernels]]
kernel = "vector_copy"
sizes = [{n = 4096}, {n = 8192}]
"""


@pytest.fixture
def fake_interleaved(monkeypatch) -> list[int]:
    """run_campaign on a fake device whose interleaved groups 'measure' at once; the sizes of the
    groups timed are returned, in order."""
    groups: list[int] = []

    def measure_interleaved(variants, device, settings, seed, done=None, on_cycle=None):
        groups.append(len(variants))
        return [_fake_measurement(v.sizes) for v in variants]

    monkeypatch.setattr(campaign_module, "open_device", lambda name: _fake_device())
    monkeypatch.setattr(campaign_module, "measure_interleaved", measure_interleaved)
    return groups


def test_a_point_that_fills_the_groups_memory_exactly_is_not_too_large_alone(
        tmp_path: Path, fake_interleaved: list[int]) -> None:
    """vector_copy holds 8 bytes per element: n = 4096 takes 32,768 bytes, n = 8192 65,536. Under a
    limit of 65,536 the two (98,304) are cut into one group each; the second fits the limit exactly,
    so no point 'needs more than that by itself'."""
    path = _campaign_file(tmp_path, INTERLEAVED)
    with pytest.warns(UserWarning) as notes:
        report = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False, memory_limit=65_536)
    (note,) = [str(n.message) for n in notes if "interleaved groups" in str(n.message)]
    assert note.endswith("timed in 2 interleaved groups of 1, 1 points, in file order; points of different groups "
                         "do not share cycles")
    assert fake_interleaved == [1, 1] and report.groups == 2 and report.groups_cut == 1
    with pytest.warns(UserWarning, match=r"; 1 point\(s\) need more than that by themselves"):  # one byte less
        run_campaign(load_campaign(path), tmp_path / "t.db", progress=False, memory_limit=65_535)


def test_rerunning_a_finished_campaign_scope_group_times_nothing(tmp_path: Path, fake_interleaved: list[int]) -> None:
    """Every point stored: no group at all is left to time (not one empty group)."""
    path = _campaign_file(tmp_path, INTERLEAVED)
    run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    again = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    assert fake_interleaved == [2]
    assert (again.groups, again.measured, again.already_stored) == (0, 0, 2)
    assert campaign_module.interleaved_groups([], "campaign") == []


# -- the store -------------------------------------------------------------------------------------
def _row(n: int, status: str = "ok", campaign: str = "hand", **extra) -> dict:
    """A hand-written point of vector_copy at n (as test_measure_store writes them)."""
    row = {"campaign": campaign, "kernel": "vector_copy", "sizes": {"n": n}, "device": "fake:0",
           "geometry": f"{n}x1x1/256x1x1", "kernel_name": "vector_copy", "variant": "", "variant_params": {},
           "kernel_spec": "vector_copy", "status": status, "provenance": {"device_name": "Fake"}}
    if status == "ok":
        row.update(time_s=n * 1e-9, repeats=5, verified=True)
    return {**row, **extra}


def test_status_counts_every_kind_of_failure_and_never_a_negative_remainder(tmp_path: Path) -> None:
    """Planned 2 (no plan of points recorded): 1 ok + 1 compile_failed + 1 verify_failed + 1
    run_failed are 4 taken, so 3 failed, and 2 - 4 remaining is shown as 0; without recorded plan
    points nothing counts as outside the plan (None, not 0)."""
    with Store(tmp_path / "s.db") as store:
        store.add(_row(256))
        store.add(_row(512, "compile_failed", error="x"))
        store.add(_row(768, "verify_failed", error="y"))
        store.add(_row(1024, "run_failed", error="z"))
        store.set_plan("hand", "hand.toml", "fake:0", 2)
        (status,) = store.status()
    assert (status["done"], status["failed"], status["compile_failed"], status["verify_failed"],
            status["run_failed"]) == (1, 3, 1, 1, 1)
    assert status["remaining"] == 0 and status["outside_plan"] is None


def test_a_campaign_with_points_but_no_plan_is_listed_and_exported(tmp_path: Path) -> None:
    """Rows written without set_plan (e.g. a bundled store's) still name their campaign."""
    from gpuperf.measure import store_table

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, campaign="loose"))
        assert store.campaigns() == ["loose"]
        (status,) = store.status()
    assert (status["campaign"], status["planned"], status["done"], status["remaining"]) == ("loose", None, 1, None)
    assert list(store_table(tmp_path / "s.db", campaign="loose", features=False)["kernel"]) == ["vector_copy"]


def test_an_empty_wal_file_beside_a_store_on_read_only_media_does_not_stop_reading_it(
        tmp_path: Path, monkeypatch) -> None:
    """An empty -wal holds no points: the store is read as it is (only a -wal with points is refused)."""
    import sqlite3

    from gpuperf.measure import store as store_module

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256))
    (tmp_path / "s.db-wal").write_bytes(b"")
    connect = sqlite3.connect

    def refusing_read_only(database, *args, **kwargs):  # as on read-only media (see test_measure_store)
        if "mode=ro" in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(store_module.sqlite3, "connect", refusing_read_only)
    with Store(tmp_path / "s.db", create=False) as store:
        assert [r["sizes"] for r in store.rows()] == [{"n": 256}]


def test_a_failed_point_retaken_successfully_replaces_its_failure(tmp_path: Path, monkeypatch) -> None:
    """First run: the build fails, the point is stored as compile_failed. --retry-failed on a device
    that builds it: the point is measured and its ok row replaces the failure (one row, ok)."""
    from gpuperf.measure.devices import CompileFailed

    builds = iter([CompileFailed("no compiler today"), SimpleNamespace(compile_s=0.0)])

    def compile_(kernel):
        built = next(builds)
        if isinstance(built, Exception):
            raise built
        return built

    device = SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compile_, provenance=dict)
    monkeypatch.setattr(campaign_module, "open_device", lambda name: device)
    monkeypatch.setattr(campaign_module, "measure_compiled",
                        lambda compiled, device, sizes, verify, settings, seed, shared: _fake_measurement(sizes))
    path = _campaign_file(tmp_path, 'name = "c"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n')
    first = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    assert first.failed == {"compile_failed": 1}
    again = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False, retry_failed=True)
    assert again.measured == 1 and again.already_stored == 0
    with Store(tmp_path / "s.db", create=False) as store:
        assert [(r["status"], r["time_s"]) for r in store.rows("c")] == [("ok", 1e-3)]


def test_points_stored_without_timing_settings_do_not_count_as_timed_another_way(tmp_path: Path) -> None:
    """A point whose provenance records no timing (a hand-written or imported row) has no settings
    to compare: timing_settings lists only the recorded ones."""
    with Store(tmp_path / "s.db") as store:
        store.add(_row(256))  # provenance {"device_name": "Fake"}: no timing
        store.add(_row(512, provenance={"timing": {"cycles": 3}}))
        assert store.timing_settings("hand") == [{"cycles": 3}]


def test_status_of_an_empty_file_says_it_is_no_store_without_writing_it(tmp_path: Path) -> None:
    from gpuperf.measure import campaign_status

    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(GpuperfError, match=r"store '.*empty\.db' is not a gpuperf measurement store \(it is empty\)"):
        campaign_status(tmp_path / "empty.db")
    assert (tmp_path / "empty.db").read_bytes() == b""


def test_a_file_with_the_layout_version_and_only_some_of_the_tables_is_no_store(tmp_path: Path) -> None:
    """user_version 1 and a campaigns table, but no points table: not a store (both are needed)."""
    import sqlite3

    with sqlite3.connect(tmp_path / "half.db") as db:
        db.execute("CREATE TABLE campaigns (name TEXT)")
        db.execute("PRAGMA user_version=1")
    db.close()
    with pytest.raises(GpuperfError, match=r"is not a gpuperf measurement store \(it holds other tables: campaigns\)"):
        Store(tmp_path / "half.db", create=False)


# -- export ----------------------------------------------------------------------------------------
def test_export_keeps_whole_columns_integers_fractions_floats_and_a_failed_verification_false(tmp_path: Path) -> None:
    """A tunable parameter 0.5 / 2.0 is no integer column; the seed (0, 7) is; a verify_failed point
    compared its outputs and found them different: verified False (stored empty), an ok one True, a
    run_failed one empty."""
    from gpuperf.measure import store_table

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, variant="f=0.5", variant_params={"f": 0.5}, provenance={"seed": 0}))
        store.add(_row(512, variant="f=2.0", variant_params={"f": 2.0}, provenance={"seed": 7}))
        store.add(_row(768, "verify_failed", error="differs", provenance={"seed": 7}))
        store.add(_row(1024, "run_failed", error="boom", provenance={"seed": 7}))
    frame = store_table(tmp_path / "s.db", features=False)
    assert frame["f"].dtype == float and frame["f"].tolist()[:2] == [0.5, 2.0]
    assert str(frame["input_seed"].dtype) == "Int64" and frame["input_seed"].tolist() == [0, 7, 7, 7]
    assert frame["verified"].tolist()[:3] == [True, True, False] and frame["verified"].isna().tolist()[3]


def test_a_variant_parameter_of_a_sizes_name_keeps_the_size(tmp_path: Path) -> None:
    """A space whose parameter is called n like its size: the n column is the size measured at."""
    from gpuperf.measure import store_table

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, variant="n=4", variant_params={"n": 4}))
    assert store_table(tmp_path / "s.db", features=False)["n"].tolist() == [256]


def test_a_parquet_export_writes_a_parameter_of_numbers_and_names_as_text(tmp_path: Path) -> None:
    """tile = 4 in one point and "auto" in another: Parquet holds one type per column, so both become
    text ("4", "auto"); a .pq name is Parquet too."""
    import pandas as pd

    from gpuperf.measure import export_store

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, variant="tile=4", variant_params={"tile": 4}))
        store.add(_row(512, variant="tile=auto", variant_params={"tile": "auto"}))
    export_store(tmp_path / "s.db", tmp_path / "out.pq", features=False)
    assert pd.read_parquet(tmp_path / "out.pq")["tile"].tolist() == ["4", "auto"]


def test_an_export_named_for_one_format_and_asked_for_another_is_refused(tmp_path: Path) -> None:
    from gpuperf.measure import export_store

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256))
    with pytest.raises(GpuperfError, match=r"--out .*out\.csv: a csv name for a parquet table"):
        export_store(tmp_path / "s.db", tmp_path / "out.csv", fmt="parquet", features=False)
    assert not (tmp_path / "out.csv").exists()


def test_campaign_provenance_covers_the_ok_points_only_without_a_points_own_cycle_group(tmp_path: Path) -> None:
    """Two ok points (measured 2024-01-02 and 2024-03-04) and a failure measured later (2025): the
    dates span the ok points; the first point's provenance loses its own timestamp and cycle group."""
    from gpuperf.measure.export import campaign_provenance

    timing = {"cycles": 2}
    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, measured_at="2024-03-04T00:00:00+00:00",
                       provenance={"device_name": "Fake", "timing": timing, "timestamp": "t", "cycle_group": "g1"}))
        store.add(_row(512, measured_at="2024-01-02T00:00:00+00:00",
                       provenance={"device_name": "Fake", "timing": timing, "cycle_group": "g2"}))
        store.add(_row(768, "run_failed", measured_at="2025-01-01T00:00:00+00:00",
                       provenance={"device_name": "Fake", "timing": {"cycles": 1}}))
    summary = campaign_provenance(tmp_path / "s.db", "hand")
    assert summary["ok_points"] == 2 and summary["timing_settings"] == [timing]
    assert (summary["measured_from"], summary["measured_to"]) == ("2024-01-02T00:00:00+00:00",
                                                                  "2024-03-04T00:00:00+00:00")
    assert summary["provenance"] == {"device_name": "Fake", "timing": timing}


def test_campaign_provenance_names_the_architecture_so_and_keeps_the_points_host(tmp_path: Path) -> None:
    """Its top-level host held platform.machine() (x86_64), an architecture, beside the points' host name."""
    import platform

    from gpuperf.measure.export import campaign_provenance

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, provenance={"device_name": "Fake", "host": "lab-node-3"}))
    summary = campaign_provenance(tmp_path / "s.db", "hand")
    assert summary["architecture"] == platform.machine() and "host" not in summary
    assert summary["provenance"]["host"] == "lab-node-3"


def test_a_feature_of_a_sizes_name_does_not_replace_the_size(tmp_path: Path, monkeypatch) -> None:
    """Static features join the row after its sizes and parameters: a feature that happens to be
    called n (or like a parameter) leaves the measured n as it is; the others are added."""
    from gpuperf.measure import export, store_table

    monkeypatch.setattr(export, "_feature_function", lambda: lambda kernel, sizes, gpu=None: {"n": -1, "width": 3})
    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, variant="width=8", variant_params={"width": 8}, geometry="256x1x1/256x1x1"))
    frame = store_table(tmp_path / "s.db")
    assert (frame["n"].tolist(), frame["width"].tolist()) == ([256], [8])


def test_a_point_timed_alone_exports_no_cycle_times(tmp_path: Path) -> None:
    """With cycles = 1 a point's samples are its launches, which pair with no other point's: its
    cycle_times_s and cycle_group are empty; with cycles = 2 they are its round medians."""
    from gpuperf.measure import store_table

    with Store(tmp_path / "s.db") as store:
        store.add(_row(256, samples=[1.0, 2.0], provenance={"timing": {"cycles": 1}}))
        store.add(_row(512, samples=[3.0, 4.0], provenance={"timing": {"cycles": 2}, "cycle_group": "g"}))
    frame = store_table(tmp_path / "s.db", features=False, cycle_times=True)
    assert frame["cycle_times_s"].tolist() == ["", "3.0;4.0"] and frame["cycle_group"].tolist() == ["", "g"]


# -- device names and failures ---------------------------------------------------------------------
def test_an_exception_raised_while_handling_a_lost_device_still_lost_it() -> None:
    """Cleanup code that fails in an ``except DeviceLost`` block chains the loss as __context__
    (no ``from``): the device is still lost."""
    from gpuperf.measure.devices import DeviceLost, device_lost

    try:
        try:
            raise DeviceLost("illegal address")
        except DeviceLost:
            raise RuntimeError("could not free a buffer")  # noqa: B904 - the implicit chain is the point
    except RuntimeError as exc:
        assert exc.__cause__ is None and device_lost(exc)


def test_describe_exception_keeps_a_repeated_part_once_and_a_line_of_exactly_the_limit_whole() -> None:
    """PyOpenCL repeats its status: 'A - B - B' reads 'A - B'. 'ValueError: ' (12 characters) and
    288 x's are exactly 300: kept whole; one more is cut to 297 characters and '...'."""
    from gpuperf.measure.devices import describe_exception

    assert describe_exception(RuntimeError("clBuildProgram failed - BUILD_PROGRAM_FAILURE - BUILD_PROGRAM_FAILURE\n"
                                           "log")) == "RuntimeError: clBuildProgram failed - BUILD_PROGRAM_FAILURE"
    assert describe_exception(ValueError("x" * 288)) == "ValueError: " + "x" * 288
    assert describe_exception(ValueError("x" * 289)) == "ValueError: " + "x" * 285 + "..."


def test_a_compile_failure_names_the_first_error_of_the_build_log_not_of_its_headline() -> None:
    """The exception's first line is its headline (already shown); the first log line after it that
    says error is the compiler's, with the temporary file's name replaced by 'line'."""
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.measure.devices import compile_failure

    exc = RuntimeError("clBuildProgram failed: build error\n/tmp/xyz/kernel.cl:4:65: error: undeclared 'q'\n"
                       "/tmp/xyz/kernel.cl:9:1: error: later")
    failure = compile_failure(get_kernel("vector_copy"), exc, " for OpenCL")
    assert str(failure) == ("kernel 'vector_copy' failed to compile for OpenCL: RuntimeError: clBuildProgram failed: "
                            "build error; line 4:65: error: undeclared 'q'")
    assert failure.status == "compile_failed"



POCL_LOG = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
            "Build on <pyopencl.Device 'pthread-AMD EPYC'>:\n\nerror: unknown target CPU 'generic'\n"
            "Device pthread-AMD EPYC failed to build the program")


def test_a_campaigns_failure_note_and_stored_error_name_the_compilers_error_not_the_headline(
        tmp_path: Path, monkeypatch) -> None:
    """pocl's headline repeats 'clBuildProgram failed' three times; the reason is in the build log. The
    note naming a campaign's first compile failure, and the first line of the error the store keeps,
    give the compiler's error, as the one-line failure does."""
    from gpuperf.measure.campaign import first_failures
    from gpuperf.measure.devices import compile_failure

    def compile_(kernel):
        raise compile_failure(kernel, RuntimeError(POCL_LOG))

    device = SimpleNamespace(name="fake:0", memory_bytes=2**30, compile=compile_, provenance=dict)
    monkeypatch.setattr(campaign_module, "open_device", lambda name: device)
    path = _campaign_file(tmp_path, 'name = "c"\n[[kernels]]\nkernel = "vector_copy"\nsizes = [{n = 4096}]\n')
    report = run_campaign(load_campaign(path), tmp_path / "s.db", progress=False)
    [line] = first_failures(report.failures)
    assert ("failed to compile: RuntimeError: clBuildProgram failed: BUILD_PROGRAM_FAILURE; "
            "error: unknown target CPU 'generic'") in line
    with Store(tmp_path / "s.db", create=False) as store:
        [row] = store.rows("c")
    assert row["error"].splitlines()[0] == line.split(": ", 1)[1]
    assert POCL_LOG in row["error"]  # the whole log is still kept

# -- variant spaces --------------------------------------------------------------------------------
def _space_rejecting_16():
    import loopy as lp
    import numpy as np

    from gpuperf.kernels.space import VariantSpace

    def make(config):
        program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                                 assumptions=f"n >= 1 and n mod {config['local_x']} = 0", name="twice",
                                 lang_version=(2018, 2))
        return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")

    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64, 128]}, defaults={"local_x": 32},
                        check=lambda c: "too narrow" if c["local_x"] == 16 else None, make=make)


def test_a_limit_counts_the_variants_the_check_accepts() -> None:
    """The check refuses local_x = 16: the first 2 variants are 32 and 64 (the refused one takes no
    place in the limit), both for sized_variants and for a campaign's space (variants)."""
    import warnings

    from gpuperf.kernels.space import sized_variants

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left out at n = 256: no note
        built = sized_variants(_space_rejecting_16(), {"n": 256}, limit=2)
    assert [config["local_x"] for config, _ in built] == [32, 64]
    assert [k.variant["local_x"] for k in _space_rejecting_16().variants(2)] == [32, 64]
    assert [(c["local_x"], why) for c, why in _space_rejecting_16().skipped(1)] == [(16, "too narrow")]


# -- kernel definitions (no device run) ------------------------------------------------------------
def test_the_f64_polynomial_is_checked_to_1e_10_and_the_f32_one_to_1e_4() -> None:
    from gpuperf.kernels.catalog import get_kernel

    assert get_kernel("poly_2d_f64").rtol == 1e-10 and get_kernel("poly_2d_f32").rtol == 1e-4


def test_element_local_diff_applies_a_16_node_matrix_to_groups_of_16_elements() -> None:
    """D is 16 x 16 and each element has 16 nodes; 16 elements a work-group (so nelements = 16 is
    the smallest taken, 8 refused): 256 elements are 16 groups of 16 x 16 items, (256, 16) in all."""
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.kernels.kernel import SizesViolateAssumptions

    kernel = get_kernel("element_local_diff")
    assert {a.name: kernel.array_shape(a, {"nelements": 32}) for a in kernel.array_args} == {
        "D": (16, 16), "u": (32, 16), "du": (32, 16)}
    assert kernel.resolve_sizes({"nelements": 16}) == {"nelements": 16}
    with pytest.raises(SizesViolateAssumptions):
        kernel.resolve_sizes({"nelements": 8})
    assert kernel.launch({"nelements": 256}) == ((256, 16, 1), (16, 16, 1))


def test_grid_stride_loops_draw_their_documented_inputs() -> None:
    """saxpy's inputs come from [0.5, 1.5] (the default); the degree-32 polynomial's from [0, 0.9],
    where x^32 stays small."""
    from gpuperf.kernels.parallel_loops import grid_stride_loop

    assert grid_stride_loop("saxpy", 32, 1).input_range == (0.5, 1.5)
    assert grid_stride_loop("polynomial", 32, 1).input_range == (0.0, 0.9)
