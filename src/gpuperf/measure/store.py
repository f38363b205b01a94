"""The measurement store: an SQLite file with one row per measured point, committed as it is taken.

The key (campaign, kernel, sizes, device, geometry) is unique, so no point is ever stored twice.
Rows are never changed once written; a failed point (``compile_failed``, ``run_failed``,
``verify_failed``) is a row with its error text and no time. The database runs in WAL mode with a
commit per row, so a killed process loses at most the point it was measuring. A group of points
timed in interleaved cycles commits each finished cycle's rounds to the ``rounds`` table, so a
killed group resumes at its next cycle; its points replace those rounds when the group ends. Each of
those points' provenance names the cycles it was timed in (``cycle_group``: one identifier per group,
kept by its saved rounds so that a resumed group keeps it); stores written before it lack it.
One campaign run measures into a store at a time (:func:`measuring_into`): a second would time its
points on a device the first is loading, and its rows would be dropped as already stored.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gpuperf.errors import GpuperfError, clipped, missing_file

OK = "ok"
CYCLE_GROUP = "cycle_group"  # provenance of an interleaved point: the group (cycles) it was timed in
FAILURES = ("compile_failed", "run_failed", "verify_failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS campaigns (
    name TEXT PRIMARY KEY,
    source TEXT,
    device TEXT,
    planned INTEGER NOT NULL,
    updated_at TEXT
);
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY,
    campaign TEXT NOT NULL,
    kernel TEXT NOT NULL,
    sizes TEXT NOT NULL,
    device TEXT NOT NULL,
    geometry TEXT NOT NULL,
    kernel_name TEXT NOT NULL,
    variant TEXT NOT NULL,
    variant_params TEXT NOT NULL,
    kernel_spec TEXT NOT NULL,
    status TEXT NOT NULL,
    time_s REAL,
    time_s_min REAL,
    time_s_iqr REAL,
    repeats INTEGER,
    retries INTEGER,
    stable INTEGER,
    verified INTEGER,
    max_rel_error REAL,
    compile_s REAL,
    first_launch_s REAL,
    kernel_total_s REAL,
    error TEXT,
    samples TEXT,
    provenance TEXT,
    measured_at TEXT NOT NULL,
    UNIQUE (campaign, kernel, sizes, device, geometry)
);
"""
# Added without a layout version change: a store without it gets it when rounds are first written.
_ROUNDS_SCHEMA = """
CREATE TABLE IF NOT EXISTS rounds (
    campaign TEXT NOT NULL,
    kernel TEXT NOT NULL,
    sizes TEXT NOT NULL,
    device TEXT NOT NULL,
    geometry TEXT NOT NULL,
    cycle INTEGER NOT NULL,
    round TEXT NOT NULL,
    UNIQUE (campaign, kernel, sizes, device, geometry, cycle)
);
"""
# The points of each campaign's latest plan, so status counts those only (rows of an earlier plan
# stay stored); added like rounds: a store without it gets it when a plan is next set.
_PLAN_SCHEMA = """
CREATE TABLE IF NOT EXISTS plan_points (
    campaign TEXT NOT NULL,
    kernel TEXT NOT NULL,
    sizes TEXT NOT NULL,
    device TEXT NOT NULL,
    geometry TEXT NOT NULL,
    UNIQUE (campaign, kernel, sizes, device, geometry)
);
"""

COLUMNS = (
    "campaign", "kernel", "sizes", "device", "geometry", "kernel_name", "variant", "variant_params",
    "kernel_spec", "status", "time_s", "time_s_min", "time_s_iqr", "repeats", "retries", "stable",
    "verified", "max_rel_error", "compile_s", "first_launch_s", "kernel_total_s", "error", "samples",
    "provenance", "measured_at",
)
SCHEMA_VERSION = 1
_JSON_COLUMNS = ("sizes", "variant_params", "samples", "provenance")


def sizes_text(sizes: Mapping[str, int]) -> str:
    """Canonical text of a sizes mapping (sorted keys), as used in the unique key."""
    return json.dumps({k: int(sizes[k]) for k in sorted(sizes)}, separators=(",", ":"))


def geometry_text(global_size: Iterable[int], local_size: Iterable[int]) -> str:
    return f"{'x'.join(map(str, global_size))}/{'x'.join(map(str, local_size))}"


@dataclass(frozen=True)
class PointKey:
    campaign: str
    kernel: str
    sizes: str
    device: str
    geometry: str


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@contextmanager
def measuring_into(path: str | Path) -> Iterator[None]:
    """Hold the store's run lock (``STORE.lock`` beside the store's real file, released when the block
    ends or the process dies) for one campaign run; a run that finds it held is refused with the
    holder's process id."""
    from gpuperf.files import Held, Unlockable, run_lock

    try:
        with run_lock(path):
            yield
    except Held as held:
        raise GpuperfError(f"store '{path}': another campaign run (process {held.holder}) is measuring into it; "
                           "wait for it to end, or give this run another --store") from None
    except Unlockable as failed:
        raise GpuperfError(f"store '{path}': cannot create its run lock {failed.lock} ({failed.reason})") from None


def _damage_named(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` with SQLite's plain DatabaseError (a damaged page: "database disk image is
    malformed") and an OperationalError no write handled (a read the file system refused: "disk I/O
    error" on a full disk) as one error naming the store."""
    @functools.wraps(method)
    def named(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.OperationalError as exc:
            raise GpuperfError(f"store '{self.path}': cannot read it ({exc})") from None
        except sqlite3.DatabaseError as exc:
            if type(exc) is not sqlite3.DatabaseError:
                raise
            raise _damaged(self.path, exc) from None
    return named


def _damaged(path: Path, exc: sqlite3.DatabaseError) -> GpuperfError:
    return GpuperfError(f"store '{path}' is damaged ({exc}); measure into another store, or recover this one "
                        "with sqlite3's .recover")


def _is_sqlite_file(path: Path) -> bool:
    """Whether ``path`` starts as every SQLite database does."""
    try:
        with path.open("rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


class Store:
    """An open measurement store (use as a context manager)."""

    def __init__(self, path: str | Path, create: bool = True) -> None:
        self.path = Path(path)
        self.retrying_failed = False  # set by a run that takes its failed points again (see _insert)
        if not create and not self.path.is_file():
            raise missing_file(self.path, f"store '{self.path}' does not exist")
        if self.path.is_dir():
            raise GpuperfError(f"store '{self.path}': a folder; name a file")
        if create:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except FileExistsError:  # a file on the way
                raise GpuperfError(f"store '{self.path}': cannot create its folder (a file is on the way: "
                                   f"{self.path.parent} is not a folder)") from None
            except OSError as exc:
                raise GpuperfError(f"store '{self.path}': cannot create its folder ({exc.strerror})") from None
        try:
            self.db = self._connect(read_only=not create)
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and not create:
                raise self._not_a_store()
            if version == 0:
                version = self._create()
            if version == SCHEMA_VERSION:
                self._check_whole()
            if version == SCHEMA_VERSION and create:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=FULL")
        except GpuperfError:
            if hasattr(self, "db"):
                self.db.close()
            raise
        except sqlite3.OperationalError as exc:  # the file could not be read or written (not its contents)
            if "unable to open" in str(exc):
                raise GpuperfError(f"store '{self.path}': cannot open or create it here ({exc})") from None
            raise GpuperfError(f"store '{self.path}': {exc}") from None
        except sqlite3.DatabaseError as exc:
            if _is_sqlite_file(self.path):  # an SQLite file cut short or overwritten in part
                raise _damaged(self.path, exc) from None
            raise GpuperfError(f"store '{self.path}' is not a gpuperf measurement store ({exc})") from None
        if version not in (0, SCHEMA_VERSION):
            self.db.close()
            raise GpuperfError(f"store '{self.path}' has layout version {version}; this gpuperf reads version "
                               f"{SCHEMA_VERSION}")

    def _connect(self, read_only: bool) -> sqlite3.Connection:
        """A connection for writing, or one that only reads (a store opened not to add points): that
        one opens a store on read-only media too, where SQLite cannot create its shared-memory file."""
        if not read_only:
            return sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        self._fold_in_a_killed_runs_points()
        uri = self.path.resolve().as_uri()
        try:
            db = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=30.0, isolation_level=None)
            db.execute("PRAGMA user_version").fetchone()
            return db
        except sqlite3.OperationalError:  # read-only media: read the file as it is, no other writer
            wal = self.path.with_name(self.path.name + "-wal")
            if wal.is_file() and wal.stat().st_size > 0:  # points not yet moved into the file: unread so
                raise GpuperfError(f"store '{self.path}': on read-only media with points still in {wal.name}, "
                                   "which only a writable copy reads; copy the store and its -wal file to a "
                                   "writable folder") from None
            return sqlite3.connect(f"{uri}?immutable=1", uri=True, timeout=30.0, isolation_level=None)

    def _fold_in_a_killed_runs_points(self) -> None:
        """Points a killed run left in the ``-wal`` file moved into the store file, where it can be written
        (a read-only connection reads them but never moves them: a copy of the file alone lacked them).
        SQLite's passive checkpoint, which waits for no other run and is safe beside one."""
        wal = self.path.with_name(self.path.name + "-wal")
        if not (wal.is_file() and wal.stat().st_size > 0 and os.access(self.path, os.W_OK)
                and os.access(self.path.parent, os.W_OK)):
            return
        with suppress(sqlite3.Error), closing(sqlite3.connect(self.path, timeout=1.0, isolation_level=None)) as db:
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _create(self) -> int:
        """Write gpuperf's tables and layout version in one transaction, so that a store is created
        whole or not at all; a store another process created meanwhile is taken as it is."""
        with self._transaction():
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version != 0:
                return version
            if self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table'").fetchone():
                raise self._not_a_store()
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self.db.execute(statement)
            self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        return SCHEMA_VERSION

    def _check_whole(self) -> None:
        """An error, before anything is written, for a file another program gave gpuperf's layout
        version (SQLite's user_version, which many set) without gpuperf's tables. (Damage past the
        header shows when a page is read: see :func:`_damage_named`.)"""
        tables = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not {"campaigns", "points"} <= tables:
            raise self._not_a_store()

    def _not_a_store(self) -> GpuperfError:
        """The error for a database without gpuperf's layout version, naming the tables it holds."""
        tables = [r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        held = f"it holds other tables: {', '.join(tables[:5])}" if tables else "it is empty"
        return GpuperfError(f"store '{self.path}' is not a gpuperf measurement store ({held})")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    # -- writing ----------------------------------------------------------------------------------
    def add(self, row: Mapping[str, Any]) -> bool:
        """Append one point in its own transaction; False (nothing written) if its key is already stored."""
        return self.add_many([row]) == 1

    @_damage_named
    def add_many(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Append points in one transaction (all or none, e.g. a group timed in interleaved cycles,
        whose times only compare with each other); how many were new."""
        with self._transaction():
            return self._insert(rows)

    def _insert(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Insert rows new by their key; with ``retrying_failed`` set, a row replaces its key's failed
        row in the same transaction (a run killed before retrying a point keeps its failure)."""
        insert = f"INSERT OR IGNORE INTO points ({','.join(COLUMNS)}) VALUES ({','.join('?' * len(COLUMNS))})"
        stamp = COLUMNS.index("measured_at")
        added = 0
        for row in rows:
            if self.retrying_failed:
                self.db.execute(
                    "DELETE FROM points WHERE campaign=? AND kernel=? AND sizes=? AND device=? AND geometry=? AND "
                    f"status IN ({','.join('?' * len(FAILURES))})",
                    (*(_to_sql(c, row.get(c)) for c in ("campaign", "kernel", "sizes", "device", "geometry")),
                     *FAILURES))
            values = [_to_sql(c, row.get(c)) for c in COLUMNS]
            _refuse_unsound(row, values, self.path)  # every reader would refuse it, and the store with it
            values[stamp] = values[stamp] or now_utc()
            added += self.db.execute(insert, values).rowcount
        return added

    @_damage_named
    def add_rounds(self, cycle: int, rounds: Mapping[PointKey, Mapping[str, Any]]) -> None:
        """One interleaved cycle's round of each point (a JSON-able summary), in one transaction."""
        with self._transaction():
            self.db.execute(_ROUNDS_SCHEMA)
            for key, summary in rounds.items():
                self.db.execute(
                    "INSERT OR REPLACE INTO rounds (campaign, kernel, sizes, device, geometry, cycle, round) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (key.campaign, key.kernel, key.sizes, key.device, key.geometry, cycle,
                     json.dumps(summary, default=_json_default)),
                )

    @_damage_named
    def stored_rounds(self, keys: Iterable[PointKey]) -> dict[PointKey, list[dict[str, Any]]]:
        """The rounds stored for each of ``keys`` (those with any), in cycle order."""
        if not self._has_rounds():
            return {}
        found: dict[PointKey, list[dict[str, Any]]] = {}
        for key in keys:
            rows = self.db.execute(
                "SELECT cycle, round FROM rounds WHERE campaign=? AND kernel=? AND sizes=? AND device=? AND geometry=? "
                "ORDER BY cycle", (key.campaign, key.kernel, key.sizes, key.device, key.geometry))
            taken = [_stored_json(text, self.path, f"round {cycle} of {key.kernel} {key.sizes}", "round")
                     for cycle, text in rows]
            if taken:
                found[key] = taken
        return found

    @_damage_named
    def add_group(self, rows: Sequence[Mapping[str, Any]], keys: Iterable[PointKey]) -> int:
        """Append a finished interleaved group's points and forget their rounds, in one transaction."""
        with self._transaction():
            added = self._insert(rows)
            if self._has_rounds():
                for key in keys:
                    self.db.execute(
                        "DELETE FROM rounds WHERE campaign=? AND kernel=? AND sizes=? AND device=? AND geometry=?",
                        (key.campaign, key.kernel, key.sizes, key.device, key.geometry))
        return added

    def _has_rounds(self) -> bool:
        return self._has_table("rounds")

    @_damage_named
    def moved_kernel(self, campaign: str, kernel: str, spec: str) -> None:
        """Record ``spec`` as the source of ``kernel``'s points in ``campaign``: its file moved (or was
        copied) with the campaign, so later runs and exports find it where it is now."""
        with self._transaction():
            self.db.execute("UPDATE points SET kernel_spec=? WHERE campaign=? AND kernel=?", (spec, campaign, kernel))

    @_damage_named
    def set_plan(self, campaign: str, source: str, device: str, planned: int,
                 keys: Sequence[PointKey] | None = None) -> None:
        """Record how many points ``campaign`` has in total and (``keys``) which, for status."""
        with self._transaction():
            self.db.execute(
                "INSERT INTO campaigns (name, source, device, planned, updated_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(name) DO UPDATE SET source=excluded.source, device=excluded.device, "
                "planned=excluded.planned, updated_at=excluded.updated_at",
                (campaign, source, device, planned, now_utc()),
            )
            if keys is not None:
                self.db.execute(_PLAN_SCHEMA)
                self.db.execute("DELETE FROM plan_points WHERE campaign=?", (campaign,))
                self.db.executemany(
                    "INSERT OR IGNORE INTO plan_points (campaign, kernel, sizes, device, geometry) VALUES (?,?,?,?,?)",
                    [(key.campaign, key.kernel, key.sizes, key.device, key.geometry) for key in keys])

    @_damage_named
    def failed_keys(self, campaign: str) -> set[PointKey]:
        """The keys of ``campaign``'s failed points."""
        rows = self.db.execute(
            f"SELECT campaign, kernel, sizes, device, geometry FROM points WHERE campaign=? AND status IN "
            f"({','.join('?' * len(FAILURES))})", (campaign, *FAILURES))
        return {PointKey(*row) for row in rows}

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction: committed when the block ends, rolled back if it raises. A write
        the file system refuses (a full disk) is one error; the points committed before are kept."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._write_error(exc) from None
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException as exc:
            with suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._write_error(exc) from None
            raise

    def _write_error(self, exc: sqlite3.OperationalError) -> GpuperfError:
        return GpuperfError(f"store '{self.path}': cannot write to it ({exc}); the points stored before are kept")

    # -- reading ----------------------------------------------------------------------------------
    @_damage_named
    def keys(self, campaign: str) -> set[PointKey]:
        rows = self.db.execute(
            "SELECT campaign, kernel, sizes, device, geometry FROM points WHERE campaign=?", (campaign,)
        )
        return {PointKey(*row) for row in rows}

    @_damage_named
    def timing_settings(self, campaign: str) -> list[dict[str, Any]]:
        """The distinct timing settings ``campaign``'s stored points were taken with (from their provenance)."""
        found: dict[str, dict[str, Any]] = {}
        for point, text in self.db.execute("SELECT id, provenance FROM points WHERE campaign=?", (campaign,)):
            timing = (_stored_json(text, self.path, f"point {point}", "provenance") if text else {}).get("timing")
            if timing is not None:
                found.setdefault(json.dumps(timing, sort_keys=True), timing)
        return list(found.values())

    @_damage_named
    def rows(self, campaign: str | None = None, samples: bool = True) -> list[dict[str, Any]]:
        """Every stored point (JSON columns decoded), in the order taken; without ``samples`` each
        point's samples are left unread (None), so a damaged one stops only a reader that needs it."""
        columns = [c if samples or c != "samples" else "NULL AS samples" for c in COLUMNS]
        query = f"SELECT id, {','.join(columns)} FROM points"
        params: tuple[Any, ...] = ()
        if campaign is not None:
            query += " WHERE campaign=?"
            params = (campaign,)
        cursor = self.db.execute(query + " ORDER BY id", params)
        names = [d[0] for d in cursor.description]
        return [_from_sql(dict(zip(names, row)), self.path) for row in cursor]

    @_damage_named
    def campaigns(self) -> list[str]:
        rows = self.db.execute("SELECT name FROM campaigns UNION SELECT DISTINCT campaign FROM points ORDER BY 1")
        return [r[0] for r in rows]

    @_damage_named
    def status(self) -> list[dict[str, Any]]:
        """Per campaign: planned, done (ok), failed (by kind) and remaining points of its latest
        plan, ``outside_plan``: stored points an earlier plan had (None where the store does
        not record the plan's points, as before they were recorded: then every point counts), and
        ``partly_cycled``: points not stored yet whose finished interleaved cycles are (a resume that
        times them in the same group again takes those cycles as its first)."""
        planned = {name: (self._planned_count(name, count), device, source) for name, count, device, source in
                   self.db.execute("SELECT name, planned, device, source FROM campaigns")}
        everything = self._status_counts("SELECT campaign, status, COUNT(*) FROM points GROUP BY campaign, status")
        in_plan, recorded = {}, set()
        if self._has_table("plan_points"):
            in_plan = self._status_counts(
                "SELECT p.campaign, p.status, COUNT(*) FROM points p JOIN plan_points q ON p.campaign=q.campaign "
                "AND p.kernel=q.kernel AND p.sizes=q.sizes AND p.device=q.device AND p.geometry=q.geometry "
                "GROUP BY p.campaign, p.status")
            recorded = {name for (name,) in self.db.execute("SELECT DISTINCT campaign FROM plan_points")}
        cycling: dict[str, int] = {}  # points not stored yet that have finished interleaved cycles kept
        if self._has_rounds():
            cycling = dict(self.db.execute(
                "SELECT campaign, COUNT(*) FROM (SELECT DISTINCT campaign, kernel, sizes, device, geometry FROM rounds r "
                "WHERE NOT EXISTS (SELECT 1 FROM points p WHERE p.campaign=r.campaign AND p.kernel=r.kernel "
                "AND p.sizes=r.sizes AND p.device=r.device AND p.geometry=r.geometry)) GROUP BY campaign"))
        report = []
        for name in self.campaigns():
            by_status = in_plan.get(name, {}) if name in recorded else everything.get(name, {})
            total, device, source = planned.get(name, (None, None, None))
            taken = sum(by_status.values())
            failed = {kind: by_status.get(kind, 0) for kind in FAILURES}
            report.append({
                "campaign": name,
                "device": device,
                "source": source,
                "planned": total,
                "done": by_status.get(OK, 0),
                "failed": sum(failed.values()),
                **failed,
                "remaining": max(total - taken, 0) if total is not None else None,
                "outside_plan": sum(everything.get(name, {}).values()) - taken if name in recorded else None,
                "partly_cycled": cycling.get(name, 0),
            })
        return report

    def _planned_count(self, campaign: str, value: Any) -> int | None:
        """The ``planned`` count recorded for ``campaign``; a value that counts no points (text, a fraction, a
        negative number: the store edited by hand) is an error naming the store, the campaign and the field."""
        if value is None or (isinstance(value, int) and value >= 0):
            return value
        raise GpuperfError(f"store '{self.path}': campaign '{clipped(str(campaign))}': field planned is damaged "
                           f"({clipped(repr(value))}, not a count of points); campaign run with the campaign's "
                           "file records it anew")

    def _status_counts(self, query: str) -> dict[str, dict[str, int]]:
        counts: dict[str, dict[str, int]] = {}
        for campaign, status, count in self.db.execute(query):
            counts.setdefault(campaign, {})[status] = count
        return counts

    def _has_table(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone() is not None


def _to_sql(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column == "sizes" and isinstance(value, Mapping):
        return sizes_text(value)
    if column in _JSON_COLUMNS:
        return json.dumps(value, sort_keys=column != "samples", default=_json_default)
    if isinstance(value, bool):
        return int(value)
    if hasattr(value, "item"):  # NumPy scalars
        return value.item()
    return value


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def _stored_json(text: str, store: Path, where: str, field: str) -> Any:
    """A JSON value stored in ``store``; a damaged one is an error naming the store, the entry and the field."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError) as error:
        raise GpuperfError(f"store '{store}': {where}: field {field} is damaged, not JSON ({error})") from None


def _damaged_field(store: Path, row: Mapping[str, Any], field: str, why: str) -> GpuperfError:
    return GpuperfError(f"store '{store}': point {row.get('id')}: field {field} is damaged ({row.get(field)!r}, {why})")


def _is_time(value: Any) -> bool:
    """Whether ``value`` is a positive, finite number of seconds."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _timing_problem(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """(field, why) for a status gpuperf never writes, or times its status contradicts (an ok point has a
    positive time_s and time_s_min no larger; a failed point has no time); None for a sound point."""
    status = row.get("status")
    if status not in (OK, *FAILURES):
        return "status", f"not one of {', '.join((OK, *FAILURES))}"
    if status != OK:
        timed = [column for column in ("time_s", "time_s_min", "time_s_iqr") if row.get(column) is not None]
        return (timed[0], f"a {status} point has no time") if timed else None
    if not _is_time(row.get("time_s")):
        return "time_s", "an ok point's time is a positive number of seconds"
    fastest = row.get("time_s_min")
    if fastest is not None and not (_is_time(fastest) and fastest <= row["time_s"]):
        return "time_s_min", f"the fastest run is a positive number of seconds, at most time_s={row['time_s']!r}"
    spread = row.get("time_s_iqr")
    if spread is not None and not (_is_time(spread) or spread == 0):
        return "time_s_iqr", "a spread is a finite number of seconds, 0 or more"
    return None


def _check_timing(row: Mapping[str, Any], store: Path) -> None:
    """An error naming the stored point whose status or times are unsound (:func:`_timing_problem`)."""
    problem = _timing_problem(row)
    if problem is not None:
        raise _damaged_field(store, row, *problem)


def _refuse_unsound(row: Mapping[str, Any], values: Sequence[Any], store: Path) -> None:
    """An error, before anything is written, for a point whose status or times (``values``, as SQLite
    would hold them: NaN as NULL) every reader of the store would refuse."""
    stored = {column: None if isinstance(value, float) and math.isnan(value) else value
              for column, value in zip(COLUMNS, values)}
    problem = _timing_problem(stored)
    if problem is not None:
        field, why = problem
        raise GpuperfError(f"store '{store}': point {row.get('kernel')} at {stored['sizes']} of campaign "
                           f"{row.get('campaign')} not stored: field {field} is {stored[field]!r} ({why})")


def _from_sql(row: dict[str, Any], store: Path) -> dict[str, Any]:
    _check_timing(row, store)
    for column in _JSON_COLUMNS:
        if row.get(column) is not None:
            row[column] = _stored_json(row[column], store, f"point {row.get('id')}", column)
    for column in ("stable", "verified"):
        if row.get(column) is not None:
            row[column] = bool(row[column])
    return row
