"""Launch geometry from measurements: block-shape choices in the bundled tuning spaces and a
random-forest time model over (threads, blocks).

Each bundled kernel with block-shape parameters is described by a :class:`LaunchShape`: which
parameters are the block's x and y sizes and how many blocks the launch has (from the
problem sizes the tables were measured at: a 4096 x 4096 image for the convolutions, 4096^3
GEMM, 2e7 points for pnpoly; the KTT tables record their grid). A *choice group* is the set of
configurations that differ only in block shape; a policy picks one of them. A configuration whose
status is not ok stays in its group with no time: a policy that picks it made a failed pick.

The model predicts ``log2(time / best time of the group)`` from log2 threads, log2 blocks,
log2 blocks per SM, log2 block width (x) and the GPU's SM count, so that it ranks block shapes within a group; it is
trained on other kernels than the one it chooses for (leave one kernel out).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor

from gpuperf.datasets.schema import is_ok
from gpuperf.decisions.geometry import DeviceDescriptor, KernelDescriptor, fits, resident_blocks_per_sm
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.files import cache_root

CANDIDATE_THREADS = tuple(range(32, 1025, 32))  # whole warps of 32; a GPU of wider warps takes its multiples


def _ceil_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -(-np.asarray(a, dtype=float) // np.asarray(b, dtype=float))


@dataclass(frozen=True)
class LaunchShape:
    """How a kernel's parameters set its launch: block x/y parameters and the grid size."""

    kernel: str  # kernel family (convolution, gemm, pnpoly): leave-one-kernel-out drops all of a family
    block: tuple[str, ...]
    blocks: Callable[[pd.DataFrame], np.ndarray]
    registers: str | None = None
    shared_memory: str | None = None


def _convolution_blocks(c: pd.DataFrame) -> np.ndarray:
    return _ceil_div(4096, c["block_size_x"] * c["tile_size_x"]) * _ceil_div(4096, c["block_size_y"] * c["tile_size_y"])


def _gemm_blocks(c: pd.DataFrame) -> np.ndarray:
    return _ceil_div(4096, c["MWG"]) * _ceil_div(4096, c["NWG"])


def _pnpoly_blocks(c: pd.DataFrame) -> np.ndarray:
    tile = c["tile_size"] if "tile_size" in c.columns else 1
    return _ceil_div(20_000_000, c["block_size_x"] * tile)


def _ktt_blocks(c: pd.DataFrame) -> np.ndarray:
    return np.asarray(c["global_x"] * c["global_y"], dtype=float)


SHAPES: dict[str, LaunchShape] = {
    "convolution": LaunchShape("convolution", ("block_size_x", "block_size_y"), _convolution_blocks),
    "convolution_milo": LaunchShape("convolution", ("block_size_x", "block_size_y"), _convolution_blocks),
    "GEMM": LaunchShape("gemm", ("MDIMC", "NDIMC"), _gemm_blocks),
    "gemm": LaunchShape("gemm", ("MDIMC", "NDIMC"), _gemm_blocks),
    "pnpoly": LaunchShape("pnpoly", ("block_size_x",), _pnpoly_blocks),
    "Convolution": LaunchShape("convolution", ("BLOCK_SIZE_X", "BLOCK_SIZE_Y"), _ktt_blocks, "registers", "smem_bytes"),
    "Pnpoly": LaunchShape("pnpoly", ("BLOCK_SIZE_X",), _ktt_blocks, "registers", "smem_bytes"),
}
TABLES = ("schoonhoven_spaces", "benchmark_hub_spaces", "benchmark_hub_ktt_resources")


@dataclass
class ChoiceTable:
    """Successful configurations of one kernel on one GPU, with their choice group and launch."""

    table: str
    kernel: str
    family: str
    gpu: str
    frame: pd.DataFrame  # columns: group, bx, by, threads, blocks, registers, smem, time (NaN: the shape failed)

    @property
    def label(self) -> str:
        short = {"schoonhoven_spaces": "schoonhoven", "benchmark_hub_spaces": "hub", "benchmark_hub_ktt_resources": "ktt"}
        return f"{short.get(self.table, self.table)}/{self.kernel}"


def _choice_table(table: str, kernel: str, gpu: str, rows: pd.DataFrame, parameters: list[str]) -> ChoiceTable:
    shape = SHAPES[kernel]
    failed = ~is_ok(rows["status"]) if "status" in rows.columns else pd.Series(False, index=rows.index)
    measured = ~failed & np.isfinite(rows["time_s"]) & (rows["time_s"] > 0)
    rest = [p for p in parameters if p not in shape.block and rows.loc[measured, p].notna().any()
            and rows.loc[measured, p].nunique() > 1]
    # failed configurations stay, with no time: a policy may pick one (a failed pick)
    ok = rows[measured | failed].assign(time_s=rows["time_s"].where(measured))
    bx = ok[shape.block[0]].to_numpy(dtype=float)
    by = ok[shape.block[1]].to_numpy(dtype=float) if len(shape.block) > 1 else np.ones(len(ok))
    frame = pd.DataFrame(
        {
            "group": ok.groupby(rest, dropna=False, sort=False).ngroup().to_numpy() if rest else 0,
            "bx": bx,
            "by": by,
            "threads": bx * by,
            "blocks": shape.blocks(ok),
            "registers": ok[shape.registers].to_numpy(dtype=float) if shape.registers else np.nan,
            "smem": ok[shape.shared_memory].to_numpy(dtype=float) if shape.shared_memory else np.nan,
            "time": ok["time_s"].to_numpy(dtype=float),
        }
    )
    # Two caches of one card: one row per (group, shape), the median time (of its measured rows; none: it failed).
    frame = frame.groupby(["group", "bx", "by"], as_index=False).median()
    return ChoiceTable(table, kernel, shape.kernel, gpu, frame)


@functools.lru_cache(maxsize=16)
def _choice_tables(tables: tuple[str, ...], state: tuple) -> tuple[ChoiceTable, ...]:
    from gpuperf.datasets.bundled import load_dataset

    found = []
    for table in tables:
        frame = load_dataset(table)
        parameters = list(frame.attrs.get("parameters", []))
        for (kernel, gpu), rows in frame.groupby(["kernel", "gpu"], sort=True):
            if kernel in SHAPES and all(p in rows.columns for p in SHAPES[kernel].block):
                found.append(_choice_table(table, kernel, gpu, rows, parameters))
    return tuple(found)


def choice_tables(tables: Sequence[str] = TABLES) -> list[ChoiceTable]:
    """Block-shape choice data of every bundled kernel with block-shape parameters (cached)."""
    from gpuperf.datasets.bundled import tables_state

    return list(_choice_tables(tuple(tables), tables_state(tables)))


def model_features(threads: np.ndarray, blocks: np.ndarray, sms: float, width: np.ndarray | None = None) -> np.ndarray:
    """log2 threads, blocks, blocks per SM and block width (x; the threads for a 1-D block), SMs."""
    threads, blocks = np.asarray(threads, dtype=float), np.asarray(blocks, dtype=float)
    width = threads if width is None else np.asarray(width, dtype=float)
    return np.column_stack(
        [np.log2(threads), np.log2(blocks), np.log2(blocks / sms), np.log2(width), np.full(len(threads), sms)]
    )


def _gpu_sms(gpu: str) -> float:
    """The units blocks are placed on, as the device descriptor counts them (RDNA: work-group
    processors), so that training and prediction agree; NaN for a GPU gpuperf does not describe."""
    from gpuperf.decisions.geometry import device_descriptor
    from gpuperf.errors import GpuperfError
    from gpuperf.hardware.specs import get_gpu

    try:
        spec = get_gpu(gpu)
    except GpuperfError:  # a GPU gpuperf has no descriptor for
        return math.nan
    try:
        return float(device_descriptor(spec).sms)
    except GpuperfError:  # no per-SM limits: its SMs as the descriptor counts them
        return float(spec.sms)


class GeometryModel:
    """Random-forest ranking of launch shapes (see the module docstring)."""

    def __init__(self, trees: int = 60, seed: int = 0, max_rows: int = 60_000):
        self.trees, self.seed, self.max_rows = trees, seed, max_rows

    def fit(self, tables: Sequence[ChoiceTable]) -> "GeometryModel":
        features, targets, works, largest = [], [], [], []
        for table in tables:
            sms = _gpu_sms(table.gpu)
            if not np.isfinite(sms):
                continue
            frame = table.frame[table.frame["time"].notna()]  # failed configurations have no time to learn
            works.append(float((frame["threads"] * frame["blocks"]).min()))
            largest.append(float((frame["threads"] * frame["blocks"]).max()))
            best = frame.groupby("group")["time"].transform("min").to_numpy()
            features.append(model_features(frame["threads"], frame["blocks"], sms, frame["bx"]))
            targets.append(np.log2(frame["time"].to_numpy() / best))
        features_all, targets_all = np.vstack(features), np.concatenate(targets)
        if len(targets_all) > self.max_rows:
            keep = np.random.default_rng(self.seed).choice(len(targets_all), self.max_rows, replace=False)
            features_all, targets_all = features_all[keep], targets_all[keep]
        self.model_ = RandomForestRegressor(self.trees, min_samples_leaf=5, random_state=self.seed, n_jobs=1)
        self.model_.fit(features_all, targets_all)
        self.least_work_ = min(works)  # the fewest threads (blocks x block size) of a launch it learned from
        self.most_work_ = max(largest)  # and the most
        return self

    def predict(self, threads: np.ndarray, blocks: np.ndarray, sms: float, width: np.ndarray | None = None) -> np.ndarray:
        """Predicted log2 slowdown over the best shape (lower is better)."""
        return self.model_.predict(model_features(threads, blocks, sms, width))

    def choose_threads(self, device: DeviceDescriptor, kernel: KernelDescriptor) -> int:
        """Threads per block (a multiple of 32) for a loop of ``kernel.trip`` iterations."""
        # registers or shared memory outside the GPU's limits: that error, as the other policies give
        resident_blocks_per_sm(device, min(device.warp_size, device.max_threads_per_block), kernel.registers,
                               kernel.shared_memory_bytes)
        fitting = [t for t in CANDIDATE_THREADS if t % device.warp_size == 0 and t <= device.max_threads_per_block
                   and fits(device, kernel, t)]
        if not fitting:
            raise GpuperfError(
                f"no block size fits on {device.name} with {kernel.registers} registers per thread and "
                f"{kernel.shared_memory_bytes} bytes of shared memory per block"
            )
        self._note_outside_range(kernel.trip)
        threads = np.array(fitting, dtype=float)
        blocks = np.ceil(kernel.trip / threads)
        return int(threads[np.argmin(self.predict(threads, blocks, device.sms))])


    def _note_outside_range(self, trip: int) -> None:
        """A note where a loop of ``trip`` iterations lies below or above the launches the model learned from:
        the forest extends its edge flat, so its choice there is a guess."""
        least, most = getattr(self, "least_work_", None), getattr(self, "most_work_", None)
        loop = f"a loop of {trip:,} iteration{'s' if trip != 1 else ''}"
        if least is not None and trip < least:
            warnings.warn(GpuperfNote(
                f"the geometry model learned from launches of at least {least:,.0f} threads (the bundled tuning "
                f"spaces); {loop} lies below them, so its choice is a guess: the heuristic and occupancy policies "
                "know small loops"), stacklevel=3)
        elif most is not None and trip > most:
            warnings.warn(GpuperfNote(
                f"the geometry model learned from launches of at most {most:,.0f} threads (the bundled tuning "
                f"spaces); {loop} lies above them, so its choice is a guess: the heuristic and occupancy policies "
                "need no training range"), stacklevel=3)


MODEL_FORMAT = 3  # raise when what the cached forest learns from (or its metadata) changes


def default_geometry_model(use_cache: bool = True) -> GeometryModel:
    """The model trained on every bundled kernel: fitted once (some seconds) and kept in gpuperf's
    cache (a gpuperf model file, keyed by the bundled tables' bytes, the GPU descriptors, whose SMs it
    learns from, and the versions), then read back in well under a second; a damaged or foreign cache
    file is refitted. Kept in memory while the bundled tables' files and ``GPUPERF_GPUS`` stay as they are."""
    from gpuperf.datasets.bundled import tables_state
    from gpuperf.hardware.specs import descriptors_state

    return _default_geometry_model(use_cache, (tables_state(TABLES), descriptors_state()))


@functools.lru_cache(maxsize=4)
def _default_geometry_model(use_cache: bool, state: tuple) -> GeometryModel:
    """:func:`default_geometry_model`; ``state`` (the tables' files' and the GPU descriptors' state) is part
    of the cache's key alone."""
    from gpuperf.models.persistence import load_model, model_info, save_model

    model = GeometryModel()
    path = _cached_model_path(model)
    if use_cache and path.is_file():
        try:
            forest, metadata = load_model(path), model_info(path)["metadata"]
            least, most = metadata.get("least_work"), metadata.get("most_work")
        except GpuperfError:
            forest = least = most = None
        if isinstance(forest, RandomForestRegressor) and all(isinstance(v, (int, float)) for v in (least, most)):
            model.model_, model.least_work_, model.most_work_ = forest, float(least), float(most)
            return model
    model.fit(choice_tables())
    if use_cache:  # a cache that cannot be written only costs the fit again next time, said in a note
        from gpuperf.files import note_unwritten_cache, remove_stale_temporaries

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            remove_stale_temporaries(path.parent)  # a run killed while saving left its 28 MB there
            save_model(model.model_, path, metadata={"least_work": model.least_work_, "most_work": model.most_work_},
                       through_links=False, replace=True)
        except (OSError, GpuperfError) as error:
            note_unwritten_cache(path, error)
    return model


def _cached_model_path(model: GeometryModel) -> Path:
    """The cache file of ``model`` fitted on the bundled tables with the GPU descriptors of now (a user's
    ``GPUPERF_GPUS`` may give a GPU of the tables other SMs: another forest, in another file)."""
    import hashlib
    import json

    import sklearn

    import gpuperf
    from gpuperf.datasets.bundled import BUNDLED, data_dir
    from gpuperf.hardware.specs import gpus

    digest = hashlib.sha256(f"{MODEL_FORMAT}|{gpuperf.__version__}|{sklearn.__version__}|{model.trees}|{model.seed}|"
                            f"{model.max_rows}".encode())
    digest.update(json.dumps([gpu.as_dict() for gpu in gpus()], sort_keys=True, default=str).encode())
    for table in TABLES:
        digest.update((data_dir() / BUNDLED[table].file).read_bytes())
    return cache_root() / "geometry" / f"model-{digest.hexdigest()[:24]}.skops"
