"""Symbolic operation, memory-access and synchronization counts of a kernel.

Conventions are loopy's statistics (``lp.get_op_map``, ``lp.get_mem_access_map``,
``lp.get_synchronization_map`` with ``subgroup_size=32`` and ``count_redundant_work=True``), turned
into per-launch totals in *work-item* units: loopy counts arithmetic and local-memory accesses (and
global accesses that are uniform across a sub-group) once per sub-group of 32, so those counts are
multiplied by work-group size / sub-groups per work-group (32 when the work-group size is a
multiple of 32). Barrier and launch counts stay per work-item, as loopy gives them.

Every count is a pymbolic expression of the kernel's size parameters; ``SymbolicCounts.evaluate``
evaluates them at any parameter set (compiled to one Python function after the first few).
``symbolic_counts(kernel)`` computes them with the fast IR path (``gpuperf.features.fastcount``),
falling back to loopy's statistics; it caches them per program in memory, and loopy's (slow) ones
also on disk under ``$GPUPERF_CACHE_DIR`` (default ``$XDG_CACHE_HOME/gpuperf`` or ``~/.cache/gpuperf``).
"""

from __future__ import annotations

import hashlib
import pickle
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import islpy as isl
import loopy as lp
import numpy as np
from loopy.types import AtomicType
from pymbolic.primitives import If

from gpuperf.errors import GpuperfError
from gpuperf.files import cache_root, write_cache_file
from gpuperf.features.domains import Expr, product, total
from gpuperf.features.expressions import Evaluator
from gpuperf.features.lanes import LaneMask, LaneRecipe, PassRecipe, mask_at_sizes, pass_share
from gpuperf.kernels.kernel import constants_as_global

SUBGROUP_SIZE = 32
FORMAT_VERSION = 13  # bump when SymbolicCounts changes shape or meaning (invalidates the disk cache)


def dtype_name(dtype: Any) -> str:
    """A short, stable name for a NumPy or loopy dtype: ``f32``, ``f64``, ``i32``, ``u8``, ``c64``."""
    numpy_dtype = np.dtype(getattr(dtype, "numpy_dtype", dtype))
    kind = {"f": "f", "i": "i", "u": "u", "c": "c", "b": "b"}.get(numpy_dtype.kind, numpy_dtype.kind)
    return f"{kind}{numpy_dtype.itemsize * 8}"


def is_float_dtype(name: str) -> bool:
    return name[0] in "fc"


@dataclass(frozen=True)
class AccessRecord:
    """One kind of memory access, with how often it happens per launch (work-item units).

    ``lid_strides`` gives, per local axis the index uses, the stride in elements (``None`` where
    the index is not affine in that axis' local id). ``offset`` and ``outer`` describe the rest of
    the flattened index where it is affine in inames and size parameters: the constant part, and
    for every other iname taking several values its (stride, first value, number of values);
    ``problem`` says why the lane pattern cannot be known (indirect or data-dependent index).
    """

    space: str  # "global" | "local"
    direction: str  # "load" | "store"
    variable: str
    dtype: str
    itemsize: int
    count: Expr
    lid_strides: tuple[tuple[int, Expr | None], ...]
    offset: Expr | None = None
    outer: tuple[tuple[Expr, Expr, Expr], ...] | None = None
    problem: str | None = None
    instruction: str = ""
    lanes: LaneMask | None = None  # the work-items that make it, where the domain switches some off
    lane_recipe: LaneRecipe | None = None  # builds the mask at given sizes, where ``lanes`` misses some
    passes: PassRecipe | None = None  # its sequential loops bounded by one another: the share of the box they run
    vector: int = 1  # elements one access moves (a float4 access: 4 of ``count``'s elements)
    atomic: bool = False  # the load or store of an atomic update (a read-modify-write by the memory system)
    lane_count: Expr | None = None  # ``count`` with every lane of the work-groups, where the sizes clip a local
    # iname's box (below one group); None: the same as ``count``. The per-work-item features count these lanes.

    @property
    def padded_vector(self) -> int:
        """Elements one access occupies in memory: a float3 is stored as a float4."""
        return 4 if self.vector == 3 else self.vector


@dataclass
class SymbolicCounts:
    """A kernel's counts as expressions of its size parameters (see the module docstring)."""

    params: tuple[str, ...]
    ops: dict[tuple[str, str], Expr]  # (dtype, op) -> operations per launch
    accesses: tuple[AccessRecord, ...]
    syncs: dict[str, Expr]  # barrier_local / barrier_global / kernel_launch -> per work-item
    groups: tuple[Expr, Expr, Expr]  # work-groups per axis
    local: tuple[int, int, int]  # work-items per group per axis
    branches: Expr | None  # conditionals executed per launch (work-item units)
    loop_iterations: Expr | None  # sequential loop-body executions per launch (work-item units)
    local_memory_bytes: Expr  # per work-group
    method: str  # "fast" | "loopy"
    notes: tuple[str, ...] = ()
    assumptions: str = ""  # the kernel's assumptions (isl syntax): sizes must satisfy them
    loop_iterations_lanes: Expr | None = None  # as loop_iterations, every lane of the work-groups (None: the same)
    _compiled: Any = field(default=None, init=False, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_compiled"] = None
        return state

    # -- evaluation ---------------------------------------------------------------------------
    def _expressions(self) -> list[Expr]:
        exprs: list[Expr] = list(self.ops.values())
        for access in self.accesses:
            exprs.append(access.count)
            exprs.append(access.count if access.lane_count is None else access.lane_count)
            exprs.extend(0 if s is None else s for _, s in access.lid_strides)
            exprs.append(0 if access.offset is None else access.offset)
            exprs.extend(value for triple in access.outer or () for value in triple)
            exprs.append(0 if access.lanes is None or access.lanes.box_at_sizes is None else access.lanes.box_at_sizes)
        exprs.extend(self.syncs.values())
        exprs.extend(self.groups)
        lanes = self.loop_iterations if self.loop_iterations_lanes is None else self.loop_iterations_lanes
        exprs.extend(0 if e is None else e for e in (self.branches, self.loop_iterations, lanes))
        exprs.append(self.local_memory_bytes)
        return exprs

    def values(self, sizes: Mapping[str, Any]) -> Evaluated:
        """All counts at ``sizes`` (which must give every size parameter)."""
        missing = [p for p in self.params if p not in sizes]
        if missing:
            raise GpuperfError(f"counts need a value for size parameter(s) {', '.join(missing)}")
        values = {p: int(sizes[p]) for p in self.params}
        if self.assumptions and not satisfies(self.assumptions, tuple(sorted(values.items()))):
            shown = ", ".join(f"{p}={v}" for p, v in values.items())
            raise GpuperfError(f"sizes {shown} violate the kernel's assumptions {self.assumptions}")
        if self._compiled is None:
            self._compiled = Evaluator(self._expressions(), self.params)
        numbers = iter(self._compiled(values))
        ops = {key: next(numbers) for key in self.ops}
        accesses = []
        for access in self.accesses:
            count, lane_count = next(numbers), next(numbers)
            strides = {}
            for axis, stride in access.lid_strides:
                value = next(numbers)  # one number per stride, as in _expressions()
                strides[axis] = None if stride is None else value
            offset = next(numbers)
            outer = [(next(numbers), next(numbers), next(numbers)) for _ in access.outer or ()]
            box = next(numbers)
            masked = access.lanes is not None and (access.lanes.box_at_sizes is None or box == access.lanes.box)
            at_sizes = None if masked or access.lane_recipe is None else mask_at_sizes(access.lane_recipe, values)
            accesses.append(
                EvaluatedAccess(
                    record=access,
                    count=count,
                    lid_strides=strides,
                    offset=None if access.offset is None else offset,
                    outer=None if access.outer is None else outer,
                    masked=masked,
                    at_sizes=at_sizes,
                    share=pass_share(access.passes, values),
                    lane_count=lane_count,
                )
            )
        syncs = {key: next(numbers) for key in self.syncs}
        groups = tuple(next(numbers) for _ in range(3))
        branches, loops, lane_loops = next(numbers), next(numbers), next(numbers)
        return Evaluated(
            counts=self,
            ops=ops,
            accesses=tuple(accesses),
            syncs=syncs,
            groups=groups,
            local=self.local,
            branches=None if self.branches is None else branches,
            loop_iterations=None if self.loop_iterations is None else loops,
            local_memory_bytes=next(numbers),
            loop_iterations_lanes=None if self.loop_iterations is None else lane_loops,
        )

    def evaluate(self, sizes: Mapping[str, Any]) -> dict[str, float]:
        """Named per-launch counts at ``sizes`` (names as in ``gpuperf.features.table.FEATURES``)."""
        return self.values(sizes).named()


@lru_cache(maxsize=4096)
def _assumption_set(text: str) -> isl.BasicSet:
    return isl.BasicSet(text)


@lru_cache(maxsize=65536)
def satisfies(assumptions: str, values: tuple[tuple[str, int], ...]) -> bool:
    """Whether the parameter values lie in the assumptions' set."""
    constrained = _assumption_set(assumptions)
    names = constrained.get_var_dict(isl.dim_type.param)
    for name, value in values:
        if name in names:
            constrained = constrained.fix_val(isl.dim_type.param, names[name][1], value)
    return not constrained.is_empty()


@dataclass(frozen=True)
class EvaluatedAccess:
    record: AccessRecord
    count: float
    lid_strides: dict[int, int | None]
    offset: int | None
    outer: list[tuple[int, int, int]] | None  # (stride, first value, number of values) per other iname
    masked: bool = True  # whether the record's lane mask holds at these sizes
    at_sizes: LaneMask | None = None  # where it does not: the mask built at these sizes (the record's recipe)
    share: float = 1.0  # the share of ``count`` (loopy's box) its sequential loops bounded by one another run
    lane_count: float | None = None  # ``count`` with every lane of the work-groups (None: ``count``)

    @property
    def lane_accesses(self) -> float:
        """``count`` with the lanes the problem's edge switches off below one work-group counted, as past it."""
        return self.count if self.lane_count is None else self.lane_count

    @property
    def lanes(self) -> LaneMask | None:
        """The work-items that make the access at these sizes (None: every lane of the box)."""
        return self.record.lanes if self.masked else self.at_sizes

    @property
    def stride_class(self) -> str:
        """How consecutive work-items along local axis 0 address memory."""
        if 0 not in self.lid_strides:
            return "stride0"
        stride = self.lid_strides[0]
        if stride is None:
            return "nonaffine"
        padded = self.record.padded_vector
        if padded > 1 and stride % padded == 0:  # in vectors: float4s side by side
            stride //= padded
        return {0: "stride0", 1: "stride1"}.get(abs(stride), "stride_gt1")


@dataclass(frozen=True)
class Evaluated:
    """SymbolicCounts evaluated at one parameter set."""

    counts: SymbolicCounts
    ops: dict[tuple[str, str], float]
    accesses: tuple[EvaluatedAccess, ...]
    syncs: dict[str, float]
    groups: tuple[float, ...]
    local: tuple[int, int, int]
    branches: float | None
    loop_iterations: float | None
    local_memory_bytes: float
    loop_iterations_lanes: float | None = None  # as loop_iterations, every lane of the work-groups

    @property
    def global_size(self) -> tuple[int, int, int]:
        return tuple(int(g) * l_ for g, l_ in zip(self.groups, self.local))  # type: ignore[return-value]

    @property
    def threads(self) -> int:
        x, y, z = self.global_size
        return x * y * z

    def named(self) -> dict[str, float]:
        """Flat, named per-launch totals: ops, loads/stores by space, dtype and stride class, bytes."""
        out: dict[str, float] = {}

        def add(name: str, value: float) -> None:
            out[name] = out.get(name, 0.0) + float(value)

        flops = int_ops = 0.0
        for (dtype, op), value in sorted(self.ops.items()):
            if value:  # loopy may list a kind with zero count (a product with -1)
                add(f"ops_{dtype}_{op}", value)
            if is_float_dtype(dtype):
                flops += value
            else:
                int_ops += value
        out["flops"] = flops
        out["int_ops"] = int_ops
        for space in ("global", "local"):
            for direction, plural in (("load", "loads"), ("store", "stores")):
                add(f"{space}_{plural}", 0.0)
                add(f"{space}_{direction}_bytes", 0.0)
        for access in self.accesses:
            record = access.record
            if not access.count:
                continue
            plural = "loads" if record.direction == "load" else "stores"
            add(f"{record.space}_{plural}_{record.dtype}_{access.stride_class}", access.count)
            add(f"{record.space}_{plural}", access.count)
            add(f"{record.space}_{record.direction}_bytes", access.count * record.itemsize)
        for space in ("global", "local"):
            out[f"{space}_bytes"] = out[f"{space}_load_bytes"] + out[f"{space}_store_bytes"]
        out["barriers_local"] = float(self.syncs.get("barrier_local", 0))
        out["barriers_global"] = float(self.syncs.get("barrier_global", 0))
        out["kernel_launches"] = float(self.syncs.get("kernel_launch", 0))
        return out


# -- loopy's statistics -------------------------------------------------------------------------
def pw_qpolynomial_to_expr(value: Any) -> Expr:
    """An isl PwQPolynomial (or loopy's guarded one) as a pymbolic expression (0 outside its pieces)."""
    from loopy.symbolic import qpolynomial_to_expr, set_to_cond_expr

    poly = getattr(value, "pwqpolynomial", value)
    result: Expr = 0
    for piece_set, qpoly in reversed(poly.get_pieces()):
        expr = qpolynomial_to_expr(qpoly)
        if piece_set.is_params() and piece_set.plain_is_universe():
            result = expr
        else:
            try:
                result = If(set_to_cond_expr(piece_set), expr, result)
            except ValueError:  # universe
                result = expr
    return result


def loopy_counts(program: lp.TranslationUnit) -> SymbolicCounts:
    """Counts from loopy's statistics (slow: up to seconds per kernel; loopy's model exactly)."""
    from gpuperf.features import fastcount

    structure = fastcount.structure_only(program)
    group_size = structure.local[0] * structure.local[1] * structure.local[2]
    program = constants_as_global(program)
    try:
        op_map = lp.get_op_map(program, subgroup_size=SUBGROUP_SIZE, count_redundant_work=True)
        mem_map = lp.get_mem_access_map(program, subgroup_size=SUBGROUP_SIZE, count_redundant_work=True)
        sync_map = lp.get_synchronization_map(program, subgroup_size=SUBGROUP_SIZE)
    except Exception as exc:  # noqa: BLE001 - loopy raises many types; report them the same way
        name = program.default_entrypoint.name
        raise GpuperfError(f"loopy's statistics cannot count kernel '{name}': {type(exc).__name__}: {exc}") from None
    ops: dict[tuple[str, str], Expr] = {}
    for op, value in op_map.items():
        key = (dtype_name(op.dtype), op.name.removeprefix("func:"))
        count = to_workitems(pw_qpolynomial_to_expr(value), op.count_granularity, group_size)
        ops[key] = total([ops.get(key, 0), count])
    accesses = []
    for access, value in mem_map.items():
        lid = tuple(sorted((access.lid_strides or {}).items()))
        accesses.append(
            AccessRecord(
                space=access.mtype,
                direction=access.direction,
                variable=access.variable or "",
                dtype=dtype_name(access.dtype),
                itemsize=np.dtype(access.dtype.numpy_dtype).itemsize,
                count=to_workitems(pw_qpolynomial_to_expr(value), access.count_granularity, group_size),
                lid_strides=lid,
                problem=None if all(s is not None for _, s in lid) else "index not affine in the local ids",
                atomic=isinstance(access.dtype, AtomicType),
            )
        )
    syncs = {sync.kind: pw_qpolynomial_to_expr(value) for sync, value in sync_map.items()}
    notes = [*structure.notes, "loopy's statistics give no index offsets: lane 0 assumed line-aligned"]
    if _vectorised_inames(program):
        notes.append("loopy's statistics count a vector access (float4, a 'vec' iname) element by element: here "
                     "it is that many strided accesses, not one contiguous one")
    return SymbolicCounts(
        params=structure.params,
        ops=ops,
        accesses=tuple(accesses),
        syncs=syncs,
        groups=structure.groups,
        local=structure.local,
        branches=structure.branches,
        loop_iterations=structure.loop_iterations,
        local_memory_bytes=structure.local_memory_bytes,
        method="loopy",
        loop_iterations_lanes=structure.loop_iterations_lanes,
        notes=tuple(notes),
        assumptions=str(program.default_entrypoint.assumptions),
    )


def _vectorised_inames(program: lp.TranslationUnit) -> list[str]:
    """The entry kernel's inames tagged 'vec'."""
    from loopy.kernel.data import VectorizeTag

    kernel = program.default_entrypoint
    return sorted(name for name, iname in kernel.inames.items() if any(isinstance(t, VectorizeTag) for t in iname.tags))


def to_workitems(expr: Expr, granularity: str | None, group_size: int) -> Expr:
    """A loopy count in work-item units: sub-group counts x (group size / sub-groups per group),
    which is x 32 when the group size is a multiple of 32; work-group counts x group size."""
    if granularity == "subgroup":
        subgroups = -(-group_size // SUBGROUP_SIZE)
        scaled = product([expr, group_size])
        return scaled if subgroups == 1 else scaled // subgroups
    if granularity == "workgroup":
        return product([expr, group_size])
    return expr


# -- caching --------------------------------------------------------------------------------------
_MEMORY: dict[tuple[int, str], tuple[weakref.ref, SymbolicCounts]] = {}


def _program_of(kernel: Any) -> lp.TranslationUnit:
    program = getattr(kernel, "program", kernel)
    if not isinstance(program, lp.TranslationUnit):
        raise GpuperfError(f"expected a gpuperf Kernel or a loopy TranslationUnit, got {type(kernel).__name__}")
    return program


_BASIC_SET_TEXT = re.compile(r"(?P<params>\[[^\]]*\] -> )?\{ (?P<tuple>[^:]*): (?P<constraints>.*) \}")


def _canonical_set(basic: isl.BasicSet, params: list[str]) -> isl.BasicSet:
    """``basic`` over ``params`` in that order, its constraints written in sorted order: loopy builds
    a program's sets with the parameters (and the divisions of ``n mod 16 = 0``) in the order a Python
    set iterates, which changes with the hash seed, and with it the cache key of one and the same program."""
    model = isl.Space.create_from_names(basic.get_ctx(), set=[], params=params)
    text = str(basic.align_params(model))
    parts = _BASIC_SET_TEXT.fullmatch(text)
    if parts is None or " or " in text or "exists" in text:
        return basic.align_params(model)
    constraints = " and ".join(sorted(parts["constraints"].split(" and ")))
    return isl.BasicSet(f"{parts['params'] or ''}{{ {parts['tuple']}: {constraints} }}", context=basic.get_ctx())


def _canonical_program(program: lp.TranslationUnit) -> lp.TranslationUnit:
    """``program`` with its entrypoint's domains and assumptions canonical (:func:`_canonical_set`)."""
    entry = program.default_entrypoint
    sets = [*entry.domains, entry.assumptions]
    names = sorted({name for s in sets for name in s.get_var_dict(isl.dim_type.param)})
    return program.with_kernel(entry.copy(domains=[_canonical_set(d, names) for d in entry.domains],
                                          assumptions=_canonical_set(entry.assumptions, names)))


def _disk_path(program: lp.TranslationUnit, method: str) -> Path:
    from loopy.tools import LoopyKeyBuilder

    key = LoopyKeyBuilder()(_canonical_program(constants_as_global(program)))  # counts as its global twin's
    digest = hashlib.sha256(f"{FORMAT_VERSION}:{method}:{key}".encode()).hexdigest()
    return cache_root() / "counts" / f"{digest[:40]}.pkl"


def _load(path: Path) -> SymbolicCounts | None:
    try:
        with path.open("rb") as handle:
            loaded = pickle.load(handle)  # noqa: S301 - our own cache files
    except Exception:  # noqa: BLE001 - any damaged or foreign cache file is counted again
        return None
    return loaded if isinstance(loaded, SymbolicCounts) else None


def _store(path: Path, counts: SymbolicCounts) -> None:
    write_cache_file(path, lambda temporary: temporary.write_bytes(pickle.dumps(counts, pickle.HIGHEST_PROTOCOL)))


def symbolic_counts(kernel: Any, method: str = "auto", disk_cache: bool | None = None) -> SymbolicCounts:
    """The kernel's SymbolicCounts (``kernel``: a gpuperf Kernel or a loopy TranslationUnit).

    ``method``: ``fast`` (IR path; error if it cannot count the kernel), ``loopy`` (loopy's
    statistics) or ``auto`` (fast, else loopy). Results are cached per program in memory; with
    ``disk_cache`` (default: on for loopy's statistics, whose counts are slow) also on disk.
    """
    from gpuperf.features import fastcount

    if method not in ("auto", "fast", "loopy"):
        raise GpuperfError(f"unknown counting method '{method}'; use auto, fast or loopy")
    program = _program_of(kernel)
    entry = program.default_entrypoint
    computed = sorted(set(entry.all_params()) & set(entry.temporary_variables))
    if computed:  # a loop bound the kernel reads from memory: no size gives its trip count
        raise GpuperfError(f"kernel '{entry.name}': loop bounds depend on data ({', '.join(computed)}, computed in the "
                           "kernel); gpuperf counts loops whose bounds are size parameters")
    _refuse_called_kernels(program)
    memo_key = (id(program), method)
    found = _MEMORY.get(memo_key)
    if found is not None and found[0]() is program:
        return found[1]
    counts: SymbolicCounts | None = None
    fast_failure = ""
    if method in ("auto", "fast"):
        try:
            counts = fastcount.fast_counts(program)
        except Exception as exc:  # noqa: BLE001 - in auto mode any fast-path failure falls back to loopy
            if method == "fast":
                name = program.default_entrypoint.name
                raise GpuperfError(f"the fast path cannot count kernel '{name}': {exc}") from exc
            fast_failure = f"fast path: {type(exc).__name__}: {exc}"
    if counts is None:
        use_disk = True if disk_cache is None else disk_cache
        path = _disk_path(program, "loopy") if use_disk else None
        counts = _load(path) if path is not None else None
        if counts is None:
            try:
                counts = loopy_counts(program)
            except GpuperfError as error:  # the fast path's reason may be the one to act on
                if not fast_failure:
                    raise
                raise GpuperfError(f"{error} (and the {fast_failure})") from None
            if path is not None:
                _store(path, counts)
        if fast_failure:
            counts.notes = (*counts.notes, fast_failure)
    _remember(memo_key, program, counts)
    return counts


def _refuse_called_kernels(program: lp.TranslationUnit) -> None:
    """An error for a program holding loopy kernels besides its entry (``lp.merge`` of a caller and a
    callee): neither counting path counts them (loopy's statistics fail on the call)."""
    entry = program.default_entrypoint
    others = sorted(name for name, callee in program.callables_table.items()
                    if isinstance(callee, lp.CallableKernel) and name != entry.name)
    if others:
        raise GpuperfError(f"kernel '{entry.name}': programs that call other loopy kernels (here {', '.join(others)}) "
                           "are not supported by the static features (features, predict, advise); measure runs them")


def _remember(memo_key: tuple[int, str], program: lp.TranslationUnit, counts: SymbolicCounts) -> None:
    _MEMORY[memo_key] = (weakref.ref(program, lambda _ref, k=memo_key: _MEMORY.pop(k, None)), counts)
