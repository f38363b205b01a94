"""Where commands write: no file is overwritten but a gpuperf model being refitted, and a report
path that is a file is refused before any work."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.datasets import load_dataset
from gpuperf.measure.store import Store

DATA = Path(__file__).parent / "data"


def small_table(tmp_path: Path) -> Path:
    table = load_dataset("rodinia_nvprof").groupby(["gpu", "kernel"]).head(5)
    path = tmp_path / "small.csv"
    table.to_csv(path, index=False)
    return path


def test_table_outputs_never_overwrite_a_file(tmp_path, capsys):
    profile = tmp_path / "trace.csv"
    shutil.copy(DATA / "nvprof_gpu_trace.csv", profile)
    before = profile.read_bytes()
    assert main(["import", "nvprof", str(profile), "--out", str(profile)]) == 2  # the profile it reads
    assert "the file exists; gpuperf does not overwrite files" in capsys.readouterr().err
    assert profile.read_bytes() == before
    table = small_table(tmp_path)
    assert main(["fit", str(table), "--model", "lr", "--out", str(tmp_path / "m.json")]) == 0
    capsys.readouterr()
    kept = tmp_path / "kept.csv"
    kept.write_text("precious\n")
    assert main(["predict-table", "--model", str(tmp_path / "m.json"), str(table), "--out", str(kept)]) == 2
    assert kept.read_text() == "precious\n"


def test_export_refuses_to_write_over_its_own_store(tmp_path, capsys):
    store = tmp_path / "s.sqlite"
    with Store(store):
        pass
    assert main(["campaign", "export", "--store", str(store), "--out", str(store), "--format", "csv"]) == 2
    assert "the file exists" in capsys.readouterr().err
    with Store(store, create=False) as reopened:  # still a store
        assert reopened.status() == []


def test_a_model_file_is_refitted_but_no_other_file_is_overwritten(tmp_path, capsys):
    table = small_table(tmp_path)
    model = tmp_path / "m.json"
    for _ in range(2):  # refitting a model writes over it
        assert main(["fit", str(table), "--model", "lr", "--out", str(model)]) == 0
    cache = tmp_path / "cache.json"
    shutil.copy(DATA / "kernel_tuner_vector_add.json", cache)
    before = cache.read_bytes()
    assert main(["fit", str(table), "--model", "lr", "--out", str(cache)]) == 2
    assert "is not a gpuperf model" in capsys.readouterr().err
    assert cache.read_bytes() == before


def test_a_report_path_that_is_a_file_is_refused_before_any_work(studies, tmp_path, capsys):
    table = small_table(tmp_path)
    taken = tmp_path / "taken"
    taken.write_text("x")
    for argv in (["evaluate", str(table), "--model", "lr", "--protocol", "leave-one-gpu-out", "--report", str(taken)],
                 ["reproduce", "geometry", "--out", str(taken)],
                 ["tune", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--budget", "1", "--report", str(taken)]):
        assert main(argv) == 2
        assert f"{taken}: a file, not a folder" in capsys.readouterr().err
    assert taken.read_text() == "x" and studies == []


def test_a_report_folder_the_file_system_refuses_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Permissions can allow what the file system refuses (root in /proc, a read-only mount): the
    folder is tried before the work, so no trial is measured for a report that cannot be written."""
    import errno
    import tempfile

    from gpuperf.measure import timing

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    measured = []
    monkeypatch.setattr(timing, "measure", lambda *args, **kwargs: measured.append(args))
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    folder = tmp_path / "ro" / "report"
    for argv, option in ((["evaluate", str(small_table(tmp_path)), "--model", "lr", "--protocol", "leave-one-gpu-out",
                           "--report", str(folder)], "--report"),
                         (["tune", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--budget", "1", "--report",
                           str(folder)], "--report"),
                         (["reproduce", "geometry", "--out", str(folder)], "--out")):
        assert main(argv) == 2
        assert (f"{option} {folder}: nothing can be created in {tmp_path} (Read-only file system)"
                in capsys.readouterr().err)
    assert measured == [] and not (tmp_path / "ro").exists()


def test_tune_does_not_replace_an_earlier_runs_report(tmp_path, capsys):
    earlier = tmp_path / "tuned"
    earlier.mkdir()
    (earlier / "report.md").write_text("trials of an earlier run")
    argv = ["tune", "jacobi2d_5pt", "-p", "n=256", "-p", "m=256", "--budget", "1", "--report", str(earlier)]
    assert main(argv) == 2
    assert "holds an earlier report" in capsys.readouterr().err
    assert (earlier / "report.md").read_text() == "trials of an earlier run"


def test_a_folder_where_no_file_can_be_created_is_named_by_the_path_asked_for(tmp_path, capsys, monkeypatch):
    import errno
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)  # as in a read-only folder (root may write anywhere)
    out = tmp_path / "model.json"
    assert main(["fit", str(small_table(tmp_path)), "--model", "lr", "--features", "input.size.1",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"gpuperf: error: {out}: cannot be written there (Permission denied)" in err
    assert ".tmp" not in err and not out.exists()


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])  # a kill, or a closed terminal (SIGHUP ended with no word)
def test_sigterm_ends_a_command_as_ctrl_c_does_leaving_no_partial_file(tmp_path, capsys, monkeypatch, name):
    import os
    import signal

    import gpuperf.datasets
    from gpuperf.files import written_whole

    number = getattr(signal, name)

    def killed_while_writing(frame, out):
        with written_whole(out) as temporary:
            temporary.write_text("kernel,time_s\n")  # half written when the signal comes
            os.kill(os.getpid(), number)

    monkeypatch.setattr(gpuperf.datasets, "write_dataset_csv", killed_while_writing)
    previous = signal.signal(number, signal.SIG_DFL)  # as in a terminal (nohup, which ignores SIGHUP, is kept)
    try:
        before = signal.getsignal(number)
        out = tmp_path / "trace.csv"
        assert main(["import", "nvprof", str(DATA / "nvprof_gpu_trace.csv"), "--out", str(out)]) == 130
        assert capsys.readouterr().err.strip() == "gpuperf: interrupted"
        assert list(tmp_path.iterdir()) == []  # neither the table nor its temporary file
        assert signal.getsignal(number) == before  # the handler is gpuperf's only while a command runs
    finally:
        signal.signal(number, previous)


def test_a_claimed_output_keeps_a_second_run_out_and_goes_if_nothing_was_written(tmp_path):
    import pytest

    from gpuperf.cli.output import claimed_output
    from gpuperf.errors import GpuperfError

    out = tmp_path / "trials.csv"
    with claimed_output(out):
        assert out.exists()  # claimed at once, before the first trial is written
        with pytest.raises(GpuperfError, match="trials.csv: the file exists \\(another run writing it\\?\\)"):
            with claimed_output(out):
                pass
        out.write_text("kernel,time_s\nk,1\n")
    assert out.read_text() == "kernel,time_s\nk,1\n"  # the second claim took nothing away
    empty = tmp_path / "empty.csv"
    with pytest.raises(KeyboardInterrupt):
        with claimed_output(empty):
            raise KeyboardInterrupt  # stopped before its first trial: no empty file is left to block a rerun
    assert not empty.exists()
    kept = tmp_path / "kept.csv"
    with pytest.raises(KeyboardInterrupt):
        with claimed_output(kept):
            kept.write_text("kernel,time_s\nk,1\n")
            raise KeyboardInterrupt
    assert kept.exists()


def test_an_output_that_is_a_symbolic_link_is_written_through_to_its_file(tmp_path, capsys):
    """fit --out link.json replaced the link by a file, leaving the model the link named as it was, and a
    second run writing through the link took another lock than the first."""
    table = small_table(tmp_path)
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "m.json"
    assert main(["fit", str(table), "--model", "lr", "--out", str(target)]) == 0
    link = tmp_path / "link.json"
    link.symlink_to(target)
    before = target.read_text()
    assert main(["fit", str(table), "--model", "knn", "--out", str(link)]) == 0
    capsys.readouterr()
    assert link.is_symlink() and target.read_text() != before and '"knn"' in target.read_text().lower()


def test_a_lock_that_cannot_be_written_is_one_error_naming_it_and_leaves_no_lock_file(tmp_path, monkeypatch):
    """On a full disk writing the process id raised a bare 'No space left on device' and left the empty
    lock file behind."""
    import pytest

    from gpuperf.files import Unlockable, run_lock

    real_open = Path.open

    class Full:
        def __init__(self, handle):
            self.handle = handle

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def write(self, text):
            raise OSError(28, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    def opened(self, *args, **kwargs):
        handle = real_open(self, *args, **kwargs)
        return Full(handle) if self.name.endswith(".lock") else handle

    monkeypatch.setattr(Path, "open", opened)
    with pytest.raises(Unlockable, match=r"cannot create the run lock .*t\.csv\.lock \(No space left on device\)"):
        with run_lock(tmp_path / "t.csv", remove=True):
            pass
    assert not (tmp_path / "t.csv.lock").exists()


def test_a_users_file_at_the_lock_name_is_kept_and_a_hard_linked_store_refused(tmp_path):
    """A user's poetry.lock was truncated to a process id by a store named 'poetry', and a user's
    trials.csv.lock deleted by tune --out trials.csv; a store reached through a hard link took another
    lock (named by path), so two runs wrote one store at once and one run's points were lost."""
    import pytest

    from gpuperf.files import Unlockable, run_lock

    mine = tmp_path / "poetry.lock"
    mine.write_text("[[package]]\nname = 'numpy'\n")
    for remove in (False, True):
        with pytest.raises(Unlockable, match=r"poetry.lock \(a file gpuperf did not write is there"):
            with run_lock(tmp_path / "poetry", remove=remove):
                pass
        assert mine.read_text() == "[[package]]\nname = 'numpy'\n"
    (tmp_path / "left.lock").write_text("4242")  # a killed run's lock: taken over
    with run_lock(tmp_path / "left"):
        assert (tmp_path / "left.lock").read_text() == str(os.getpid())
    store = tmp_path / "s.sqlite"
    store.write_bytes(b"")
    os.link(store, tmp_path / "also.sqlite")
    with pytest.raises(Unlockable, match=r"s.sqlite has 2 names \(hard links\): a run through another name would not "
                                         r"see this lock"):
        with run_lock(store):
            pass


def test_a_file_that_appears_at_the_output_while_a_command_runs_is_kept(tmp_path, capsys, monkeypatch):
    """campaign export, predict-table's Parquet and import wrote over a file that appeared at --out after
    their start-up check (a user's, another run's), losing it without a word."""
    import gpuperf.measure.export as export
    from gpuperf.datasets import write_dataset_csv
    import pytest

    from gpuperf.errors import GpuperfError

    out = tmp_path / "points.csv"
    real = export.store_table

    def meanwhile(*args, **kwargs):
        frame = real(*args, **kwargs)
        out.write_text("precious user data\n")  # written by someone else while the export worked
        return frame

    store = tmp_path / "s.sqlite"
    with Store(store) as opened:
        opened.set_plan("c", "c.toml", "opencl:0", 0)
    monkeypatch.setattr(export, "store_table", meanwhile)
    assert main(["campaign", "export", "--store", str(store), "--out", str(out)]) == 2
    assert "points.csv: a file appeared there while this run wrote it; it is kept" in capsys.readouterr().err
    assert out.read_text() == "precious user data\n" and [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []
    import gpuperf.datasets.importers as importers

    table = tmp_path / "t.csv"
    real_write = importers.write_csv

    def user_too(frame, temporary, named):
        real_write(frame, temporary, named)
        table.write_text("mine\n")

    monkeypatch.setattr(importers, "write_csv", user_too)
    with pytest.raises(GpuperfError, match="t.csv: a file appeared there while this run wrote it"):
        write_dataset_csv(load_dataset("matvec_bsp").head(2), table)
    assert table.read_text() == "mine\n"


def test_a_report_folder_another_run_is_writing_is_refused_at_the_start(tmp_path, capsys):
    """Two runs given one --report both succeeded and one report was lost (with tune, its trials' only
    record); the folder is held for the run that named it first, and released when it ends."""
    import subprocess
    import sys
    import time

    folder = tmp_path / "rep"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from gpuperf.cli.output import command_locks, report_folder\n"
        f"with command_locks():\n    report_folder({str(folder)!r}); print('held', flush=True); time.sleep(30)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        table = small_table(tmp_path)
        args = ["evaluate", str(table), "--model", "lr", "--protocol", "leave-one-gpu-out", "--report", str(folder)]
        assert main(args) == 2
        assert f"--report {folder}: another run (process {holder.pid}) is writing a report there" in (
            capsys.readouterr().err)
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    assert main(args) == 0 and (folder / "report.md").exists()  # free again once that run ended
    assert main(args) == 0 and not list(folder.glob("*.lock"))  # one command after another: no lock left
    mine = tmp_path / "uv.lock"  # a user's file named like a lock beside a folder "uv" is never touched
    mine.write_text("version = 1\n")
    deep = tmp_path / "uv" / "2024" / "run1"  # nor is a folder whose parents do not exist yet left unlocked
    assert main([*args[:-1], str(tmp_path / "uv")]) == 0 and mine.read_text() == "version = 1\n"
    assert main([*args[:-1], str(deep)]) == 0 and (deep / "report.md").exists()
    empty = tmp_path / "never"  # a folder made for the lock goes again if the command fails before writing
    assert main(["evaluate", str(tmp_path / "absent.csv"), "--model", "lr", "--protocol", "leave-one-gpu-out",
                 "--report", str(empty)]) == 2
    assert not empty.exists()


def test_an_output_that_is_a_symbolic_link_to_itself_is_one_error(tmp_path, capsys):
    """A link that leads back to itself gave Python's 'RuntimeError: Symlink loop' as a traceback."""
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    assert main(["import", "nvprof", str(DATA / "nvprof_gpu_trace.csv"), "--out", str(loop)]) == 2
    err = capsys.readouterr().err
    assert f"{loop}: a symbolic link that leads back to itself" in err and err.count("\n") == 1
    assert main(["calibrate", "--out", str(tmp_path / "m.json"), "--store", str(loop), "--kernel", "vector_copy",
                 "--passes", "1", "--no-progress"]) == 2
    assert "a symbolic link that leads back to itself" in capsys.readouterr().err


def test_a_huge_unknown_gpu_name_is_quoted_in_part(tmp_path, capsys):
    """A GPU cell of 100,000 characters made a 100,522-character error line."""
    table = load_dataset("rodinia_nvprof").groupby(["gpu", "kernel"]).head(2).reset_index(drop=True)
    table.loc[3, "gpu"] = "X" * 100_000
    table.to_csv(tmp_path / "huge.csv", index=False)
    assert main(["evaluate", str(tmp_path / "huge.csv"), "--model", "lr", "--protocol", "leave-one-gpu-out",
                 "--gpu-features"]) == 2
    err = capsys.readouterr().err
    assert f"unknown GPU '{'X' * 57}...'" in err and len(err) < 2000


def test_the_cache_follows_gpuperf_cache_dir_then_xdg_cache_home_then_the_home_folder(monkeypatch, tmp_path):
    """XDG_CACHE_HOME was ignored (loopy's cache went there, gpuperf's to ~/.cache), and an empty HOME
    put the cache at /.cache."""
    import pwd

    from gpuperf.files import cache_root

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "own"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "own"
    monkeypatch.delenv("GPUPERF_CACHE_DIR")
    assert cache_root() == tmp_path / "xdg" / "gpuperf"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "gpuperf"
    monkeypatch.setenv("HOME", "")
    assert cache_root() == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "gpuperf"


def test_no_home_folder_puts_the_caches_in_the_temporary_folder_with_a_note(monkeypatch, tmp_path, capsys):
    """HOME unset for a user with no account entry (docker run --user 12345): every command, and
    cache_root(), ended in Python's RuntimeError "Could not determine home directory"."""
    import pwd
    import tempfile

    from gpuperf.cli import main
    from gpuperf.files import cache_root

    def no_entry(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for variable in ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "GPUPERF_CACHE_DIR", "MPLCONFIGDIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    private = tmp_path / f"gpuperf-cache-{os.getuid()}"
    assert cache_root() == private / "gpuperf"
    assert main(["gpus", "--json"]) == 0
    err = capsys.readouterr().err
    assert f"note: there is no home folder (HOME is not set and user {os.getuid()} has no account entry); this run " \
           f"keeps its caches in {private}" in err and "Traceback" not in err
    assert os.environ["XDG_CACHE_HOME"] == str(private)
    assert os.environ["MPLCONFIGDIR"].startswith(str(tmp_path / "gpuperf-mpl-"))


def test_a_tilde_in_gpuperf_variables_with_no_home_folder_is_an_error_naming_the_variable(monkeypatch, tmp_path,
                                                                                        capsys):
    """With no home folder, GPUPERF_GPUS=~/gpus.toml ended in Python's "Could not determine home directory",
    GPUPERF_OPTIMIZATIONS=~/opts said '~/opts' does not exist, GPUPERF_CACHE_DIR=~/c made a folder named ~."""
    import pwd

    from gpuperf.cli import main
    from gpuperf.decisions.optimizations import database_folders
    from gpuperf.errors import GpuperfError
    from gpuperf.files import cache_root, home_path
    from gpuperf.hardware.specs import user_spec_files

    def no_entry(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    for variable in ("HOME", "GPUPERF_CACHE_DIR", "MPLCONFIGDIR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    monkeypatch.chdir(tmp_path)
    no_home = "~ names a home folder, but there is no home folder (HOME is not set and the user has no account entry)"
    monkeypatch.setenv("GPUPERF_GPUS", "~/gpus.toml")
    with pytest.raises(GpuperfError, match=f"^GPUPERF_GPUS=~/gpus.toml: {re.escape(no_home)}; give the path"):
        user_spec_files()
    assert main(["gpus", "--json"]) == 2
    assert capsys.readouterr().err.startswith(f"gpuperf: error: GPUPERF_GPUS=~/gpus.toml: {no_home}")
    monkeypatch.delenv("GPUPERF_GPUS")
    monkeypatch.setenv("GPUPERF_OPTIMIZATIONS", "~/opts")
    with pytest.raises(GpuperfError, match="^GPUPERF_OPTIMIZATIONS=~/opts: ~ names a home folder"):
        database_folders()
    monkeypatch.delenv("GPUPERF_OPTIMIZATIONS")
    monkeypatch.setenv("GPUPERF_CACHE_DIR", "~/c")
    with pytest.raises(GpuperfError, match="^GPUPERF_CACHE_DIR=~/c: ~ names a home folder"):
        cache_root()
    assert main(["gpus", "--json"]) == 2
    assert "gpuperf: error: GPUPERF_CACHE_DIR=~/c: ~ names a home folder" in capsys.readouterr().err
    assert not (tmp_path / "~").exists()
    with pytest.raises(GpuperfError, match="^GPUPERF_GPUS=~nosuchuser/g.toml: ~nosuchuser names a home folder, "
                                           "but there is no user 'nosuchuser'"):
        home_path("~nosuchuser/g.toml", "GPUPERF_GPUS")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert home_path("~/gpus.toml", "GPUPERF_GPUS") == tmp_path / "gpus.toml"
    assert home_path("~", "GPUPERF_GPUS") == tmp_path and home_path("a/~", "GPUPERF_GPUS") == Path("a/~")


def test_a_cache_folder_that_cannot_be_written_moves_the_caches_to_the_temporary_folder(tmp_path):
    """Loopy made its disk cache on import: with a read-only home every command failed, with a traceback."""
    import subprocess
    import sys

    env = {**os.environ, "XDG_CACHE_HOME": "/proc/gpuperf-cannot-write-here", "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "gpuperf", "features", "vector_copy", "-p", "n=4096", "--json"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "cannot be written" in done.stderr and "Traceback" not in done.stderr
    assert next(tmp_path.glob("gpuperf-cache-*")).is_dir()


def test_a_matplotlib_folder_that_cannot_be_made_goes_to_the_temporary_folder(tmp_path):
    """With a read-only home a report's plots printed matplotlib's two-line warning about its folder."""
    import subprocess
    import sys

    env = {key: value for key, value in os.environ.items() if key != "MPLCONFIGDIR"}
    env.update(XDG_CONFIG_HOME="/proc/gpuperf-cannot-write-here", TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", "import os, sys; from gpuperf.cli import main; main(['gpus']); "
                           "import matplotlib; print(os.environ['MPLCONFIGDIR'], file=sys.stderr)"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and done.stderr.strip().startswith(str(tmp_path / "gpuperf-mpl-")), done.stderr
    assert "Matplotlib" not in done.stderr


def test_a_gpuperf_cache_dir_that_cannot_be_written_moves_gpuperfs_caches_with_a_note(tmp_path):
    """A read-only GPUPERF_CACHE_DIR dropped every cache write silently: the advisor refitted on every run."""
    import subprocess
    import sys

    env = {**os.environ, "GPUPERF_CACHE_DIR": "/proc/gpuperf-cannot-write-here", "TMPDIR": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    done = subprocess.run([sys.executable, "-m", "gpuperf", "features", "vector_copy", "-p", "n=4096", "--gpu", "H100",
                           "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "note: GPUPERF_CACHE_DIR /proc/gpuperf-cannot-write-here cannot be written" in done.stderr
    assert any(next(tmp_path.glob("gpuperf-own-cache-*")).iterdir())  # the NVRTC result kept there


def test_a_gpuperf_cache_folder_that_cannot_be_written_moves_gpuperfs_caches_with_a_note(monkeypatch, tmp_path,
                                                                                        capsys):
    """A file (or an unwritable folder) at $XDG_CACHE_HOME/gpuperf dropped every cache write silently:
    the geometry model and the advisor's models were refitted on every run."""
    import tempfile

    from gpuperf.cli import _writable_cache_home
    from gpuperf.files import cache_root

    (tmp_path / "xdg").mkdir()
    (tmp_path / "xdg" / "gpuperf").write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("GPUPERF_CACHE_DIR", raising=False)
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _writable_cache_home()
    private = tmp_path / f"gpuperf-own-cache-{os.getuid()}"
    assert f"note: gpuperf's cache folder {tmp_path / 'xdg' / 'gpuperf'} cannot be written (a file is there, not " \
           f"a folder); this run keeps gpuperf's caches in {private}" in capsys.readouterr().err
    assert cache_root() == private and os.environ["XDG_CACHE_HOME"] == str(tmp_path / "xdg")


def test_a_relative_xdg_cache_home_is_ignored_and_a_tilde_in_gpuperf_cache_dir_is_the_home(monkeypatch, tmp_path,
                                                                                           capsys):
    """XDG_CACHE_HOME=~/.cache (a Dockerfile's ENV) made a folder named ~ in every working folder, each
    with caches of its own; GPUPERF_CACHE_DIR=~/gpc did the same."""
    from gpuperf.cli import _writable_cache_home
    from gpuperf.files import cache_root

    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", "~/.cache")
    monkeypatch.delenv("GPUPERF_CACHE_DIR", raising=False)
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    assert cache_root() == home / ".cache" / "gpuperf"
    _writable_cache_home()
    assert "note: XDG_CACHE_HOME=~/.cache is not an absolute path: ignored" in capsys.readouterr().err
    assert "XDG_CACHE_HOME" not in os.environ and not any(project.iterdir())
    monkeypatch.setenv("GPUPERF_CACHE_DIR", "~/gpc")
    assert cache_root() == home / "gpc"
    _writable_cache_home()
    assert os.environ["GPUPERF_CACHE_DIR"] == str(home / "gpc") and not any(project.iterdir())


def test_the_fallback_cache_folder_is_private_or_another_is_made(tmp_path):
    """An existing /tmp/gpuperf-cache-<uid> open to others was used as it was (its pickles read back),
    and a file of that name ended the command in a traceback."""
    from gpuperf.cli import _private_folder

    own = _private_folder(tmp_path / "own")
    assert own == tmp_path / "own" and (own.stat().st_mode & 0o777) == 0o700
    assert _private_folder(own) == own
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    taken = tmp_path / "taken"
    taken.write_text("")
    for wanted in (shared, taken):
        made = _private_folder(wanted)
        assert made != wanted and made.is_dir() and (made.stat().st_mode & 0o077) == 0
        made.rmdir()


def test_a_checkout_without_symbolic_links_finds_the_data_folder(tmp_path):
    """With core.symlinks=false, bundled_data is a text file naming ../../data: no bundled table was found."""
    import subprocess
    import sys

    repository = Path(__file__).resolve().parents[1]
    shutil.copytree(repository / "src", tmp_path / "src", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    link = tmp_path / "src" / "gpuperf" / "bundled_data"
    link.unlink()
    link.write_text("../../data")
    (tmp_path / "data").symlink_to(repository / "data")
    env = {k: v for k, v in os.environ.items() if k != "GPUPERF_DATA_DIR"} | {"PYTHONPATH": str(tmp_path / "src")}
    code = "from gpuperf.datasets.bundled import data_dir; print(data_dir().resolve())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == (repository / "data").resolve()


def test_only_a_terminal_that_cannot_show_text_gets_escapes(monkeypatch):
    """A UTF-8 stdout keeps surrogateescape (a file name's own bytes print as they are); an ASCII one
    with strict or surrogateescape errors escapes what it cannot show."""
    import io
    import sys

    from gpuperf.cli import ESCAPED, _escape_what_the_terminal_cannot_show

    for encoding, errors, expected in (("utf-8", "surrogateescape", "surrogateescape"),
                                       ("utf-8", "backslashreplace", "backslashreplace"),
                                       ("ascii", "surrogateescape", ESCAPED),
                                       ("ascii", "backslashreplace", ESCAPED),
                                       ("ascii", "strict", ESCAPED)):
        stream = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=errors)
        monkeypatch.setattr(sys, "stdout", stream)
        monkeypatch.setattr(sys, "stderr", stream)
        _escape_what_the_terminal_cannot_show()
        assert stream.errors == expected, (encoding, errors)


def test_a_file_names_own_bytes_print_as_they_are_under_an_ascii_locale(monkeypatch):
    """PYTHONUTF8=0 LC_ALL=C: "wrote 模型2.json" printed as "wrote \\udce6\\udca8...", a name no longer naming
    the file; characters the encoding cannot show are still escaped."""
    import io
    import sys

    from gpuperf.cli import _escape_what_the_terminal_cannot_show

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", stream)
    _escape_what_the_terminal_cannot_show()
    name = "模型2.json".encode().decode("ascii", "surrogateescape")  # as sys.argv holds it under that locale
    stream.write(f"wrote {name}; kernel größe\n")
    stream.flush()
    assert raw.getvalue() == "wrote 模型2.json; kernel gr\\xf6\\xdfe\n".encode()


def test_json_names_a_file_by_its_own_characters_under_an_ascii_locale(capsys):
    """PYTHONUTF8=0 LC_ALL=C: --json gave "space": "\\udce6\\udca8...", which JSON readers turn into
    U+FFFD, a name no longer naming the file; it gives the name as under a UTF-8 locale. Bytes that spell
    no UTF-8 are left as they were."""
    import json

    from gpuperf.cli.output import print_json

    name = "/tmp/模型.csv".encode().decode("ascii", "surrogateescape")  # as sys.argv holds it under that locale
    latin = "/tmp/gr\xf6\xdfe.csv".encode("latin-1").decode("ascii", "surrogateescape")  # no UTF-8
    print_json({"space": name, "tables": [name], name: 1, "other": latin})
    out = capsys.readouterr().out
    assert '"space": "/tmp/\\u6a21\\u578b.csv"' in out
    assert json.loads(out) == {"space": "/tmp/模型.csv", "tables": ["/tmp/模型.csv"], "/tmp/模型.csv": 1,
                               "other": latin}


def test_tables_print_whole_counts_in_full_and_name_the_time_columns_unit(capsys):
    """features showed threads 1048576 as 1.049e+06; tune's and explore's time columns had no unit."""
    from gpuperf.cli import main
    from gpuperf.cli.decisions_cli import numbered

    assert main(["features", "vector_copy", "-p", "n=1048576"]) == 0
    out = capsys.readouterr().out
    assert "1048576" in out and "1.049e+06" not in out and "8388608" in out
    rows = numbered([{"x": 1, "time": 0.5}], time_column="time_ms")
    assert rows == [{"#": 1, "x": 1, "time_ms": 0.5}]
    assert numbered([{"time_ms": 3, "time": 0.5}], time_column="time_ms") == [{"#": 1, "time_ms": 3, "time": 0.5}]


def test_features_notes_sizes_measure_refuses_as_predict_does(capsys):
    """features at sizes past the int32 indices (or CUDA's grid) gave its counts with no note."""
    assert main(["features", "jacobi2d_5pt", "-p", "n=46352", "-p", "m=46352", "--json"]) == 0
    err = capsys.readouterr().err
    assert "note: measure would refuse this launch (jacobi2d_5pt at n=46352, m=46352: array 'a' holds " in err
    assert "the features are for a kernel that cannot run as generated" in err
    assert main(["features", "copy_2d", "-p", "n=2097152", "-p", "m=16", "--gpu", "H100"]) == 0
    assert "refuse this launch through CUDA (kernel 'copy_2d' at n=2097152, m=16: its grid" in capsys.readouterr().err
    assert main(["features", "copy_2d", "-p", "n=2097152", "-p", "m=16", "--gpu", "MI250X"]) == 0
    assert "refuse" not in capsys.readouterr().err  # an AMD GPU is not run through CUDA
    assert main(["features", "copy_2d", "-p", "n=4096", "-p", "m=16"]) == 0
    assert "refuse" not in capsys.readouterr().err


def test_a_cache_folder_everyone_may_write_to_moves_the_caches_to_a_private_folder(tmp_path):
    """A shared XDG_CACHE_HOME (or a gpuperf folder in it others made open): a planted pickle would run."""
    import subprocess
    import sys

    shared = tmp_path / "shared"
    (shared / "gpuperf").mkdir(parents=True)
    shared.chmod(0o755)
    (shared / "gpuperf").chmod(0o777)
    env = {**os.environ, "XDG_CACHE_HOME": str(shared), "TMPDIR": str(tmp_path)}
    env.pop("GPUPERF_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-m", "gpuperf", "features", "vector_copy", "-p", "n=4096", "--json"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert f"{shared / 'gpuperf'} is writable by everyone: a file planted there would be read back as code" \
        in done.stderr
    assert next(tmp_path.glob("gpuperf-cache-*")).is_dir()
    (shared / "gpuperf").chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "gpuperf", "features", "vector_copy", "-p", "n=4096", "--json"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "not safe for caches" not in done.stderr, done.stderr


def test_an_invalid_mplbackend_is_one_error_naming_the_variable(tmp_path):
    """matplotlib refuses to import when MPLBACKEND names no backend: every report command was a traceback."""
    import subprocess
    import sys

    env = {**os.environ, "MPLBACKEND": "no-such-backend"}
    done = subprocess.run([sys.executable, "-m", "gpuperf", "reproduce", "geometry", "--out", str(tmp_path / "report")],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("gpuperf: error: the environment variable MPLBACKEND='no-such-backend' names no "
                                  "matplotlib backend"), done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "report").exists()


def test_a_command_ending_in_one_thread_keeps_another_threads_report_lock(tmp_path):
    """A service running commands in threads: one command's end released every thread's report locks
    (one stack for the process), so a third run could write over a report still being written."""
    import threading

    from gpuperf.cli.output import REPORT_LOCK, command_locks, report_folder
    from gpuperf.errors import GpuperfError

    folder = tmp_path / "rep"
    held, finish = threading.Event(), threading.Event()

    def first_command() -> None:
        with command_locks():
            report_folder(folder)
            held.set()
            finish.wait(10)

    thread = threading.Thread(target=first_command)
    thread.start()
    try:
        assert held.wait(10)
        with command_locks():  # another command in this thread: begins and ends
            report_folder(tmp_path / "other")
        assert (folder / f"{REPORT_LOCK}.lock").exists()
        with pytest.raises(GpuperfError, match="another run .* is writing a report there"), command_locks():
            report_folder(folder)  # the same folder from this thread: refused while the first holds it
    finally:
        finish.set()
        thread.join()
    assert not (folder / f"{REPORT_LOCK}.lock").exists()
    with command_locks():
        report_folder(folder)  # free once the first command ended


def test_a_damaged_cache_database_is_one_error_naming_loopys_cache_folder(tmp_path, monkeypatch, capsys):
    """A loopy cache file cut short (sqlite3.DatabaseError from deep in loopy) ended every command in a
    69-line traceback naming no file."""
    import sqlite3

    from gpuperf.cli import kernels_cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def damaged(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(kernels_cli, "extract_features", damaged, raising=False)
    monkeypatch.setattr("gpuperf.features.extract_features", damaged)
    assert main(["features", "stencil2d", "-p", "n=256", "-p", "m=256", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: a cache database is damaged (database disk image is malformed)")
    assert str(tmp_path / "pytools") in err and "Traceback" not in err


def test_a_damaged_loopy_cache_database_is_named_among_the_sound_ones(tmp_path, monkeypatch, capsys):
    """The error said only that some file of loopy's cache folder was damaged: it holds six files of like
    names (more from other loopy versions), and removing the folder loses every cache."""
    import sqlite3

    from gpuperf.cli import kernels_cli

    caches = tmp_path / "pytools"
    caches.mkdir()
    for name in ("pdict-a.sqlite", "pdict-b.sqlite", "pdict-c.sqlite"):
        with sqlite3.connect(caches / name) as db:
            db.execute("CREATE TABLE dict (keyhash TEXT, key_value TEXT)")
            db.executemany("INSERT INTO dict VALUES (?, ?)", [(str(i), "x" * 500) for i in range(100)])
        db.close()
    with open(caches / "pdict-b.sqlite", "r+b") as cut:
        cut.truncate(5000)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def damaged(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(kernels_cli, "extract_features", damaged, raising=False)
    monkeypatch.setattr("gpuperf.features.extract_features", damaged)
    assert main(["features", "stencil2d", "-p", "n=256", "-p", "m=256", "--json"]) == 2
    assert capsys.readouterr().err == ("gpuperf: error: a cache database is damaged (database disk image is "
                                       f"malformed): remove {caches / 'pdict-b.sqlite'} (it is rebuilt)\n")


def test_control_characters_in_names_reach_the_terminal_escaped(capsys):
    import warnings

    from gpuperf.cli.output import print_table, with_notes
    from gpuperf.errors import GpuperfNote

    print_table([{"kernel\x1b[2J": "k\x1b]0;title\x07", "gpu": "a\tb\nc"}], title="t\x1b[31m")

    def note() -> None:
        warnings.warn(GpuperfNote("kernel 'k\x1b[31m' has\nno counts"))

    with_notes(note)
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out
    assert "\\x1b[2J" in out and "k\\x1b]0;title\\x07" in out and "b\\x0ac" in out and "t\\x1b[31m" in out
    assert err == "note: kernel 'k\\x1b[31m' has\nno counts\n"


def test_an_error_naming_a_control_character_prints_it_escaped(tmp_path, capsys):
    assert main(["fit", str(tmp_path / "gpu\x1b[2J.csv"), "--model", "lr", "--out", str(tmp_path / "m.json")]) == 2
    assert "gpu\\x1b[2J.csv" in capsys.readouterr().err


def test_a_profilers_warning_reaches_the_terminal_as_a_note_with_its_control_characters_escaped(tmp_path, capsys):
    """The profiler's own text (``==123== Warning: ...``) is quoted in a note; an escape sequence in it
    cannot retitle or recolour the terminal."""
    profile, out = tmp_path / "m.csv", tmp_path / "o.csv"
    lines = (DATA / "nvprof_gpu_trace.csv").read_text().splitlines(keepends=True)
    profile.write_text("".join(lines[:3]) + "==123== Warning: evil \x1b]0;pwned\x07 here\n" + "".join(lines[3:]))
    assert main(["import", "nvprof", str(profile), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert "note: " in err and "evil \\x1b]0;pwned\\x07 here" in err


def test_table_cells_show_c1_controls_and_delete_as_escapes(capsys):
    """\\x9b is a one-byte CSI on terminals that take C1 controls; \\x7f deletes."""
    from gpuperf.cli.output import print_table

    print_table([{"kernel": "a\x9b2Jb\x7f"}])
    out = capsys.readouterr().out
    assert "\x9b" not in out and "\x7f" not in out and "a\\x9b2Jb\\x7f" in out


def test_a_table_is_as_wide_as_its_title_up_to_the_terminal_so_a_path_in_it_is_never_cut_mid_word(capsys, monkeypatch):
    """A user's space named by its path (spaces /path/my_kernels.py:scale_space) titled a table narrower than
    the title, and rich folded the path across lines mid-word (my_kernels.py:scale_sp / ace)."""
    from gpuperf.cli import output

    monkeypatch.setattr(output.console, "width", 80)
    path = "/home/user/project/kernels/my_kernels.py:scale_space"
    output.print_table([{"variant": "scale[local_x=16]"}], title=f"{path}: first 1 valid variants")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == f"{path}: first 1 valid variants"
    assert len(lines[1]) == len(lines[0].strip())  # the table's top border spans the title
    long_title = f"{path}: the first 1 valid variants, each built"  # wider than the terminal: wrapped at words
    output.print_table([{"variant": "scale[local_x=16]"}], title=long_title)
    lines = capsys.readouterr().out.splitlines()
    assert [line.strip() for line in lines[:2]] == [f"{path}: the first 1 valid", "variants, each built"]
    assert {len(line) for line in lines} == {80}
    output.print_table([], title=long_title)  # no rows, no columns: rich prints an empty line
    assert capsys.readouterr().out == "\n"


def _body_cells(out: str) -> list[list[str]]:
    """The cells of each body line of the rich tables in ``out``."""
    return [[cell.strip() for cell in line.strip()[1:-1].split("│")] for line in out.splitlines()
            if line.startswith("│")]


def _wrapped_rows(out: str) -> list[list[str]]:
    """A rich table's body rows, each cell's wrapped lines joined by spaces (its first column unwrapped)."""
    rows: list[list[str]] = []
    for cells in _body_cells(out):
        if cells[0]:
            rows.append(cells)
        else:  # a continuation line of the row above
            rows[-1] = [f"{kept} {more}".strip() for kept, more in zip(rows[-1], cells)]
    return rows


def _table_width(out: str) -> int:
    """The widest line of the tables in ``out`` (the lines printed beside them aside)."""
    return max(len(line) for line in out.splitlines() if line[:1] in "┏┃┡│└")


def test_on_an_80_column_terminal_kernels_and_spaces_wrap_their_prose_and_keep_every_name_whole(capsys, monkeypatch):
    """kernels (215 columns), spaces (157) and a space's skipped configurations (130) printed wider than an
    80-column terminal, which broke every row across two or three lines; their descriptions, parameter lists
    and reasons now wrap at word boundaries in the table, the names and counts beside them whole."""
    from rich.console import Console

    from gpuperf.cli import output
    from gpuperf.kernels.catalog import entries
    from gpuperf.kernels.space import get_space, space_names

    monkeypatch.setattr(output, "console", Console(width=80, force_terminal=True, color_system=None))
    assert main(["kernels"]) == 0
    out = capsys.readouterr().out
    assert _table_width(out) == 80
    assert _wrapped_rows(out) == [[e.name, e.category, ",".join(e.params), e.description] for e in entries()]
    assert main(["spaces"]) == 0
    out = capsys.readouterr().out
    assert _table_width(out) == 80
    assert _wrapped_rows(out) == [[name, ", ".join(f"{k} in {v}" for k, v in get_space(name).parameters.items())]
                                  for name in space_names()]
    assert main(["spaces", "jacobi2d_5pt", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert _table_width(out) == 80
    skipped = get_space("jacobi2d_5pt").skipped(limit=3)
    lines = [cells for cells in _body_cells(out) if len(cells) == 2]  # the skipped table's, both columns wrapped
    assert " ".join(config for config, _ in lines if config) == " ".join(str(config) for config, _ in skipped)
    assert " ".join(reason for _, reason in lines if reason) == " ".join(reason for _, reason in skipped)


def test_a_table_printed_to_a_file_keeps_each_row_on_one_line(capsys, monkeypatch):
    """Wrapping prose is for a person at a terminal: kernels > file, or | grep, keeps each kernel's row whole."""
    from rich.console import Console

    from gpuperf.cli import output
    from gpuperf.kernels.catalog import entries

    monkeypatch.setattr(output, "console", Console(width=80, force_terminal=False))
    assert main(["kernels"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    assert len(lines) == len(entries()) and all(e.description in line for e, line in zip(entries(), lines))


def test_tables_show_a_mapping_as_names_and_values_and_a_count_of_one_in_the_singular(tmp_path, capsys):
    """Tables showed sizes and configurations as Python dicts ({'n': 256, 'm': 256}, failed {}) and
    predict-table said "wrote 1 rows"."""
    from gpuperf.cli.output import counted, print_table

    print_table([{"figure": "sizes", "value": {"n": 256, "m": 256}}, {"figure": "failed", "value": {}}])
    out = capsys.readouterr().out
    assert "n=256, m=256" in out and "│ none " in out and "{" not in out
    assert (counted(1, "row"), counted(0, "row"), counted(2, "column")) == ("1 row", "0 rows", "2 columns")
    table = small_table(tmp_path)
    assert main(["fit", str(table), "--model", "lr", "--out", str(tmp_path / "m.json")]) == 0
    one = tmp_path / "one.csv"
    pd.read_csv(table).head(1).to_csv(one, index=False)
    capsys.readouterr()
    assert main(["predict-table", "--model", str(tmp_path / "m.json"), str(one), "--out", str(tmp_path / "p.csv")]) == 0
    assert f"wrote 1 row with predicted_time_s to {tmp_path / 'p.csv'}" in capsys.readouterr().out


def test_progress_labels_notes_and_tuning_reports_name_values_and_count_one_row(tmp_path, capsys, monkeypatch):
    """predict-table's progress bar read "writing 1 rows to ...", and a tuning report's notes
    "jacobi2d_5pt at {'n': 512, 'm': 256}" and "Best {'unroll': 4}: ..."."""
    import gpuperf.cli.model_tables as model_tables
    import gpuperf.progress
    from gpuperf.decisions.reports import tuning_report
    from gpuperf.decisions.tune import Trial, TuneResult

    labels = []
    real = gpuperf.progress.progress_bar

    class Recording:
        def __init__(self, hidden=False, *columns, transient=True):  # progress_bar's parameters
            pass

        def __enter__(self):
            self.bar = real(True).__enter__()
            return self

        def __exit__(self, *exc):
            return self.bar.__exit__(*exc)

        def add_task(self, description, total=None):
            labels.append(description)
            return self.bar.add_task(description, total=total)

    monkeypatch.setattr(gpuperf.progress, "progress_bar", Recording)
    table = small_table(tmp_path)
    assert main(["fit", str(table), "--model", "lr", "--out", str(tmp_path / "m.json")]) == 0
    one = tmp_path / "one.csv"
    pd.read_csv(table).head(1).to_csv(one, index=False)
    assert main(["predict-table", "--model", str(tmp_path / "m.json"), str(one), "--out", str(tmp_path / "p.csv")]) == 0
    assert f"writing 1 row to {tmp_path / 'p.csv'}" in labels
    assert model_tables.unbounded_note(pd.Series([True, False]), "t.csv").startswith("note: t.csv: left out 1 row with")
    result = TuneResult("jacobi2d_5pt", {"n": 512, "m": 256}, "opencl:0", "online (gp)",
                        [Trial({"unroll": 1}, 20.0e-6, "ok"), Trial({"unroll": 4}, 10.0e-6, "ok")])
    text = tuning_report(tmp_path / "report", result, 30.0e-6)["markdown"].read_text()
    assert "jacobi2d_5pt at n=512, m=256 on opencl:0" in text and "Best unroll=4: 3.00x as fast" in text
    assert "{'" not in text


def test_the_three_note_collectors_differ_in_when_the_notes_are_printed(capsys, monkeypatch):
    """with_notes prints a call's notes once it returns, notes_kept as they are raised, noted not at all
    (the command prints the lines it returns): each keeps every note for --json."""
    import sys
    import warnings

    from gpuperf.cli import _show_note
    from gpuperf.cli.model_tables import noted
    from gpuperf.cli.output import notes_kept, with_notes
    from gpuperf.errors import GpuperfNote

    monkeypatch.setattr(warnings, "showwarning", _show_note)  # as the command line shows notes

    def call() -> int:
        warnings.warn(GpuperfNote("first"), stacklevel=1)
        print("while running", file=sys.stderr)
        return 7

    assert with_notes(call) == (7, ["first"])
    assert capsys.readouterr().err.splitlines() == ["while running", "note: first"]
    with notes_kept() as kept:
        assert call() == 7
    assert kept == ["first"]
    assert capsys.readouterr().err.splitlines() == ["note: first", "while running"]
    assert noted(call) == (7, ["note: first"])
    assert capsys.readouterr().err.splitlines() == ["while running"]


def test_prose_wider_than_the_widest_table_still_wraps_at_words_on_a_terminal(capsys, monkeypatch):
    """A prose column past WIDEST_TABLE (a compiler's error with its hint, 250 characters) printed the table
    250 wide on an 80-column terminal, and a short prose column beside a long one was folded mid-word
    ("descripti|on", "pthread-A|MD"): each prose column now wraps at words, never under its longest word."""
    from rich.console import Console

    from gpuperf.cli import output

    monkeypatch.setattr(output, "console", Console(width=80, force_terminal=True, color_system=None))
    reason = " ".join(["the compiler does not know this machine's CPU"] * 6)
    rows = [{"device": "opencl:0:0", "description": "pthread-AMD EPYC (Portable Computing Language)",
             "reason": reason}]
    assert output.WIDEST_TABLE < len(reason) + 60
    output.print_table(rows, title="devices", prose=("description", "reason"))
    out = capsys.readouterr().out
    assert _table_width(out) == 80
    assert _wrapped_rows(out) == [list(rows[0].values())]
    assert _body_cells(out)[1][1] == "EPYC"  # "pthread-AMD" whole on the line above


def test_a_title_word_wider_than_the_terminal_is_printed_whole_not_folded_mid_word(capsys, monkeypatch):
    """A path wider than the terminal in a table's title was folded at the table's edge, its second part
    centred below (".../averyverylongfo" / "  ldername/..."), so it copied with a break and spaces inside:
    it is now whole on its own line, for the terminal to wrap at its edge, and the title loses no character."""
    from gpuperf.cli import output

    monkeypatch.setattr(output.console, "width", 80)
    path = "/home/user/" + "a_project_folder_with_a_long_name/" * 3 + "my_kernels.py:scale_space"
    title = f"spaces {path}: first 1 valid variants"
    output.print_table([{"variant": "scale[local_x=16]", "time": 1.5}], title=title)
    lines = capsys.readouterr().out.splitlines()
    table = lines.index(next(line for line in lines if line.startswith("┏")))
    assert [line.strip() for line in lines[:table]] == ["spaces", f"{path}:", "first 1 valid variants"]
    assert {len(line) for line in lines[table:]} == {80}


def test_a_name_escaped_under_an_ascii_locale_keeps_its_rows_border_in_line(monkeypatch, tmp_path):
    """LC_ALL=C PYTHONIOENCODING=ascii: a kernel named café printed as caf\\xe9, but its table measured it as
    the four characters café, so its row's border stood three columns right of the others'."""
    import io
    import subprocess
    import sys

    from gpuperf.cli import _escape_what_the_terminal_cannot_show, output

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    _escape_what_the_terminal_cannot_show()
    output.print_table([{"kernel": "café", "n": 30}, {"kernel": "plain", "n": 30}], title="on café")
    stream.flush()
    lines = raw.getvalue().decode("ascii").splitlines()
    assert "caf\\xe9" in lines[0] and len({len(line) for line in lines[1:]}) == 1, lines
    monkeypatch.undo()

    rows = [{"kernel": kernel, "gpu": gpu, "n": 2.0 ** n, "time_s": 2.0 ** n * 1e-9 * (1 + (n % 3) / 7 + len(gpu) / 9)}
            for kernel in ("café", "plain") for gpu in ("A100", "V100", "K20") for n in range(10, 20)]
    pd.DataFrame(rows).to_csv(tmp_path / "t.csv", index=False)
    done = subprocess.run([sys.executable, "-m", "gpuperf", "evaluate", str(tmp_path / "t.csv"), "--model", "lr",
                           "--protocol", "leave-one-kernel-out", "--no-progress"], capture_output=True,
                          env={**os.environ, "LC_ALL": "C", "PYTHONIOENCODING": "ascii"})
    table = [line for line in done.stdout.decode("ascii").splitlines() if line[:1] in "+|"]
    assert any("caf\\xe9" in line for line in table) and len({len(line) for line in table}) == 1, done.stdout
