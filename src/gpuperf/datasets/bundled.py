"""The bundled tables of real GPU measurements, loadable by name in the dataset shape.

``load_dataset("schoonhoven_spaces")`` reads ``data/schoonhoven_spaces.csv.gz`` once per process (again when
the file or ``GPUPERF_DATA_DIR`` changes) and returns a copy in the dataset shape (see ``schema.py``); ``raw=True``
returns it as published.
A path to a CSV in one of the bundled formats (say, the same table with more GPUs) loads the same
way, its format recognised from its columns.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from gpuperf.datasets.schema import KEY_COLUMNS, STATUS, TARGET, canonical_gpu, check_dataset
from gpuperf.datasets.tables import CSV_SUFFIXES, PARQUET_SUFFIXES, TableFormat, read_csv, read_table_file, require_columns
from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.files import home_path

AMARIS = (
    'Amaris et al.: "Evaluating execution time predictions on GPU '
    'kernels using an analytical model and machine learning techniques", JPDC; '
    "data: github.com/marcosamaris/gpuperfpredict"
)
SCHOONHOVEN = (
    'Schoonhoven, van Werkhoven, Batenburg: "Benchmarking optimization algorithms for auto-tuning '
    'GPU kernels", IEEE TEVC; data: github.com/schoonhovenrichard/GPU_benchmarking_paper'
)
BENCHMARK_HUB = "Kernel Tuner benchmark hub: github.com/AutoTuningAssociation/benchmark_hub"
PROVENANCE = "(the bundled data's README.md, the .provenance.json beside the file)"  # gpuperf datasets names the folder
GPUPERF = f"measured by gpuperf on this project's machine {PROVENANCE}"
GPUPERF_H100 = f"measured by gpuperf on an NVIDIA H100 80GB HBM3 {PROVENANCE}"
GPUPERF_H200 = f"measured by gpuperf on an NVIDIA H200 {PROVENANCE}"

def _gpuperf_export(raw: pd.DataFrame, where: str, source: str) -> pd.DataFrame:
    """A table gpuperf exported from its measurement store: in the dataset shape already; its
    ``source`` becomes the dataset's name (the ``campaign`` column keeps the campaign's)."""
    return check_dataset(raw.assign(source=source), where)


def _amaris_specs(raw: pd.DataFrame, where: str, source: str) -> pd.DataFrame:
    """The Amaris hardware table with its strings parsed into numbers (one row per GPU)."""
    require_columns(raw, ["model", "cc", "memory", "bus", "bandwidth", "l2", "cores_per_sm", "clock"], where)

    def number(column: str, index: int = 0) -> pd.Series:
        found = raw[column].astype(str).str.findall(r"\d+(?:\.\d+)?")
        return found.map(lambda numbers: float(numbers[index]) if len(numbers) > index else float("nan"))

    out = pd.DataFrame({"gpu": [canonical_gpu(m) for m in raw["model"]]})
    out["gpu_label"] = raw["model"].astype(str)
    out["source"] = source
    out["compute_capability"] = number("cc")
    out["memory_gb"] = number("memory")
    out["bus_bits"] = number("bus")
    out["bandwidth_gb_s"] = number("bandwidth")
    out["l2_mb"] = number("l2")
    out["cores"] = number("cores_per_sm", 0)
    out["sms"] = number("cores_per_sm", 1)
    out["clock_mhz"] = number("clock")
    out.attrs["parameters"] = []
    return out


@dataclass(frozen=True)
class BundledDataset:
    """One bundled table: where it lives, where it came from, and how it lands in the dataset shape."""

    name: str
    file: str
    description: str
    source: str
    license: str
    units: str
    repository: str
    table_format: TableFormat | None = None
    shape_other: Callable[[pd.DataFrame, str, str], pd.DataFrame] | None = None
    signature: tuple[str, ...] = ()

    def shape(self, raw: pd.DataFrame, where: str, source: str) -> pd.DataFrame:
        if self.table_format is not None:
            return self.table_format.shape(raw, where, source)
        assert self.shape_other is not None
        return self.shape_other(raw, where, source)

    def columns_needed(self) -> list[str]:
        """Published columns that identify this table's format."""
        if self.table_format is not None:
            return sorted(set(self.table_format.signature()) | set(self.signature))
        return list(self.signature)


FEATURE_UNITS = "features as python -m gpuperf.features.table describes them"  # docs/features.md, printed
STENCIL_UNITS = f"time_s, time_s_min, time_s_iqr in seconds; {FEATURE_UNITS}"
GPU_STENCIL_UNITS = f"time_s, time_s_min, time_s_iqr in seconds; occupancy a fraction; {FEATURE_UNITS}"
PAIR_UNITS = "time_s, time_s_min, time_s_iqr in seconds; cycle_times_s: per-cycle round medians"


def _gpuperf_table(name: str, description: str, source: str, units: str,
                   extra_signature: tuple[str, ...] = ()) -> BundledDataset:
    """A table gpuperf measured and exported from its store, in ``data/NAME.csv.gz``."""
    return BundledDataset(name, f"{name}.csv.gz", description, source, "MIT (gpuperf's own)", repository="gpuperf",
                          units=units, shape_other=_gpuperf_export,
                          signature=("campaign", "kernel_key", "measured_at", *extra_signature))


BUNDLED: dict[str, BundledDataset] = {
    d.name: d
    for d in [
        BundledDataset(
            "rodinia_nvprof",
            "gpuperfpredict_rodinia_nvprof.csv.gz",
            "Rodinia kernels (backprop, heartwall, hotspot, lud) on 7 NVIDIA GPUs, one row per distinct "
            "launch (median of identical launches) with about 70 nvprof metrics",
            AMARIS,
            "CC BY 4.0",
            repository="marcosamaris/gpuperfpredict",
            units="time_s and time_s_std in seconds as published; metrics as nvprof reports them",
            table_format=TableFormat(
                kernel="kernel", time="time_s", gpu="gpu",
                parameters=("input.size.1", "input.size.2"),
            ),
            signature=("app", "input.size.1", "elapsed_cycles_sm"),
        ),
        BundledDataset(
            "rodinia_published_predictions",
            "gpuperfpredict_published_predictions.csv.gz",
            "The paper's own per-sample predictions (LinearRegression, RF, SVM; leave-one-GPU-out) with "
            "the measured time; its `mape` column divides by the prediction for LinearRegression and RF "
            "(the standard MAPE for SVM), recompute before comparing",
            AMARIS,
            "CC BY 4.0",
            repository="marcosamaris/gpuperfpredict",
            units="time_s (published TestDuration) and predictions in seconds",
            table_format=TableFormat(kernel="CUDAKernels", time="TestDuration", gpu="GPUs", parameters=()),
            signature=("predictions", "model"),
        ),
        BundledDataset(
            "matvec_bsp",
            "gpuperfpredict_matvec_bsp.csv.gz",
            "9 matrix/vector kernels (MMGU, MMGC, MMSU, MMSC, MAU, MAC, vAdd, dotP, MSA) on 4 GPUs with "
            "the paper's BSP-model prediction bsp_pred_s",
            AMARIS,
            "CC BY 4.0",
            repository="marcosamaris/gpuperfpredict",
            units="time_s and bsp_pred_s in seconds as published",
            table_format=TableFormat(kernel="kernel", time="time_s", gpu="gpu", parameters=("n",)),
            signature=("bsp_pred_s", "n"),
        ),
        BundledDataset(
            "k40c_traces",
            "gpuperfpredict_k40c_traces.csv.gz",
            "nvprof GPU traces on a Tesla K40c, 10 runs, of dotProd, vectorAdd, matrix_sum and matMul "
            "variants (the published `variant` column is the kernel) with launch geometry and registers",
            AMARIS,
            "CC BY 4.0",
            repository="marcosamaris/gpuperfpredict",
            units="time_s from duration_ns (ns); static_smem in KiB as nvprof printed it (1 = 1024 bytes)",
            table_format=TableFormat(kernel="variant", time="duration_ns", time_unit="ns", gpu="gpu", parameters=("n",)),
            signature=("regs", "occurrence", "run"),
        ),
        BundledDataset(
            "amaris_gpu_specs",
            "gpuperfpredict_gpu_specs.csv.gz",
            "The Amaris paper's hardware table of its 9 GPUs, strings parsed into numbers "
            "(raw=True gives the published strings); no times",
            AMARIS,
            "CC BY 4.0",
            repository="marcosamaris/gpuperfpredict",
            units="memory_gb, bandwidth_gb_s, l2_mb, clock_mhz as named; cores and sms per GPU",
            shape_other=_amaris_specs,
            signature=("model", "cc", "memory", "bus", "bandwidth", "l2", "cores_per_sm", "clock"),
        ),
        BundledDataset(
            "schoonhoven_spaces",
            "schoonhoven_spaces.csv.gz",
            "Brute-forced tuning spaces of CLBlast GEMM, a 2D convolution and pnpoly on 7 GPUs; failed "
            "configurations are absent; pnpoly's time includes host-device transfers (its `device` is the host)",
            SCHOONHOVEN,
            "not stated; cite the paper",
            repository="schoonhovenrichard/GPU_benchmarking_paper",
            units="time_s from time_mean_ms (ms), time_s_median and time_s_std from ms; repeats = n_runs",
            table_format=TableFormat(
                kernel="kernel", time="time_mean_ms", time_unit="ms", gpu="gpu", device="device_name",
                renamed={"n_runs": "repeats"},
                converted={"time_median_ms": ("time_s_median", "ms"), "time_std_ms": ("time_s_std", "ms")},
                tuning=True,
            ),
        ),
        BundledDataset(
            "benchmark_hub_spaces",
            "benchmark_hub_spaces.csv.gz",
            "Brute-forced Kernel Tuner caches of convolution, convolution_milo, gemm and pnpoly on NVIDIA "
            "and AMD GPUs, failed configurations kept with their status",
            BENCHMARK_HUB,
            "MIT",
            repository="AutoTuningAssociation/benchmark_hub",
            units="time_s from time_ms (ms, mean of `repeats`); time_s_std, compile_time_s, benchmark_time_s from ms",
            table_format=TableFormat(
                kernel="kernel", time="time_ms", time_unit="ms", gpu="gpu", device="device_name", status="status",
                renamed={"source": "hub_folder", "n_times": "repeats"},
                converted={
                    "time_std_ms": ("time_s_std", "ms"),
                    "compile_time_ms": ("compile_time_s", "ms"),
                    "benchmark_time_ms": ("benchmark_time_s", "ms"),
                },
                features=("problem_size",), tuning=True,
            ),
        ),
        BundledDataset(
            "benchmark_hub_ktt_resources",
            "benchmark_hub_ktt_resources.csv.gz",
            "KTT runs of Convolution and Pnpoly on RTX 2080 Ti and RTX 3090 with per-configuration "
            "registers, shared and constant memory bytes and global/local sizes",
            BENCHMARK_HUB,
            "MIT",
            repository="AutoTuningAssociation/benchmark_hub",
            units="time_s from duration_us (us); smem_bytes and cmem_bytes in bytes",
            table_format=TableFormat(
                kernel="kernel", time="duration_us", time_unit="us", device="device", status="status",
                features=("registers", "smem_bytes", "cmem_bytes", "global_x", "global_y", "local_x", "local_y"),
                tuning=True,
            ),
        ),
        _gpuperf_table(
            "stencil_spaces_pocl",
            "512 variants of the eight LIFT stencils' transformation spaces at n = m = 1024 on pocl's CPU "
            "OpenCL device, timed interleaved, with each variant's static features",
            GPUPERF, STENCIL_UNITS,
        ),
        _gpuperf_table(
            "stencil_spaces_h100",
            "192 variants of the eight LIFT stencils' transformation spaces (24 each) at n = m = 4096 on an "
            "NVIDIA H100 (CUDA), timed interleaved, with each variant's static features, registers and occupancy",
            GPUPERF_H100, GPU_STENCIL_UNITS, extra_signature=("registers_per_thread",),
        ),
        _gpuperf_table(
            "stencil_spaces_h200",
            "the same 192 stencil variants as stencil_spaces_h100 at n = m = 4096 on an NVIDIA H200 (CUDA), "
            "timed interleaved, with each variant's static features, registers and occupancy",
            GPUPERF_H200, GPU_STENCIL_UNITS, extra_signature=("registers_per_thread",),
        ),
        _gpuperf_table(
            "advise_pairs_pocl",
            "Stencil variants before and after each space optimization (unrolling, coarsening, work-group "
            "shape, local-memory prefetch) at three sizes on pocl's CPU OpenCL device, timed interleaved",
            GPUPERF, PAIR_UNITS,
        ),
        _gpuperf_table(
            "advise_pairs_h200",
            "The same stencil before/after variants as advise_pairs_pocl at n = m = 1024, 2048, 4096 on an "
            "NVIDIA H200 (CUDA), timed interleaved",
            GPUPERF_H200, PAIR_UNITS,
        ),
        _gpuperf_table(
            "advise_pairs_h200_repeat",
            "advise_pairs_h200 measured again on the same H200 minutes later, at 8192 too: how far a "
            "pair's speedup moves between runs",
            GPUPERF_H200, PAIR_UNITS,
        ),
    ]
}


def _packaged_data() -> Path:
    """The package's ``bundled_data``: a folder of the tables, or in a checkout a link to ``data/``."""
    return Path(__file__).resolve().parents[1] / "bundled_data"


def data_dir() -> Path:
    """Where the bundled tables live: ``$GPUPERF_DATA_DIR`` (a leading ``~`` the home folder, as in
    ``GPUPERF_CACHE_DIR``), else the package's ``bundled_data`` (in a checkout, a link to the repository's
    ``data/`` folder; in an installed wheel, the tables themselves)."""
    if os.environ.get("GPUPERF_DATA_DIR"):
        return home_path(os.environ["GPUPERF_DATA_DIR"], "GPUPERF_DATA_DIR")
    packaged = _packaged_data()
    repository = Path(__file__).resolve().parents[3] / "data"  # a checkout without symbolic links: a text file
    return packaged if packaged.is_dir() or not repository.is_dir() else repository


def data_table(source: str | Path) -> Path:
    """The file ``source`` names: itself where it exists, else the data folder's table of that name
    (``linear_model_h100``, ``data/linear_model_h100.csv.gz``: how the docs name the tables read by path,
    which an installed gpuperf holds in its package, not in a ``data/`` folder), else ``source`` as it is."""
    path = Path(source)
    if path.exists() or len(path.parts) > 2 or (len(path.parts) == 2 and path.parts[0] != "data"):
        return path
    for name in (path.name, f"{path.name}.csv.gz"):
        if (data_dir() / name).is_file():
            return data_dir() / name
    _refuse_missing_table(path)
    return path


def _refuse_missing_table(path: Path) -> None:
    """The error of a missing bundled table (:func:`missing_bundled_message`) where ``path`` names one
    that is not there: a bundled dataset's file or name; any ``data/NAME`` where the data folder is
    missing (an installed gpuperf whose package lacks its tables) is an error giving the same cause."""
    file = path.name if path.name.lower().endswith((".gz", ".csv", ".parquet")) else f"{path.name}.csv.gz"
    named = [key for key, info in BUNDLED.items() if file == info.file or path.name == key]
    if named:
        raise GpuperfError(missing_bundled_message(named[0], data_dir() / BUNDLED[named[0]].file))
    if len(path.parts) == 2 and not data_dir().is_dir():
        raise GpuperfError(f"{path}: no such file; gpuperf reads data/NAME from its bundled tables, and they are "
                           f"missing ({_missing_data_hint(data_dir() / file)})")


def bundled_dataset_at(path: str | Path) -> str | None:
    """The name of the bundled dataset whose file ``path`` is (by its path, a copy's path is not), or None."""
    path = Path(path)
    if not path.is_file():
        return None
    for name, info in BUNDLED.items():
        file = data_dir() / info.file
        if file.is_file() and path.samefile(file):
            return name
    return None


def dataset_names() -> list[str]:
    """The bundled tables' names, as :func:`load_dataset` takes them."""
    return list(BUNDLED)


def dataset_info(name: str) -> BundledDataset:
    """The registry entry of a bundled table (unknown names suggest the nearest)."""
    if name not in BUNDLED:
        raise unknown_name_error("dataset", name, BUNDLED)
    return BUNDLED[name]


def load_dataset(name: str | Path, raw: bool = False) -> pd.DataFrame:
    """A bundled table by name, or a file (CSV, compressed or not, or Parquet) in the dataset shape
    (at least ``kernel`` and ``time_s``) or in a bundled table's format, in the dataset shape.

    Parsed tables are kept in memory while their files stay as they are, so repeated loads are cheap;
    each call returns a copy.
    """
    text = str(name)
    if text in BUNDLED:
        return _bundled(text, raw).copy()
    if _looks_like_path(text):
        return _load_file(Path(text), raw)
    raise unknown_name_error("dataset", text, BUNDLED)


def file_state(path: Path) -> tuple[str, int, int] | None:
    """``path`` made absolute with its modification time and size (None: no such file): what a table
    read from it is cached under, so a changed ``GPUPERF_DATA_DIR`` or an edited table is read anew."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return str(path.resolve()), stat.st_mtime_ns, stat.st_size


def tables_state(names: Iterable[str]) -> tuple:
    """The :func:`file_state` of each bundled table named (other names as they are): what is built from
    the tables is built again when one changes."""
    return tuple(file_state(data_dir() / BUNDLED[name].file) if name in BUNDLED else name for name in names)


def _bundled(name: str, raw: bool) -> pd.DataFrame:
    """A bundled table as its file is now (parsed once per state of the file; not a copy)."""
    return _load_bundled(name, raw, file_state(data_dir() / BUNDLED[name].file))


def missing_bundled_message(name: str, path: Path) -> str:
    """Why bundled dataset ``name``'s file ``path`` is not there, and where GPUPERF_DATA_DIR looks for it."""
    return f"{path}: bundled dataset '{name}' is missing ({_missing_data_hint(path)})"


def _missing_data_hint(path: Path) -> str:
    """Why the data folder's file ``path`` is not there, and where GPUPERF_DATA_DIR looks for it."""
    chosen = os.environ.get("GPUPERF_DATA_DIR")
    packaged = _packaged_data()
    if not chosen and path.parent == packaged and not packaged.is_dir():
        state = "a file, not a folder" if packaged.is_file() else "missing"
        return (f"{packaged} is {state}: this gpuperf was likely built from a checkout without symbolic links, "
                "where bundled_data, a link to data/, is a text file, so it carries no tables; reinstall it from a "
                "checkout with links (git -c core.symlinks=true clone), or set GPUPERF_DATA_DIR to the folder that "
                "holds gpuperf's data/ tables")
    if not chosen:
        return "set GPUPERF_DATA_DIR to the folder that holds gpuperf's data/ tables"
    folder = home_path(chosen, "GPUPERF_DATA_DIR")
    return f"GPUPERF_DATA_DIR={chosen}: " + ("no such file there" if folder.is_dir() else "no such folder")


@functools.lru_cache(maxsize=128)
def _load_bundled(name: str, raw: bool, state: tuple[str, int, int] | None) -> pd.DataFrame:
    """A bundled table, parsed; ``state`` (:func:`file_state` of its file) is part of the cache's key alone."""
    info = BUNDLED[name]
    path = data_dir() / info.file
    if not path.is_file():
        raise GpuperfError(missing_bundled_message(name, path))
    table = read_csv(path)
    if raw:
        return table
    frame = info.shape(table, str(path), name)
    frame.attrs["dataset"] = name
    return frame


def _looks_like_path(text: str) -> bool:
    return ("/" in text or "\\" in text or text.lower().endswith((*CSV_SUFFIXES, *PARQUET_SUFFIXES))
            or Path(text).is_file())


def _load_file(path: Path, raw: bool) -> pd.DataFrame:
    """A table in a bundled table's format, or in the dataset shape already."""
    table = read_table_file(path)
    if raw:
        return table
    if {*KEY_COLUMNS, TARGET, STATUS} <= set(table.columns):
        return check_dataset(table, str(path))
    for info in BUNDLED.values():
        if set(info.columns_needed()) <= set(table.columns):
            return info.shape(table, str(path), str(path))
    if {"kernel", TARGET} <= set(table.columns):
        return check_dataset(table, str(path))
    raise GpuperfError(
        f"{path}: columns match neither the dataset shape (at least kernel and {TARGET}; in full "
        f"{', '.join([*KEY_COLUMNS, TARGET, STATUS])}) nor a bundled table's format"
    )


SUMMARY_FORMAT = 1  # raise when what a table's cached summary holds (SUMMARY_COUNTS) changes
SUMMARY_COUNTS = ("rows", "kernel_names", "gpu_names")


def dataset_summary(progress: bool = False) -> list[dict]:
    """Per bundled table: name, rows, kernels, GPUs (counted from the files), its file's absolute path,
    source and license. What is counted is kept in gpuperf's cache, a file per table keyed by the
    table's bytes, the GPU descriptors (which name its GPUs) and gpuperf's version: only a table new
    to the cache is read (``progress``: a bar on stderr while tables are read)."""
    from gpuperf.hardware.specs import gpus
    from gpuperf.progress import progress_bar

    descriptors = [gpu.as_dict() for gpu in gpus()]
    paths = {name: _summary_cache_path(name, descriptors) for name in BUNDLED}
    counts = {name: _cached_counts(path) for name, path in paths.items()}
    unread = [name for name, counted in counts.items() if counted is None]
    with progress_bar(hidden=not progress or not unread) as bar:
        task = bar.add_task("reading the bundled tables (once: their summary is cached)", total=len(unread))
        for name in unread:
            counts[name] = _table_counts(name)
            if paths[name] is not None and paths[name] == _summary_cache_path(name, descriptors):  # not edited meanwhile
                _write_counts(paths[name], counts[name])
            bar.advance(task)
    return [_summary_row(BUNDLED[name], counts[name]) for name in BUNDLED]


def _table_counts(name: str) -> dict:
    """A bundled table's rows and its sorted kernel and GPU names, read from its file."""
    frame = _bundled(name, False)
    kernels = sorted(frame["kernel"].unique()) if "kernel" in frame.columns else []
    return {"rows": len(frame), "kernel_names": kernels, "gpu_names": sorted(frame["gpu"].unique())}


def _summary_cache_path(name: str, descriptors: list[dict]) -> Path | None:
    """Where table ``name``'s counts are cached: named by a digest of its file's bytes, the GPU
    descriptors, gpuperf's version and ``SUMMARY_FORMAT`` (None: no file to digest; it is read, and
    its error given)."""
    import hashlib
    import json

    import gpuperf
    from gpuperf.files import cache_root

    try:
        with (data_dir() / BUNDLED[name].file).open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None
    token = json.dumps({"format": SUMMARY_FORMAT, "version": gpuperf.__version__, "table": name, "bytes": digest,
                        "gpus": descriptors}, sort_keys=True, default=str)
    return cache_root() / "datasets" / f"summary-{hashlib.sha256(token.encode()).hexdigest()[:24]}.json"


def _cached_counts(path: Path | None) -> dict | None:
    """The counts cached at ``path``; None where there are none, or a file not of their form (damaged,
    foreign): the table is read again."""
    import json

    if path is None:
        return None
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return cached if _well_formed(cached) else None


def _well_formed(counts: object) -> bool:
    """Whether ``counts`` has a table's counts' form: ``SUMMARY_COUNTS`` in order, a whole number of
    rows, lists of names as text (what JSON gives back as it was written)."""
    if not isinstance(counts, dict) or tuple(counts) != SUMMARY_COUNTS or type(counts["rows"]) is not int:
        return False
    return all(isinstance(names, list) and all(isinstance(name, str) for name in names)
               for names in (counts["kernel_names"], counts["gpu_names"]))


def _write_counts(path: Path, counts: dict) -> None:
    """``counts`` cached at ``path``, written whole; counts JSON would not give back as they are (a
    name that is not text) are not cached."""
    import json

    from gpuperf.files import write_cache_file

    if _well_formed(counts):
        write_cache_file(path, lambda temporary: temporary.write_text(json.dumps(counts), encoding="utf-8"))


def _summary_row(info: BundledDataset, counts: dict) -> dict:
    return {
        "name": info.name,
        "rows": counts["rows"],
        "kernels": len(counts["kernel_names"]),
        "gpus": len(counts["gpu_names"]),
        "kernel_names": counts["kernel_names"],
        "gpu_names": counts["gpu_names"],
        "file": info.file,
        "path": str((data_dir() / info.file).resolve()),
        "description": info.description,
        "units": info.units,
        "source": info.source,
        "repository": info.repository,
        "license": info.license,
    }
