"""What runs: kernels, the catalog and variant spaces."""

from gpuperf.kernels.catalog import get_kernel, kernel_names
from gpuperf.kernels.kernel import Kernel
from gpuperf.kernels.space import VariantSpace, get_space, space_names

__all__ = ["Kernel", "VariantSpace", "get_kernel", "get_space", "kernel_names", "space_names"]
