"""Model properties: the per-launch quantities the linear count model weighs, from static counts.

Every property is a total per launch computed from the kernel's symbolic counts
(:func:`gpuperf.features.counts.symbolic_counts`, loopy's conventions, work-item units) and its
array shapes, at given sizes. ``PROPERTIES`` documents each one with the sign its weight must
have: +1 for a cost (weight >= 0), -1 for the overlap term (weight <= 0: loads and stores in
flight together take less than their sum).

``PROPERTY_SETS`` names the properties a device class uses:

- ``stevens_klockner``: the Stevens & Klöckner set: operations by type, global bytes by direction
  and stride class along local axis 0 (coalescing), local accesses, barriers per work-group,
  launches, work-groups and the load/store overlap. Every term is a total per launch, so it
  describes a launch that fills the GPU, where throughput sets the time.
- ``gpu``: that set plus four per-work-item counts (``item_flops``, ``item_special``,
  ``item_loads``, ``item_strided_loads``): the chain of dependent work one work-item runs, whose
  latencies set the time of a launch with too few work-items to fill the GPU (n-body with 32
  work-groups on 132 SMs, one row sum per work-item). Calibrated on an H100, their weights are the
  latencies one would expect: about 4 ns per operation, 39 ns per division or call, 14 ns per
  coalesced load (an L1 hit) and 121 ns per strided one; without them the held-out n-body is
  predicted 14x too fast (``data/linear_model_h100.csv.gz``, ``benchmarks/bench_linear_model.py
  --table``).
- ``cpu``: a CPU (e.g. pocl) runs each work-group as loops over its work-items and vectorises the
  innermost one, unless the kernel calls a function (sqrt, fmin, exp, ...): then it runs scalar.
  Coalescing means nothing there; what counts is the data a launch brings into the caches (its
  footprint: distinct bytes of the arrays it reads and writes, written-only arrays being read for
  ownership first, and the part beyond a 1 MiB cache that repeated launches fetch again), access
  instructions (vector or scalar), the cache lines gathers and scatters touch, the cache lines
  sequential loops walk per iteration (the step along each access's innermost loop), operations by
  kind, loop iterations, per-work-item and per-work-group overhead, and barriers, which end one
  work-item loop and start another.
- ``intel_cpu``: the ``cpu`` set plus ``row_segments``, the contiguous runs of global memory the
  accesses consecutive along local axis 0 start (one per work-group, or one per row of a work-group
  whose rows lie apart in memory). On Intel's CPU OpenCL runtime (16 work-items per AVX-512
  instruction) the 2D kernels' 16x16 work-groups took two to four times the 1D kernels' time per
  byte, which the ``cpu`` set cannot tell apart (with it the held-out stencils came out 0.48-0.67x
  their measured time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuperf.errors import GpuperfError, refuse_one_string, unknown_name_error

if TYPE_CHECKING:
    from gpuperf.features.counts import Evaluated, SymbolicCounts
    from gpuperf.kernels.kernel import Kernel


@dataclass(frozen=True)
class Property:
    name: str
    sign: int  # +1: a cost (weight >= 0); -1: a saving (weight <= 0); 0: either
    unit: str
    meaning: str


_OPS = "add, multiply and other arithmetic operators"
PROPERTIES: tuple[Property, ...] = (
    Property("launches", 1, "launches", "device kernels one call launches"),
    Property("work_groups", 1, "work-groups", "work-groups per launch"),
    Property("work_items", 1, "work-items", "work-items per launch"),
    Property("f32_ops", 1, "operations", f"float32 {_OPS}"),
    Property("f64_ops", 1, "operations", f"float64 {_OPS}"),
    Property("f32_div", 1, "operations", "float32 divisions"),
    Property("f64_div", 1, "operations", "float64 divisions"),
    Property("f32_functions", 1, "calls", "float32 sqrt, min/max, fabs and other non-transcendental functions"),
    Property("f64_functions", 1, "calls", "float64 sqrt, min/max, fabs and other non-transcendental functions"),
    Property("f32_transcendental", 1, "calls", "float32 exp, log, pow, trigonometric and other transcendentals"),
    Property("f64_transcendental", 1, "calls", "float64 exp, log, pow, trigonometric and other transcendentals"),
    Property("f32_special", 1, "operations", "float32 divisions and function calls"),
    Property("f64_special", 1, "operations", "float64 divisions and function calls"),
    Property("vector_f32_ops", 1, "operations", f"float32 {_OPS} in kernels without function calls"),
    Property("vector_f64_ops", 1, "operations", f"float64 {_OPS} in kernels without function calls"),
    Property("scalar_flops", 1, "operations", f"floating-point {_OPS} in kernels that call functions"),
    Property("scalar_div", 1, "operations", "floating-point divisions in kernels that call functions"),
    Property("int_ops", 1, "operations", "integer operations (index arithmetic included)"),
    Property("global_load_bytes", 1, "bytes", "bytes loaded from global memory"),
    Property("global_store_bytes", 1, "bytes", "bytes stored to global memory"),
    Property("global_load_bytes_stride0", 1, "bytes", "global loads uniform along local axis 0 (broadcast)"),
    Property("global_load_bytes_stride1", 1, "bytes", "global loads consecutive along local axis 0 (coalesced)"),
    Property(
        "global_load_bytes_strided", 1, "bytes", "global loads further apart along local axis 0, or not affine"
    ),
    Property("global_store_bytes_stride1", 1, "bytes", "global stores consecutive along local axis 0"),
    Property(
        "global_store_bytes_strided", 1, "bytes",
        "global stores uniform, further apart or not affine along local axis 0",
    ),
    Property("global_accesses", 1, "accesses", "global loads and stores"),
    Property("local_accesses", 1, "accesses", "local memory loads and stores"),
    Property(
        "vector_accesses", 1, "accesses",
        "global and local accesses uniform or consecutive along local axis 0, in kernels without function "
        "calls (a CPU vectorises them across work-items)",
    ),
    Property(
        "scalar_accesses", 1, "accesses",
        "global and local accesses uniform or consecutive along local axis 0, in kernels that call functions",
    ),
    Property(
        "gather_accesses", 1, "accesses",
        "global and local accesses further apart along local axis 0, or not affine (gathers and scatters)",
    ),
    Property(
        "gather_lines", 1, "lines",
        "cache lines the gathers and scatters touch: min(stride x item size, 64) / 64 per access further apart "
        "along local axis 0 (one line where the index is not affine)",
    ),
    Property(
        "row_segments", 1, "runs",
        "contiguous runs of global memory that accesses consecutive along local axis 0 start: one per work-group "
        "and access, or one per row of the work-group where its rows (local axis 1) lie apart in memory",
    ),
    Property(
        "loop_lines", 1, "lines",
        "cache lines global accesses in sequential loops touch per iteration of their innermost loop: "
        "min(step x item size, 64) / 64 per access (a row-wise walk costs a line each time)",
    ),
    Property("barriers", 1, "barriers", "local barriers passed, once per work-group each"),
    Property("barrier_work_items", 1, "barriers", "local barriers passed, once per work-item each"),
    Property("loop_iterations", 1, "iterations", "sequential (and unrolled) loop-body executions, work-item units"),
    Property("item_flops", 1, "operations", f"floating-point {_OPS} per work-item (its chain of dependent work)"),
    Property("item_special", 1, "operations", "floating-point divisions and function calls per work-item"),
    Property("item_loads", 1, "accesses", "global loads uniform or consecutive along local axis 0, per work-item"),
    Property("item_strided_loads", 1, "accesses",
             "global loads further apart along local axis 0 or not affine, per work-item"),
    Property("overlap_bytes", -1, "bytes", "min(global load bytes, global store bytes): loads and stores overlapping"),
    Property("footprint_bytes", 1, "bytes", "distinct bytes of the global arrays the launch reads or writes"),
    Property("footprint_load_bytes", 1, "bytes", "distinct bytes of the global arrays the launch reads"),
    Property("footprint_store_bytes", 1, "bytes", "distinct bytes of the global arrays the launch writes"),
    Property(
        "footprint_write_only_bytes", 1, "bytes",
        "distinct bytes of arrays written but never read (a CPU reads their lines before writing them)",
    ),
)
PROPERTY_BY_NAME = {p.name: p for p in PROPERTIES}
BEYOND_CACHE = re.compile(r"footprint_beyond_(\d+)(KiB|MiB)")
BEYOND_UNITS = {"KiB": 1024, "MiB": 1024 * 1024}

_STEVENS_KLOCKNER = (
    "launches", "work_groups", "f32_ops", "f64_ops", "f32_special", "f64_special",
    "global_load_bytes_stride0", "global_load_bytes_stride1", "global_load_bytes_strided",
    "global_store_bytes_stride1", "global_store_bytes_strided", "local_accesses", "barriers",
    "overlap_bytes",
)
PROPERTY_SETS: dict[str, tuple[str, ...]] = {
    "gpu": (*_STEVENS_KLOCKNER, "item_flops", "item_special", "item_loads", "item_strided_loads"),
    "stevens_klockner": _STEVENS_KLOCKNER,
    "cpu": (
        "launches", "work_groups", "work_items",
        "footprint_load_bytes", "footprint_write_only_bytes", "footprint_beyond_1MiB",
        "vector_accesses", "scalar_accesses", "gather_lines", "loop_lines",
        "vector_f32_ops", "vector_f64_ops", "scalar_flops", "scalar_div", "f32_div", "f64_div",
        "f32_functions", "f64_functions", "f32_transcendental", "f64_transcendental",
        "loop_iterations", "barrier_work_items",
    ),
}
PROPERTY_SETS["intel_cpu"] = (*PROPERTY_SETS["cpu"], "row_segments")
_FAMILY_MEMBERS = dict.fromkeys(n for names in PROPERTY_SETS.values() for n in names if n not in PROPERTY_BY_NAME)
ALL_PROPERTIES = (*PROPERTY_BY_NAME, *_FAMILY_MEMBERS)

CACHE_LINE = 64  # bytes
MISSING_REASONS = {
    "loop_iterations": "loop iterations are not counted on loopy's statistics path",
    "loop_lines": "which loop each access runs in is unknown on loopy's statistics path",
}
OPERATORS = {"add", "mul", "div", "shift", "bw"}  # everything else is a function call in device code
TRANSCENDENTAL = {"exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "pow", "powr", "pown",
                  "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "erf", "erfc",
                  "cbrt", "tgamma", "lgamma"}


# -- names ------------------------------------------------------------------------------------------
def property_names(property_set: str) -> tuple[str, ...]:
    """The properties of a device class (``gpu`` or ``cpu``)."""
    if property_set not in PROPERTY_SETS:
        raise unknown_name_error("property set", property_set, PROPERTY_SETS)
    return PROPERTY_SETS[property_set]


def describe_property(name: str) -> Property | None:
    """A property by name: registered, or ``footprint_beyond_<N>KiB`` / ``..MiB`` (None if unknown)."""
    if name in PROPERTY_BY_NAME:
        return PROPERTY_BY_NAME[name]
    match = BEYOND_CACHE.fullmatch(name)
    if match is None:
        return None
    return Property(
        name, 1, "bytes",
        f"footprint beyond a {match.group(1)} {match.group(2)} cache: max(0, footprint bytes - cache size), the "
        "data a launch that runs repeatedly must bring in again each time",
    )


def check_property_names(names: Iterable[str], where: str = "properties") -> tuple[str, ...]:
    """``names`` as a tuple; an unknown name raises an error suggesting the nearest known ones, and one
    string an error showing the list to write ("f32_ops" would read as the properties f, 3, 2, ...)."""
    refuse_one_string(names, "properties", where, names="property names")
    names = tuple(str(n) for n in names)
    for name in names:
        if describe_property(name) is None:
            patterns = ["footprint_beyond_<N>KiB", "footprint_beyond_<N>MiB"]
            error = unknown_name_error("property", name, [*PROPERTY_BY_NAME, *patterns])
            raise GpuperfError(f"{where}: {error}")
    if len(set(names)) != len(names):
        raise GpuperfError(f"{where}: a property is listed twice")
    return names


def property_signs(names: Sequence[str]) -> list[int]:
    """The expected sign of each property's weight."""
    return [describe_property(n).sign for n in check_property_names(names)]


# -- values -----------------------------------------------------------------------------------------
def symbolic_counts(kernel: Kernel) -> SymbolicCounts:
    """:func:`gpuperf.features.counts.symbolic_counts`, imported when a kernel is counted: loopy's
    counts, which fitting or predicting on a table's columns does not need."""
    from gpuperf.features.counts import symbolic_counts as counted

    return counted(kernel)


def kernel_properties(kernel: Kernel, sizes: Mapping[str, Any] | None = None,
                      names: Sequence[str] | None = None) -> dict[str, float]:
    """The properties ``names`` (default: all) of ``kernel`` at ``sizes`` (defaults fill gaps)."""
    names = check_property_names(names if names is not None else ALL_PROPERTIES)
    resolved = kernel.resolve_sizes(sizes)
    evaluated = symbolic_counts(kernel).values(resolved)
    vectorised = not calls_functions(evaluated)
    values = _operation_properties(evaluated, vectorised)
    values.update(_access_properties(evaluated, vectorised))
    values.update(_footprint_properties(kernel, resolved))
    if "loop_lines" in names:
        values["loop_lines"] = _loop_lines(kernel, evaluated, resolved)
    for name in names:
        match = BEYOND_CACHE.fullmatch(name)
        if match:
            cache = int(match.group(1)) * BEYOND_UNITS[match.group(2)]
            values[name] = max(0.0, values["footprint_bytes"] - cache)
    for name in names:
        value = values.get(name)
        if value is None or not math.isfinite(value):
            raise GpuperfError(
                f"kernel '{kernel.key}': its static counts give no value for property {name}"
                + (f" ({MISSING_REASONS[name]})" if name in MISSING_REASONS else "")
            )
    return {name: float(values[name]) for name in names}


def properties_table(points: Iterable[tuple[Kernel, Mapping[str, Any]]], names: Sequence[str]) -> pd.DataFrame:
    """One row per (kernel, sizes): ``kernel`` (its key), ``sizes`` (text) and the properties."""
    rows = []
    for kernel, sizes in points:
        resolved = kernel.resolve_sizes(sizes)
        row: dict[str, Any] = {"kernel": kernel.key, "sizes": sizes_label(resolved)}
        row.update(kernel_properties(kernel, resolved, names))
        rows.append(row)
    return pd.DataFrame(rows, columns=["kernel", "sizes", *names])


def sizes_label(sizes: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def calls_functions(evaluated: Evaluated) -> bool:
    """Whether the kernel calls functions (sqrt, fmin, exp, ...): a CPU then runs it unvectorised."""
    return any(op not in OPERATORS and count for (_, op), count in evaluated.ops.items())


def _operation_kind(op: str) -> str:
    if op == "div":
        return "div"
    if op in OPERATORS:
        return "ops"
    return "transcendental" if op in TRANSCENDENTAL else "functions"


def _operation_properties(evaluated: Evaluated, vectorised: bool) -> dict[str, float | None]:
    named = evaluated.named()
    values: dict[str, float | None] = {}
    for prefix in ("f32", "f64"):
        for kind in ("ops", "div", "functions", "transcendental"):
            values[f"{prefix}_{kind}"] = 0.0
    for (dtype, op), count in evaluated.ops.items():
        if dtype[0] in "fc":
            prefix = "f32" if dtype in ("f16", "f32", "c64") else "f64"
            values[f"{prefix}_{_operation_kind(op)}"] += float(count)
    for prefix in ("f32", "f64"):
        values[f"{prefix}_special"] = sum(values[f"{prefix}_{k}"] for k in ("div", "functions", "transcendental"))
        values[f"vector_{prefix}_ops"] = values[f"{prefix}_ops"] if vectorised else 0.0
    values["scalar_flops"] = 0.0 if vectorised else values["f32_ops"] + values["f64_ops"]
    values["scalar_div"] = 0.0 if vectorised else values["f32_div"] + values["f64_div"]
    work_groups = float(math.prod(int(g) for g in evaluated.groups))
    barriers = named["barriers_local"]
    values.update(
        launches=named["kernel_launches"],
        work_groups=work_groups,
        work_items=float(evaluated.threads),
        int_ops=named["int_ops"],
        global_load_bytes=named["global_load_bytes"],
        global_store_bytes=named["global_store_bytes"],
        global_accesses=named["global_loads"] + named["global_stores"],
        local_accesses=named["local_loads"] + named["local_stores"],
        barriers=barriers * work_groups,
        barrier_work_items=barriers * evaluated.threads,
        overlap_bytes=min(named["global_load_bytes"], named["global_store_bytes"]),
        loop_iterations=evaluated.loop_iterations,
    )
    items = max(float(evaluated.threads), 1.0)
    values["item_flops"] = (values["f32_ops"] + values["f64_ops"]) / items
    values["item_special"] = (values["f32_special"] + values["f64_special"]) / items
    return values


def _access_properties(evaluated: Evaluated, vectorised: bool) -> dict[str, float]:
    values = {
        "global_load_bytes_stride0": 0.0, "global_load_bytes_stride1": 0.0, "global_load_bytes_strided": 0.0,
        "global_store_bytes_stride1": 0.0, "global_store_bytes_strided": 0.0,
        "vector_accesses": 0.0, "scalar_accesses": 0.0, "gather_accesses": 0.0, "gather_lines": 0.0,
        "item_loads": 0.0, "item_strided_loads": 0.0,
    }
    for access in evaluated.accesses:
        record = access.record
        stride = access.stride_class
        contiguous = stride in ("stride0", "stride1")
        kind = "gather" if not contiguous else "vector" if vectorised else "scalar"
        requests = access.count / record.vector  # a float4 access is one request for four elements
        values[f"{kind}_accesses"] += requests
        if not contiguous:
            step = access.lid_strides.get(0)
            lines = 1.0 if step is None else min(abs(step) * record.itemsize, CACHE_LINE) / CACHE_LINE
            values["gather_lines"] += requests * lines
        if record.space != "global":
            continue
        if record.direction == "load":
            key = f"global_load_bytes_{stride if contiguous else 'strided'}"
        else:
            key = f"global_store_bytes_{'stride1' if stride == 'stride1' else 'strided'}"
        values[key] += access.count * record.itemsize
        if record.direction == "load":
            values["item_loads" if contiguous else "item_strided_loads"] += requests
    values["row_segments"] = _row_segments(evaluated)
    items = max(float(evaluated.threads), 1.0)
    values["item_loads"] /= items
    values["item_strided_loads"] /= items
    return values


def _row_segments(evaluated: Evaluated) -> float:
    """Contiguous runs of global memory the accesses consecutive along local axis 0 start: a run holds
    the work-items side by side in memory (a row along local axis 0, then the next rows while each
    follows the one before)."""
    total = 0.0
    for access in evaluated.accesses:
        if access.record.space != "global" or access.stride_class != "stride1":
            continue
        items = evaluated.local[0]
        span = items * abs(access.lid_strides[0])  # elements a row spans (a float4 row: 4 per work-item)
        for axis in (1, 2):
            extent = evaluated.local[axis]
            if extent > 1 and axis in access.lid_strides and access.lid_strides[axis] != span:
                break  # the next row lies apart: every row starts a run
            items, span = items * extent, span * extent
        total += access.count / access.record.vector / items  # a float4 access is one request for four elements
    return total


def _loop_lines(kernel: Kernel, evaluated: Evaluated, sizes: Mapping[str, int]) -> float | None:
    from gpuperf.models.loop_strides import LoopStrides

    strides = LoopStrides.of(kernel)
    total = 0.0
    for access in evaluated.accesses:
        if access.record.space != "global":
            continue
        lines = strides.lines(access.record, sizes)
        if lines is None:
            return None
        total += access.count * lines
    return total


def _footprint_properties(kernel: Kernel, sizes: Mapping[str, int]) -> dict[str, float]:
    import loopy as lp

    read = kernel.entry.get_read_variables()
    written = kernel.entry.get_written_variables()
    loaded = stored = write_only = 0.0
    for arg in kernel.array_args:
        if arg.address_space not in (lp.AddressSpace.GLOBAL, lp.auto):
            continue
        size = float(math.prod(kernel.array_shape(arg, sizes))) * np.dtype(arg.dtype.numpy_dtype).itemsize
        loaded += size if arg.name in read else 0.0
        stored += size if arg.name in written else 0.0
        write_only += size if arg.name in written and arg.name not in read else 0.0
    return {
        "footprint_bytes": loaded + write_only,
        "footprint_load_bytes": loaded,
        "footprint_store_bytes": stored,
        "footprint_write_only_bytes": write_only,
    }
