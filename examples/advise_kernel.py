"""Ask the optimization advisor what to change in a kernel, then check its suggestion by timing it.

A variant of the catalog's 9-point Jacobi stencil (16 x 4 work-groups) is described by its static
features; for each optimization that applies, speedup models trained on measured before/after
pairs predict time_before / time_after, with a confidence (how often such predictions had the
right sign on held-out pairs). The advice is for the local OpenCL device (``opencl:0``, pocl's CPU
device where there is no GPU; a device whose own pairs were never measured uses those of the
devices that were, with a note). Each suggestion names the variant to build; both are then timed
on the device. The first run fits the speedup models (about half a minute) and caches them under
``$GPUPERF_CACHE_DIR/advise``; later runs take seconds.

    python examples/advise_kernel.py
"""

from __future__ import annotations

from gpuperf.decisions import advise_kernel
from gpuperf.kernels import get_kernel
from gpuperf.measure import TimingSettings, measure

KERNEL = "jacobi2d_9pt[local_x=16,local_y=4,outputs_y=1]"
SIZES = {"n": 1024, "m": 1024}
DEVICE = "opencl:0"
TIMING = TimingSettings(min_repeats=10, min_time_s=0.05)


def main() -> dict[str, float]:
    """The top suggestion's predicted speedup and the speedup measured on the device (empty if none)."""
    kernel = get_kernel(KERNEL)
    advice = advise_kernel(kernel, SIZES, device=DEVICE)
    print(f"{kernel.key} at n={SIZES['n']}, m={SIZES['m']} on {DEVICE}:")
    for assessed in advice.assessed:
        print(f"  {assessed.optimization:<22} predicted {assessed.predicted_speedup:.2f}x, "
              f"confidence {assessed.confidence:.2f}")
    for name, reason in advice.skipped:
        print(f"  {name:<22} {reason}")
    if not advice.suggestions:
        print("no suggestion above the threshold with enough confidence")
        return {}

    top = advice.suggestions[0]
    print(f"suggested: {top.title} ({top.apply['summary']})")
    print(f"  why: {top.explanation['summary']}")
    after = get_kernel(top.apply["variant"])
    before_s = measure(kernel, SIZES, device=DEVICE, settings=TIMING).time_s
    after_s = measure(after, SIZES, device=DEVICE, settings=TIMING).time_s
    print(f"  measured: {before_s * 1e6:.0f} us -> {after_s * 1e6:.0f} us with {after.key}, "
          f"{before_s / after_s:.2f}x (predicted {top.predicted_speedup:.2f}x)")
    return {"predicted_speedup": top.predicted_speedup, "measured_speedup": before_s / after_s}


if __name__ == "__main__":
    main()
