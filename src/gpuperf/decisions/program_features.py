"""Advice features of the "before" kernels of measured pairs, by the program they come from.

Each feature source takes the before rows of a dataset (one row per measured point) and returns
the static advice features (``advice_features.STATIC_FEATURES``) of each row's kernel:

- ``columns``: the table has them already (gpuperf's own measurements, exported with features);
- ``amaris_matvec``: the matrix kernels of Amaris et al. (MMGU, MMGC, MMSU, MMSC, MAU, MAC and
  their Tesla K40c trace names) rewritten in loopy as the papers describe them (n x n float
  matrices, 16 x 16 thread blocks, 16 x 16 shared tiles; "uncoalesced" puts the row index on the
  fast thread axis) and analysed by ``extract_features``;
- ``clblast_gemm``, ``kt_convolution``, ``kt_pnpoly``: formulas from the tuning parameters of
  CLBlast's GEMM and Kernel Tuner's convolution and point-in-polygon kernels (per-thread work and
  memory accesses as the kernels' sources define them; cache lines per warp access are left
  unknown where the formulas cannot tell them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from gpuperf._lazy import LazyModule
from gpuperf.decisions.advice_features import STATIC_FEATURES, kernel_features
from gpuperf.errors import GpuperfError
from gpuperf.kernels.kernel import LANG, Kernel

if TYPE_CHECKING:
    import loopy as lp
else:  # imported when a program is built: listing the optimizations does not need loopy
    lp = LazyModule("loopy")

TILE = 16
FeatureSource = Callable[[pd.DataFrame], pd.DataFrame]


def _frame(rows: pd.DataFrame, values: dict[str, object]) -> pd.DataFrame:
    out = pd.DataFrame(index=rows.index, columns=list(STATIC_FEATURES), dtype=float)
    for name, value in values.items():
        out[name] = value
    return out


def from_columns(rows: pd.DataFrame) -> pd.DataFrame:
    """The static features a table already holds (gpuperf measurements exported with features)."""
    missing = [c for c in STATIC_FEATURES if c not in rows.columns]
    if len(missing) == len(STATIC_FEATURES):
        raise GpuperfError("feature source 'columns': the table has no static feature columns")
    values = {c: pd.to_numeric(rows[c], errors="coerce") for c in STATIC_FEATURES if c in rows}
    for name, column in values.items():
        endless = np.isinf(column.to_numpy(dtype=float))
        if endless.any():  # an empty cell is unknown; an endless value is no feature the models could take
            kernel = f" (kernel {rows['kernel'].iloc[endless.argmax()]})" if "kernel" in rows else ""
            raise GpuperfError(f"feature source 'columns': {name} holds {column.iloc[endless.argmax()]}{kernel}; "
                               "a feature is a finite number, or empty where it is unknown")
    return _frame(rows, values)


# -- Amaris et al.'s matrix kernels in loopy ----------------------------------------------------------
def _tiled(name: str, domain: str, instruction: str, coalesced: bool) -> lp.TranslationUnit:
    """``instruction`` over float32 n x n matrices a, b, c in 16 x 16 work-groups: the column index on the
    fast axis when coalesced, the row index if not."""
    program = lp.make_kernel(
        domain, instruction, assumptions=f"n>={TILE} and n mod {TILE} = 0", name=name, lang_version=LANG
    )
    program = lp.add_dtypes(program, {"a,b,c": np.float32})
    fast, slow = ("j", "i") if coalesced else ("i", "j")
    program = lp.split_iname(program, slow, TILE, outer_tag="g.1", inner_tag="l.1")
    return lp.split_iname(program, fast, TILE, outer_tag="g.0", inner_tag="l.0")


def _matmul(name: str, shared: bool, coalesced: bool) -> Kernel:
    program = _tiled(name, "{[i, j, l]: 0<=i,j,l<n}", "c[i, j] = sum(l, a[i, l] * b[l, j])", coalesced)
    if shared:
        program = lp.split_iname(program, "l", TILE)
        outer = "i_outer, j_outer, l_outer"
        program = lp.add_prefetch(program, "a", ["i_inner", "l_inner"], fetch_outer_inames=outer,
                                  dim_arg_names=["a_row", "a_col"], default_tag=None)
        program = lp.add_prefetch(program, "b", ["l_inner", "j_inner"], fetch_outer_inames=outer,
                                  dim_arg_names=["b_row", "b_col"], default_tag=None)
        fast, slow = ("col", "row") if coalesced else ("row", "col")
        program = lp.tag_inames(program, {f"a_{fast}": "l.0", f"a_{slow}": "l.1",
                                          f"b_{fast}": "l.0", f"b_{slow}": "l.1"})
    return Kernel(name=name, program=program, params=("n",), default_sizes={"n": 256})


def _matrix_add(name: str, coalesced: bool) -> Kernel:
    program = _tiled(name, "{[i, j]: 0<=i,j<n}", "c[i, j] = a[i, j] + b[i, j]", coalesced)
    return Kernel(name=name, program=program, params=("n",), default_sizes={"n": 256})


AMARIS_PROGRAMS: dict[str, Callable[[], Kernel]] = {
    "MMGU": lambda: _matmul("MMGU", shared=False, coalesced=False),
    "MMGC": lambda: _matmul("MMGC", shared=False, coalesced=True),
    "MMSU": lambda: _matmul("MMSU", shared=True, coalesced=False),
    "MMSC": lambda: _matmul("MMSC", shared=True, coalesced=True),
    "MAU": lambda: _matrix_add("MAU", coalesced=False),
    "MAC": lambda: _matrix_add("MAC", coalesced=True),
}
# The Tesla K40c traces name the same programs after their CUDA functions.
AMARIS_ALIASES = {
    "matMul_gpu_uncoalesced": "MMGU",
    "matMul_gpu_sharedmem_uncoalesced": "MMSU",
    "matMul_gpu_sharedmem": "MMSC",
    "matrix_sum_normal": "MAU",
    "matrix_sum_coalesced": "MAC",
}


@lru_cache(maxsize=None)
def amaris_kernel(name: str) -> Kernel:
    """The loopy version of an Amaris et al. matrix kernel, by its dataset name."""
    program = AMARIS_ALIASES.get(name, name)
    if program not in AMARIS_PROGRAMS:
        from gpuperf.errors import unknown_name_error

        raise unknown_name_error("Amaris matrix kernel", name, [*AMARIS_PROGRAMS, *AMARIS_ALIASES])
    return AMARIS_PROGRAMS[program]()


@lru_cache(maxsize=None)
def _amaris_point(name: str, n: int) -> tuple[float, ...]:
    features = kernel_features(amaris_kernel(name), {"n": n})
    return tuple(features[f] for f in STATIC_FEATURES)


def amaris_matvec(rows: pd.DataFrame) -> pd.DataFrame:
    """The features of Amaris et al.'s matrix kernels at each row's matrix size ``n``, from their loopy versions."""
    if "n" not in rows.columns:
        raise GpuperfError("feature source 'amaris_matvec': the table has no column 'n' (the matrix size)")
    values = [_amaris_point(str(k), int(n)) for k, n in zip(rows["kernel"], rows["n"])]
    return pd.DataFrame(values, index=rows.index, columns=list(STATIC_FEATURES), dtype=float)


# -- tuning spaces by formula --------------------------------------------------------------------------
def _column(rows: pd.DataFrame, name: str, default: float | None = None) -> pd.Series:
    if name in rows.columns:
        values = pd.to_numeric(rows[name], errors="coerce")
        return values.fillna(default) if default is not None else values
    if default is None:
        raise GpuperfError(f"feature source: the table has no column '{name}'")
    return pd.Series(default, index=rows.index, dtype=float)


def clblast_gemm(rows: pd.DataFrame, size: int = 4096) -> pd.DataFrame:
    """CLBlast Xgemm, M = N = K = ``size``: MWG x NWG tiles of C per work-group of MDIMC x NDIMC
    threads, KWG-deep k steps; SA/SB stage the A/B tiles in local memory (cooperative loads)."""
    c = {name: _column(rows, name) for name in ("MWG", "NWG", "KWG", "MDIMC", "NDIMC", "SA", "SB")}
    mwi, nwi = c["MWG"] / c["MDIMC"], c["NWG"] / c["NDIMC"]
    group = c["MDIMC"] * c["NDIMC"]
    a_global = np.where(c["SA"] > 0, size * mwi / c["NDIMC"], size * mwi)
    b_global = np.where(c["SB"] > 0, size * nwi / c["MDIMC"], size * nwi)
    staged = (c["SA"] > 0) | (c["SB"] > 0)
    return _frame(rows, {
        "threads": size * size / (mwi * nwi),
        "work_groups": size * size / (c["MWG"] * c["NWG"]),
        "work_group_size": group,
        "global_loads_per_thread": a_global + b_global,
        "global_stores_per_thread": mwi * nwi,
        "local_loads_per_thread": size * (c["SA"] * mwi + c["SB"] * nwi),
        "local_stores_per_thread": size * (c["SA"] * mwi / c["NDIMC"] + c["SB"] * nwi / c["MDIMC"]),
        "local_memory_bytes": 4 * c["KWG"] * (c["SA"] * c["MWG"] + c["SB"] * c["NWG"]),
        "flops_per_thread": 2 * size * mwi * nwi,
        "cache_lines_per_warp_access": math.nan,
        "sectors_per_warp_access": math.nan,
        "barriers_per_thread": np.where(staged, 2 * size / c["KWG"], 0.0),
        "loop_iterations_per_thread": size * mwi * nwi,
    })


def kt_convolution(rows: pd.DataFrame, size: int = 4096, filter_size: int = 15) -> pd.DataFrame:
    """Kernel Tuner's 2D convolution of a ``size``^2 output with a ``filter_size``^2 filter: each
    thread computes tile_size_x x tile_size_y outputs; with shared memory (``use_shmem``, on when
    the column is absent) a block stages its input tile plus halo, else reads the image directly."""
    bx, by = _column(rows, "block_size_x"), _column(rows, "block_size_y")
    tx, ty = _column(rows, "tile_size_x"), _column(rows, "tile_size_y")
    shared = _column(rows, "use_shmem", 1.0) > 0
    halo = filter_size - 1
    taps = filter_size * filter_size
    outputs = tx * ty
    tile_elements = (bx * tx + halo) * (by * ty + halo)
    lanes_in_row = np.minimum(bx, 32)
    return _frame(rows, {
        "threads": size * size / outputs,
        "work_groups": size * size / (bx * tx * by * ty),
        "work_group_size": bx * by,
        "global_loads_per_thread": np.where(shared, tile_elements / (bx * by), taps * outputs),
        "global_stores_per_thread": outputs,
        "local_loads_per_thread": np.where(shared, taps * outputs, 0.0),
        "local_stores_per_thread": np.where(shared, tile_elements / (bx * by), 0.0),
        "local_memory_bytes": np.where(shared, 4 * tile_elements, 0.0),
        "flops_per_thread": 2 * taps * outputs,
        "cache_lines_per_warp_access": np.ceil(lanes_in_row * 4 / 128) * 32 / lanes_in_row,
        "sectors_per_warp_access": np.ceil(lanes_in_row * 4 / 32) * 32 / lanes_in_row,
        "barriers_per_thread": np.where(shared, 1.0, 0.0),
        "loop_iterations_per_thread": taps * outputs,
    })


def kt_pnpoly(rows: pd.DataFrame, points: int = 20_000_000, vertices: int = 600) -> pd.DataFrame:
    """Kernel Tuner's point-in-polygon: each thread tests ``tile_size`` points against every vertex
    (the polygon in constant memory), about 8 floating-point operations per point and vertex."""
    block, tile = _column(rows, "block_size_x"), _column(rows, "tile_size", 1.0)
    return _frame(rows, {
        "threads": points / tile,
        "work_groups": points / (tile * block),
        "work_group_size": block,
        "global_loads_per_thread": 2 * tile,
        "global_stores_per_thread": tile,
        "local_loads_per_thread": 0.0,
        "local_stores_per_thread": 0.0,
        "local_memory_bytes": 0.0,
        "flops_per_thread": 8 * vertices * tile,
        "cache_lines_per_warp_access": math.nan,
        "sectors_per_warp_access": math.nan,
        "barriers_per_thread": 0.0,
        "loop_iterations_per_thread": vertices * tile,
    })


FEATURE_SOURCES: dict[str, FeatureSource] = {
    "columns": from_columns,
    "amaris_matvec": amaris_matvec,
    "clblast_gemm": clblast_gemm,
    "kt_convolution": kt_convolution,
    "kt_pnpoly": kt_pnpoly,
}
