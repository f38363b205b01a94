"""Measurement harness figures on this machine's OpenCL device.

1. Harness overhead per timed repeat for a tiny kernel: wall time of the timed round minus the
   device-side kernel time, divided by the repeats (target < 2 ms).
2. Campaign throughput over a variant space (default: the first 200 variants of jacobi2d_5pt at
   1024 x 1024): campaign wall time against the summed compile and kernel times (target <= 1.5x).

    python benchmarks/bench_measure.py [--space jacobi2d_5pt] [--limit 200] [--size 1024] [--device opencl:0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from gpuperf.measure import TimingSettings, load_campaign, measure, open_device, run_campaign


def harness_overhead(device: str) -> None:
    print("== harness overhead per timed repeat ==")
    settings = TimingSettings(warmup=5, min_repeats=500, min_time_s=0.0, max_repeats=500, max_retries=0)
    for n in (256, 2**16, 2**20):
        m = measure("vector_copy", {"n": n}, device=device, settings=settings)
        per_repeat = m.round_wall_s / m.repeats
        kernel_mean = sum(m.samples) / m.repeats
        overhead = per_repeat - kernel_mean
        print(f"vector_copy n={n:>8}: {m.repeats} repeats, kernel median {m.time_s * 1e6:9.1f} us, "
              f"wall per repeat {per_repeat * 1e6:9.1f} us, overhead {overhead * 1e6:7.1f} us "
              f"({'meets' if overhead < 2e-3 else 'MISSES'} < 2 ms)")


def campaign_throughput(space: str, limit: int, size: int, device: str) -> None:
    print(f"== campaign throughput: {space}, {limit} variants, n = m = {size} ==")
    folder = Path(tempfile.mkdtemp(prefix="gpuperf-bench-"))
    path = folder / "bench.toml"
    path.write_text(
        f'name = "bench"\ndevice = "{device}"\n'
        f'[[spaces]]\nspace = "{space}"\nlimit = {limit}\nsizes = [{{n = {size}, m = {size}}}]\n'
    )
    start = time.perf_counter()
    campaign = load_campaign(path)
    load_s = time.perf_counter() - start
    report = run_campaign(campaign, folder / "store.sqlite", progress=False)
    busy = report.compile_s + report.first_launch_s + report.kernel_s
    points = report.measured + sum(report.failed.values())
    other = report.wall_s - busy
    print(f"variants built and planned in {load_s:.1f} s; {points} points: {report.measured} measured, "
          f"failed {report.failed or 'none'}")
    print(f"campaign wall {report.wall_s:.1f} s = build {report.compile_s:.1f} s + first-launch JIT "
          f"{report.first_launch_s:.1f} s + kernel {report.kernel_s:.1f} s + other {other:.1f} s "
          f"({other / max(points, 1) * 1e3:.0f} ms per point)")
    ratio = report.wall_s / busy
    print(f"wall / (compile + kernel) = {ratio:.2f} ({'meets' if ratio <= 1.5 else 'MISSES'} <= 1.5), "
          f"compile = build + the driver's compilation at the first launch; "
          f"counting that JIT as harness time instead: {report.wall_s / (report.compile_s + report.kernel_s):.2f}; "
          f"including building the variants: {(report.wall_s + load_s) / busy:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--space", default="jacobi2d_5pt")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--device", default="opencl:0")
    args = parser.parse_args()
    print(f"device {open_device(args.device).name}: {open_device(args.device).provenance()['device_name']}")
    harness_overhead(args.device)
    campaign_throughput(args.space, args.limit, args.size, args.device)


if __name__ == "__main__":
    main()
