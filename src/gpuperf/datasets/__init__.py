"""gpuperf.datasets: the dataset shape, the bundled tables of real measurements, and importers.

- ``load_dataset(name)``, ``dataset_summary()``, ``dataset_names()``: the bundled tables;
- ``read_kernel_tuner_cache`` / ``write_kernel_tuner_cache``: Kernel Tuner caches;
- ``import_nvprof``, ``import_ncu``: profiler CSVs; ``import_file(format, path)`` by format name.
"""

from gpuperf.datasets.bundled import BUNDLED, dataset_info, dataset_names, dataset_summary, load_dataset
from gpuperf.datasets.importers import IMPORTERS, import_file, write_dataset_csv
from gpuperf.datasets.kernel_tuner import read_kernel_tuner_cache, write_kernel_tuner_cache
from gpuperf.datasets.ncu import import_ncu
from gpuperf.datasets.nvprof import import_nvprof
from gpuperf.datasets.schema import KEY_COLUMNS, OK, STATUS, TARGET, check_dataset

__all__ = [
    "BUNDLED", "IMPORTERS", "KEY_COLUMNS", "OK", "STATUS", "TARGET", "check_dataset", "dataset_info",
    "dataset_names", "dataset_summary", "import_file", "import_ncu", "import_nvprof", "load_dataset",
    "read_kernel_tuner_cache", "write_dataset_csv", "write_kernel_tuner_cache",
]
