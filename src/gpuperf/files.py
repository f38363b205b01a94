"""Writing a file whole or not at all (through a temporary file beside it, renamed over it at the
end), one run at a time writing a file (a lock beside it), and where gpuperf keeps its caches."""

from __future__ import annotations

import gzip
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from gpuperf.errors import GpuperfError


class UnwritableFile(GpuperfError):
    """A file the system refused to write (a full disk, a read-only folder): ``path`` and the system's
    ``reason`` where known."""

    def __init__(self, message: str, path: Path | None = None, reason: str | None = None):
        super().__init__(message)
        self.path, self.reason = path, reason


@contextmanager
def written_whole(path: str | Path, new: bool = False, through_links: bool = True) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to, renamed to ``path`` when the block ends and
    removed if it raises: a failed or killed write never leaves a partial ``path`` (nor replaces
    the file already there). With ``new``, a file that appeared at ``path`` while the block ran (another
    run's, a user's) is kept and the write refused. A symbolic link is written through: its target gets
    the new text (the file the link names, as the run lock holds it); not ``through_links`` (a cache
    file, a report's page in a folder others may have written to), the link itself is replaced and
    what it names is left alone. A folder where no file can be created is an error naming ``path``."""
    path = Path(path)
    if path.is_symlink() and through_links:
        path = real_path(path)
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:  # named by the path asked for, not by the temporary file's
        reason = error.strerror or str(error)
        raise UnwritableFile(f"{path}: cannot be written there ({reason})", path, reason) from None
    os.close(handle)
    try:
        yield Path(temporary)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes it private; the file is as any file written
        if new:
            _link_new(Path(temporary), path)
        else:
            os.replace(temporary, path)
    except BaseException as error:
        Path(temporary).unlink(missing_ok=True)
        if isinstance(error, OSError):  # a full disk names no file: name the one being written
            reason = error.strerror or str(error)
            raise UnwritableFile(f"{path}: cannot be written ({reason}); it is left as it was", path, reason) from None
        raise


def real_path(path: str | Path) -> Path:
    """``path`` with its symbolic links followed; a link that leads back to itself is an error naming it."""
    try:
        return Path(path).resolve()
    except (RuntimeError, OSError) as error:  # Python's "Symlink loop", or ELOOP
        raise GpuperfError(f"{path}: a symbolic link that leads back to itself ({error})") from None


def _link_new(temporary: Path, path: Path) -> None:
    """``temporary`` renamed to ``path`` only where no file is there: a hard link fails rather than
    replace one (where the file system has no hard links, a check just before is the best there is)."""
    appeared = GpuperfError(f"{path}: a file appeared there while this run wrote it; it is kept, and this run's "
                            "output is not written (name another file)")
    try:
        os.link(temporary, path)
    except FileExistsError:
        raise appeared from None
    except OSError:
        if path.exists() or path.is_symlink():
            raise appeared from None
        os.replace(temporary, path)
        return
    temporary.unlink()


def refuse_existing(path: Path, what: str, replace: bool = False) -> None:
    """An error where a file is at ``path`` already, unless ``replace`` (a run rewriting its own
    ``what``, a table or a cache); a folder there is the writer's own error."""
    if path.exists() and not replace and not path.is_dir():
        raise GpuperfError(f"{path}: already exists (another run's output?); a {what} is written to a new file: "
                           "name another (in Python, replace=True writes over it)")


class Held(GpuperfError):
    """Another process holds the lock of a file a run would write (``holder``: its process id)."""

    def __init__(self, holder: str):
        super().__init__(f"held by process {holder}")
        self.holder = holder


class Unlockable(GpuperfError):
    """The lock file beside a file a run would write cannot be created (``lock``; ``reason``)."""

    def __init__(self, lock: Path, reason: str):
        super().__init__(f"cannot create the run lock {lock} ({reason})")
        self.lock, self.reason = lock, reason


@contextmanager
def run_lock(path: str | Path, remove: bool = False) -> Iterator[None]:
    """Hold ``PATH.lock`` (beside ``path``'s real file, so a symbolic link to it takes the same lock)
    for the block: a second run that tries while it is held gets :class:`Held` naming the holder's
    process id, and a lock file that cannot be created :class:`Unlockable`. Released when the block
    ends or the process dies (with ``remove``, the lock file goes too: no file is left beside a
    table); where the platform or file system has no advisory locks, runs are not kept apart."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    real = real_path(path)
    lock = Path(f"{real}.lock")
    if real.is_file() and real.stat().st_nlink > 1:
        raise Unlockable(lock, f"{real} has {real.stat().st_nlink} names (hard links): a run through another name "
                               "would not see this lock; give the run a file of one name")
    handle, locked = _locked(lock, fcntl)
    with handle:
        if locked:
            handle.seek(0)
            held = handle.read().strip()
            if held and not held.isdigit():  # gpuperf's lock holds a process id, or nothing yet
                raise Unlockable(lock, "a file gpuperf did not write is there (a lock holds a process id); move it "
                                       "away or name the output otherwise")
            try:
                handle.seek(0)
                handle.truncate()
                handle.write(str(os.getpid()))
                handle.flush()
            except OSError as error:  # a full disk: no run is kept off by an empty lock file left behind
                if remove:
                    lock.unlink(missing_ok=True)
                raise Unlockable(lock, error.strerror or str(error)) from None
        try:
            yield
        finally:
            if remove and locked:  # while still held: a run that opened it meanwhile finds it gone (_locked)
                lock.unlink(missing_ok=True)


def lock_holder(path: str | Path) -> str | None:
    """The process id of a run holding ``PATH.lock`` now (see :func:`run_lock`; "unknown" where it wrote
    none yet), None where no run does. The lock is only looked at, not kept; no lock file is made."""
    try:
        import fcntl
    except ImportError:
        return None
    try:
        handle = open(f"{real_path(path)}.lock", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed below
    except (OSError, GpuperfError):  # no lock file: no run has measured into it from here
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)  # shared: another look at once is not kept off
        except BlockingIOError:
            return handle.read().strip() or "unknown"
        except OSError:  # a file system without locks
            return None
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _locked(lock: Path, fcntl) -> tuple[IO[str], bool]:  # noqa: ANN001 - the fcntl module
    """``lock`` opened and locked (True), or opened unlocked where the file system has no locks
    (False). A file another run removed between our opening and locking it is no lock: opened again."""
    while True:
        try:
            handle = lock.open("a+")
        except OSError as error:
            raise Unlockable(lock, error.strerror or str(error)) from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise Held(holder) from None
        except OSError:  # a file system without locks (a network mount without them)
            return handle, False
        try:
            current = os.stat(lock).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            return handle, True
        handle.close()


def home_folder() -> Path | None:
    """The user's home folder: ``$HOME``, else the account's (an empty ``HOME`` is no home); None where
    there is none (``HOME`` unset for a user with no account entry, as a container's ``--user 12345``)."""
    if os.environ.get("HOME"):
        return Path(os.environ["HOME"])
    try:
        import pwd

        return Path(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError):  # no password database (Windows), or a user not in it
        pass
    try:
        return Path.home()
    except RuntimeError:  # Python's "Could not determine home directory"
        return None


def home_path(value: str, variable: str) -> Path:
    """``value``, a path from environment ``variable``, with a leading ``~`` (or ``~user``) as that home
    folder (:func:`home_folder`'s for ``~``); an error naming ``variable`` where there is none."""
    if not value.startswith("~"):
        return Path(value)
    head, sep, rest = value.replace(os.altsep or os.sep, os.sep).partition(os.sep)
    if head == "~":
        home = home_folder()
        why = "there is no home folder (HOME is not set and the user has no account entry)"
    else:
        expanded = os.path.expanduser(head)
        home = None if expanded == head else Path(expanded)
        why = f"there is no user {head[1:]!r}"
    if home is None:
        raise GpuperfError(f"{variable}={value}: {head} names a home folder, but {why}; give the path without ~")
    return home / rest if sep else home


def no_home_cache() -> Path:
    """Where caches go when there is no home folder: ``gpuperf-cache-UID`` in the temporary folder."""
    return Path(tempfile.gettempdir()) / f"gpuperf-cache-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


def cache_home() -> Path:
    """The folder loopy's and gpuperf's caches go under: ``$XDG_CACHE_HOME`` where absolute (a relative one,
    ``~/.cache`` too, is ignored, as the XDG specification asks), else ``~/.cache`` (an empty ``HOME`` is no
    home: the account's), and with no home folder at all, :func:`no_home_cache`."""
    if os.environ.get("XDG_CACHE_HOME") and Path(os.environ["XDG_CACHE_HOME"]).is_absolute():
        return Path(os.environ["XDG_CACHE_HOME"])
    home = home_folder()
    return no_home_cache() if home is None else home / ".cache"


def cache_root() -> Path:
    """Where gpuperf keeps its caches: ``$GPUPERF_CACHE_DIR`` (a ``~`` in it is the home folder), else
    ``gpuperf`` in :func:`cache_home`, where loopy keeps its own."""
    if os.environ.get("GPUPERF_CACHE_DIR"):
        return home_path(os.environ["GPUPERF_CACHE_DIR"], "GPUPERF_CACHE_DIR").absolute()
    return cache_home() / "gpuperf"


_UNCACHED: set[Path] = set()  # the cache folders a cache file could not be written in (noted once each)


def write_cache_file(path: str | Path, write: Callable[[Path], object]) -> None:
    """Write a cache file whole through ``write(temporary)``, creating its folder; a cache that cannot
    be written (read-only, full, not a folder) is skipped, with a note the first time in its folder:
    that only costs the work again next time."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(path.parent)
        with written_whole(path, through_links=False) as temporary:  # a planted link is replaced, not followed
            write(temporary)
    except (UnwritableFile, OSError) as error:
        note_unwritten_cache(path, error)


def note_unwritten_cache(path: str | Path, error: Exception) -> None:
    """The note :func:`write_cache_file` gives, once a folder, for a cache file that ``error`` kept from
    being written, for a cache written by other means (a model file, which needs its own suffix)."""
    import warnings

    from gpuperf.errors import GpuperfNote

    folder = Path(path).parent
    if folder in _UNCACHED:
        return
    _UNCACHED.add(folder)
    if isinstance(error, OSError):
        reason = f"{folder} is a file, not a folder" if folder.exists() and not folder.is_dir() else \
            error.strerror or str(error)
        why = f"{path}: cannot be written ({reason})"
    else:
        why = str(error)
    warnings.warn(GpuperfNote(f"gpuperf's cache file {why}: it is not kept, and its work is done again on the "
                              f"next run (make {folder} a writable folder, or set GPUPERF_CACHE_DIR to "
                              "one)"), stacklevel=3)


REPORT_LOCK = ".gpuperf-report"  # FOLDER/.gpuperf-report.lock: inside a report folder, never beside a user's files
STALE_TEMPORARY_S = 3600.0  # a cache write takes seconds; a temporary this old was left by a killed run


def remove_stale_temporaries(folder: Path) -> None:
    """Remove the temporary files (``.NAME.*.tmp``) a run killed while writing a cache file left in
    ``folder`` (a geometry model's is 25 MB), once they are an hour old: no write still owns them."""
    cutoff = time.time() - STALE_TEMPORARY_S
    for temporary in folder.glob(".*.tmp"):
        try:
            if temporary.is_file() and not temporary.is_symlink() and temporary.stat().st_mtime < cutoff:
                temporary.unlink()
        except OSError:
            pass  # another run removed it, or it cannot be: left as it is


def _umask() -> int:
    """The process's file-creation mask (read by setting it, then put back)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


LARGEST_EXACT_WHOLE = 2.0 ** 53  # beyond it a float is not every whole number: read back, it may differ


def whole_numbers(column):  # noqa: ANN001, ANN201 - a pandas Series
    """``column`` as nullable integers (a missing value stays missing) where every value it holds is a
    whole number that a float holds exactly; any other column (text, booleans, a fraction) as it is."""
    import numpy as np
    import pandas as pd

    values = column.dropna()
    if values.empty or pd.api.types.is_bool_dtype(column):
        return column
    if pd.api.types.is_integer_dtype(column):
        return column.astype("Int64")
    if column.dtype == object and not all(isinstance(v, (int, float, np.integer, np.floating))
                                          and not isinstance(v, (bool, np.bool_)) for v in values):
        return column
    if column.dtype != object and not pd.api.types.is_float_dtype(column):
        return column
    numbers = pd.to_numeric(column)
    present = numbers.dropna().to_numpy(dtype=float)
    if not (np.isfinite(present).all() and (np.abs(present) <= LARGEST_EXACT_WHOLE).all()
            and (present == np.round(present)).all()):
        return column
    return numbers.astype("Int64")


def with_whole_numbers(frame, columns):  # noqa: ANN001, ANN201 - a pandas DataFrame, column names
    """``frame`` with each of ``columns`` whose values are all whole numbers as integers (:func:`whole_numbers`),
    in a copy where any is (the other columns are not copied)."""
    out = frame
    for column in columns:
        values = frame[column]
        whole = whole_numbers(values)
        if whole is not values:
            out = frame.copy(deep=False) if out is frame else out
            out[column] = whole
    return out


def write_csv(frame, temporary: Path, named: Path) -> None:  # noqa: ANN001 - a pandas DataFrame
    """``frame`` as CSV in ``temporary``, the file that becomes ``named`` (gzipped when ``named`` ends in
    .gz; its gzip header names ``named``, not the temporary file)."""
    if named.suffix.lower() != ".gz":
        frame.to_csv(temporary, index=False)
        return
    with open(temporary, "wb") as raw, gzip.GzipFile(filename=named.name, mode="wb", fileobj=raw) as zipped:
        frame.to_csv(zipped, index=False)
