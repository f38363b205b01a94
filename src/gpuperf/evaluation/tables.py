"""Model-ready tables: GPU descriptors joined to a dataset, and per-launch columns derived from
nvprof counters (the BSP model's inputs, resource-time bounds).

Estimators take plain feature matrices; this is where a dataset's ``gpu`` names become numbers.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from gpuperf.datasets.join import GPU_COLUMN, with_gpu_features
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.hardware.specs import get_gpu

# nvprof metrics computed from the elapsed time or cycles (rates, IPC, utilisation levels): given
# the matching count they reveal the time itself, so they are never features.
TIMING_DERIVED = (
    "elapsed_cycles_sm",
    "active_cycles",
    "active_warps",
    "executed_ipc",
    "issued_ipc",
    "issue_slot_utilization",
    "eligible_warps_per_active_cycle",
)
# Parts of such names in any profiler's spelling (nvprof's, ncu's raw metrics, ncu's details page
# names such as "Memory Throughput", "Elapsed Cycles", "Executed Ipc Active", "Mem Busy", "Max
# Bandwidth"; matched lower-case, spaces as underscores): shares of a peak over the elapsed time
# (nvprof's flop_sp_efficiency, ncu's *.pct_of_peak_sustained_elapsed) and of the elapsed time
# (sm_efficiency: the time some warp was active) too; and IPC by other names: a count per cycle (ncu's
# sm__inst_executed.avg.per_cycle_active, nvprof's eligible_warps_per_cycle), cycles per instruction (ncu's
# "Warp Cycles Per Issued Instruction") and warps summed over the active cycles (nvprof's active_warps_pm;
# not the occupancy calculator's active_warps_per_sm, which is of the launch).
TIMING_DERIVED_PARTS = ("throughput", "utilization", "flop_efficiency", "flop_sp_efficiency", "flop_dp_efficiency",
                        "flop_hp_efficiency", "sm_efficiency", "elapsed_cycles", "active_cycles", "cycles_elapsed",
                        "cycles_active", "ipc", "pct_of_peak_sustained_elapsed", "busy", "max_bandwidth",
                        "per_cycle", "warp_cycles_per", "active_warps_pm")
NOT_FEATURES = ("time_s", "time_s_std", "time_s_min", "time_s_iqr", "n_invocations", "repeats")

RESOURCE_TIMES = ("t_issue", "t_dram", "t_l2", "t_global", "t_shared", "t_fp32", "t_fp64", "t_cycle")

# Columns of a launch's configuration in the Rodinia nvprof table.
LAUNCH_COLUMNS = (
    "input.size.1", "input.size.2", "grid.x", "grid.y", "block.x", "block.y", "registers.per.thread", "static.smem",
)


def join_gpu_descriptors(frame: pd.DataFrame, where: str = "table") -> pd.DataFrame:
    """``frame`` with every GPU's descriptor features (:func:`gpuperf.datasets.join.with_gpu_features`)
    and ``gpu_architecture``. Raises GpuperfError naming ``where`` and the row of an unknown GPU."""
    joined = with_gpu_features(frame, where)
    architectures = {name: get_gpu(str(name)).architecture for name in joined[GPU_COLUMN].unique()}
    joined["gpu_architecture"] = joined[GPU_COLUMN].map(architectures)
    return joined


def with_base_clocks(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (GPU descriptors joined) with ``gpu_clock_mhz`` / ``gpu_clock_hz`` set to each GPU's
    base clock (its boost clock where no base clock is known), the peak flop rates scaled from
    the boost clock to it, and ``gpu_flops_per_byte`` (f32 peak / bandwidth) with them.

    For GPUs profiled as the Amaris et al. tables were, the base clock is the one they ran at: the
    clock their counters imply (:func:`counted_clocks`) is within 7 % of the base clock on all 7
    GPUs, while the boost clock overstates 6 of them by 4 to 17 % (the Tesla K40 runs at its 745 MHz
    default application clock unless an administrator raises it to the 875 MHz boost)."""
    _require(frame, ["gpu_base_clock_mhz", "gpu_boost_clock_mhz", "gpu_peak_f32_gflops", "gpu_peak_f64_gflops"],
             "with_base_clocks")
    out = frame.copy()
    boost = out["gpu_boost_clock_mhz"].astype(float)
    unlisted = out.loc[out["gpu_base_clock_mhz"].isna() & boost.notna(), GPU_COLUMN].astype(str).unique() \
        if GPU_COLUMN in out.columns else []
    if len(unlisted):
        warnings.warn(GpuperfNote(f"no base clock is listed for {', '.join(sorted(unlisted))}: "
                                  f"{'its' if len(unlisted) == 1 else 'their'} boost clock stands for it"),
                      stacklevel=2)
    clock = out["gpu_base_clock_mhz"].astype(float).fillna(boost)
    out["gpu_clock_mhz"] = clock
    out["gpu_clock_hz"] = clock * 1e6
    for peak in ("gpu_peak_f32_gflops", "gpu_peak_f64_gflops"):
        out[peak] = out[peak] * clock / boost
    if "gpu_flops_per_byte" in out.columns:  # the machine balance follows the f32 peak
        out["gpu_flops_per_byte"] = out["gpu_peak_f32_gflops"] / out["gpu_memory_bandwidth_gbs"]
    return out


def counted_clocks(frame: pd.DataFrame, min_time_s: float = 1e-4) -> pd.DataFrame:
    """Per GPU, the clock (MHz) its profiler counters imply, elapsed SM cycles / (time x SMs), next to
    the clock its descriptors give: a check that the descriptors describe the GPU as it ran. The
    median over kernels of each kernel's median over launches of at least ``min_time_s`` (short
    launches carry fixed overheads). Timing-derived, so a check only, never a feature."""
    _require(frame, [GPU_COLUMN, "kernel", "time_s", "elapsed_cycles_sm", "gpu_sms", "gpu_clock_mhz",
                     "gpu_base_clock_mhz", "gpu_boost_clock_mhz"], "counted_clocks")
    rows = frame[frame["time_s"] >= min_time_s]
    counted = rows["elapsed_cycles_sm"] / (rows["time_s"] * rows["gpu_sms"]) / 1e6
    per_kernel = counted.groupby([rows[GPU_COLUMN], rows["kernel"]]).median()
    described = frame.groupby(GPU_COLUMN)[["gpu_clock_mhz", "gpu_base_clock_mhz", "gpu_boost_clock_mhz"]].first()
    out = described.assign(counted_mhz=per_kernel.groupby(level=0).median(),
                           kernels=per_kernel.groupby(level=0).size())
    out["counted_over_clock"] = out["counted_mhz"] / out["gpu_clock_mhz"]
    return out[["counted_mhz", "kernels", "gpu_clock_mhz", "gpu_base_clock_mhz", "gpu_boost_clock_mhz",
                "counted_over_clock"]]


DP_FLOPS, DP_EFFICIENCY = "floating_point_operations.double_precision.", "flop_efficiency.peak_double."


def profiled_f64_peaks(frame: pd.DataFrame) -> pd.DataFrame:
    """Per GPU, the double-precision peak (GFLOP/s) nvprof rated its launches against, next to the
    descriptors' (at the clocks in ``frame``): f64 flops / time / (flop_efficiency(peak_double) /
    100), the median over launches with both non-zero. The time cancels out, so this checks the
    descriptors (and sources a peak no specification gives: the Quadro K5200's), and is never a
    feature. On the bundled profiles it matches five other listed peaks within 6 %, not the GTX Titan's
    1.3 TFLOP/s (NVIDIA's figure at a lowered clock). The single-precision efficiency gives no
    such check: its implied peaks sit 4 to 40 % above the 2 flops per core per cycle."""
    _require(frame, [GPU_COLUMN, "time_s", DP_FLOPS, DP_EFFICIENCY, "gpu_peak_f64_gflops"], "profiled_f64_peaks")
    rows = frame[(frame[DP_FLOPS] > 0) & (frame[DP_EFFICIENCY] > 0)]
    implied = rows[DP_FLOPS] / rows["time_s"] / (rows[DP_EFFICIENCY] / 100) / 1e9
    out = pd.DataFrame({
        "profiled_gflops": implied.groupby(rows[GPU_COLUMN]).median(),
        "launches": implied.groupby(rows[GPU_COLUMN]).size(),
        "listed_gflops": frame.groupby(GPU_COLUMN)["gpu_peak_f64_gflops"].first(),
    })
    out["profiled_over_listed"] = out["profiled_gflops"] / out["listed_gflops"]
    return out


def is_timing_derived(column: str) -> bool:
    name = str(column).lower().replace(" ", "_")
    return name in TIMING_DERIVED or any(part in name for part in TIMING_DERIVED_PARTS)


def counter_columns(frame: pd.DataFrame, first: str = "elapsed_cycles_sm") -> list[str]:
    """The profiler counters usable as features: numeric columns from ``first`` on, minus the
    timing-derived ones, GPU descriptors, columns derived here, times and repeat counts."""
    if first not in frame.columns:
        raise GpuperfError(f"counter_columns: missing column {first}")
    columns = list(frame.columns[list(frame.columns).index(first):])
    return [
        c for c in columns
        if pd.api.types.is_numeric_dtype(frame[c])
        and not is_timing_derived(c) and not c.startswith("gpu_")
        and c not in NOT_FEATURES and c not in BSP_INPUTS and c not in RESOURCE_TIMES
    ]


def _require(frame: pd.DataFrame, columns, where: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)}")


BSP_INPUTS = (
    "threads", "instructions", "global_loads", "global_stores", "shared_loads", "shared_stores", "l2_hit_fraction",
)


def add_bsp_inputs(frame: pd.DataFrame) -> pd.DataFrame:
    """The BSP model's per-thread inputs from nvprof counters (GPU descriptors joined first).

    ``threads`` = grid x block sizes; per thread (counters are per warp, and a warp's count is
    each of its threads' count): ``instructions`` = inst_executed / warps_launched, ``global_loads``
    = gld_request / warps_launched, ``global_stores`` = gst_request / warps_launched,
    ``shared_loads`` / ``shared_stores`` = shared_load / shared_store over warps_launched;
    ``l2_hit_fraction`` = 1 - device_memory_read_transactions / l2_read_transactions (clipped to
    [0, 1]); ``gpu_clock_hz`` from ``gpu_clock_mhz``. The table has no L1 hit counter
    (Kepler does not cache global loads in L1 by default), so the L1 term is left out.
    """
    _require(
        frame,
        ["grid.x", "grid.y", "block.x", "block.y", "warps_launched", "inst_executed", "gld_request",
         "gst_request", "shared_load", "shared_store", "l2_read_transactions",
         "device_memory_read_transactions", "gpu_clock_mhz"],
        "add_bsp_inputs",
    )
    out = frame.copy()
    warps = out["warps_launched"].astype(float)
    out["threads"] = out["grid.x"] * out["grid.y"] * out["block.x"] * out["block.y"]
    out["instructions"] = out["inst_executed"] / warps
    out["global_loads"] = out["gld_request"] / warps
    out["global_stores"] = out["gst_request"] / warps
    out["shared_loads"] = out["shared_load"] / warps
    out["shared_stores"] = out["shared_store"] / warps
    l2_reads = out["l2_read_transactions"].astype(float)
    hit = 1.0 - out["device_memory_read_transactions"] / l2_reads.where(l2_reads > 0)
    out["l2_hit_fraction"] = hit.clip(0.0, 1.0).fillna(0.0)
    out["gpu_clock_hz"] = out["gpu_clock_mhz"] * 1e6
    return out


def add_resource_times(frame: pd.DataFrame) -> pd.DataFrame:
    """Per-launch lower bounds (seconds) for each GPU resource, from counters and descriptors.

    ``t_issue`` = warp instructions / (SMs x 4 schedulers x clock); ``t_dram`` = (DRAM read
    + L2 write transactions) x 32 B / memory bandwidth; ``t_l2`` = L2 transactions x 32 B /
    (SMs x 64 B per cycle x clock); ``t_global`` / ``t_shared`` = global / shared memory
    transactions / (SMs x clock); ``t_fp32`` / ``t_fp64`` = flops / peak flop rate (NaN where the
    GPU's peak is unknown); ``t_cycle`` = one clock period. Rough by design: models learn how far
    each launch sits from them, which transfers across GPUs better than raw counters do.
    """
    _require(
        frame,
        ["inst_executed", "device_memory_read_transactions", "l2_read_transactions", "l2_write_transactions",
         "global_load_transactions", "global_store_transactions", "shared_load_transactions",
         "shared_store_transactions", "floating_point_operations.single_precision.",
         "floating_point_operations.double_precision.", "gpu_sms", "gpu_clock_mhz",
         "gpu_memory_bandwidth_gbs", "gpu_peak_f32_gflops", "gpu_peak_f64_gflops"],
        "add_resource_times",
    )
    out = frame.copy()
    clock = out["gpu_clock_mhz"] * 1e6
    sm_cycles = out["gpu_sms"] * clock
    out["t_issue"] = out["inst_executed"] / (4 * sm_cycles)
    dram = out["device_memory_read_transactions"] + out["l2_write_transactions"]
    out["t_dram"] = dram * 32 / (out["gpu_memory_bandwidth_gbs"] * 1e9)
    out["t_l2"] = (out["l2_read_transactions"] + out["l2_write_transactions"]) * 32 / (64 * sm_cycles)
    out["t_global"] = (out["global_load_transactions"] + out["global_store_transactions"]) / sm_cycles
    out["t_shared"] = (out["shared_load_transactions"] + out["shared_store_transactions"]) / sm_cycles
    out["t_fp32"] = out["floating_point_operations.single_precision."] / (out["gpu_peak_f32_gflops"] * 1e9)
    out["t_fp64"] = out["floating_point_operations.double_precision."] / (out["gpu_peak_f64_gflops"] * 1e9)
    out["t_cycle"] = 1.0 / clock
    return out


def with_memory_data_rates(frame: pd.DataFrame, specs: pd.DataFrame | None = None) -> pd.DataFrame:
    """``frame`` (GPU descriptors joined) with ``gpu_memory_data_rate_gbps``: each GPU's memory data rate
    per pin (Gb/s, proportional to its memory clock), its bandwidth x 8 over its memory bus width in
    ``specs`` (by default the bundled Amaris et al. hardware table, ``amaris_gpu_specs``); NaN for a
    GPU the table lacks."""
    _require(frame, [GPU_COLUMN, "gpu_memory_bandwidth_gbs"], "with_memory_data_rates")
    if specs is None:
        from gpuperf.datasets import load_dataset  # the datasets package imports this module's neighbours

        specs = load_dataset("amaris_gpu_specs")
    bus_bits = specs.drop_duplicates(GPU_COLUMN).set_index(GPU_COLUMN)["bus_bits"].astype(float)
    out = frame.copy()
    widths = out[GPU_COLUMN].astype(str).map(bus_bits).astype(float)
    out["gpu_memory_data_rate_gbps"] = out["gpu_memory_bandwidth_gbs"].astype(float) * 8 / widths
    return out


def add_roofline_inputs(frame: pd.DataFrame) -> pd.DataFrame:
    """The roofline's work per launch from nvprof counters: ``flops_f32`` and ``flops_f64``
    (floating-point operations by precision) and ``dram_bytes`` = (DRAM read + L2 write
    transactions) x 32 B, the bytes ``t_dram`` of :func:`add_resource_times` counts."""
    _require(frame, ["floating_point_operations.single_precision.", "floating_point_operations.double_precision.",
                     "device_memory_read_transactions", "l2_write_transactions"], "add_roofline_inputs")
    out = frame.copy()
    out["flops_f32"] = out["floating_point_operations.single_precision."].astype(float)
    out["flops_f64"] = out["floating_point_operations.double_precision."].astype(float)
    out["dram_bytes"] = (out["device_memory_read_transactions"] + out["l2_write_transactions"]) * 32.0
    return out


def add_static_roofline_inputs(frame: pd.DataFrame) -> pd.DataFrame:
    """The roofline's flops by precision from gpuperf's static features: ``flops_f64`` (the
    ``ops_f64_*`` columns summed) and ``flops_f32`` (every other floating-point operation)."""
    _require(frame, ["flops"], "add_static_roofline_inputs")
    out = frame.copy()
    f64 = [c for c in out.columns if str(c).startswith("ops_f64_")]
    out["flops_f64"] = out[f64].fillna(0.0).sum(axis=1).astype(float) if f64 else 0.0
    out["flops_f32"] = out["flops"].astype(float) - out["flops_f64"]
    return out


def known_columns(frame: pd.DataFrame, columns) -> list[str]:
    """The ``columns`` present in ``frame`` with no missing value (NaN-free features)."""
    return [c for c in columns if c in frame.columns and not frame[c].isna().any() and np.isfinite(frame[c]).all()]
