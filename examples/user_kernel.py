"""Describe and time your own loopy kernel: static features, then a verified timing on the local device.

A 3-point moving average, built with loopy at two work-group sizes, wrapped as a gpuperf
``Kernel`` (its size parameter and a NumPy reference the outputs are checked against). For each
variant it prints static features computed from the program alone (flops, global bytes, loads per
work-item, cache lines per warp access), then times it on OpenCL device ``opencl:0`` (pocl's CPU
device where there is no GPU) and prints the median time and the bandwidth it implies.

    python examples/user_kernel.py

On the command line the function makes its default variant (256 work-items a group):

    gpuperf features examples/user_kernel.py:moving_average -p n=1048576
"""

from __future__ import annotations

import loopy as lp
import numpy as np

from gpuperf.features import extract_features
from gpuperf.kernels import Kernel
from gpuperf.measure import TimingSettings, measure

SIZES = {"n": 1 << 20}
# Short timing rounds: enough for a steady median on a small kernel, seconds in all.
TIMING = TimingSettings(warmup=2, min_repeats=10, min_time_s=0.02)


def moving_average(work_group_size: int = 256) -> Kernel:
    """b[i] = (a[i] + a[i+1] + a[i+2]) / 3 for i < n, one work-item per output."""
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        "b[i] = (a[i] + a[i + 1] + a[i + 2]) / 3",
        [lp.GlobalArg("a", np.float32, shape="n + 2"), lp.GlobalArg("b", np.float32, shape="n"), "..."],
        assumptions=f"n >= {work_group_size} and n mod {work_group_size} = 0",
        name="moving_average",
        lang_version=(2018, 2),
    )
    program = lp.split_iname(program, "i", work_group_size, outer_tag="g.0", inner_tag="l.0")
    return Kernel(
        name="moving_average",
        program=program,
        params=("n",),
        reference=lambda inputs, sizes: {"b": (inputs["a"][:-2] + inputs["a"][1:-1] + inputs["a"][2:]) / 3},
        variant={"work_group_size": work_group_size},
    )


def main() -> dict[str, float]:
    """The measured median time (seconds) of each variant, by its key."""
    times = {}
    for work_group_size in (32, 256):
        kernel = moving_average(work_group_size)
        features = extract_features(kernel, SIZES)
        print(f"{kernel.key} at n={SIZES['n']}: {features['flops']:.0f} flops, "
              f"{features['global_bytes'] / 1e6:.1f} MB global traffic, "
              f"{features['global_loads_per_thread']:.0f} loads per work-item, "
              f"{features['cache_lines_per_warp_access']:.2f} cache lines per warp access")

        result = measure(kernel, SIZES, device="opencl:0", settings=TIMING)
        bandwidth = features["global_bytes"] / result.time_s / 1e9
        print(f"  {result.device}: median {result.time_s * 1e6:.1f} us over {result.repeats} runs "
              f"(IQR {result.time_s_iqr * 1e6:.1f} us), {bandwidth:.1f} GB/s, outputs verified: {result.verified}")
        times[kernel.key] = result.time_s
    return times


if __name__ == "__main__":
    main()
