"""Measurement campaigns: kernels x variants x sizes on one device, described in a TOML file.

    name = "copies"              # optional; defaults to the file's stem
    device = "opencl:0"
    seed = 0                     # inputs' random seed
    verify = true                # check every point against the kernel's reference

    [timing]                     # optional: any TimingSettings field
    min_repeats = 5
    min_time_s = 0.1
    cycles = 1                   # above 1: variants of a kernel at one size timed interleaved

    [[kernels]]
    kernel = "vector_copy"       # catalog name, name[param=value,...] or path/file.py:function
    sizes = [{n = 4096}, {n = 1048576}]

    [[spaces]]
    space = "jacobi2d"           # a variant space (gpuperf.kernels.space)
    limit = 200                  # its first 200 valid variants
    product = {n = [1024, 2048], m = [1024]}   # every combination of the listed sizes

Every point (kernel, sizes) is appended to the store as soon as it is measured, and points already
in the store are skipped, so a campaign killed at any moment resumes where it stopped. A point that
fails to compile, run or verify is stored with its error and the campaign goes on. A rerun whose
``[timing]`` or ``seed`` differs from the stored points', or that verifies points stored unverified,
is refused.

With ``cycles`` above 1 the points of one kernel at one size (its variants) are timed together in
interleaved cycles (gpuperf.measure.interleave) and stored when the group is done; each point's
``samples`` are then its per-cycle round medians, so two variants' ratio can be taken cycle by cycle.
Every finished cycle's rounds are committed as they end, so a group killed mid-way resumes at its
next cycle. A top-level ``interleave = "campaign"`` puts every point of the campaign in one group
instead (all its buffers are held at once): times of different kernels then share the machine's
states too, as a model fitted on some kernels and tested on others needs.

A group's buffers are all on the device at once, so before anything is timed a group whose buffers
would take more than ``GROUP_MEMORY_SHARE`` of the device's global memory is cut, in file order, into
consecutive groups that fit, each timed interleaved (a note names the cut); points of different groups
do not share cycles. The cut depends only on the points still to measure and the limit, so a resumed
run cuts the rest the same way and a killed group resumes at its next cycle.

Each interleaved point's provenance names its group's cycles (``cycle_group``): one identifier, new for
every group timed, that a killed group's saved rounds carry, so the group keeps it when it resumes. Two
points share cycles (their ratio can be taken cycle by cycle) only when they share it; a point timed
again (``--retry-failed``, or the campaign run into another store) gets another.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
import tomllib
import uuid
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import islpy as isl

from gpuperf.errors import GpuperfError, GpuperfNote, missing_file, parser_limits
from gpuperf.kernels.kernel import Kernel, SizesViolateAssumptions
from gpuperf.measure.devices import (
    Compiled, Device, MeasureFailure, RunFailed, describe_exception, device_lost, open_device,
)
from gpuperf.measure.interleave import Variant, measure_interleaved
from gpuperf.measure.store import CYCLE_GROUP, OK, PointKey, Store, geometry_text, measuring_into, sizes_text
from gpuperf.measure.timing import Measurement, SharedInputs, TimingSettings, measure_compiled, provenance

_TOP_KEYS = {"name", "device", "seed", "verify", "timing", "interleave", "kernels", "spaces"}
INTERLEAVE_SCOPES = ("kernel", "campaign")  # what one interleaved group holds (with cycles above 1)
_KERNEL_KEYS = {"kernel", "sizes", "product", "verify"}
_SPACE_KEYS = {"space", "limit", "sizes", "product", "verify"}


def _sizes_label(sizes: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def breaks_assumptions(kernel: Kernel, sizes: Mapping[str, Any]) -> bool:
    """Whether ``sizes`` lie outside the kernel's loopy assumptions (e.g. ``n mod 256 = 0``)."""
    point = kernel.entry.assumptions
    for index, name in enumerate(point.get_var_names(isl.dim_type.param)):
        value = sizes.get(name, kernel.default_sizes.get(name))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer():
            point = point.fix_val(isl.dim_type.param, index, int(value))  # 32.0 is the size 32, as resolve_sizes takes it
    return point.is_empty()


# -- the campaign file ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class Entry:
    """One kernel (or one variant of a space) with the sizes to measure it at."""

    kernel: Kernel
    spec: str
    sizes: tuple[dict[str, int], ...]
    verify: bool


@dataclass(frozen=True)
class Point:
    entry: Entry
    sizes: dict[str, int]
    key: PointKey


@dataclass(frozen=True, eq=False)
class Campaign:
    """A campaign file read and checked (:func:`load_campaign`): its ``entries`` (kernels or space
    variants, each with its sizes) to measure on ``device`` with the timing ``settings`` and ``seed``."""

    name: str
    path: Path
    device: str
    settings: TimingSettings
    seed: int
    entries: tuple[Entry, ...]
    skipped: tuple[str, ...] = ()  # space variants left out at some sizes, with the reason
    interleave: str = "kernel"  # one of INTERLEAVE_SCOPES
    defaulted: tuple[str, ...] = ()  # sizes a [[kernels]] or [[spaces]] entry left out, and the defaults they took

    def __post_init__(self) -> None:
        if self.interleave not in INTERLEAVE_SCOPES:
            raise GpuperfError(f"{self.path}: interleave: expected one of {', '.join(INTERLEAVE_SCOPES)}, "
                               f"not {self.interleave!r}")

    def points(self, device_name: str) -> list[Point]:
        """Every point in file order, each once, keyed for the store."""
        seen: set[PointKey] = set()
        points = []
        for entry in self.entries:
            for sizes in entry.sizes:
                key = PointKey(self.name, entry.kernel.key, sizes_text(sizes), device_name,
                               _geometry(entry.kernel, sizes))
                if key not in seen:
                    seen.add(key)
                    points.append(Point(entry, sizes, key))
        return points


def _geometry(kernel: Kernel, sizes: Mapping[str, int]) -> str:
    try:
        return geometry_text(*kernel.launch(sizes))
    except Exception:  # noqa: BLE001 - a kernel loopy cannot analyse fails later, when compiled
        return "unknown"


def load_campaign(path: str | Path) -> Campaign:
    """Read and check a campaign file; every error names the file and the key at fault."""
    path = Path(path)
    if not path.is_file():
        raise missing_file(path, f"campaign file '{path}' does not exist")
    if path.suffix.lower() in (".yaml", ".yml"):
        raise GpuperfError(f"{path}: a campaign file is TOML (YAML is not read); write it as {path.stem}.toml")
    try:
        with parser_limits(path):
            data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GpuperfError(f"{path}: not valid TOML ({exc})") from None
    _no_unknown_keys(data, _TOP_KEYS, f"{path}")
    name = _typed(data, "name", str, path.stem, f"{path}: name")
    if not name.strip():
        raise GpuperfError(f"{path}: name is empty; name the campaign (its points are stored under the name)")
    device = _typed(data, "device", str, "opencl:0", f"{path}: device")
    seed = _typed(data, "seed", int, 0, f"{path}: seed")
    if seed < 0:
        raise GpuperfError(f"{path}: seed must not be negative, not {seed}")
    verify = _typed(data, "verify", bool, True, f"{path}: verify")
    timing = _typed(data, "timing", dict, {}, f"{path}: timing")
    settings = TimingSettings.from_mapping(timing, f"{path}: timing")
    interleave = _typed(data, "interleave", str, "kernel", f"{path}: interleave")
    entries: list[Entry] = []
    skipped: list[str] = []
    defaulted: list[str] = []  # "kernels[0].sizes[0]: m=4096", once per listed size set
    for index, table in enumerate(_tables(data, "kernels", path)):
        entries.append(_kernel_entry(table, f"{path}: kernels[{index}]", path.parent, verify, defaulted))
    for index, table in enumerate(_tables(data, "spaces", path)):
        space_entries, space_skipped = _space_entries(table, f"{path}: spaces[{index}]", path.parent, verify,
                                                      defaulted)
        entries.extend(space_entries)
        skipped.extend(space_skipped)
    if not entries and skipped:
        raise GpuperfError(f"{path}: no points to measure: every variant of its spaces breaks its assumptions at "
                           f"the sizes given (e.g. {skipped[0]}); give sizes they accept")
    if not entries:
        raise GpuperfError(f"{path}: no points to measure; add [[kernels]] or [[spaces]] tables with sizes")
    _one_spec_per_kernel(entries, path)
    _note_repeated_points(entries, path)
    return Campaign(name, path, device, settings, seed, tuple(entries), tuple(skipped), interleave,
                    tuple(dict.fromkeys(defaulted)))


def _one_spec_per_kernel(entries: list[Entry], path: Path) -> None:
    """Points are stored under the kernel's name: two different kernels must not share one."""
    specs: dict[str, str] = {}
    for entry in entries:
        first = specs.setdefault(entry.kernel.key, entry.spec)
        if not _same_source(first, entry.spec):
            raise GpuperfError(f"{path}: kernels '{first}' and '{entry.spec}' are both called '{entry.kernel.key}'; "
                               "the store could not tell their points apart (rename one)")


def _note_repeated_points(entries: list[Entry], path: Path) -> None:
    """A note for each point listed more than once (a typo, often): it is measured once, with the
    settings (``verify``) of its first listing."""
    seen: set[tuple[str, str]] = set()
    repeated = []
    for entry in entries:
        for sizes in entry.sizes:
            key = (entry.kernel.key, sizes_text(sizes))
            if key in seen:
                repeated.append(f"{entry.kernel.key} at {_sizes_label(sizes)}")
            seen.add(key)
    if repeated:
        more = f" and {len(repeated) - 1} more" if len(repeated) > 1 else ""
        warnings.warn(GpuperfNote(f"{path}: {repeated[0]}{more} listed more than once: each is measured once, with "
                                  "the settings of its first listing"), stacklevel=3)


def _same_source(spec: str, other: str) -> bool:
    """Whether two specs of kernels of one name are one kernel: the same text, or both of the catalog
    (whose kernel names, variants' sorted parameters included, say what they are, however typed)."""
    return spec == other or (".py" not in spec and ".py" not in other)


def _moved_with_campaign(there: str, spec: str, campaign_path: Path) -> bool:
    """Whether a user's kernel stored as ``there`` is ``spec`` moved (or copied) with its campaign file:
    the stored path ends in the path ``spec``'s file has beside the campaign file, and the stored file
    is gone or holds the same text."""
    if ".py:" not in there or ".py:" not in spec:
        return False
    (old_file, _, old_function), (new_file, _, new_function) = there.rpartition(":"), spec.rpartition(":")
    try:
        placed = Path(new_file).relative_to(Path(campaign_path).resolve().parent).parts
    except ValueError:  # a kernel file outside the campaign's folder: nothing moved with it
        return False
    if old_function != new_function or Path(old_file).parts[-len(placed):] != placed:
        return False
    try:
        return Path(old_file).read_bytes() == Path(new_file).read_bytes()
    except FileNotFoundError:
        return True
    except OSError:
        return False


TOML_KINDS = {dict: "a table", str: "a string", int: "an integer", bool: "true or false"}  # as TOML names them


def _typed(data: Mapping[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    value = data.get(key, default)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = str(value).lower() if isinstance(value, bool) else repr(value)
        raise GpuperfError(f"{where}: expected {TOML_KINDS.get(kind, kind.__name__)}, got {shown}")
    return value


def _no_unknown_keys(table: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise GpuperfError(f"{where}: unknown key '{unknown[0]}'; known keys: {', '.join(sorted(known))}")


def _tables(data: Mapping[str, Any], key: str, path: Path) -> list[dict[str, Any]]:
    tables = data.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise GpuperfError(f"{path}: {key}: expected an array of tables ([[{key}]])")
    return tables


def _size_list(table: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """The ``sizes`` list followed by every combination of the ``product`` lists."""
    if "sizes" not in table and "product" not in table:
        raise GpuperfError(f"{where}: missing sizes (give sizes = [{{n = 4096}}] or product = {{n = [4096, 65536]}})")
    sizes = table.get("sizes", [])
    if not isinstance(sizes, list) or not all(isinstance(s, dict) for s in sizes):
        raise GpuperfError(f"{where}.sizes: expected a list of tables like [{{n = 4096}}]")
    product = table.get("product", {})
    if not isinstance(product, dict) or not all(isinstance(v, list) and v for v in product.values()):
        raise GpuperfError(f"{where}.product: expected a table of non-empty lists like {{n = [4096, 65536]}}")
    for index, listed in enumerate(sizes):
        for name, value in listed.items():
            _whole_size(value, f"{where}.sizes[{index}].{name}")
    for name, values in product.items():
        for value in values:
            _whole_size(value, f"{where}.product.{name}")
    combined = list(sizes)
    if product:
        combined += [dict(zip(product, values)) for values in itertools.product(*product.values())]
    if not combined:
        raise GpuperfError(f"{where}: missing sizes (the {'sizes list' if 'sizes' in table else 'product'} is empty)")
    return combined


def _whole_size(value: Any, where: str) -> None:
    """A size as TOML writes a number: an integer (4096), not text ("4096") or true."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = f"the string '{value}'" if isinstance(value, str) else repr(value).lower() if isinstance(value, bool) \
            else repr(value)
        raise GpuperfError(f"{where}: expected an integer, got {shown}")


def _resolved_sizes(kernel: Kernel, table: Mapping[str, Any], where: str, skipped: list[str] | None = None,
                    defaulted: list[str] | None = None) -> list[dict[str, int]]:
    """Each listed size checked by the kernel; with ``skipped``, sizes outside the kernel's
    assumptions are noted there and left out instead of being an error; ``defaulted`` gets each size
    the kernel took from its defaults, with where the size set is listed."""
    resolved = []
    for index, sizes in enumerate(_size_list(table, where)):
        at = f"{where}.sizes[{index}]" if index < len(table.get("sizes", [])) else f"{where}.product"
        try:
            resolved.append(kernel.resolve_sizes(sizes))
            taken = [f"{name}={value}" for name, value in resolved[-1].items() if name not in sizes]
            if taken and defaulted is not None:
                defaulted.append(f"{at}: {', '.join(taken)} (not given) from {kernel.name}'s defaults")
        except GpuperfError as exc:
            # only a size the kernel's assumptions exclude (a variant's tile that does not divide it) is left
            # out; one no kernel could take (n=0, a fraction) is the campaign file's error
            if skipped is not None and isinstance(exc, SizesViolateAssumptions) and breaks_assumptions(kernel, sizes):
                skipped.append(f"{kernel.key} at {_sizes_label(sizes)}: outside its assumptions")
                continue
            raise GpuperfError(f"{at}: {exc}") from None
    return resolved


def _kernel_entry(table: Mapping[str, Any], where: str, base: Path, default_verify: bool,
                  defaulted: list[str] | None = None) -> Entry:
    from gpuperf.kernels.catalog import get_kernel

    _no_unknown_keys(table, _KERNEL_KEYS, where)
    if "kernel" not in table:
        raise GpuperfError(f"{where}: missing key 'kernel'")
    spec = _relative_to(_typed(table, "kernel", str, None, f"{where}.kernel"), base)
    try:
        kernel = get_kernel(spec)
    except GpuperfError as exc:
        raise GpuperfError(f"{where}.kernel: {exc}") from None
    sizes = _resolved_sizes(kernel, table, where, defaulted=defaulted)
    verify = _typed(table, "verify", bool, default_verify, f"{where}.verify")
    return Entry(kernel, spec, tuple(sizes), verify)


def _relative_to(spec: str, base: Path) -> str:
    """A user's ``file.py:function`` spec with the file resolved against ``base`` (the campaign's
    folder); other specs as they are."""
    from gpuperf.kernels.loader import resolved_user_spec

    return resolved_user_spec(spec, base)


def _space_entries(table: Mapping[str, Any], where: str, base: Path, default_verify: bool,
                   defaulted: list[str] | None = None) -> tuple[list[Entry], list[str]]:
    _no_unknown_keys(table, _SPACE_KEYS, where)
    if "space" not in table:
        raise GpuperfError(f"{where}: missing key 'space'")
    name = _relative_to(_typed(table, "space", str, None, f"{where}.space"), base)
    limit = table.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise GpuperfError(f"{where}.limit: expected a positive integer, got {limit!r}")
    from gpuperf.kernels.space import get_space

    try:
        variants = get_space(name).variants(limit)
    except GpuperfError as exc:
        raise GpuperfError(f"{where}.space: {exc}") from None
    verify = _typed(table, "verify", bool, default_verify, f"{where}.verify")
    entries, skipped = [], []
    for variant in variants:
        kept = _resolved_sizes(variant, table, where, skipped, defaulted)
        if kept:
            # a user's space is named by its file: the variant's spec must find it again (export's features)
            spec = f"{name}[{variant.variant_label}]" if ".py:" in name else variant.key
            entries.append(Entry(variant, spec, tuple(kept), verify))
    return entries, skipped


# -- running -------------------------------------------------------------------------------------
@dataclass
class CampaignReport:
    """What :func:`run_campaign` did: points ``planned``, ``already_stored``, ``measured`` and
    ``failed`` (by status, each in ``failures``), and the seconds spent (``wall_s``, ``compile_s``, ...)."""

    campaign: str
    device: str
    planned: int
    already_stored: int
    measured: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    wall_s: float = 0.0
    compile_s: float = 0.0
    first_launch_s: float = 0.0
    kernel_s: float = 0.0  # kernel time this run measured (not the rounds a stopped run stored, which it reused)
    groups: int = 0  # interleaved groups timed (cycles above 1)
    groups_cut: int = 0  # of those planned, how many were cut into several to fit the device's memory
    failures: list[dict[str, Any]] = field(default_factory=list)  # each failed point: kernel, sizes, status, error

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def count_failure(self, row: Mapping[str, Any]) -> None:
        """Count a failed point's row, and keep what failed and its error's first line."""
        self.failed[row["status"]] = self.failed.get(row["status"], 0) + 1
        lines = [line.strip() for line in str(row.get("error") or "").splitlines() if line.strip()]
        self.failures.append({"kernel": row["kernel"], "sizes": dict(row["sizes"]), "status": row["status"],
                              "error": lines[0] if lines else ""})


def first_failures(failures: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per failure status: how many points failed so and the first of them, with its error."""
    counts: dict[str, int] = {}
    firsts: dict[str, Mapping[str, Any]] = {}
    for failure in failures:
        counts[failure["status"]] = counts.get(failure["status"], 0) + 1
        firsts.setdefault(failure["status"], failure)
    lines = []
    for status, first in firsts.items():
        where = f"{first['kernel']} at {_sizes_label(first['sizes'])}"
        error = first["error"].removeprefix(f"{where}: ") or "no error recorded"  # said once
        lines.append(f"{counts[status]} point(s) {status}, the first {where}: {error}")
    return lines


def stored_failure_lines(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """:func:`first_failures` of a store's rows that failed (``Store.rows``): each error's first line."""
    return first_failures([{"kernel": row["kernel"], "sizes": row["sizes"], "status": row["status"],
                            "error": (str(row.get("error") or "").strip().splitlines() or [""])[0]}
                           for row in rows if row["status"] != "ok"])


def _row(point: Point, device: Device, status: str, **values: Any) -> dict[str, Any]:
    kernel = point.entry.kernel
    return {
        "campaign": point.key.campaign, "kernel": kernel.key, "sizes": point.sizes, "device": device.name,
        "geometry": point.key.geometry, "kernel_name": kernel.name, "variant": kernel.variant_label,
        "variant_params": dict(kernel.variant), "kernel_spec": point.entry.spec, "status": status, **values,
    }


def _measured_row(point: Point, device: Device, m: Measurement, seed: int,
                  cycle_group: str | None = None) -> dict[str, Any]:
    """A measured point's row; the inputs' ``seed`` and ``cycle_group`` (interleaved points) join its
    provenance."""
    origin = {**m.provenance, "seed": seed} | ({} if cycle_group is None else {CYCLE_GROUP: cycle_group})
    return _row(point, device, OK, time_s=m.time_s, time_s_min=m.time_s_min, time_s_iqr=m.time_s_iqr,
                repeats=m.repeats, retries=m.retries, stable=m.stable, verified=m.verified,
                max_rel_error=m.max_rel_error, compile_s=m.compile_s, first_launch_s=m.first_launch_s,
                kernel_total_s=m.kernel_total_s, samples=list(m.samples), provenance=origin)


def _failed_row(point: Point, device: Device, exc: Exception, settings: TimingSettings, seed: int) -> dict[str, Any]:
    if not isinstance(exc, MeasureFailure):
        exc = RunFailed(describe_exception(exc), detail=f"{type(exc).__name__}: {exc}")
    return _row(point, device, exc.status, error=exc.detail, max_rel_error=getattr(exc, "max_rel_error", None),
                provenance={**provenance(device, "none", settings), "seed": seed})


class _Compiler:
    """Builds each entry's kernel once, on its first point; remembers a failure for the other points."""

    def __init__(self, device: Device, report: CampaignReport) -> None:
        self.device, self.report = device, report
        self.entry: Entry | None = None
        self.result: Compiled | Exception | None = None

    def get(self, entry: Entry) -> Compiled:
        if entry is not self.entry:
            self.entry = entry
            start = time.perf_counter()
            try:
                self.result = self.device.compile(entry.kernel)
            except Exception as exc:  # noqa: BLE001 - recorded per point, the campaign goes on
                self.result = exc
            self.report.compile_s += time.perf_counter() - start
        if isinstance(self.result, Exception):
            raise self.result
        assert self.result is not None
        return self.result


def _check_same_timing(store: Store, campaign: Campaign, store_path: str | Path) -> None:
    """Resuming a campaign reuses its stored points: refuse when they were timed with other settings
    (another campaign file with the same name, or an edited ``[timing]`` table)."""
    wanted, default = asdict(campaign.settings), asdict(TimingSettings())
    for stored in store.timing_settings(campaign.name):
        stored = {**default, **stored}  # a setting added since the points were taken had its default then
        differing = [f"{k} {stored[k]!r} there, {v!r} here" for k, v in wanted.items() if stored[k] != v]
        if differing:
            raise GpuperfError(
                f"{store_path}: campaign '{campaign.name}' was timed there with other settings "
                f"({'; '.join(differing)}); use another store, or give {campaign.path} another campaign name"
            )


def _check_same_inputs(store: Store, campaign: Campaign, points: Sequence[Point], store_path: str | Path) -> None:
    """Resuming a campaign reuses its stored points: refuse when they were taken with another ``seed``
    (other inputs), or unverified where the campaign file now verifies them (``verify = true`` after a
    run with ``verify = false``). What a point's row does not record (its seed, before seeds were
    kept) is taken as it is."""
    rows = store.rows(campaign.name, samples=False)
    seeds = sorted({row["provenance"].get("seed") for row in rows if isinstance(row["provenance"], dict)} - {None})
    other = [seed for seed in seeds if seed != campaign.seed]
    if other:
        raise GpuperfError(
            f"{store_path}: campaign '{campaign.name}' was measured there with seed {other[0]}, and {campaign.path} "
            f"has seed {campaign.seed} (other inputs); use another store, give {campaign.path} another campaign "
            f"name, or set seed = {other[0]}")
    planned = {point.key: point for point in points}
    unverified = [planned[key] for key, row in ((_row_key(row), row) for row in rows)
                  if key in planned and row["status"] == OK and row["verified"] is False
                  and planned[key].entry.verify and planned[key].entry.kernel.reference is not None]
    if unverified:
        first = unverified[0]
        more = f" and {len(unverified) - 1} more" if len(unverified) > 1 else ""
        raise GpuperfError(
            f"{store_path}: campaign '{campaign.name}' holds {first.entry.kernel.key} at {_sizes_label(first.sizes)}"
            f"{more} measured there unverified (verify = false), and {campaign.path} verifies them; use another "
            f"store, give {campaign.path} another campaign name, or set verify = false")


def _row_key(row: Mapping[str, Any]) -> PointKey:
    return PointKey(row["campaign"], row["kernel"], sizes_text(row["sizes"]), row["device"], row["geometry"])


def _check_same_kernels(store: Store, campaign: Campaign, store_path: str | Path) -> dict[str, str]:
    """Points are stored under the kernel's name: refuse a campaign whose kernel of a stored name
    comes from another source (``a/k.py:k`` there, ``c/k.py:k`` here), whose points would pass for
    the stored ones. A kernel file moved or copied with its campaign file is the same kernel: its
    points then name the file where it is now: the moved kernels' names and specs are returned, for
    the store to take once nothing is refused."""
    stored: dict[str, set[str]] = {}
    for row in store.rows(campaign.name, samples=False):
        stored.setdefault(row["kernel"], set()).add(row["kernel_spec"])
    moved = []
    for entry in campaign.entries:
        for there in sorted(stored.get(entry.kernel.key, ())):
            if _same_source(there, entry.spec):
                continue
            if not _moved_with_campaign(there, entry.spec, campaign.path):
                raise GpuperfError(
                    f"{store_path}: campaign '{campaign.name}' holds points of '{entry.kernel.key}' from '{there}', "
                    f"and {campaign.path} names '{entry.spec}' by the same name; use another store, or give "
                    f"{campaign.path} another campaign name")
            moved.append((entry.kernel.key, entry.spec))
    return dict(moved)


def run_campaign(campaign: Campaign, store_path: str | Path, device: str | None = None,
                 progress: bool = True, retry_failed: bool = False,
                 memory_limit: int | None = None) -> CampaignReport:
    """Measure every point of ``campaign`` not yet in the store, appending each as it is taken.
    ``memory_limit``: the bytes of buffers one interleaved group may hold on the device (default
    :func:`group_memory_limit`); larger groups are cut into groups that fit."""
    try:
        opened = open_device(device or campaign.device)
    except GpuperfError as exc:
        where = "--device" if device else f"{campaign.path}: device"
        raise GpuperfError(f"{where}: {exc}") from None
    points = campaign.points(opened.name)
    start = time.perf_counter()
    with Store(store_path) as store, measuring_into(store_path):
        _check_same_timing(store, campaign, store_path)  # before forgetting anything: a refusal keeps it all
        moved = _check_same_kernels(store, campaign, store_path)
        _check_same_inputs(store, campaign, points, store_path)
        for kernel, spec in moved.items():
            store.moved_kernel(campaign.name, kernel, spec)
        store.set_plan(campaign.name, str(campaign.path), opened.name, len(points), [p.key for p in points])
        stored = store.keys(campaign.name)
        if retry_failed:  # each failure stays stored until its retry's row replaces it
            store.retrying_failed = True
            stored -= store.failed_keys(campaign.name)
        todo = [p for p in points if p.key not in stored]
        report = CampaignReport(campaign.name, opened.name, len(points), len(points) - len(todo))
        compiler = _Compiler(opened, report)
        with _progress_bar(progress) as bar:
            task = bar.add_task(campaign.name, total=len(todo))
            if campaign.settings.cycles > 1:
                limit = group_memory_limit(opened) if memory_limit is None else memory_limit
                groups = _groups_that_fit(todo, campaign, opened, limit, report)
                for number, group in enumerate(groups, 1):
                    shown = (f"{campaign.name}: {len(group)} points" if campaign.interleave == "campaign" else
                             f"{group[0].entry.kernel.name} x{len(group)} {_sizes_label(group[0].sizes)}")
                    shown += f" (group {number} of {len(groups)})" if report.groups_cut else ""
                    bar.update(task, description=f"{shown} interleaved, {campaign.settings.cycles} cycles")
                    rows = _take_interleaved(group, opened, campaign, report, store)
                    store.add_group(rows, [point.key for point in group])
                    bar.advance(task, len(group))
            else:
                shared = SharedInputs()  # consecutive variants of a space at one size share their inputs
                for point in todo:
                    bar.update(task, description=f"{point.entry.kernel.key} {_sizes_label(point.sizes)}")
                    _take(point, opened, compiler, campaign, report, store, shared)
                    bar.advance(task)
    report.wall_s = time.perf_counter() - start
    return report


def _take(point: Point, device: Device, compiler: _Compiler, campaign: Campaign,
          report: CampaignReport, store: Store, shared: SharedInputs | None = None) -> None:
    """Measure one point and store its row; a failure is stored too and the campaign goes on,
    unless it left the device unusable."""
    try:
        compiled = compiler.get(point.entry)
        m = measure_compiled(compiled, device, point.sizes, point.entry.verify, campaign.settings, campaign.seed,
                             shared)
    except Exception as exc:  # noqa: BLE001 - any failure is stored, the campaign goes on
        row = _failed_row(point, device, exc, campaign.settings, campaign.seed)
        report.count_failure(row)
        store.add(row)
        if device_lost(exc):
            raise _stopped(point, device, exc, row) from None
        return
    report.measured += 1
    report.kernel_s += m.kernel_total_s
    report.first_launch_s += m.first_launch_s
    store.add(_measured_row(point, device, m, campaign.seed))


def _stopped(point: Point, device: Device, exc: BaseException, row: dict[str, Any]) -> GpuperfError:
    """The campaign's one error when a point left the device unusable (its row already stored)."""
    return GpuperfError(
        f"{device.name}: {point.entry.kernel.key} at {_sizes_label(point.sizes)}: {describe_exception(exc)}. "
        f"After this error the device fails every later call in this process, so the campaign stops; the "
        f"point is stored as {row['status']}; run the campaign again to go on with the next point"
    )


def interleaved_groups(points: Sequence[Point], scope: str = "kernel") -> list[list[Point]]:
    """The points grouped by kernel name and sizes (the variants of one kernel at one size), in
    order; with ``scope`` "campaign", all of them in one group."""
    if scope == "campaign":
        return [list(points)] if points else []
    groups: dict[tuple[str, str], list[Point]] = {}
    for point in points:
        groups.setdefault((point.entry.kernel.name, point.key.sizes), []).append(point)
    return list(groups.values())


GROUP_MEMORY_SHARE = 0.8  # an interleaved group's buffers may use this share of the device's memory


def group_memory_limit(device: Device) -> int:
    """Bytes of buffers one interleaved group may hold on ``device``: GROUP_MEMORY_SHARE of its global memory."""
    return int(GROUP_MEMORY_SHARE * device.memory_bytes)


def split_to_fit(group: Sequence[Point], limit: int) -> list[list[Point]]:
    """``group`` cut, in order, into consecutive groups whose buffers together take at most ``limit``
    bytes; a point larger than ``limit`` is a group of its own. Each cut depends only on the points
    from the last one on, so the rest of a partly stored group is cut the same way again."""
    parts: list[list[Point]] = []
    held = 0
    for point in group:
        needed = _buffer_bytes(point)
        if not parts or held + needed > limit:
            parts.append([])
            held = 0
        parts[-1].append(point)
        held += needed
    return parts


def _groups_that_fit(points: Sequence[Point], campaign: Campaign, device: Device, limit: int,
                     report: CampaignReport) -> list[list[Point]]:
    """The interleaved groups of ``points``, each cut to fit in ``limit`` bytes; a note names every cut."""
    fitted: list[list[Point]] = []
    for group in interleaved_groups(points, campaign.interleave):
        parts = split_to_fit(group, limit)
        if len(parts) > 1:
            report.groups_cut += 1
            warnings.warn(GpuperfNote(_cut_note(group, parts, campaign, device, limit)), stacklevel=3)
        fitted.extend(parts)
    report.groups = len(fitted)
    return fitted


def _cut_note(group: Sequence[Point], parts: Sequence[Sequence[Point]], campaign: Campaign, device: Device,
              limit: int) -> str:
    """What was cut, why, and into what."""
    what = ('the whole campaign (interleave = "campaign")' if campaign.interleave == "campaign" else
            f"{group[0].entry.kernel.name}'s {len(group)} variants at {_sizes_label(group[0].sizes)}")
    needed = sum(_buffer_bytes(point) for point in group)
    alone = [p for p in group if _buffer_bytes(p) > limit]
    return (f"{campaign.path}: {what} would hold {_mib(needed)} of buffers on {device.name} at once, more than "
            f"the {_mib(limit)} one interleaved group may use (of its {_mib(device.memory_bytes)}): "
            f"timed in {len(parts)} interleaved groups of "
            f"{', '.join(str(len(p)) for p in parts)} points, in file order; points of different groups do not "
            "share cycles" + (f"; {len(alone)} point(s) need more than that by themselves and are timed alone "
                              "(they may fail to allocate)" if alone else ""))


def _mib(count: int) -> str:
    return f"{count / 2**20:,.1f} MiB"


def _buffer_bytes(point: Point) -> int:
    """A point's device buffers; 0 for sizes the kernel refuses or shapes loopy cannot work out (that
    point then fails alone)."""
    try:
        return point.entry.kernel.buffer_bytes(point.sizes)
    except Exception:  # noqa: BLE001 - see the docstring
        return 0


def _cycle_group(done: Mapping[int, Sequence[Mapping[str, Any]]]) -> str:
    """The identifier of a group's cycles: the one its reused rounds carry (a resumed group goes on
    with the same cycles), else a new one. Rounds saved before identifiers were kept carry none."""
    for rounds in done.values():
        for taken in rounds:
            if taken.get(CYCLE_GROUP):
                return str(taken[CYCLE_GROUP])
    return str(uuid.uuid4())


def _take_interleaved(group: Sequence[Point], device: Device, campaign: Campaign,
                      report: CampaignReport, store: Store) -> list[dict[str, Any]]:
    """Rows of a group timed in interleaved cycles; a variant that fails to build or run fails alone.
    Each finished cycle's rounds go to the store, and rounds stored by a run that stopped are reused,
    with the identifier of the cycles they began (each measured row's ``cycle_group``)."""
    built: list[tuple[Point, Compiled | Exception]] = []
    for point in group:
        start = time.perf_counter()
        try:
            built.append((point, device.compile(point.entry.kernel)))
        except Exception as exc:  # noqa: BLE001 - recorded for this point, the group goes on
            built.append((point, exc))
        report.compile_s += time.perf_counter() - start
    ready = [(p, c) for p, c in built if not isinstance(c, Exception)]
    # Rounds are reused only by the same group timed the same way: its members, settings and seed.
    group_id = hashlib.sha1(json.dumps([asdict(campaign.settings), campaign.seed, sorted(str(p.key) for p, _ in ready)],
                                       sort_keys=True).encode()).hexdigest()
    stored = store.stored_rounds(p.key for p, _ in ready)
    done = {i: [r for r in stored.get(p.key, []) if r.get("group") == group_id] for i, (p, _) in enumerate(ready)}
    cycle_group = _cycle_group(done)

    def keep(cycle: int, rounds: dict[int, dict[str, float]]) -> None:
        store.add_rounds(cycle, {ready[i][0].key: {**taken, "group": group_id, CYCLE_GROUP: cycle_group}
                                 for i, taken in rounds.items()})

    try:
        measured = measure_interleaved([Variant(c, p.sizes, p.entry.verify) for p, c in ready], device,
                                       campaign.settings, campaign.seed, done=done, on_cycle=keep)
    except Exception as exc:
        if not device_lost(exc) or not hasattr(exc, "variant_index"):
            raise
        culprit = ready[exc.variant_index][0]  # stored alone; the others resume in a new group
        row = _failed_row(culprit, device, exc, campaign.settings, campaign.seed)
        store.add(row)
        raise _stopped(culprit, device, exc, row) from None
    outcome = {id(p): m for (p, _), m in zip(ready, measured)}
    reused = {id(p): sum(float(r["kernel_s"]) for r in done[i][:campaign.settings.cycles]) for i, (p, _) in enumerate(ready)}
    return [_group_row(point, compiled if isinstance(compiled, Exception) else outcome[id(point)], device,
                       campaign, report, cycle_group, reused.get(id(point), 0.0)) for point, compiled in built]


def _group_row(point: Point, result: Measurement | Exception, device: Device, campaign: Campaign,
               report: CampaignReport, cycle_group: str, reused_kernel_s: float = 0.0) -> dict[str, Any]:
    """One member's row of an interleaved group, counted in ``report`` (its kernel time less the
    ``reused_kernel_s`` of rounds a stopped run measured)."""
    if isinstance(result, Exception):
        row = _failed_row(point, device, result, campaign.settings, campaign.seed)
        report.count_failure(row)
        return row
    report.measured += 1
    report.kernel_s += result.kernel_total_s - reused_kernel_s
    report.first_launch_s += result.first_launch_s
    return _measured_row(point, device, result, campaign.seed, cycle_group)


def _progress_bar(enabled: bool) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from gpuperf.progress import progress_bar

    return progress_bar(not enabled, TextColumn("{task.description}", style="cyan"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                        transient=False)


def campaign_status(store_path: str | Path) -> list[dict[str, Any]]:
    """Per campaign in the store: planned, done, failed (by kind) and remaining points (with a note
    where a campaign run is measuring into it now)."""
    from gpuperf.files import lock_holder

    with Store(store_path, create=False) as store:
        rows = store.status()
    holder = lock_holder(store_path)
    if holder is not None:
        warnings.warn(GpuperfNote(f"a campaign run (process {holder}) is measuring into {store_path} now: the "
                                  "counts are those stored so far"), stacklevel=2)
    return rows
