"""Choose the launch geometry (threads per block, blocks) of a parallel loop under each policy.

For a grid-stride loop of a given trip count, registers per thread and shared memory per block,
``choose_geometry`` applies Lloyd et al.'s heuristic (short, ideal and long loops), LLVM's default (128 threads on NVIDIA, 256 on AMD),
libomptarget's NVIDIA rule, the occupancy-maximising block and a random-forest time model trained on
the bundled block-shape measurements (fitted once, some seconds, then read back from gpuperf's cache). Prints each policy's
choice on an NVIDIA H100 and an AMD MI300X (where libomptarget's NVIDIA rule does not apply) for
a short, a medium and a long loop.

    python examples/launch_geometry.py
"""

from __future__ import annotations

from gpuperf.decisions import POLICIES, choose_geometry, device_descriptor

GPUS = ("H100", "MI300X")
TRIPS = (100, 100_000, 10_000_000)
REGISTERS = 40  # per thread, e.g. from `gpuperf resources KERNEL --arch sm_90`
SHARED_MEMORY_BYTES = 0


def main() -> list[dict[str, object]]:
    """One row per GPU, trip count and policy: the chosen threads, blocks and loop class."""
    rows = []
    for gpu in GPUS:
        device = device_descriptor(gpu)
        print(f"{device.name}: {device.sms} {device.unit}s, warp {device.warp_size}, "
              f"{device.max_threads_per_sm} threads and {device.max_blocks_per_sm} blocks per {device.unit}")
        for trip in TRIPS:
            for policy in POLICIES:
                if policy == "libomptarget" and device.spec.vendor != "NVIDIA":
                    continue  # the NVIDIA plugin's rule
                geometry = choose_geometry(device, trip, registers=REGISTERS,
                                           shared_memory_bytes=SHARED_MEMORY_BYTES, policy=policy)
                print(f"  trip {trip:>10,}  {policy:<12} {geometry.threads:>5} threads x {geometry.blocks:>6} blocks"
                      f"  ({geometry.loop_class} loop)")
                rows.append({"gpu": device.name, "trip": trip, **geometry.as_dict()})
    return rows


if __name__ == "__main__":
    main()
