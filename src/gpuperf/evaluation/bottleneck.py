"""A per-launch multi-resource bottleneck model on the predicted GPU's own profiler counters.

Each launch's time is a non-negative sum over resources ``r`` of ``c_r x work_r / rate_r``: the
work from the launch's counters on the GPU it ran on, the rate from that GPU's descriptors
(``bottleneck_terms``):

- ``issue``: warp instructions executed / (SMs x 4 schedulers x clock);
- ``fp32`` / ``fp64``: flops / the GPU's peak (at the clock it ran at);
- ``dram``: (DRAM read + L2 write transactions) x 32 B / memory bandwidth;
- ``dram_fixed``: the same bytes at a fixed ``FIXED_DRAM_GBS`` on every GPU: DRAM traffic whose time
  does not follow the GPU's bandwidth (with ``dram``, a per-kernel exponent of the bandwidth
  between 0 and 1; bpnn_adjust_weights_cuda takes the same time on GPUs of 192 to 336 GB/s);
- ``l2``: L2 transactions x 32 B / (SMs x 64 B x clock);
- ``shared``: shared-memory transactions / (SMs x clock);
- ``ldst``: load/store thread instructions / (SMs x 32 units x clock);
- latency, per wave of blocks (``same_capability.waves``), over the clock: ``lat_alu`` the warp
  instructions per warp, ``lat_mem`` the global requests per warp, ``lat_smem`` the shared
  loads and stores per warp; with ``latency=True`` each times the architecture's latency in cycles
  (``LATENCY_CYCLES``: dependent arithmetic, global memory, shared memory), else times 1; with
  ``memory_clock=True`` ``lat_mem`` is instead the global requests per warp per wave times
  ``MEMORY_LATENCY_TRANSFERS`` over the memory's data rate per pin (``gpu_memory_data_rate_gbps``,
  :func:`~gpuperf.evaluation.tables.with_memory_data_rates`): a global-memory latency of the same
  count of memory-clock cycles on every GPU, not of SM-clock cycles;
- ``overhead``: 1 us;
- ``dram_clock``, with ``dram_clock=True`` only (an extra column after ``TERMS``): the DRAM bytes at
  ``DRAM_BYTES_PER_CYCLE`` per cycle of the SM clock: DRAM traffic whose time follows the clock of a
  path all SMs share (L2 slices, crossbar), not their number nor the memory's bandwidth.

The coefficients ``c_r`` (1 / efficiency) are fitted per kernel on the training GPUs' rows by
non-negative least squares on the relative error (each row's terms over its time against 1): no
time-derived counter (elapsed cycles, throughputs, utilisations) enters. A held-out GPU's launch
is predicted from its own counters and descriptors, so it needs the kernel on a training GPU, not
the launch. The Rodinia reproduction's ``bottleneck`` scenario (variants ``sum``, ``sum_latency``
``sum_latency_memclock`` and ``sum_latency_memclock_dramclock``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import nnls

from gpuperf.errors import GpuperfError
from gpuperf.evaluation.gpu_scaling import held_out_evaluation
from gpuperf.evaluation.protocols import TARGET, Evaluation
from gpuperf.evaluation.same_capability import GPU_COLUMNS, waves

TERMS = ("issue", "fp32", "fp64", "dram", "dram_fixed", "l2", "shared", "ldst", "lat_alu", "lat_mem", "lat_smem",
         "overhead")
# Approximate published microbenchmark latencies in cycles (dependent arithmetic, global memory,
# shared memory) per architecture (shared memory: Mei & Chu, "Dissecting GPU Memory Hierarchy through
# Microbenchmarking", IEEE TPDS 2017); only ``latency=True`` reads them.
LATENCY_CYCLES = {"Kepler": (9.0, 300.0, 47.0), "Maxwell": (6.0, 350.0, 28.0)}
COUNTERS = (
    "inst_executed", "warps_launched", "gld_request", "gst_request", "shared_load", "shared_store",
    "shared_load_transactions", "shared_store_transactions", "device_memory_read_transactions",
    "l2_read_transactions", "l2_write_transactions", "load.store_instructions",
    "floating_point_operations.single_precision.", "floating_point_operations.double_precision.",
)
DESCRIPTORS = ("gpu_peak_f32_gflops", "gpu_peak_f64_gflops")
OVERHEAD_S = 1e-6
# The fixed DRAM rate of ``dram_fixed`` (any constant fits the same: terms are scaled in the fit).
FIXED_DRAM_GBS = 200.0
# Global-memory latency in transfers per pin (about 375 ns at 6 Gb/s; any constant fits the same).
MEMORY_LATENCY_TRANSFERS = 2250.0
MEMORY_DATA_RATE = "gpu_memory_data_rate_gbps"
# The rate of ``dram_clock`` in bytes per SM clock cycle (any constant fits the same).
DRAM_BYTES_PER_CYCLE = 32.0
# Ridge on the scaled coefficients (``fit_coefficients``).
RIDGE = 1e-3


def bottleneck_terms(frame: pd.DataFrame, latency: bool = False, memory_clock: bool = False,
                     dram_clock: bool = False) -> pd.DataFrame:
    """Per row of ``frame``, each resource's time in seconds at full efficiency (``TERMS``, and
    ``dram_clock`` after them with ``dram_clock=True``)."""
    needed = [*COUNTERS, *GPU_COLUMNS, *DESCRIPTORS, "grid.x", "grid.y", "block.x", "block.y",
              "registers.per.thread", "static.smem", "gpu"]
    if latency:
        needed.append("gpu_architecture")
    if memory_clock:
        needed.append(MEMORY_DATA_RATE)
    missing = [c for c in dict.fromkeys(needed) if c not in frame.columns]
    if missing:
        raise GpuperfError(f"bottleneck model: missing column(s) {', '.join(missing)}")

    def column(name: str) -> np.ndarray:
        return pd.to_numeric(frame[name], errors="coerce").to_numpy(float)

    clock = column("gpu_clock_mhz") * 1e6
    sm_cycles = column("gpu_sms") * clock
    wave_count = np.full(len(frame), np.nan)
    gpus = frame["gpu"].astype(str).to_numpy()
    for gpu in np.unique(gpus):
        rows = gpus == gpu
        wave_count[rows] = waves(frame[rows], frame.loc[rows, list(GPU_COLUMNS)].iloc[0])
    if latency:
        architectures = frame["gpu_architecture"].astype(str)
        unknown = sorted(set(architectures) - set(LATENCY_CYCLES))
        if unknown:
            raise GpuperfError(f"bottleneck model: no latencies for architecture(s) {', '.join(unknown)}")
        alu, memory, shared = (architectures.map(lambda a, i=i: LATENCY_CYCLES[a][i]).to_numpy(float)
                               for i in range(3))
    else:
        alu = memory = shared = np.ones(len(frame))
    warps = np.maximum(column("warps_launched"), 1.0)
    per_wave = wave_count / clock / warps
    requests = column("gld_request") + column("gst_request")
    if memory_clock:  # the same count of memory-clock cycles on every GPU
        memory_latency = wave_count / warps * requests * MEMORY_LATENCY_TRANSFERS / (_data_rates(frame) * 1e9)
    else:
        memory_latency = per_wave * requests * memory
    dram_bytes = (column("device_memory_read_transactions") + column("l2_write_transactions")) * 32
    terms = {
        "issue": column("inst_executed") / (4 * sm_cycles),
        "fp32": column("floating_point_operations.single_precision.") / (column("gpu_peak_f32_gflops") * 1e9),
        "fp64": column("floating_point_operations.double_precision.") / (column("gpu_peak_f64_gflops") * 1e9),
        "dram": dram_bytes / (column("gpu_memory_bandwidth_gbs") * 1e9),
        "dram_fixed": dram_bytes / (FIXED_DRAM_GBS * 1e9),
        "l2": (column("l2_read_transactions") + column("l2_write_transactions")) * 32 / (64 * sm_cycles),
        "shared": (column("shared_load_transactions") + column("shared_store_transactions")) / sm_cycles,
        "ldst": column("load.store_instructions") / (32 * sm_cycles),
        "lat_alu": per_wave * column("inst_executed") * alu,
        "lat_mem": memory_latency,
        "lat_smem": per_wave * (column("shared_load") + column("shared_store")) * shared,
        "overhead": np.full(len(frame), OVERHEAD_S),
    }
    out = pd.DataFrame(terms, index=frame.index)[list(TERMS)]
    if dram_clock:
        out["dram_clock"] = dram_bytes / (DRAM_BYTES_PER_CYCLE * clock)
    return out


def _data_rates(frame: pd.DataFrame) -> np.ndarray:
    """Each row's memory data rate per pin in Gb/s; an error naming the GPUs that have none."""
    rates = pd.to_numeric(frame[MEMORY_DATA_RATE], errors="coerce").to_numpy(float)
    unknown = sorted(set(frame["gpu"].astype(str).to_numpy()[~(rates > 0)]))
    if unknown:
        raise GpuperfError(f"bottleneck model: no memory data rate ({MEMORY_DATA_RATE}) for GPU(s) "
                           f"{', '.join(unknown)}")
    return rates


def fit_coefficients(terms: np.ndarray, times: np.ndarray, ridge: float = RIDGE) -> np.ndarray:
    """Non-negative ``c`` minimising the mean over rows of (terms @ c / time - 1)^2 plus ``ridge``
    times the sum of squares of ``c`` with each term scaled to a largest relative value of 1, which
    shares the weight among terms proportional on the training rows instead of picking one at
    random (rows with a non-finite term or time left out; zeros when none is left)."""
    usable = np.isfinite(terms).all(axis=1) & np.isfinite(times) & (times > 0)
    if not usable.any():
        return np.zeros(terms.shape[1])
    relative = terms[usable] / times[usable, None]
    scale = np.where(relative.max(axis=0) > 0, relative.max(axis=0), 1.0)
    rows = int(usable.sum())
    system = np.vstack([relative / scale / np.sqrt(rows), np.sqrt(ridge) * np.eye(terms.shape[1])])
    target = np.concatenate([np.ones(rows) / np.sqrt(rows), np.zeros(terms.shape[1])])
    coefficients, _ = nnls(system, target, maxiter=50 * terms.shape[1] + 1000)
    return coefficients / scale


def bottleneck_predictions(frame: pd.DataFrame, terms: pd.DataFrame, train: np.ndarray, test: np.ndarray,
                           max_train_rows: int | None = 500, seed: int = 0, ridge: float = RIDGE) -> pd.Series:
    """Predicted times of ``frame``'s ``test`` rows (boolean mask) from coefficients fitted per kernel
    on its ``train`` rows (at most ``max_train_rows`` per kernel and GPU, drawn at random); NaN
    for a kernel no training row has."""
    kernels = frame["kernel"].astype(str).to_numpy()
    gpus = frame["gpu"].astype(str).to_numpy()
    times = pd.to_numeric(frame[TARGET], errors="coerce").to_numpy(float)
    values = terms.to_numpy(float)
    rng = np.random.default_rng(seed)
    predicted = np.full(len(frame), np.nan)
    for kernel in np.unique(kernels[test]):
        rows = np.flatnonzero(train & (kernels == kernel))
        if not len(rows):
            continue
        if max_train_rows is not None:
            rows = np.concatenate([
                part if len(part) <= max_train_rows else rng.choice(part, max_train_rows, replace=False)
                for part in (rows[gpus[rows] == gpu] for gpu in np.unique(gpus[rows]))])
        coefficients = fit_coefficients(values[rows], times[rows], ridge)
        held = test & (kernels == kernel)
        predicted[held] = values[held] @ coefficients
    return pd.Series(predicted, index=frame.index)[test]


def leave_one_group_out_bottleneck(
    frame: pd.DataFrame, group: str = "gpu", latency: bool = False, name: str = "bottleneck",
    max_train_rows: int | None = 500, seed: int = 0, ridge: float = RIDGE, memory_clock: bool = False,
    dram_clock: bool = False,
) -> Evaluation:
    """Hold out each value of a GPU-wise ``group`` column (``gpu``, ``gpu_architecture``) in turn and
    predict its rows with the bottleneck model fitted on the other rows (module docstring); rows of
    a kernel no training GPU ran are skipped."""
    if group not in frame.columns:
        raise GpuperfError(f"{name}: missing column {group}")
    terms = bottleneck_terms(frame, latency, memory_clock, dram_clock)
    labels = frame[group].astype(str).to_numpy()
    folds = ((fold, bottleneck_predictions(frame, terms, labels != fold, labels == fold, max_train_rows, seed, ridge))
             for fold in sorted(np.unique(labels)))
    return held_out_evaluation(frame, group, name, folds)

