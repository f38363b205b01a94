"""What the CUDA launch gate changes in measured times (needs an NVIDIA GPU and CuPy).

    python benchmarks/bench_cuda_timer.py [--device cuda:0] [--rounds 5] [--launches 200] [--out FILE.csv]

For catalog kernels from a few microseconds to a few milliseconds, each launch timed three ways,
interleaved round by round so that all three see the same GPU state:

- ``gated``: start and end events around each launch, the batch enqueued behind the launch gate
  (gpuperf's timer on CUDA, ``cuda_event_gated``);
- ``span``: the same events without the gate (``cuda_event_span``, gpuperf's timer before the gate):
  where the host enqueues more slowly than the GPU runs, a launch's events also span the wait for
  the host;
- ``back_to_back``: one pair of events around the whole gated batch, divided by its launches (the
  launches' throughput, with no event between them).

Prints the median of each method per kernel and size and the ratio span / gated. A gate that works
gives ``gated`` at most ``span`` everywhere, far below it for the shortest kernels, and the same
for kernels much longer than a launch.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

CASES = [
    ("empty", {"n": 4096}),
    ("empty", {"n": 1048576}),
    ("vector_copy", {"n": 65536}),
    ("vector_copy", {"n": 1048576}),
    ("vector_copy", {"n": 16777216}),
    ("vector_copy", {"n": 134217728}),
    ("arith_f32_add", {"n": 65536, "k": 64}),
    ("arith_f32_add", {"n": 1048576, "k": 256}),
]


def back_to_back(launch, count: int) -> float:  # noqa: ANN001 - a gpuperf.measure.cuda.CudaLaunch
    """Mean device time per launch of ``count`` gated launches between one pair of events."""
    device = launch.compiled.device
    cupy = device.cupy
    with device.gpu:
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        device.gate.close()
        try:
            start.record()
            for _ in range(count):
                for handle, grid, block, args in launch.calls:
                    handle(grid, block, args)
            end.record()
        finally:
            device.gate.open()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) * 1e-3 / count


def measure_case(device, name: str, sizes: dict[str, int], rounds: int, launches: int) -> list[dict]:  # noqa: ANN001
    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.measure.timing import prepare

    compiled = device.compile(get_kernel(name))
    prepared = prepare(compiled, sizes, verify=True)
    launch = prepared.launch
    samples: dict[str, list[float]] = {"gated": [], "span": [], "back_to_back": []}
    try:
        launch.timed_batch(10, gated=True)  # warm-up
        for _ in range(rounds):
            samples["gated"] += launch.timed_batch(launches, gated=True)
            samples["span"] += launch.timed_batch(launches, gated=False)
            samples["back_to_back"].append(back_to_back(launch, launches))
    finally:
        launch.close()
    label = ",".join(f"{k}={v}" for k, v in sizes.items())
    return [{"kernel": name, "sizes": label, "method": method, "median_s": float(np.median(values)),
             "min_s": float(np.min(values)), "samples": len(values), "verified": prepared.verified}
            for method, values in samples.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--out", help="write every method's figures as CSV")
    args = parser.parse_args(argv)

    from gpuperf.measure.devices import open_device

    device = open_device(args.device)
    if getattr(device, "gate", None) is None:
        reason = getattr(device, "gate_failure", None) or "not a CUDA device"
        print(f"{args.device}: no launch gate ({reason})", file=sys.stderr)
        return 1
    print(f"device {args.device}: {device.provenance()}")
    rows = []
    for name, sizes in CASES:
        rows += measure_case(device, name, sizes, args.rounds, args.launches)
    table = pd.DataFrame(rows)
    if args.out:
        table.to_csv(args.out, index=False)
    wide = table.pivot_table(index=["kernel", "sizes"], columns="method", values="median_s", sort=False)
    wide["span_over_gated"] = wide["span"] / wide["gated"]
    with pd.option_context("display.float_format", "{:.3e}".format, "display.width", 140):
        print(wide[["gated", "span", "back_to_back", "span_over_gated"]].to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
