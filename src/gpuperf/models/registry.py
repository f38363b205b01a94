"""The models the command line fits, by short name, and the options that shape them.

- ``knn``: the LIFT paper's PCA + k-NN (:class:`PcaKnnRegressor`: standardise, PCA keeping 95 % of
  the variance, 5 nearest neighbours);
- ``lr``: standardised linear regression; ``svr``: standardised epsilon-SVR, RBF kernel by default
  (``svr_kernel="linear"`` for a linear one);
- ``rf``: random forest, 50 trees, 3 features tried per split; ``m5p``: M5P model tree;
  ``gbt``: histogram gradient-boosted trees;
- ``bsp``: Amaris et al.'s analytical :class:`BspModel`, its inputs read by role (see
  ``BSP_INPUTS``); ``linear``: the :class:`LinearCountModel` on property (count) columns;
  ``roofline``: the :class:`RooflineModel` bound from the GPU descriptor's peaks, its efficiency
  fitted (see ``ROOFLINE_INPUTS``).

The learned models (the first six) take any numeric feature columns, optionally on a log2 target
and behind a :class:`SpearmanClusterSelector`; ``bsp``, ``linear`` and ``roofline`` read named
columns and fit on seconds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import pandas as pd

from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.models.bsp import BspModel
from gpuperf.models.learned import make_model
from gpuperf.models.roofline import RooflineModel
from gpuperf.models.selection import SpearmanClusterSelector

LEARNED = {"knn": "pca_knn", "lr": "linear", "svr": "svr_rbf", "rf": "random_forest", "m5p": "m5p", "gbt": "gbt"}
# The roofline calibrated by one efficiency factor, and the bare bound max(flops / peak, bytes / bandwidth).
ROOFLINE_MODELS = ("roofline", "roofline_bound")
MODEL_CHOICES = (*LEARNED, "bsp", "linear", *ROOFLINE_MODELS)
SVR_KERNELS = {"rbf": "svr_rbf", "linear": "svr_linear"}
# Models that read GPU descriptor columns (clock and cores), joined to the table for them.
NEEDS_GPU_FEATURES = ("bsp", *ROOFLINE_MODELS)

# BspModel's column roles (its constructor's column arguments).
BSP_ROLES = (
    "threads", "instructions", "global_loads", "global_stores", "shared_loads", "shared_stores",
    "l1_hit_rate", "l2_hit_rate", "clock_hz", "cores",
)
# Default BSP inputs for two kinds of table. ``counters``: a profiler table with nvprof counters
# (the Rodinia table), turned into per-thread numbers first (``evaluation.tables.add_bsp_inputs``:
# instructions, global and shared loads and stores per thread, the L2 hit fraction).
# ``static``: gpuperf's static features (``features.table``), per work-item, with
# ``instructions_per_thread`` = (flops + int_ops) / threads (see :func:`add_static_bsp_inputs`).
# Both take the clock and core count from the GPU descriptor.
BSP_INPUTS: dict[str, dict[str, str]] = {
    "counters": {
        "threads": "threads", "instructions": "instructions", "global_loads": "global_loads",
        "global_stores": "global_stores", "shared_loads": "shared_loads", "shared_stores": "shared_stores",
        "l2_hit_rate": "l2_hit_fraction", "clock_hz": "gpu_clock_hz", "cores": "gpu_cores",
    },
    "static": {
        "threads": "threads", "instructions": "instructions_per_thread",
        "global_loads": "global_loads_per_thread", "global_stores": "global_stores_per_thread",
        "shared_loads": "local_loads_per_thread", "shared_stores": "local_stores_per_thread",
        "clock_hz": "gpu_clock_hz", "cores": "gpu_cores",
    },
}
# The columns each kind of table is recognised by.
BSP_SIGNATURES = {
    "counters": ("warps_launched", "inst_executed", "gld_request", "gst_request", "shared_load", "shared_store",
                 "l2_read_transactions", "device_memory_read_transactions", "grid.x", "block.x"),
    "static": ("threads", "flops", "int_ops", "global_loads_per_thread", "global_stores_per_thread",
               "local_loads_per_thread", "local_stores_per_thread"),
}

# The roofline's work columns for the same two kinds of table (a table of neither kind names its
# own: ``flops`` and ``dram_bytes``). ``counters``: added by ``evaluation.tables.add_roofline_inputs``
# (flops by precision, DRAM read + L2 write bytes); ``static``: by ``add_static_roofline_inputs``
# (flops by precision from the ops_* counts) and the global bytes the work-items load and store (no
# cache counted).
ROOFLINE_INPUTS: dict[str, dict[str, str]] = {
    "counters": {"flops": "flops_f32", "flops_f64": "flops_f64", "memory_bytes": "dram_bytes"},
    "static": {"flops": "flops_f32", "flops_f64": "flops_f64", "memory_bytes": "global_bytes"},
}
ROOFLINE_SIGNATURES = {
    "counters": ("floating_point_operations.single_precision.", "floating_point_operations.double_precision.",
                 "device_memory_read_transactions", "l2_write_transactions"),
    "static": ("flops", "global_bytes"),
}


@dataclass(frozen=True)
class ModelOptions:
    """A model name and the options that change what ``build_estimator`` returns."""

    name: str
    log_target: bool = False
    svr_kernel: str = "rbf"
    select: int | None = None  # keep k features with SpearmanClusterSelector
    bsp_columns: Mapping[str, str] = field(default_factory=dict)  # role -> column
    property_set: str | None = None  # linear: gpu or cpu (default gpu)

    def __post_init__(self) -> None:
        check_model_name(self.name)
        if self.svr_kernel not in SVR_KERNELS:
            raise unknown_name_error("SVR kernel", self.svr_kernel, SVR_KERNELS)
        learned = self.name in LEARNED
        misplaced = [
            flag for flag, given in (
                ("--log-target", self.log_target and not learned),
                ("--select", self.select is not None and not learned),
                ("--svr-kernel", self.svr_kernel != "rbf" and self.name != "svr"),
                ("--bsp-columns", bool(self.bsp_columns) and self.name != "bsp"),
                ("--property-set", self.property_set is not None and self.name != "linear"),
            ) if given
        ]
        if misplaced:
            raise GpuperfError(f"model {self.name}: {', '.join(misplaced)} does not apply to it")
        unknown = [role for role in self.bsp_columns if role not in BSP_ROLES]
        if unknown:
            raise unknown_name_error("BSP column role", unknown[0], BSP_ROLES)

    def as_dict(self) -> dict:
        return {**asdict(self), "bsp_columns": dict(self.bsp_columns)}


def check_model_name(name: str) -> str:
    """``name`` if it is one of ``MODEL_CHOICES``; else an error suggesting the nearest."""
    if name not in MODEL_CHOICES:
        raise unknown_name_error("model", name, MODEL_CHOICES)
    return name


def parse_select(text: str | None) -> int | None:
    """``"spearman:10"`` -> 10 (features kept by the Spearman clustering selector); None -> None."""
    if text is None:
        return None
    method, _, count = text.partition(":")
    if method != "spearman" or not count.strip().isdigit() or int(count) < 1:
        raise GpuperfError(f"--select '{text}' must look like spearman:K with K a positive whole number")
    return int(count)


def parse_bsp_columns(text: str | None) -> dict[str, str]:
    """``"threads=n_threads,cores=sm_cores"`` -> ``{"threads": "n_threads", "cores": "sm_cores"}``."""
    columns: dict[str, str] = {}
    for pair in filter(None, (part.strip() for part in (text or "").split(","))):
        role, sep, column = pair.partition("=")
        if not sep or not role.strip() or not column.strip():
            raise GpuperfError(f"--bsp-columns: '{pair}' must look like role=column")
        columns[role.strip()] = column.strip()
    return columns


def bsp_columns(options: ModelOptions, table_kind: str | None) -> dict[str, str | None]:
    """Role -> column for ``bsp``: BspModel's defaults, then the table kind's, then the options'."""
    defaults = {role: BspModel().get_params()[role] for role in BSP_ROLES}
    return {**defaults, **BSP_INPUTS.get(table_kind or "", {}), **options.bsp_columns}


def bsp_table_kind(columns: Sequence[str]) -> str | None:
    """``counters`` or ``static`` if ``columns`` hold that kind's signature, else None."""
    present = set(columns)
    return next((kind for kind, needed in BSP_SIGNATURES.items() if set(needed) <= present), None)


def roofline_table_kind(columns: Sequence[str]) -> str | None:
    """``counters`` or ``static`` if ``columns`` hold that kind's roofline work columns, else None (the
    table's own ``flops`` and ``dram_bytes``, which a table holding them takes before static counts:
    bytes measured at DRAM, not the bytes the work-items ask for)."""
    present = set(columns)
    kind = next((kind for kind, needed in ROOFLINE_SIGNATURES.items() if set(needed) <= present), None)
    return None if kind == "static" and {"flops", "dram_bytes"} <= present else kind


def add_static_bsp_inputs(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``instructions_per_thread`` = (flops + int_ops) / threads from gpuperf's static
    features, unless the table has that column already."""
    if "instructions_per_thread" in frame.columns:
        return frame
    out = frame.copy()
    out["instructions_per_thread"] = (out["flops"] + out["int_ops"]) / out["threads"]
    return out


def roofline_estimator(table_kind: str | None, calibrate: bool = True) -> RooflineModel:
    """The roofline reading ``table_kind``'s work columns (see ``ROOFLINE_INPUTS``), calibrated by one
    efficiency factor or the bare bound."""
    return RooflineModel(calibrate=calibrate, **ROOFLINE_INPUTS.get(table_kind or "", {}))


def roofline_columns(table_kind: str | None) -> list[str]:
    """Every column the roofline of ``table_kind`` reads, its GPU descriptor columns included."""
    return roofline_estimator(table_kind).columns()


def build_estimator(options: ModelOptions, features: Sequence[str], table_kind: str | None = None):
    """An unfitted estimator for ``options`` reading the DataFrame columns ``features``.

    ``bsp`` reads the columns of :func:`bsp_columns` for ``table_kind`` and ``roofline`` those of
    :func:`roofline_columns`; ``linear`` takes the ``features`` as its property columns.
    """
    if options.name in LEARNED:
        name = SVR_KERNELS[options.svr_kernel] if options.name == "svr" else LEARNED[options.name]
        selector = SpearmanClusterSelector(k=options.select) if options.select is not None else None
        return make_model(name, log_target=options.log_target, preprocess=selector)
    if options.name == "bsp":
        return BspModel(**bsp_columns(options, table_kind))
    if options.name in ROOFLINE_MODELS:
        return roofline_estimator(table_kind, calibrate=options.name == "roofline")
    from gpuperf.models.linear import LinearCountModel

    return LinearCountModel(properties=list(features), property_set=options.property_set or "gpu")
