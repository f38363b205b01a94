"""The store (unique keys, no overwrite, status) and export of hand-written rows (no device needed)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pandas as pd
import pytest

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.measure import export_store, store_table
from gpuperf.measure import store as store_module
from gpuperf.measure.store import Store


def _row(n: int, status: str = "ok", device_name: str = "NVIDIA H100 80GB HBM3", **extra) -> dict:
    row = {
        "campaign": "hand", "kernel": "vector_copy", "sizes": {"n": n}, "device": "cuda:0",
        "geometry": f"{n}x1x1/256x1x1", "kernel_name": "vector_copy", "variant": "", "variant_params": {},
        "kernel_spec": "vector_copy", "status": status, "provenance": {"device_name": device_name},
    }
    if status == "ok":
        row.update(time_s=n * 1e-9, time_s_min=n * 0.9e-9, time_s_iqr=n * 1e-11, repeats=7, verified=True)
    return {**row, **extra}


def test_a_point_is_stored_once_and_never_overwritten(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        assert store.add(_row(4096))
        assert not store.add(_row(4096, time_s=1.0))  # same key: ignored, first value kept
        assert store.add(_row(8192, status="run_failed", error="boom"))
        store.set_plan("hand", "hand.toml", "cuda:0", 5)
        rows = store.rows()
        assert [r["time_s"] for r in rows] == [4096e-9, None]
        assert rows[1]["error"] == "boom" and rows[1]["sizes"] == {"n": 8192}
        (status,) = store.status()
        assert (status["planned"], status["done"], status["run_failed"], status["remaining"]) == (5, 1, 1, 3)
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_status_counts_the_latest_plans_points_and_those_of_an_earlier_plan_apart(tmp_path: Path) -> None:
    """A campaign file edited between runs (same name): its stored points of the old plan neither
    count as done nor hide the new plan's points that are still to measure."""
    from gpuperf.measure.store import PointKey, geometry_text, sizes_text

    def key(n: int) -> PointKey:
        return PointKey("hand", "vector_copy", sizes_text({"n": n}), "cuda:0", geometry_text([n, 1, 1], [256, 1, 1]))

    with Store(tmp_path / "s.sqlite") as store:
        store.set_plan("hand", "hand.toml", "cuda:0", 2, [key(1024), key(2048)])
        assert store.add_many([_row(1024), _row(2048, status="run_failed")]) == 2
        (status,) = store.status()
        assert (status["done"], status["failed"], status["remaining"], status["outside_plan"]) == (1, 1, 0, 0)
        store.set_plan("hand", "hand.toml", "cuda:0", 3, [key(1024), key(4096), key(8192)])  # the file edited
        (status,) = store.status()
        assert (status["planned"], status["done"], status["failed"], status["remaining"], status["outside_plan"]) == (
            3, 1, 0, 2, 1)


def test_a_group_of_points_is_stored_whole_or_not_at_all(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        assert store.add_many([_row(1024), _row(2048)]) == 2
        with pytest.raises(Exception):
            store.add_many([_row(4096), _row(8192, time_s=[1, 2])])  # the second cannot be written: neither is
        assert [r["sizes"] for r in store.rows()] == [{"n": 1024}, {"n": 2048}]
        assert store.add_many([_row(2048), _row(8192)]) == 1  # a stored key is left alone


def test_not_a_store(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.sqlite"
    bogus.write_text("not a database at all, just text " * 100)
    with pytest.raises(GpuperfError, match="is not a gpuperf measurement store"):
        Store(bogus)
    with pytest.raises(GpuperfError, match="does not exist"):
        store_table(tmp_path / "missing.sqlite")
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE points (x INTEGER)")
    with pytest.raises(GpuperfError, match=r"foreign.sqlite' is not a gpuperf measurement store \(it holds other tables: points\)"):
        Store(foreign)
    with sqlite3.connect(foreign) as db:  # left as it was
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["points"]
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def test_a_store_that_cannot_be_read_or_written_says_why_not_that_it_is_foreign(tmp_path: Path, monkeypatch) -> None:
    def disk_error(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(store_module.sqlite3, "connect", disk_error)
    with pytest.raises(GpuperfError) as info:
        Store(tmp_path / "s.sqlite")
    assert str(info.value) == f"store '{tmp_path / 's.sqlite'}': disk I/O error"


def test_a_store_whose_creation_failed_half_way_is_created_again(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "s.sqlite"
    failing = store_module._SCHEMA + "CREATE TABLE points (x INTEGER);"  # fails after gpuperf's tables are made
    monkeypatch.setattr(store_module, "_SCHEMA", failing)
    with pytest.raises(GpuperfError, match="already exists"):
        Store(path)
    monkeypatch.undo()
    with Store(path) as store:  # nothing of the failed creation is left to make it look foreign
        assert store.add(_row(4096))
        assert len(store.rows()) == 1


def test_a_store_named_where_no_file_can_be_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "table.csv").write_text("a\n1\n")
    with pytest.raises(GpuperfError, match=r"store '.*adir': a folder; name a file"):
        Store(tmp_path.joinpath("adir").mkdir() or tmp_path / "adir")
    with pytest.raises(GpuperfError, match=r"store '.*table.csv/s.sqlite': cannot create its folder"):
        Store(tmp_path / "table.csv" / "s.sqlite")


def test_export_writes_a_new_file_and_never_over_its_own_store(tmp_path: Path) -> None:
    """export_store wrote over any file at ``out``: the store itself (``export_store('s.db', 's.db',
    fmt='parquet')`` replaced every measurement by a Parquet table) or a user's table."""
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
    stored = (tmp_path / "s.sqlite").read_bytes()
    for replace in (False, True):
        with pytest.raises(GpuperfError, match=r"s.sqlite: the store itself; the table goes to a file of its own"):
            export_store(tmp_path / "s.sqlite", tmp_path / "s.sqlite", "parquet", features=False, replace=replace)
    assert (tmp_path / "s.sqlite").read_bytes() == stored
    mine = tmp_path / "mine.csv"
    mine.write_text("a user's table\n")
    with pytest.raises(GpuperfError, match=r"mine.csv: already exists .* replace=True writes over it"):
        export_store(tmp_path / "s.sqlite", mine, features=False)
    assert mine.read_text() == "a user's table\n"
    assert len(export_store(tmp_path / "s.sqlite", mine, features=False, replace=True)) == len(pd.read_csv(mine)) == 1


def test_export_names_the_known_gpu_and_adds_its_occupancy(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
        store.add(_row(2**20))
        store.add(_row(8192, status="compile_failed", error="bad code"))
        store.add(_row(16384, device_name="Mystery Accelerator 9000"))
    with pytest.raises(GpuperfError, match="no campaign 'other'"):
        store_table(tmp_path / "s.sqlite", campaign="other")
    frame = export_store(tmp_path / "s.sqlite", tmp_path / "out.csv")
    assert list(frame["gpu"]) == ["H100 SXM", "H100 SXM", "H100 SXM", "Mystery Accelerator 9000"]
    assert list(frame["status"]) == ["ok", "ok", "compile_failed", "ok"]
    assert frame["time_s"].tolist()[:2] == [4096e-9, 2**20 * 1e-9] and pd.isna(frame["time_s"][2])
    pytest.importorskip("gpuperf.features.table")
    assert frame["global_bytes"].tolist()[:2] == [2 * 4 * 4096, 2 * 4 * 2**20]
    assert frame["occupancy"].notna().tolist() == [True, True, True, False]  # only where the GPU is known
    plain = store_table(tmp_path / "s.sqlite", features=False)
    assert "global_bytes" not in plain.columns and len(plain) == 4


def test_export_generates_a_kernels_cuda_code_once_for_all_its_points(tmp_path: Path, monkeypatch) -> None:
    """The registers of every point of one kernel come from one CUDA source: generated once, not once a point
    (a campaign of 10,000 points spent most of its export generating the same code)."""
    pytest.importorskip("gpuperf.features.table")
    import loopy as lp

    from gpuperf.kernels import catalog

    monkeypatch.delitem(catalog._BUILT, "vector_copy", raising=False)  # a kernel built anew, its code not yet made
    generated = []
    generate = lp.generate_code_v2
    monkeypatch.setattr(lp, "generate_code_v2", lambda program: generated.append(program) or generate(program))
    with Store(tmp_path / "s.sqlite") as store:
        store.add_many([_row(n) for n in (1024, 2048, 4096, 8192, 16384)])
    frame = store_table(tmp_path / "s.sqlite")
    assert frame["registers_per_thread"].notna().all() and frame["occupancy"].notna().all()
    assert sum(isinstance(program.target, lp.CudaTarget) for program in generated) == 1


def test_export_writes_0_for_a_count_family_a_kernel_lacks(tmp_path: Path) -> None:
    pytest.importorskip("gpuperf.features.table")
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
        store.add(_row(4096, kernel="arith_f64_sqrt", kernel_name="arith_f64_sqrt", kernel_spec="arith_f64_sqrt",
                       sizes={"n": 4096, "k": 16}))
        store.add(_row(8192, kernel="gone", kernel_name="gone", kernel_spec="no_such_kernel"))
    with pytest.warns(UserWarning, match="features incomplete for no_such_kernel"):
        frame = store_table(tmp_path / "s.sqlite").set_index("kernel")
    assert frame.loc["arith_f64_sqrt", "ops_f64_sqrt"] > 0
    assert frame.loc["vector_copy", "ops_f64_sqrt"] == 0  # the copy has no square roots: 0, not missing
    assert frame.loc["arith_f64_sqrt", "global_loads_f32_stride1"] == 0
    assert pd.isna(frame.loc["gone", "ops_f64_sqrt"]) and pd.isna(frame.loc["gone", "global_bytes"])


def test_export_gives_no_features_for_a_point_whose_kernel_now_launches_otherwise(tmp_path: Path) -> None:
    """A user's kernel file edited after the campaign (another work-group size): the kernel rebuilt
    from it is not the code that was timed, so its features are left empty, with a note."""
    pytest.importorskip("gpuperf.features.table")
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
        store.add(_row(8192, geometry="8192x1x1/128x1x1"))  # timed with 128-wide work-groups
    with pytest.warns(GpuperfNote, match=r"features incomplete for vector_copy: it launches 8192x1x1/256x1x1 now, "
                                         r"where 8192x1x1/128x1x1 was measured"):
        frame = store_table(tmp_path / "s.sqlite")
    assert frame["global_bytes"].notna().tolist() == [True, False]


@pytest.mark.parametrize("name", ["out.csv", "out.csv.gz", "out.parquet"])
def test_an_export_cut_short_leaves_no_partial_table(tmp_path: Path, monkeypatch, name: str) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
        store.add(_row(8192))

    def half_then_fail(frame, path, *args, **kwargs):  # a full disk or a killed process
        if hasattr(path, "write"):  # a gzip stream over the temporary file
            path.write(b"campaign,kernel\nhand,vec")
        else:
            Path(path).write_text("campaign,kernel\nhand,vec")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_fail)
    monkeypatch.setattr(pd.DataFrame, "to_parquet", half_then_fail)
    with pytest.raises(GpuperfError, match=rf"{name}: cannot be written \(No space left on device\); it is left as"):
        export_store(tmp_path / "s.sqlite", tmp_path / name, features=False)
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("s.sqlite")) == []
    export_store(tmp_path / "s.sqlite", tmp_path / name, features=False)  # so the export can be run again
    read = pd.read_parquet if name.endswith(".parquet") else pd.read_csv
    assert read(tmp_path / name)["time_s"].tolist() == [4096e-9, 8192e-9]


def test_sizes_text_is_the_same_whatever_order_the_sizes_come_in() -> None:
    """The store's key uses sorted sizes: {n, m} and {m, n} are one point (a campaign resumed from a
    file listing them in another order must not take it again)."""
    from gpuperf.measure.store import sizes_text

    assert sizes_text({"n": 64, "m": 32}) == sizes_text({"m": 32, "n": 64}) == '{"m":32,"n":64}'


def test_stored_flags_read_back_as_booleans(tmp_path: Path) -> None:
    """stable and verified are stored as SQLite integers and read back as Python bools."""
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096, stable=True, verified=False))
        (row,) = store.rows()
    assert row["stable"] is True and row["verified"] is False


@pytest.mark.parametrize("field", ["provenance", "sizes", "variant_params"])
def test_a_damaged_json_field_is_one_error_naming_the_store_point_and_field(tmp_path: Path, field: str) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(4096))
        store.add(_row(8192))
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE points SET {field}='{{broken' WHERE id=2")
    before = path.read_bytes()
    with Store(path) as store:
        with pytest.raises(GpuperfError, match=f"store '{path}': point 2: field {field} is damaged, not JSON"):
            store.rows()
        if field == "provenance":
            with pytest.raises(GpuperfError, match="point 2: field provenance is damaged"):
                store.timing_settings("hand")
    assert path.read_bytes() == before  # reading it changed nothing


@pytest.mark.parametrize(("planned", "shown"), [("'abc'", "'abc'"), ("2.5", "2.5"), ("-4", "-4"), ("X'00'", r"b'\x00'")])
def test_campaign_status_of_a_damaged_planned_count_is_one_error_naming_the_store_and_field(
        tmp_path: Path, capsys, planned: str, shown: str) -> None:
    """campaign status stopped on a TypeError traceback where planned was text ('abc' - 1), and counted 2.5
    or -4 planned points as such."""
    from gpuperf.cli import main

    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(4096))
        store.set_plan("hand", "hand.toml", "cuda:0", 3)
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(f"UPDATE campaigns SET planned={planned}")
    before = path.read_bytes()
    assert main(["campaign", "status", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == (f"gpuperf: error: store '{path}': campaign 'hand': field planned is damaged ({shown}, not a count "
                   "of points); campaign run with the campaign's file records it anew\n")
    assert path.read_bytes() == before  # nothing recorded is lost


@pytest.mark.parametrize(("setting", "field"), [
    ("time_s=-1e-5", "time_s"), ("time_s=0", "time_s"), ("time_s='fast'", "time_s"), ("time_s=NULL", "time_s"),
    ("time_s=9e999", "time_s"), ("time_s_min=1.0", "time_s_min"), ("time_s_min=-1", "time_s_min"),
    ("time_s_iqr='wide'", "time_s_iqr"), ("status='weird'", "status"), ("status='run_failed'", "time_s"),
])
def test_a_damaged_time_or_status_is_one_error_naming_the_point_and_field(tmp_path: Path, setting: str,
                                                                           field: str) -> None:
    """campaign export wrote such a point as a valid row (status ok, time -1e-05), which fit then refused."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(4096))
        store.add(_row(8192))
        store.add(_row(16384, status="verify_failed", error="differs"))
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(f"UPDATE points SET {setting} WHERE id=2")
    before = path.read_bytes()
    with pytest.raises(GpuperfError, match=f"store '{path}': point 2: field {field} is damaged"):
        export_store(path, tmp_path / "t.csv", features=False)
    assert not (tmp_path / "t.csv").exists()
    assert path.read_bytes() == before  # nothing recorded is lost


def test_a_failed_point_without_a_time_and_an_ok_one_without_a_fastest_run_are_read(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(4096, time_s_min=None, time_s_iqr=0.0))
        store.add(_row(8192, status="compile_failed", error="no"))
    table = store_table(path, features=False)
    assert table["status"].tolist() == ["ok", "compile_failed"] and table["time_s"].isna().tolist() == [False, True]


def test_a_damaged_samples_field_stops_only_a_reader_that_needs_the_samples(tmp_path: Path) -> None:
    """One damaged samples cell blocked every export and every resume of the store."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(4096, samples=[1e-6, 2e-6]))
        store.add(_row(8192, samples=[1e-6]))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE points SET samples='[1,2' WHERE id=2")
    assert len(store_table(path, features=False)) == 2
    with pytest.raises(GpuperfError, match="point 2: field samples is damaged"):
        store_table(path, features=False, cycle_times=True)
    with Store(path) as store:
        assert [row["samples"] for row in store.rows(samples=False)] == [None, None]


def test_a_store_the_disk_cannot_take_more_of_is_one_error_keeping_what_it_holds(tmp_path: Path) -> None:
    """A full disk while a campaign adds points: one error naming the store; the points committed
    before stay (SQLite's page limit stands in for the full disk)."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(1))
        pages = store.db.execute("PRAGMA page_count").fetchone()[0]
        store.db.execute(f"PRAGMA max_page_count={pages}")
        with pytest.raises(GpuperfError, match=rf"store '{path}': cannot write to it \(database or disk is full\); "
                                               "the points stored before are kept"):
            for n in range(2, 2000):
                store.add(_row(n, provenance={"device_name": "x" * 2000}))
    with Store(path, create=False) as store:
        assert store.rows()[0]["sizes"] == {"n": 1} and store.status()


@pytest.fixture
def read_only_media(monkeypatch):
    """Call to make SQLite unable to open a store read-only from then on, as on read-only media
    (where it cannot create the shared-memory file), and no file writable."""
    connect, access = sqlite3.connect, os.access

    def refusing_read_only(database, *args, **kwargs):
        if "mode=ro" in str(database):
            raise sqlite3.OperationalError("unable to open database file")
        return connect(database, *args, **kwargs)

    def media(*args, **kwargs):
        monkeypatch.setattr(store_module.sqlite3, "connect", refusing_read_only)
        monkeypatch.setattr(store_module.os, "access", lambda path, mode: not mode & os.W_OK and access(path, mode))

    return media


def test_a_store_on_read_only_media_is_read_as_it_is(tmp_path: Path, read_only_media) -> None:
    """Reading a store (status, export) never writes it; where SQLite cannot even open it read-only
    (read-only media, no shared-memory file), it reads the file as it is."""
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
    read_only_media()
    with Store(tmp_path / "s.sqlite", create=False) as store:
        assert [r["sizes"] for r in store.rows()] == [{"n": 4096}]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.db.execute("CREATE TABLE t (x)")


def test_a_cache_the_disk_cannot_take_is_skipped_and_a_table_names_its_file(tmp_path: Path) -> None:
    from gpuperf.files import write_cache_file, written_whole

    def full(path: Path) -> None:
        raise OSError(28, "No space left on device")

    write_cache_file(tmp_path / "cache" / "c.parquet", full)  # skipped: it only costs the work again
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "c.parquet").mkdir()  # a folder where the cache file would go: cannot be replaced
    write_cache_file(tmp_path / "ro" / "c.parquet", lambda path: path.write_text("x"))
    with pytest.raises(GpuperfError, match="t.csv: cannot be written \\(No space left on device\\)"):
        with written_whole(tmp_path / "t.csv") as temporary:
            full(temporary)
    assert not list(tmp_path.glob("*t.csv*"))


def test_a_cache_file_that_cannot_be_written_is_noted_once_for_its_folder(tmp_path: Path) -> None:
    """A cache subfolder another run made read-only (a sudo run's) dropped every cache write silently."""
    import warnings

    from gpuperf.errors import GpuperfNote
    from gpuperf.files import write_cache_file

    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "geometry").write_text("not a folder")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ("a.skops", "b.skops"):
            write_cache_file(tmp_path / "cache" / "geometry" / name, lambda path: path.write_text("x"))
    notes = [str(w.message) for w in caught if issubclass(w.category, GpuperfNote)]
    assert notes == [f"gpuperf's cache file {tmp_path / 'cache' / 'geometry' / 'a.skops'}: cannot be written "
                     f"({tmp_path / 'cache' / 'geometry'} is a file, not a folder): it is not kept, and its work is "
                     f"done again on the next run (make {tmp_path / 'cache' / 'geometry'} a writable folder, or set "
                     "GPUPERF_CACHE_DIR to one)"]


def test_a_link_planted_where_a_cache_file_goes_is_replaced_not_followed(tmp_path: Path) -> None:
    """A shared cache folder: another user's link to a file of ours must not get the cache's bytes."""
    from gpuperf.files import write_cache_file

    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "c.parquet").symlink_to(victim)
    write_cache_file(tmp_path / "cache" / "c.parquet", lambda path: path.write_text("cache"))
    assert victim.read_text() == "precious"
    assert not (tmp_path / "cache" / "c.parquet").is_symlink()
    assert (tmp_path / "cache" / "c.parquet").read_text() == "cache"


def test_a_store_on_read_only_media_with_points_left_in_its_wal_is_refused(tmp_path: Path, read_only_media) -> None:
    """Read as it is, the file would lack the points still in its -wal file: an error, not fewer rows."""
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
    (tmp_path / "s.sqlite-wal").write_bytes(b"points not yet checkpointed")
    read_only_media()
    with pytest.raises(GpuperfError, match="on read-only media with points still in s.sqlite-wal"):
        Store(tmp_path / "s.sqlite", create=False)


def test_partly_cycled_counts_kept_cycles_of_points_not_stored_yet(tmp_path: Path) -> None:
    """A point stored while cycles of it were kept (a device lost mid-group stores its culprit as
    failed) is no longer partly cycled."""
    from gpuperf.measure.store import PointKey, geometry_text, sizes_text

    def key(n: int) -> PointKey:
        return PointKey("hand", "vector_copy", sizes_text({"n": n}), "cuda:0", geometry_text([n, 1, 1], [256, 1, 1]))

    with Store(tmp_path / "s.sqlite") as store:
        store.set_plan("hand", "hand.toml", "cuda:0", 2, [key(1024), key(2048)])
        summary = {"median": 1e-6, "launches": 1, "kernel_s": 1e-6, "wall_s": 1e-6, "fastest": 1e-6}
        store.add_rounds(0, {key(1024): summary, key(2048): summary})
        assert store.status()[0]["partly_cycled"] == 2
        store.add(_row(2048, status="run_failed", error="device lost"))
        assert store.status()[0]["partly_cycled"] == 1


def test_a_file_with_gpuperfs_layout_version_but_not_its_tables_is_refused_untouched(tmp_path: Path) -> None:
    """Many programs set SQLite's user_version to 1: such a file was switched to WAL mode, given a run
    lock, and failed half way with 'no such table: points'."""
    foreign = tmp_path / "foreign.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("PRAGMA user_version=1")
        db.execute("CREATE TABLE t (x INTEGER)")
    for create in (True, False):
        with pytest.raises(GpuperfError, match=r"foreign.sqlite' is not a gpuperf measurement store \(it holds other "
                                               r"tables: t\)"):
            Store(foreign, create=create)
    with sqlite3.connect(foreign) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


def _store_of_many_pages(path: Path) -> Path:
    """A store of 64 points, all in the store file (none left in its -wal), to damage by hand."""
    with Store(path) as store:
        for n in range(1, 65):  # n = 0 would be an ok point of no time, which no store holds
            store.add(_row(n))
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


def test_a_store_damaged_past_its_header_is_one_error_naming_it(tmp_path: Path) -> None:
    """The header read fine, and status, export and a run's plan failed later with a traceback
    ('database disk image is malformed'); opening reads no more than before (a big store opens at once)."""
    path = _store_of_many_pages(tmp_path / "s.sqlite")
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xab" * (len(data) - 4096)
    path.write_bytes(bytes(data))
    with Store(path, create=False) as store:
        for read in (store.rows, store.status, lambda: store.keys("hand")):
            with pytest.raises(GpuperfError, match=r"s.sqlite' is damaged \(database disk image is malformed\); "
                                                   "measure into another store"):
                read()
    with pytest.raises(GpuperfError, match="is damaged"):
        store_table(path)


def test_points_a_killed_run_left_in_the_wal_file_are_moved_into_the_store_when_it_is_read(tmp_path: Path) -> None:
    """A run killed (SIGKILL, out of memory) leaves its points in STORE-wal; status and export read them
    read-only, which never moves them, so a copy of the store file alone showed none."""
    import shutil

    live = tmp_path / "live" / "s.sqlite"
    with Store(live) as store:
        store.add_many([_row(n) for n in (1024, 2048)])
        killed = tmp_path / "killed"  # the files as the killed run left them: the points only in the -wal
        killed.mkdir()
        for name in ("s.sqlite", "s.sqlite-wal"):
            shutil.copy(live.with_name(name), killed / name)
    assert (killed / "s.sqlite-wal").stat().st_size > 0
    assert len(store_table(killed / "s.sqlite", features=False)) == 2
    copied = tmp_path / "copied"
    copied.mkdir()
    shutil.copy(killed / "s.sqlite", copied / "s.sqlite")  # the store file alone
    assert len(store_table(copied / "s.sqlite", features=False)) == 2


def test_a_store_cut_short_is_damaged_not_another_file(tmp_path: Path) -> None:
    """A store truncated past its first page was 'not a gpuperf measurement store', as if the user had
    named the wrong file; it is an SQLite file damaged, with the way to recover it."""
    path = _store_of_many_pages(tmp_path / "s.sqlite")
    path.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(GpuperfError, match=r"s.sqlite' is damaged \(.*\); measure into another store, or recover "
                                           r"this one with sqlite3's .recover"):
        Store(path, create=False).rows()


@contextmanager
def failing_database(store: Store, error: sqlite3.Error) -> Iterator[None]:
    """The store's connection replaced, for the block, by one whose every call raises ``error``."""
    class Failing:
        def __getattr__(self, name):
            def fail(*args, **kwargs):
                raise error
            return fail

    healthy, store.db = store.db, Failing()
    try:
        yield
    finally:
        store.db = healthy


def test_a_read_the_file_system_refuses_names_the_store(tmp_path: Path) -> None:
    """A full disk failed a run's first read ('disk I/O error') with an error blaming loopy's caches."""
    with Store(tmp_path / "s.sqlite") as store, failing_database(store, sqlite3.OperationalError("disk I/O error")):
        with pytest.raises(GpuperfError, match=r"store '.*s\.sqlite': cannot read it \(disk I/O error\)"):
            store.timing_settings("c")


@pytest.mark.parametrize("call", [lambda s: s.set_plan("c", "c.toml", "opencl:0", 1),
                                  lambda s: s.moved_kernel("c", "k", "k.py:k"), lambda s: s.rows("c")])
def test_a_damaged_page_met_while_planning_or_recording_a_move_names_the_store(tmp_path: Path, call) -> None:
    """set_plan lost its decorator when a method was added above it: a damaged page met there gave
    SQLite's traceback instead of one error naming the store."""
    damaged = sqlite3.DatabaseError("database disk image is malformed")
    with Store(tmp_path / "s.sqlite") as store, failing_database(store, damaged):
        with pytest.raises(GpuperfError, match=r"store '.*s\.sqlite' is damaged \(database disk image is malformed\)"):
            call(store)


def test_a_cache_write_removes_temporaries_killed_runs_left_an_hour_ago(tmp_path):
    """A run killed while writing a cache file left its 25 MB temporary beside it for good."""
    import os
    import time

    from gpuperf.files import write_cache_file

    folder = tmp_path / "cache"
    folder.mkdir()
    stale, fresh = folder / ".model-a.skops.x1.tmp", folder / ".model-b.skops.x2.tmp"
    for leftover in (stale, fresh):
        leftover.write_bytes(b"partial")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    write_cache_file(folder / "c.json", lambda path: path.write_text("{}"))
    assert not stale.exists() and fresh.exists() and (folder / "c.json").read_text() == "{}"


def test_a_cached_value_of_another_type_is_computed_again(tmp_path, monkeypatch):
    """"20" for 20 registers in a cache file was an error on every run, naming no file."""
    from gpuperf.features.resources import Resources, disk_cached

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path))
    (tmp_path / "resources").mkdir()
    (tmp_path / "resources" / "k.json").write_text('{"registers": "20", "shared_memory_bytes": 0, "spill_bytes": 0, '
                                                   '"arch": "sm_90"}')
    assert disk_cached("resources", "k", Resources, lambda: Resources(20, 0, 0, "sm_90")).registers == 20


def test_export_names_where_a_users_kernel_came_from(tmp_path: Path) -> None:
    """A user's kernel named vector_copy was exported as `vector_copy` alone, like the catalog's: its
    file, which the store keeps, now goes with it in kernel_spec (the catalog's, its name)."""
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
        store.add(_row(4096, campaign="mine", kernel_spec="/home/me/clash.py:my_copy"))
    frame = store_table(tmp_path / "s.sqlite", features=False)
    assert frame["kernel"].tolist() == ["vector_copy", "vector_copy"]
    assert frame["kernel_spec"].tolist() == ["vector_copy", "/home/me/clash.py:my_copy"]
    assert list(frame.columns).index("kernel_spec") == list(frame.columns).index("kernel_key") + 1


@pytest.mark.parametrize(("values", "field"), [({"time_s": None}, "time_s"), ({"time_s": 0.0}, "time_s"),
                                               ({"time_s_min": 1.0}, "time_s_min"), ({"status": "weird"}, "status")])
def test_a_point_every_reader_would_refuse_is_not_stored(tmp_path: Path, values: dict, field: str) -> None:
    """Store.add wrote an ok point without a time (or a status gpuperf never writes), after which every read
    of the store (export, calibrate, a campaign's resume) failed on it; it is refused before anything is written."""
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        store.add(_row(4096))
        with pytest.raises(GpuperfError, match=f"point vector_copy at .*8192.* of campaign hand not stored: field "
                                               f"{field} is"):
            store.add_many([_row(16384), _row(8192, **values)])
    assert store_table(path, features=False)["n"].tolist() == [4096]  # the whole transaction left out


def test_a_nan_time_is_stored_as_no_time_not_refused(tmp_path: Path) -> None:
    """NaN is how a table (pandas) spells no value, and SQLite stores it as NULL: a failed point whose times
    are NaN, or an ok point whose spread is NaN, is sound as the store holds it and is stored, not refused."""
    path = tmp_path / "s.sqlite"
    nan = float("nan")
    with Store(path) as store:
        store.add_many([_row(4096, time_s_iqr=nan), _row(8192, status="run_failed", time_s=nan, time_s_min=nan)])
    frame = store_table(path, features=False).set_index("n")
    assert frame.loc[8192, "status"] == "run_failed" and pd.isna(frame.loc[8192, "time_s"])
    assert frame.loc[4096, "time_s"] == 4096e-9 and pd.isna(frame.loc[4096, "time_s_iqr"])


def test_export_writes_the_features_launch_geometry_whole(tmp_path: Path) -> None:
    """A point's launch geometry among its features was written 4096.0, 256.0 (global_size_0, local_size_0,
    threads, work_groups): it is written whole, in CSV and Parquet, and the measured times as read."""
    pytest.importorskip("gpuperf.features.table")
    with Store(tmp_path / "s.sqlite") as store:
        store.add(_row(4096))
        store.add(_row(8192, status="compile_failed", error="bad code"))
        store.add(_row(16384, device_name="Mystery Accelerator 9000"))  # no registers or occupancy: empty cells
    frame = export_store(tmp_path / "s.sqlite", tmp_path / "out.csv")
    cells = pd.read_csv(tmp_path / "out.csv", dtype=str, keep_default_na=False)
    assert cells["global_size_0"].tolist() == ["4096", "8192", "16384"] and cells["local_size_0"].tolist() == ["256"] * 3
    assert cells["threads"].tolist() == ["4096", "8192", "16384"] and cells["work_groups"].tolist() == ["16", "32", "64"]
    assert all(cell == "" or cell.isdigit() for cell in cells["registers_per_thread"])
    assert cells["registers_per_thread"][2] == "" and cells["time_s"].tolist() == [repr(4096e-9), "", repr(16384e-9)]
    read = pd.read_csv(tmp_path / "out.csv")
    for column in ("global_size_0", "local_size_0", "threads", "registers_per_thread", "time_s", "global_bytes"):
        assert read[column].astype(float).equals(frame[column].astype(float)), column
    export_store(tmp_path / "s.sqlite", tmp_path / "out.parquet")
    parquet = pd.read_parquet(tmp_path / "out.parquet")
    assert str(parquet["global_size_0"].dtype) == "Int64" and parquet["time_s"].dtype == float
