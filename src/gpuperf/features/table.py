"""Static features of a kernel at given sizes: the LIFT paper's Table 1 and loopy's detailed counts.

``extract_features(kernel, sizes, gpu=None)`` returns one flat ``{name: float}`` dict;
``feature_table(kernels, sizes_list)`` builds a pandas DataFrame for many kernels and sizes.
``FEATURES`` documents every name (``docs/features.md`` is rendered from it by ``features_markdown``).
The symbolic counts of each kernel are computed once and cached (``gpuperf.features.counts``), so
evaluating one kernel at many sizes is cheap.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.kernels.kernel import Kernel, KernelLike

if TYPE_CHECKING:  # pandas loads only for feature_table: one kernel's features need none of it
    import argparse

    import pandas as pd

    from gpuperf.features.counts import Evaluated, EvaluatedAccess

LIFT = "LIFT stencil paper"
LOOPY = "Loopy performance model (Stevens & Klöckner)"
AMARIS = "Amaris et al."
GPUPERF = "gpuperf"


@dataclass(frozen=True)
class Feature:
    """One documented feature: ``name`` may hold ``<dtype>``, ``<op>`` or ``<stride>`` placeholders."""

    name: str
    unit: str
    meaning: str
    source: str


FEATURES: tuple[Feature, ...] = (
    # -- LIFT, Table 1 ------------------------------------------------------------------------
    Feature("global_size_0", "work-items", "launch grid size along axis 0 (work-groups x local size)", LIFT),
    Feature("global_size_1", "work-items", "launch grid size along axis 1", LIFT),
    Feature("global_size_2", "work-items", "launch grid size along axis 2", LIFT),
    Feature("local_size_0", "work-items", "work-group size along axis 0", LIFT),
    Feature("local_size_1", "work-items", "work-group size along axis 1", LIFT),
    Feature("local_size_2", "work-items", "work-group size along axis 2", LIFT),
    Feature("local_memory_bytes", "bytes", "local (shared) memory of the kernel's temporaries, per work-group", LIFT),
    Feature("global_loads_per_thread", "accesses", "global memory loads per work-item (the loads the work-items "
            "make: a fetch loop's last pass counts only the lanes its bounds leave on; global_loads keeps loopy's "
            "count of every lane)", LIFT),
    Feature("global_stores_per_thread", "accesses", "global memory stores per work-item (as global_loads_per_thread)",
            LIFT),
    Feature("local_loads_per_thread", "accesses", "local memory loads per work-item (as global_loads_per_thread)",
            LIFT),
    Feature("local_stores_per_thread", "accesses", "local memory stores per work-item (as global_loads_per_thread)",
            LIFT),
    Feature("atomic_updates_per_thread", "updates", "atomic stores per work-item: an `{atomic}` instruction's "
            "target (a read-modify-write update, also one load and one store in the counts above, or an "
            "`{atomic=init}` store), global or local",
            GPUPERF),
    Feature(
        "cache_lines_per_warp_access",
        "lines",
        "distinct 128-byte lines one warp-wide global access touches, averaged over the warp requests of "
        "the kernel's global accesses; lanes the loop bounds switch off (a fetch loop's last pass) make none "
        "(NaN if no access can be analysed)",
        LIFT,
    ),
    Feature("sectors_per_warp_access", "sectors", "as cache_lines_per_warp_access, for 32-byte sectors", LIFT),
    Feature("max_cache_lines_per_warp_access", "lines", "the largest of the analysable global accesses' "
            "distinct 128-byte lines per warp request, each access's averaged over its warp requests (a "
            "window a[i+k], k < 4, touching 1 or 2 lines per request gives 1.75, not 2): one scattered access among coalesced ones "
            "shows here while the average over accesses hides it (0 without global accesses, NaN if none can be "
            "analysed)", GPUPERF),
    Feature("max_sectors_over_fewest", "ratio", "the largest, over the analysable global accesses, of an "
            "access's 32-byte sectors per warp request over the fewest sectors the distinct bytes its lanes address "
            "fit in: 1 for a coalesced access whatever its width (a float4 access touching 16 sectors) or the "
            "work-group's (8-wide rows, 32 bytes each), 8 for 32 floats on 32 sectors (1 without global "
            "accesses, NaN if none can be analysed)", GPUPERF),
    Feature("barriers_per_thread", "barriers", "work-group barriers each work-item passes (local + global)", LIFT),
    Feature(
        "ifs_per_thread",
        "branches",
        "conditionals per work-item: the bound guards loopy must generate (one per work-item and set of "
        "parallel inames it guards), plus instruction predicates and if-expressions per execution",
        LIFT,
    ),
    Feature(
        "loop_iterations_per_thread",
        "iterations",
        "executions of the innermost sequential (also unrolled) loop bodies per work-item",
        LIFT,
    ),
    # -- totals per launch (loopy's statistics: a loop whose bounds depend on the local ids, such as a
    #    fetch loop, counted by its bounding box, every lane of every pass) ---------------------------
    Feature("flops", "operations", "floating-point operations per launch (every op on float data, one each)", LOOPY),
    Feature("int_ops", "operations", "integer operations per launch (index arithmetic included)", LOOPY),
    Feature("global_bytes", "bytes", "bytes loaded from and stored to global memory per launch (loopy's box count)",
            LOOPY),
    Feature("global_load_bytes", "bytes", "bytes loaded from global memory per launch", LOOPY),
    Feature("global_store_bytes", "bytes", "bytes stored to global memory per launch", LOOPY),
    Feature("local_bytes", "bytes", "bytes loaded from and stored to local memory per launch", LOOPY),
    Feature("local_load_bytes", "bytes", "bytes loaded from local memory per launch", LOOPY),
    Feature("local_store_bytes", "bytes", "bytes stored to local memory per launch", LOOPY),
    Feature("global_loads", "accesses", "global loads per launch (loopy's box count, as every total here)", LOOPY),
    Feature("global_stores", "accesses", "global stores per launch", LOOPY),
    Feature("local_loads", "accesses", "local loads per launch", LOOPY),
    Feature("local_stores", "accesses", "local stores per launch", LOOPY),
    Feature("barriers_local", "barriers", "local barriers per work-item", LOOPY),
    Feature("barriers_global", "barriers", "global barriers per work-item", LOOPY),
    Feature("kernel_launches", "launches", "device kernels one call launches", LOOPY),
    Feature(
        "ops_<dtype>_<op>",
        "operations",
        "operations per launch by data type (f32, f64, i32, ...) and kind: add, mul, div, pow, maxmin, "
        "shift, bw (bitwise) or a function name (exp, sqrt, fmin, max and min of reductions, ...); "
        "only kinds that occur appear",
        LOOPY,
    ),
    Feature(
        "global_loads_<dtype>_<stride>",
        "accesses",
        "global loads per launch by data type and how work-items along local axis 0 address memory: "
        "stride0 (same element), stride1 (consecutive), stride_gt1 (further apart), nonaffine",
        LOOPY,
    ),
    Feature("global_stores_<dtype>_<stride>", "accesses", "global stores per launch, as global_loads_<dtype>_<stride>", LOOPY),
    Feature("local_loads_<dtype>_<stride>", "accesses", "local loads per launch, as global_loads_<dtype>_<stride>", LOOPY),
    Feature("local_stores_<dtype>_<stride>", "accesses", "local stores per launch, as global_loads_<dtype>_<stride>", LOOPY),
    # -- launch shape and per-thread work -------------------------------------------------------
    Feature("threads", "work-items", "work-items per launch (product of the global sizes)", AMARIS),
    Feature("work_groups", "work-groups", "work-groups (blocks) per launch", AMARIS),
    Feature("work_group_size", "work-items", "work-items per work-group (threads per block)", AMARIS),
    Feature("flops_per_thread", "operations", "floating-point operations per work-item", AMARIS),
    Feature(
        "analysable_access_fraction",
        "fraction",
        "share of global accesses (by warp requests) whose lane pattern is known; the rest are left out of "
        "cache_lines_per_warp_access",
        LIFT,
    ),
    # -- with gpu=NAME --------------------------------------------------------------------------
    Feature("registers_per_thread", "registers", "registers per thread, from NVRTC for the GPU's architecture", AMARIS),
    Feature("occupancy", "fraction", "resident warps per SM over the SM's warp slots (CUDA occupancy rules)", AMARIS),
    Feature("active_blocks_per_sm", "work-groups", "work-groups resident per SM at once", AMARIS),
    Feature("active_warps_per_sm", "warps", "warps resident per SM at once", AMARIS),
)

OCCUPANCY_FEATURES = ("registers_per_thread", "occupancy", "active_blocks_per_sm", "active_warps_per_sm")
# The features that count whole things (work-items, groups, registers, blocks, bytes): written as whole numbers
FEATURE_COUNTS = frozenset({
    *(f"{kind}_size_{axis}" for kind in ("global", "local") for axis in range(3)),
    "threads", "blocks", "work_groups", "work_group_size", "local_memory_bytes", "kernel_launches", "registers",
    "registers_per_thread", "active_blocks_per_sm", "active_warps_per_sm",
})


def made_accesses(access: EvaluatedAccess) -> float:
    """The accesses the work-items make of one evaluated access: switched-off lanes left out, a float4
    one access for its four elements, passes of sequential loops bounded by one another (``j <= k``) only
    those the loops make."""
    from gpuperf.features.lanes import made_count

    return made_count(access.lane_accesses * access.share, access.lanes) / access.record.vector


def _features_from_counts(evaluated: Evaluated) -> dict[str, float]:
    from gpuperf.features.access import warp_access_summary

    named = evaluated.named()
    threads = evaluated.threads
    summary = warp_access_summary(evaluated)
    local = evaluated.local
    features: dict[str, float] = {}
    for axis, size in enumerate(evaluated.global_size):
        features[f"global_size_{axis}"] = float(size)
    for axis, size in enumerate(local):
        features[f"local_size_{axis}"] = float(size)

    def per_thread(value: float | None) -> float:
        if value is None:
            return math.nan
        return value / threads if threads else 0.0

    features["local_memory_bytes"] = float(evaluated.local_memory_bytes)
    for space in ("global", "local"):
        for direction, plural in (("load", "loads"), ("store", "stores")):
            made = sum(made_accesses(a) for a in evaluated.accesses
                       if a.record.space == space and a.record.direction == direction)
            features[f"{space}_{plural}_per_thread"] = per_thread(made)
    features["atomic_updates_per_thread"] = per_thread(sum(
        made_accesses(a) for a in evaluated.accesses if a.record.atomic and a.record.direction == "store"))
    features["cache_lines_per_warp_access"] = summary.cache_lines_per_warp_access
    features["sectors_per_warp_access"] = summary.sectors_per_warp_access
    features["max_cache_lines_per_warp_access"] = summary.max_cache_lines_per_warp_access
    features["max_sectors_over_fewest"] = summary.max_sectors_over_fewest
    features["barriers_per_thread"] = named["barriers_local"] + named["barriers_global"]
    features["ifs_per_thread"] = per_thread(evaluated.branches)
    features["loop_iterations_per_thread"] = per_thread(evaluated.loop_iterations if evaluated.loop_iterations_lanes
                                                         is None else evaluated.loop_iterations_lanes)
    features["flops"] = named["flops"]
    features["global_bytes"] = named["global_bytes"]
    features["threads"] = float(threads)
    features["work_groups"] = float(math.prod(int(g) for g in evaluated.groups))
    features["work_group_size"] = float(local[0] * local[1] * local[2])
    features["flops_per_thread"] = per_thread(named["flops"])
    features["analysable_access_fraction"] = summary.analysable_fraction
    for name, value in named.items():
        features.setdefault(name, value)
    return features


def occupancy_features(kernel: Kernel, gpu: str, work_group_size: int, local_memory_bytes: float,
                       launches: float = 1.0) -> dict[str, float]:
    """Registers (NVRTC) and CUDA occupancy of ``kernel`` on ``gpu``; NaN where the GPU is not NVIDIA, and
    (with a note) for a program of several device kernels (``launches``), whose CUDA code holds the first only,
    or whose CUDA code cannot be made or compiled."""
    from gpuperf.features.occupancy import occupancy
    from gpuperf.features.resources import Uncompiled, arch_for_gpu, compile_resources, whole_program_error
    from gpuperf.hardware.specs import get_gpu

    spec = get_gpu(gpu)
    if spec.vendor != "NVIDIA" or spec.cc_version is None:
        return dict.fromkeys(OCCUPANCY_FEATURES, math.nan)
    if launches > 1:
        warnings.warn(GpuperfNote(f"{whole_program_error(kernel, int(launches))}; registers and occupancy left "
                                  "empty (NaN)"), stacklevel=2)
        return dict.fromkeys(OCCUPANCY_FEATURES, math.nan)
    try:
        used = compile_resources(kernel, arch_for_gpu(spec))
    except Uncompiled as error:  # the static features stand without registers and occupancy
        warnings.warn(GpuperfNote(f"{error}; registers and occupancy left empty (NaN)"), stacklevel=2)
        return dict.fromkeys(OCCUPANCY_FEATURES, math.nan)
    shared = max(used.shared_memory_bytes, int(local_memory_bytes))
    try:
        fit = occupancy(spec, work_group_size, used.registers, shared)
    except GpuperfError as error:  # a block the GPU cannot launch: say whose
        raise GpuperfError(f"kernel '{kernel.key}': {error}") from None
    return {
        "registers_per_thread": float(used.registers),
        "occupancy": float(fit.occupancy),
        "active_blocks_per_sm": float(fit.active_blocks_per_sm),
        "active_warps_per_sm": float(fit.active_warps_per_sm),
    }


def extract_features(kernel: KernelLike, sizes: Mapping[str, Any] | None = None, gpu: str | None = None) -> dict[str, float]:
    """Static features of ``kernel`` (a Kernel, a name as ``gpuperf features`` takes, or a loopy
    TranslationUnit, taken as ``catalog.as_kernel`` says) at ``sizes``
    (defaults fill gaps), from the kernel alone.

    With ``gpu`` (a GPU name or alias), the registers and occupancy on that GPU are added.
    """
    from gpuperf.features.counts import symbolic_counts  # loopy's counts: the table helpers need none

    from gpuperf.kernels.catalog import as_kernel

    kernel = as_kernel(kernel, "extract_features")
    resolved = kernel.resolve_sizes(sizes)
    counts = symbolic_counts(kernel)
    features = _features_from_counts(counts.values(resolved))
    if gpu is not None:
        features.update(
            occupancy_features(kernel, gpu, int(features["work_group_size"]), features["local_memory_bytes"],
                               features.get("kernel_launches", 1.0))
        )
    _check_size_names(kernel, resolved, features)
    return features


ROW_KEYS = ("kernel", "variant", "gpu")  # what a feature row holds beside the sizes and the features


def _check_size_names(kernel: Kernel, sizes: Mapping[str, Any], features: Mapping[str, float]) -> None:
    """Refuse a size parameter named like a feature or a row key: a row holds both, and one would be lost."""
    clash = sorted(name for name in sizes if name in features or name in ROW_KEYS)
    if clash:
        raise GpuperfError(
            f"kernel {kernel.key}: size parameter '{clash[0]}' has the name of a "
            f"{'column' if clash[0] in ROW_KEYS else 'feature'} gpuperf writes beside the sizes, so one of the "
            "two would be lost in a feature row; rename the parameter")


def feature_table(
    kernels: KernelLike | Iterable[KernelLike],
    sizes_list: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    gpu: str | None = None,
    *,
    pairwise: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """Features of many kernels: one row per kernel and parameter set.

    ``kernels``: Kernel objects, loopy TranslationUnits or specs for
    ``get_kernel`` (or one of these). ``sizes_list``: one mapping (used for
    every kernel) or a list of them; every kernel is evaluated at every parameter set, or with
    ``pairwise=True`` kernel *i* at parameter set *i*. Columns: ``kernel``, ``variant``, the size
    parameters, a variant's own parameters (``local_x``, ``unroll``, ... of a space's variant, as
    ``campaign export`` writes them), then the features; count columns a kernel lacks (an op kind it never does) are 0.
    """
    import pandas as pd

    import loopy as lp

    from gpuperf.kernels.catalog import as_kernel

    if isinstance(kernels, (str, Kernel, lp.TranslationUnit)):  # one kernel: "vector_copy" would read as v, e, ...
        kernels = [kernels]
    resolved = [as_kernel(k, "feature_table") for k in kernels]
    size_sets = [sizes_list] if isinstance(sizes_list, Mapping) else list(sizes_list)
    if pairwise:
        if len(size_sets) != len(resolved):
            raise GpuperfError(
                f"pairwise feature table: {len(resolved)} kernels but {len(size_sets)} parameter sets"
            )
        jobs = list(zip(resolved, size_sets))
    else:
        jobs = [(kernel, sizes) for kernel in resolved for sizes in size_sets]
    rows = []
    for kernel, sizes in _progress(jobs, progress):
        values = kernel.resolve_sizes(sizes)
        row: dict[str, Any] = {"kernel": kernel.name, "variant": kernel.variant_label, **values}
        for name, value in kernel.variant.items():  # as `campaign export` writes a variant's row
            row.setdefault(name, value)
        row.update({k: v for k, v in extract_features(kernel, values, gpu=gpu).items() if k not in row})
        rows.append(row)
    frame = pd.DataFrame(rows)
    counted = [c for c in frame.columns if is_count_column(c)]
    if counted:
        frame[counted] = frame[counted].fillna(0.0)
    return frame


def with_zero_counts(frame: pd.DataFrame, features: Sequence[str]) -> pd.DataFrame:
    """``frame`` with each count family among ``features`` that a row of gpuperf's counts lacks (an
    absent column, or an empty cell) as 0, as :func:`feature_table` writes it; rows holding no count
    at all (none could be extracted) keep theirs empty."""
    import numpy as np
    import pandas as pd

    counts = [name for name in features if is_count_column(str(name))]
    present = [column for column in frame.columns if is_count_column(str(column))]
    if not counts or not present:
        return frame
    out = frame.copy()
    counted = out[present].notna().any(axis=1)
    for name in counts:
        column = out[name] if name in out.columns else pd.Series(np.nan, index=out.index)
        out[name] = column.where(~(counted & column.isna()), 0.0)
    return out


def is_count_column(name: str) -> bool:
    """A per-launch count of one dtype, operation or stride class: 0 where a kernel has none."""
    return name.startswith(("ops_", "global_loads_", "global_stores_", "local_loads_", "local_stores_")) and not (
        name.endswith("_per_thread")
    )


def _progress(jobs: list, enabled: bool) -> Iterable:
    if not enabled:
        yield from jobs
        return
    from gpuperf.progress import progress_bar

    with progress_bar() as bar:  # on stderr: stdout holds only the results
        task = bar.add_task("static features", total=len(jobs))
        for job in jobs:
            yield job
            bar.advance(task)


# -- documentation ----------------------------------------------------------------------------------
def features_markdown() -> str:
    """``docs/features.md``: the FEATURES table with the conventions behind it."""
    lines = [
        "# Static features",
        "",
        "This page is part of gpuperf's documentation; the [README](../README.md) has the set-up, the first steps "
        "and the architecture; [kernels.md](kernels.md) has the `features` command.",
        "",
        "`gpuperf.features.extract_features(kernel, sizes, gpu=None)` returns these features as one flat",
        "`{name: float}` dict (`kernel` a `Kernel`, a name as `gpuperf features` takes, or a bare loopy",
        "`TranslationUnit`, taken as a `file.py:function` returning one is);",
        "`feature_table(kernels, sizes_list, gpu=None, *, pairwise=False, progress=False)` gives a pandas",
        "DataFrame, one row per kernel and size set: every kernel at every size set, or with `pairwise=True`",
        "kernel *i* at size set *i* (needed when the kernels have different size parameters). They come from",
        "the kernel alone: loopy's IR and statistics evaluated at the sizes, no device needed",
        "(`gpu=NAME` adds registers from NVRTC and the CUDA occupancy). These are left empty (NaN) for an AMD GPU,",
        "whose occupancy `gpuperf occupancy --gpu NAME --threads T --registers N` computes from a VGPR count, and, with",
        "a note, for a kernel whose CUDA code NVRTC does not compile or names a type loopy's CUDA target has no name",
        "for (complex, half).",
        "",
        "Conventions:",
        "",
        "- Counts follow loopy's statistics (`get_op_map`, `get_mem_access_map`, `get_synchronization_map`",
        "  with `subgroup_size=32`, `count_redundant_work=True`): work-items that run only to be masked off",
        "  count too, and without Barvinok a domain's points are counted by its bounding box.",
        "- A `__constant` array (`lp.ConstantArg`) is global memory read through the constant cache: its loads",
        "  count as global loads, classed and given cache lines as any global array's, though loopy's",
        "  statistics leave them out. CUDA has no `__constant__` pointer argument, so the kernel's CUDA code (NVRTC's",
        "  registers and occupancy, CUDA measurement) passes it as a read-only global array (`const __restrict__`).",
        "- A program that calls other loopy kernels (`lp.merge` of a caller and an `lp.make_function` callee)",
        "  has no static features: `features`, `predict` and `advise` refuse it (an error saying so), since",
        "  neither gpuperf's count nor loopy's statistics counts it; `measure` runs it.",
        "- Totals are per launch in work-item units. loopy counts arithmetic and local accesses (and",
        "  global accesses uniform across a sub-group) once per sub-group; those counts are multiplied by",
        "  work-group size / sub-groups per work-group, which is 32 when the work-group size is a",
        "  multiple of 32. `*_per_thread` features divide by `threads`.",
        "- Cache lines follow the LIFT method: a warp's lanes walk local axis 0, then 1, then 2, and the",
        "  lines are averaged over the work-group's warps (which differ where axis 0 neither divides nor is",
        "  a multiple of 32, as in 24 x 4, or the last warp is partial, as in 48); buffers start on a line",
        "  boundary, an array at its `offset` into its buffer; where the index is affine, lane 0's alignment",
        "  is averaged over the distinct offsets the other inames can produce. Where the offset is not known",
        "  (a non-affine part of the index, or an array `offset` given at run time), the warp's lowest",
        "  address is taken to start a line (alignment \"assumed\"). Accesses with indirect or data-dependent indices are",
        "  not analysable and left out (NaN when none is analysable).",
        "- A warp is 32 lanes whatever the GPU: with `gpu=` an AMD GPU, whose wavefronts are 64 lanes, the per-warp",
        "  features (`cache_lines_per_warp_access`, `sectors_per_warp_access`, their maxima, and the warp requests",
        "  `analysable_access_fraction` counts) are still counted over 32 lanes, so they mean the same on every GPU",
        "  and a model trained on them reads them alike (`gpuperf features --gpu` says so in a note).",
        "- One launch grid per program: a program that loopy splits into several device kernels (a global",
        "  barrier, `kernel_launches` above 1) is described by one grid of its kernels' largest work-group count",
        "  and largest work-group size, which may match none of them, so its launch sizes and `*_per_thread`",
        "  features are approximate there. A hoisted guard counts once per work-item of every work-group of",
        "  the launch, those beyond its own loop's groups too, and once per iteration only of the sequential",
        "  loops it stays inside: loopy puts it around a whole loop whose instructions all need it (a bound",
        "  shared with the loop becomes the loop's limit), inside a loop it shares with instructions it does",
        "  not guard. A loop whose bound the kernel reads from memory cannot be counted (an error).",
        "  A loop empty at the sizes (`p <= k < m` at `m <= p`) makes no pass: it adds nothing to any count.",
        "- Predicates are not weighed: an instruction under an `if` counts for every work-item that reaches",
        "  it, so an if/else whose arms each load and store once gives 2 loads and 2 stores per thread",
        "  (the machine code, `gpuperf resources`' `machine_code`, may hold one of each). The loads a",
        "  predicate itself makes (`if a[i] > 0`) count, once per work-item that reaches it, though loopy's",
        "  statistics leave them out; its index arithmetic does not count, as in loopy's.",
        "- Lanes a loop's bounds switch off are left out of the per-thread loads and stores and of the per-warp",
        "  features, but only in a kernel of one domain: a reduction loopy realizes across the work-items (`sum`",
        "  over an iname tagged `l.0`: a tree of stages in a domain tree) counts every lane of every stage, as",
        "  loopy's totals do.",
        "  - A loop whose bound is a size parameter switches lanes off too: lane `x` in the passes `x <= k < m`,",
        "    row `g < n` of a triangle on lanes `x <= g`, a triangle `j <= i < n` over a split parallel index",
        "    `i = 64*gid(0) + lid(0)` (its group index within the grid's groups).",
        "  - The mask of such lanes is built at each set of sizes, up to 65,536 points of the tied loops and",
        "    1,024 combinations of their values (that triangle's 640 at n = 256, but not its 2,304 at",
        "    n = 512); past that, every lane of the box counts.",
        "  - Lanes past the problem's edge run such a loop over its box as far as their tie allows (that",
        "    triangle on groups of 32 at n = 40: lane 39 makes 40 loads, lanes 40..63 the box's 40 each: 27.8",
        "    per thread).",
        "  - Lanes a bound at the problem's edge switches off (`lid(0) + 16*gid(0) < n`) still count, below one",
        "    work-group too: at n = 100 on groups of 256 each of the 256 work-items makes its load, where",
        "    loopy's box, and so `global_loads`, counts 100. Loops and the lanes of a fetch count alike.",
        "  - `flops_per_thread`, `ifs_per_thread` and `loop_iterations_per_thread` count every lane of the",
        "    loop's box: a loop `k <= lid(0)` over 256 work-items gives 256 iterations per thread where the",
        "    mean is 128.5 (its loads per thread: 128.5).",
        "- Sequential loops bounded by one another (`0 <= j <= k < m`) count the passes they make (m (m + 1) / 2,",
        "  not loopy's box of m x m) in the per-thread loads and stores and in the warp requests the per-warp",
        "  features average over. These passes are counted at each set of sizes where the box over the longest",
        "  loop is at most 65,536 (past that, or in a domain tree, the box counts), and combined with the lanes",
        "  a mask leaves on; such loops in a domain component with one of the access's local ids are the mask's",
        "  to follow. `flops_per_thread` and `loop_iterations_per_thread` count the box.",
        "- A vector access (an array axis tagged `vec` indexed by an iname tagged `vec`: loopy's float4) is one",
        "  load or store per work-item, classed by the distance between the lanes' vectors (float4s side by",
        "  side: `stride1`), and a `vec` iname is no loop; the per-launch totals count its elements, as",
        "  loopy's do (where loopy's statistics count a kernel, the fallback, it is counted per element).",
        "- Stride classes (`<stride>`) are taken along local axis 0, as loopy's `lid(0)` strides: with a",
        "  work-group of extent 1 on that axis (1 x 32) every access is `stride0`, though the warp walks axis 1;",
        "  the cache-line features follow the warp's lanes and see the difference. An index with `%` or `//`",
        "  of a local id is `nonaffine`, where loopy's statistics (the fallback for kernels the fast count",
        "  refuses) take a coefficient anyway (`(l + 1) % 32`: `stride_gt1`; `l // 2`: `stride1`).",
        "- Names with `<dtype>` (`f32`, `f64`, `i32`, ...), `<op>` or `<stride>` stand for families; only",
        "  members that occur appear in `extract_features`, and `feature_table` fills the others with 0.",
        "",
        "How sectors per access, registers and occupancy compare with an H200's hardware counters:",
        "[features_on_hardware.md](features_on_hardware.md).",
        "",
        "| name | unit | meaning | source |",
        "|---|---|---|---|",
    ]
    for feature in FEATURES:
        lines.append(f"| `{feature.name}` | {feature.unit} | {feature.meaning} | {feature.source} |")
    return "\n".join(lines) + "\n"


PAGE_HEADING = "# Static features"  # the first line of the page: a file that starts so is one to replace


def write_features_doc(path: str) -> None:
    """Write ``features_markdown()`` to ``path`` (``python -m gpuperf.features.table docs/features.md``)."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(features_markdown())


def _is_features_page(path: str) -> bool:
    """Whether the file at ``path`` is an earlier features page (its first line the page's heading)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readline().rstrip("\n") == PAGE_HEADING
    except (OSError, UnicodeDecodeError):
        return False


def _parser() -> argparse.ArgumentParser:
    """The command line of ``python -m gpuperf.features.table``."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m gpuperf.features.table",
        description="Print every static feature's unit and meaning (the page docs/features.md of gpuperf's source "
                    "repository), or write it to FILE.")
    parser.add_argument("file", nargs="?", metavar="FILE",
                        help="where to write the page: a new file, or an earlier features page to replace "
                             "(another file is left alone)")
    return parser


def main(argv: Sequence[str]) -> int:
    """``python -m gpuperf.features.table [FILE]``: print every feature's unit and meaning (the page
    docs/features.md of gpuperf's source repository), or write it to FILE, a new file or an earlier page."""
    try:
        path = _parser().parse_args(list(argv)).file
    except SystemExit as done:  # --help, or a usage error (said on stderr)
        return int(done.code or 0)
    if path is None:
        print(features_markdown(), end="")
        return 0
    if os.path.lexists(path) and not _is_features_page(path):
        print(f"error: {path}: exists and is not a features page (its first line is not {PAGE_HEADING!r}); "
              "it is left as it is: name a new file, or remove it first", file=sys.stderr)
        return 1
    try:
        write_features_doc(path)
    except OSError as error:
        print(f"error: {path}: {error.strerror or error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
