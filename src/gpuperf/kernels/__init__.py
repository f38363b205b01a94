"""What runs: kernels, the catalog and variant spaces."""

from gpuperf.kernels.catalog import get_kernel, kernel_names
from gpuperf.kernels.kernel import Kernel

__all__ = ["Kernel", "get_kernel", "kernel_names"]
