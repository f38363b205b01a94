"""Each measured table's ``.provenance.json`` is tied to the table beside it: its ``file`` is there, its
``rows`` and ``sha256`` are that file's, and it names the device. The writers keep them so."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from pathlib import Path

import pytest

from gpuperf.datasets.bundled import data_dir
from gpuperf.datasets.provenance import provenance_path, table_identity, write_provenance
from gpuperf.errors import GpuperfError

PROVENANCE = sorted(data_dir().glob("*.provenance.json"))


def _rows_and_sha256(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    text = (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")
    return len([r for r in csv.reader(io.StringIO(text, newline="")) if r]) - 1, hashlib.sha256(data).hexdigest()


def test_the_measured_tables_have_provenance_files() -> None:
    assert len(PROVENANCE) >= 24


@pytest.mark.parametrize("path", PROVENANCE, ids=lambda path: path.name)
def test_a_provenance_file_records_the_rows_and_sha256_of_the_table_beside_it(path: Path) -> None:
    record = json.loads(path.read_text())
    table = path.with_name(record["file"])
    assert table.is_file() and provenance_path(table) == path
    rows, sha256 = _rows_and_sha256(table)
    assert (record["rows"], record["sha256"]) == (rows, sha256), f"{path.name} does not describe {table.name}"
    assert isinstance(record["device"], str) and record["device"]


def test_write_provenance_adds_the_tables_identity(tmp_path: Path) -> None:
    table = tmp_path / "t.csv.gz"
    table.write_bytes(gzip.compress(b'a,b\n1,"x\ny"\n2,z\n'))  # a quoted line break is one record
    written = write_provenance(table, {"device": "d", "rows": 99})
    assert written == tmp_path / "t.provenance.json"
    record = json.loads(written.read_text())
    assert record == {"device": "d", "rows": 2, "file": "t.csv.gz",
                      "sha256": hashlib.sha256(table.read_bytes()).hexdigest()}
    assert provenance_path(tmp_path / "t.csv") == written


def test_a_run_stopped_while_rewriting_a_provenance_file_keeps_the_last_one_whole(tmp_path: Path, monkeypatch) -> None:
    """tune and geometry-sweep rewrite --out's provenance file with each trial: a Ctrl-C or SIGTERM after the
    file was opened (emptied) and before its text was written left an empty file, so a resumed run lost
    when the run began."""
    table = tmp_path / "trials.csv"
    table.write_text("a\n1\n")
    written = write_provenance(table, {"measured_from": "2026-01-01T00:00:00+00:00"})
    before = written.read_bytes()

    def stopped_midway(self: Path, text: str, encoding: str | None = None) -> int:
        self.open("w").close()  # opened, emptied, and stopped before the text
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "write_text", stopped_midway)
    with pytest.raises(KeyboardInterrupt):
        write_provenance(table, {"measured_from": "2026-02-02T00:00:00+00:00"})
    assert written.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["trials.csv", "trials.provenance.json"]


def test_an_unreadable_table_is_one_error_naming_it(tmp_path: Path) -> None:
    table = tmp_path / "broken.csv.gz"
    table.write_bytes(b"not gzip")
    with pytest.raises(GpuperfError, match="broken.csv.gz: cannot read the table"):
        table_identity(table)


def _script(name: str):
    """benchmarks/NAME.py, loaded as a module."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"{name}_script", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_refreshing_a_tables_features_rewrites_its_rows_and_sha256(tmp_path: Path) -> None:
    table = tmp_path / "t.csv.gz"
    table.write_bytes(gzip.compress(b"kernel,f\nk,1.0\n"))
    write_provenance(table, {"device": "d"})
    _script("refresh_stored_features").write_refreshed(table, "kernel,f\nk,2.0\n", {"why": "f corrected"})
    record = json.loads(provenance_path(table).read_text())
    assert record["sha256"] == hashlib.sha256(table.read_bytes()).hexdigest() and record["rows"] == 1
    assert record["features_refreshed"] == [{"why": "f corrected"}] and record["device"] == "d"


def test_the_sector_profile_export_takes_the_device_from_its_env_log() -> None:
    env_log = json.loads((data_dir() / "sector_profile_h200.provenance.json").read_text())["env_log"]
    logged_device = _script("sector_profile").logged_device
    assert logged_device(env_log) == {"device": "NVIDIA H200"}
    assert logged_device("nvidia-smi: not found\n") == {}


@pytest.mark.parametrize("path", PROVENANCE, ids=lambda path: path.name)
def test_a_provenance_file_says_when_its_table_was_measured(path: Path) -> None:
    import datetime

    record = json.loads(path.read_text())
    when = record.get("measured_from") or record.get("measured_on")
    assert when, f"{path.name} records no date of measurement (measured_from or measured_on)"
    datetime.date.fromisoformat(str(when)[:10])


def test_the_session_exporter_records_the_day_the_session_measured(tmp_path: Path, monkeypatch) -> None:
    session = tmp_path / "call1"
    session.mkdir()
    (session / "cuda_timer.csv").write_text("kernel,sizes,method,median_s\nempty,n=4096,gated,3.968e-06\n")
    script = _script("export_gpu_session")
    monkeypatch.setattr(script, "DATA", tmp_path)
    monkeypatch.setattr(script, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match="--date"):
        script.main([str(session), "--tag", "x"])
    assert not (tmp_path / "cuda_timer_x.csv").exists()
    script.main([str(session), "--tag", "x", "--date", "2026-11-27"])
    record = json.loads((tmp_path / "cuda_timer_x.provenance.json").read_text())
    assert record["measured_on"] == "2026-11-27" and record["rows"] == 1


def test_the_sector_profile_export_takes_the_date_from_its_env_log() -> None:
    env_log = json.loads((data_dir() / "sector_profile_h200_heldout.provenance.json").read_text())["env_log"]
    logged_date = _script("sector_profile").logged_date
    assert logged_date(env_log) == {"measured_on": "2026-11-30"}
    assert logged_date("Sat Nov 28 06:26:45 UTC 2026\n") == {"measured_on": "2026-11-28"}
    assert logged_date("nvidia-smi: not found\n") == {}


@pytest.mark.parametrize("path", [p for p in PROVENANCE if "raw" in json.loads(p.read_text())], ids=lambda p: p.name)
def test_a_raw_archive_beside_a_table_is_tied_to_it_by_its_sha256(path: Path) -> None:
    record = json.loads(path.read_text())
    raw = path.with_name(record["raw"])
    assert raw.is_file() and record.get("raw_sha256") == hashlib.sha256(raw.read_bytes()).hexdigest(), (
        f"{path.name} does not describe {raw.name}")
