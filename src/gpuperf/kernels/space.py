"""Variant spaces: a kernel's tuning variants, each built by loopy transformations.

The transformations play the role of LIFT's rewrite rules. For the stencils:

- ``local_x`` x ``local_y``: the work-group (columns on ``l.0``, rows on ``l.1``), ``lp.split_iname``;
- ``outputs_y``: adjacent output rows each work-item computes (a sequential per-item loop);
- ``prefetch``: ``lp.add_prefetch`` of each neighbourhood input's tile with its halo into local
  memory, fetched cooperatively by the work-group (loopy inserts the barrier);
- ``unroll``: ``lp.tag_inames(..., "unr")`` on (a split of) the per-item loop.

Unrolling changes no static count but the integer index arithmetic, so ``unroll`` is the stencil spaces'
count-neutral parameter: variants that differ only in it share one row of the other features
(:func:`shared_static_rows`).

A configuration that cannot make a sensible kernel is skipped with a reason, never an exception
from loopy: a work-group over ``MAX_WORK_GROUP`` work-items, an unroll factor larger than (or not
dividing) the per-item loop, prefetch tiles over ``LOCAL_MEMORY_BYTES``, or any loopy error.
"""

from __future__ import annotations

import itertools
import re
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpuperf._lazy import LazyModule
from gpuperf.errors import GpuperfError, GpuperfNote, unknown_name_error
from gpuperf.kernels.kernel import (
    Kernel,
    SizesViolateAssumptions,
    kernel_from_program,
    refuse_measurement_file,
    refuse_source_file,
    variant_label,
)
from gpuperf.kernels.stencils import (
    STENCILS,
    Stencil,
    make_kernel,
    split_tile_rows,
    tile,
)

if TYPE_CHECKING:
    import loopy as lp
else:  # imported when a variant is built: listing the spaces does not need loopy
    lp = LazyModule("loopy")

Config = dict[str, Any]

MAX_WORK_GROUP = 1024  # work-items: the CUDA limit and the usual OpenCL GPU maximum
LOCAL_MEMORY_BYTES = 48 * 1024  # local (shared) memory a work-group may use on every current GPU
FLOAT_BYTES = 4


class InvalidVariant(GpuperfError):
    """A configuration the space cannot build; ``reason`` says why."""

    def __init__(self, reason: str, key: str | None = None) -> None:
        super().__init__(f"variant {key} is invalid: {reason}" if key else reason)
        self.reason = reason


def _innermost_frame(exc: BaseException) -> traceback.FrameSummary | None:
    frames = traceback.extract_tb(exc.__traceback__)
    return frames[-1] if frames else None


def _raised_in(exc: BaseException, path: str) -> bool:
    """Whether ``exc`` was raised by a line of the file ``path`` itself (not by what it called)."""
    frame = _innermost_frame(exc)
    return frame is not None and Path(frame.filename).resolve() == Path(path).resolve()


def _raised_at(exc: BaseException) -> str:
    """`` at file.py:LINE`` where ``exc`` was raised."""
    frame = _innermost_frame(exc)
    return f" at {frame.filename}:{frame.lineno}" if frame is not None else ""


@dataclass(frozen=True, eq=False)
class VariantSpace:
    """A named product of parameter values; ``check`` rejects cheaply, ``make`` builds with loopy.

    ``check(config)`` returns why a configuration is invalid, or None; without one every
    configuration is valid. ``make(config)`` is required (given by name where ``check`` is not)."""

    name: str
    parameters: dict[str, list]
    defaults: Config
    check: Callable[[Config], str | None] | None = None
    make: Callable[[Config], Kernel] | None = None
    _outcomes: dict[tuple, Kernel | str] = field(default_factory=dict, repr=False)
    origin: str | None = None  # a user's space: its ``file.py:function``
    # parameters that change no static count or feature but the index arithmetic (an unroll factor):
    # variants that differ only in them are each built and checked, their features computed once
    # where no index-arithmetic column is read (shared_static_rows)
    count_neutral: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.make is None:
            raise GpuperfError(f"{self.label} needs make: a function building a configuration's kernel, "
                               "e.g. make=lambda config: my_kernel(**config)")

    @property
    def label(self) -> str:
        """How errors name the space: its name, and where a user's is defined."""
        return f"variant space '{self.name}'" + (f" ({self.origin})" if self.origin else "")

    def configurations(self) -> Iterator[Config]:
        """Every combination of parameter values, in a fixed order."""
        for values in itertools.product(*self.parameters.values()):
            yield dict(zip(self.parameters, values))

    def complete(self, config: Mapping[str, Any]) -> Config:
        """``config`` with defaults for missing parameters; unknown names or values are errors."""
        unknown = sorted(set(config) - set(self.parameters))
        if unknown:
            raise GpuperfError(
                f"{self.label} has no parameter {', '.join(unknown)}; "
                f"its parameters: {', '.join(self.parameters)}"
            )
        full = {key: config.get(key, self.defaults[key]) for key in self.parameters}
        for key, value in full.items():
            if value not in self.parameters[key]:
                allowed = ", ".join(str(v) for v in self.parameters[key])
                raise GpuperfError(f"{self.label}: {key}={value!r} is not one of {allowed}")
        return full

    def key(self, config: Mapping[str, Any]) -> str:
        return f"{self.name}[{variant_label(config)}]"

    def validate(self) -> None:
        """An error naming the parameter at fault when the space is malformed: a parameter with no
        values, defaults that miss a parameter, name one that is not, or give a value not in its list."""
        if not isinstance(self.parameters, Mapping) or not isinstance(self.defaults, Mapping):
            raise GpuperfError(f"{self.label}: parameters and defaults must be dicts")
        for key, values in self.parameters.items():
            if not isinstance(values, Sequence) or isinstance(values, str) or not values:
                raise GpuperfError(f"{self.label}: parameter {key} needs a non-empty list of values")
        self._check_defaults()
        self._check_count_neutral()
        for role in ("check", "make"):
            if getattr(self, role) is not None and not callable(getattr(self, role)):
                raise GpuperfError(f"{self.label}: {role} must be a function of a configuration")

    def _check_defaults(self) -> None:
        """An error naming the first parameter ``defaults`` miss, or the first default that is wrong."""
        where = f"{self.label}: defaults"
        for key, value in self.defaults.items():
            if key not in self.parameters:
                raise GpuperfError(f"{where} name {key}, which is not a parameter; "
                                   f"its parameters: {', '.join(self.parameters)}")
            if value not in self.parameters[key]:
                allowed = ", ".join(str(v) for v in self.parameters[key])
                raise GpuperfError(f"{where} give {key}={value!r}, which is not one of its values {allowed}")
        missing = [key for key in self.parameters if key not in self.defaults]
        if missing:
            raise GpuperfError(f"{where} give no value for parameter {missing[0]}")

    def _check_count_neutral(self) -> None:
        """An error where ``count_neutral`` is not a list of the space's parameter names."""
        if isinstance(self.count_neutral, str) or not isinstance(self.count_neutral, Sequence):
            raise GpuperfError(f"{self.label}: count_neutral lists parameter names, e.g. ('unroll',), "
                               f"not {self.count_neutral!r}")
        unknown = [key for key in self.count_neutral if key not in self.parameters]
        if unknown:
            raise GpuperfError(f"{self.label}: count_neutral names {unknown[0]}, which is not a parameter; "
                               f"its parameters: {', '.join(self.parameters)}")

    def rejection(self, config: Config) -> str | None:
        """Why the cheap ``check`` rejects ``config``, or None; a check that raises, or returns
        anything but None or a reason string, is an error naming the space and the configuration."""
        if self.check is None:  # no check: every configuration is valid
            return None
        try:
            with redirect_stdout(sys.stderr):  # what a user's code prints is not gpuperf's output
                reason = self.check(config)
        except Exception as exc:  # noqa: BLE001 - a user's check may fail in any way
            raise GpuperfError(f"{self.label}: check raised {type(exc).__name__} ({exc}){_raised_at(exc)} "
                               f"on {self.key(config)}") from None
        if reason is not None and not isinstance(reason, str):
            raise GpuperfError(f"{self.label}: check returned {type(reason).__name__} on "
                               f"{self.key(config)}; check must return None or a reason string")
        return reason

    def _made(self, config: Config) -> Kernel | str:
        """``make``'s kernel for ``config`` (a TranslationUnit wrapped as a Kernel), carrying its
        configuration; or why loopy could not build it."""
        try:
            with redirect_stdout(sys.stderr):
                built = self.make(config)
        except Exception as exc:  # any loopy/isl failure makes the variant invalid, not a crash
            message = str(exc).strip().splitlines()
            what = f"{type(exc).__name__}: {message[0] if message else ''}"
            if self.origin is not None and _raised_in(exc, self.origin.rpartition(":")[0]):
                raise GpuperfError(f"{self.label}: make raised {what}{_raised_at(exc)} on {self.key(config)} "
                                   "(a configuration make cannot build is for check to refuse)") from None
            return f"loopy could not build it ({what})"
        if isinstance(built, lp.TranslationUnit):
            built = kernel_from_program(built, self.name, f"variant of the space {self.name}")
        if not isinstance(built, Kernel):
            raise GpuperfError(f"{self.label}: make returned {type(built).__name__} on "
                               f"{self.key(config)}; expected a gpuperf Kernel or loopy TranslationUnit")
        # every variant carries its whole configuration (a user's make may record none or part of it)
        unrecorded = {key: value for key, value in config.items() if key not in built.variant}
        return built.with_variant(built.program, **unrecorded) if unrecorded else built

    def _outcome(self, config: Config) -> Kernel | str:
        """The built kernel, or the reason it cannot be built (cached per configuration)."""
        token = tuple(config.items())
        if token not in self._outcomes:
            reason = self.rejection(config)
            self._outcomes[token] = self._made(config) if reason is None else reason
        return self._outcomes[token]

    def build(self, config: Mapping[str, Any]) -> Kernel:
        """The variant for ``config`` (missing parameters take defaults); ``InvalidVariant`` if invalid."""
        full = self.complete(config)
        outcome = self._outcome(full)
        if isinstance(outcome, str):
            raise InvalidVariant(outcome, self.key(full))
        return outcome

    def resolve_sizes(self, sizes: Mapping[str, Any]) -> dict[str, int]:
        """``sizes`` for the space's kernels: those given checked, the default variant's defaults filling
        the gaps (its assumptions bind no other variant, so they are not checked here)."""
        return self.build(self.defaults).resolve_sizes(sizes, assumptions=False)

    def variants(self, limit: int | None = None) -> list[Kernel]:
        """The valid variants in ``configurations()`` order (the first ``limit`` of them)."""
        found: list[Kernel] = []
        for config in self.configurations():
            if limit is not None and len(found) >= limit:
                break
            outcome = self._outcome(config)
            if not isinstance(outcome, str):
                found.append(outcome)
        return found

    def skipped(self, limit: int | None = None) -> list[tuple[Config, str]]:
        """The invalid configurations with their reasons, in ``configurations()`` order."""
        found: list[tuple[Config, str]] = []
        for config in self.configurations():
            if limit is not None and len(found) >= limit:
                break
            outcome = self._outcome(config)
            if isinstance(outcome, str):
                found.append((config, outcome))
        return found


def check_variant_sizes(kernel: Kernel, sizes: Mapping[str, Any]) -> dict[str, int]:
    """``sizes`` resolved for the variant ``kernel``; ``InvalidVariant`` when they lie outside its
    assumptions (e.g. not a multiple of its tile), any other size error as it is."""
    try:
        return kernel.resolve_sizes(sizes)
    except SizesViolateAssumptions as error:
        raise InvalidVariant(f"sizes outside its assumptions: {error}") from None


def sized_variants(
    space: VariantSpace, sizes: Mapping[str, Any], limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[tuple[Config, Kernel]]:
    """The variants of ``space`` (the first ``limit`` its check accepts) that build and whose
    assumptions ``sizes`` keep, each with its configuration; ``progress(done, total)`` is called as
    they are built. None left is an error naming the sizes and the first reason."""
    configs = [c for c in space.configurations() if space.rejection(c) is None][:limit]
    built, skipped = [], []
    for done, config in enumerate(configs, 1):
        try:
            kernel = space.build(config)
            check_variant_sizes(kernel, sizes)
            built.append((config, kernel))
        except InvalidVariant as invalid:
            skipped.append(str(invalid))  # names the variant
        if progress is not None:
            progress(done, len(configs))
    at = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "its default sizes"
    if not built:
        why = f"all {len(skipped)} skipped; the first: {skipped[0]}" if skipped else "its check rejects every one"
        raise GpuperfError(f"no valid variant of {space.name} at these sizes ({at}): {why}")
    if skipped:
        warnings.warn(GpuperfNote(f"{space.name}: {len(skipped)} of {len(configs)} variants left out at {at}; "
                                  f"the first: {skipped[0]}"), stacklevel=2)
    return built


def index_arithmetic(column: str) -> bool:
    """Whether a feature or property column counts integer (index) arithmetic or the lines loops span:
    what a count-neutral parameter (an unroll factor's split of a loop) may still change."""
    return column in ("int_ops", "loop_lines") or re.fullmatch(r"ops_[iu]\d+_\w+", column) is not None


def shared_static_rows(
    space: VariantSpace, built: Sequence[tuple[Config, Kernel]], row: Callable[[Kernel], dict],
    columns: Sequence[str],
) -> list[dict]:
    """``row(kernel)`` for each of ``built`` (as :func:`sized_variants` gives them). Where the space
    has ``count_neutral`` parameters and none of ``columns`` (those the caller reads) is
    :func:`index_arithmetic`, it is computed once per set of variants that differ only in them (by
    the first of them) and copied to the others, without the index-arithmetic columns, which may
    differ between them; otherwise once per variant."""
    if not space.count_neutral or any(index_arithmetic(column) for column in columns):
        return [row(kernel) for _, kernel in built]
    shared: dict[tuple, dict] = {}
    rows = []
    for config, kernel in built:
        token = tuple((key, value) for key, value in config.items() if key not in space.count_neutral)
        if token not in shared:
            shared[token] = {key: value for key, value in row(kernel).items() if not index_arithmetic(key)}
        rows.append(dict(shared[token]))
    return rows


# -- stencil spaces -------------------------------------------------------------------------------
STENCIL_PARAMETERS: dict[str, list] = {
    "local_x": [4, 8, 16, 32, 64, 128],
    "local_y": [1, 2, 4, 8, 16, 32],
    "outputs_y": [1, 2, 4, 8],
    "prefetch": [0, 1],
    "unroll": [1, 2, 4, 8],
}
STENCIL_DEFAULTS: Config = {"local_x": 16, "local_y": 16, "outputs_y": 1, "prefetch": 0, "unroll": 1}


def prefetch_bytes(stencil: Stencil, local_x: int, tile_y: int) -> int:
    """Local memory the prefetched tiles (with halos) of all neighbourhood inputs take."""
    total = 0
    for name in stencil.padded_inputs:
        rows, cols = stencil.footprint(name, tile_y, local_x)
        total += rows * cols * FLOAT_BYTES
    return total


def check_stencil_config(stencil: Stencil, config: Config) -> str | None:
    """Why ``config`` is invalid for ``stencil``, or None: checks that need no loopy."""
    local_x, local_y, outputs_y = config["local_x"], config["local_y"], config["outputs_y"]
    items = local_x * local_y
    if items > MAX_WORK_GROUP:
        return f"work-group {local_x} x {local_y} = {items} work-items exceeds {MAX_WORK_GROUP}"
    unroll = config["unroll"]
    if unroll > outputs_y:
        return f"unroll factor {unroll} exceeds the {outputs_y} outputs per work-item"
    if outputs_y % unroll:
        return f"unroll factor {unroll} does not divide the {outputs_y} outputs per work-item"
    if config["prefetch"]:
        needed = prefetch_bytes(stencil, local_x, local_y * outputs_y)
        if needed > LOCAL_MEMORY_BYTES:
            return (
                f"prefetch tiles need {needed / 1024:.1f} KiB of local memory, "
                f"over {LOCAL_MEMORY_BYTES // 1024} KiB"
            )
    return None


@lru_cache(maxsize=None)
def _tiled(stencil: Stencil, local_x: int, tile_y: int, prefetch: bool) -> lp.TranslationUnit:
    """The stencil mapped onto ``local_x x tile_y`` output tiles, inputs prefetched if asked."""
    program = tile(stencil.untransformed(), local_x, tile_y)
    if prefetch:
        for name in stencil.padded_inputs:
            program = lp.add_prefetch(
                program,
                name,
                sweep_inames=["i_tile", "j_local"],
                fetch_outer_inames="i_group,j_group",
                temporary_name=f"{name}_tile",
                temporary_address_space=lp.AddressSpace.LOCAL,
                dim_arg_names=[f"{name}_row", f"{name}_col"],
                fetch_bounding_box=True,
                default_tag=None,
            )
    return program


@lru_cache(maxsize=None)
def _work_group(
    stencil: Stencil, local_x: int, local_y: int, outputs_y: int, prefetch: bool
) -> lp.TranslationUnit:
    """The tiled program with ``outputs_y`` rows per work-item and the fetches spread over the group."""
    program = split_tile_rows(_tiled(stencil, local_x, local_y * outputs_y, prefetch), outputs_y)
    if prefetch:  # each tile is fetched cooperatively: rows over l.1, columns over l.0
        for name in stencil.padded_inputs:
            program = lp.split_iname(program, f"{name}_row", local_y, inner_tag="l.1")
            program = lp.split_iname(program, f"{name}_col", local_x, inner_tag="l.0")
    return program


def build_stencil_variant(stencil: Stencil, config: Config) -> Kernel:
    outputs_y, unroll = config["outputs_y"], config["unroll"]
    program = _work_group(stencil, config["local_x"], config["local_y"], outputs_y, bool(config["prefetch"]))
    if unroll == outputs_y > 1:
        program = lp.tag_inames(program, {"i_seq": "unr"})
    elif unroll > 1:
        program = lp.split_iname(
            program, "i_seq", unroll, outer_iname="i_block", inner_iname="i_unroll", inner_tag="unr"
        )
    return make_kernel(stencil, program, config)


def _stencil_space(stencil: Stencil) -> VariantSpace:
    return VariantSpace(
        name=stencil.name,
        parameters={key: list(values) for key, values in STENCIL_PARAMETERS.items()},
        defaults=dict(STENCIL_DEFAULTS),
        check=lambda config: check_stencil_config(stencil, config),
        make=lambda config: build_stencil_variant(stencil, config),
        count_neutral=("unroll",),  # splitting a loop to unroll it adds index arithmetic only
    )


_SPACES: dict[str, VariantSpace] = {name: _stencil_space(s) for name, s in STENCILS.items()}


def space_names() -> list[str]:
    """The catalog's variant spaces' names, as :func:`get_space` takes them."""
    return list(_SPACES)


def get_space(name: str) -> VariantSpace:
    """A catalog space by name, or a user's from ``path/to/file.py:function`` (a function returning a
    VariantSpace; loaded once per spec, file and state of the file: an edited file is loaded anew)."""
    if name in _SPACES:
        return _SPACES[name]
    if name.rpartition(":")[0].endswith(".py") or name.endswith(".py"):
        from gpuperf.kernels.loader import user_file_key

        return _user_space(name, user_file_key(name))  # a bare file.py is told to name its function
    refuse_source_file(name)
    refuse_measurement_file(name, "variant space")
    raise unknown_name_error("variant space", name, _SPACES)


@lru_cache(maxsize=64)
def _user_space(spec: str, file_key: object) -> VariantSpace:
    """``spec``'s space; ``file_key`` (the file's place and state) is part of the cache's key alone."""
    from gpuperf.kernels.loader import load_user_space

    return load_user_space(spec)


_SPEC = re.compile(r"^\s*([^\[\]]+?)\s*\[(.*)\]\s*$")


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """``name[a=1,b=2]`` -> (``name``, {``a``: ``1``, ``b``: ``2``}) with the values as text."""
    match = _SPEC.match(spec)
    if not match:
        raise GpuperfError(f"variant '{spec}' is not of the form name[param=value,...]")
    name, body = match.groups()
    values: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in body.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise GpuperfError(f"variant '{spec}': '{item}' is not param=value")
        if key.strip() in values:
            raise GpuperfError(f"variant '{spec}': parameter {key.strip()} is given twice")
        values[key.strip()] = value.strip()
    return name, values


def _same_number(value: Any, text: str) -> bool:
    """Whether ``text`` is the number ``value`` (not a bool) in another spelling: 1 for 1.0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return float(text) == value
    except ValueError:
        return False


def variant_from_spec(spec: str) -> Kernel:
    """The variant ``name[param=value,...]``; parameters left out take the space's defaults."""
    name, texts = parse_spec(spec)
    space = get_space(name)
    unknown = sorted(set(texts) - set(space.parameters))
    if unknown:
        raise GpuperfError(
            f"variant '{spec}': space '{name}' has no parameter {', '.join(unknown)}; "
            f"its parameters: {', '.join(space.parameters)}"
        )
    config: Config = {}
    for key, text in texts.items():
        matches = [v for v in space.parameters[key] if str(v) == text] or [
            v for v in space.parameters[key] if _same_number(v, text)]  # f=1 names 1.0, as tables write it
        if not matches:
            allowed = ", ".join(str(v) for v in space.parameters[key])
            raise GpuperfError(f"variant '{spec}': {key}={text} is not one of {allowed}")
        config[key] = matches[0]
    return space.build(config)
