"""Launch-geometry policies on a measured (threads, blocks) sweep of grid-stride parallel loops.

    python benchmarks/bench_geometry_sweep.py                       # judge the bundled H100, H200 and pocl sweeps
    python benchmarks/bench_geometry_sweep.py --table SWEEP.csv.gz  # judge another (repeatable)
    python benchmarks/bench_geometry_sweep.py --measure [--device opencl:0] [--threads 2]
        [--trips 1000,100000,1000000] [--cycles 15] --out NEW.csv.gz   # measure one (never overwrites)

For each loop (saxpy, a degree-32 polynomial) and trip count: every policy's exact pick (threads and
blocks) and the best measured geometry; per policy the geometric-mean speedup over LLVM's default
(128 threads, one iteration per thread) and the share of choices within 10 % of the best, per trip
count and overall; the model policy is trained on the other loop's sweep. Then each policy's cost
per call against the loops' times (the sweep's median and its fastest point). ``--threads`` sets
POCL_MAX_PTHREAD_COUNT for a pocl CPU device before OpenCL starts: pocl then reports that many
compute units, which the CPU descriptor counts as SMs.
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[1] / "data"
BUNDLED = [DATA / "geometry_sweep_h100.csv.gz", DATA / "geometry_sweep_h200.csv.gz", DATA / "geometry_sweep_h200_long.csv.gz",
           DATA / "geometry_sweep_pocl.csv.gz"]  # judged by default


def measure(args) -> Path:
    if args.threads:
        os.environ["POCL_MAX_PTHREAD_COUNT"] = str(args.threads)
    from rich.progress import Progress

    from gpuperf.decisions.geometry_sweep import measure_sweep, measured_device_descriptor, sweep_settings
    from gpuperf.measure.devices import open_device
    from gpuperf.datasets.provenance import write_provenance
    from gpuperf.measure.timing import provenance

    out = Path(args.out)
    if out.exists():  # a measured table is never overwritten
        raise SystemExit(f"--out {out} exists; name a new file to measure into")
    device = open_device(args.device)
    descriptor = measured_device_descriptor(device)
    settings = sweep_settings(args.cycles)
    trips = [int(t) for t in args.trips.split(",")]
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    with Progress(transient=True) as bar:
        task = bar.add_task("sweep", total=None)
        table = measure_sweep(device, ["saxpy", "polynomial"], trips, descriptor, settings,
                              progress=lambda done, total: bar.update(task, completed=done, total=total))
    table.to_csv(out, index=False)
    record = {
        "what": "grid-stride saxpy and degree-32 polynomial loops over a (threads, blocks) grid "
                "(gpuperf.decisions.geometry_sweep), every output verified against NumPy",
        "command": "python benchmarks/bench_geometry_sweep.py " + " ".join(sys.argv[1:]),
        "pocl_max_pthread_count": os.environ.get("POCL_MAX_PTHREAD_COUNT"),
        "load_average_at_start": os.getloadavg(),
        "measured_from": started,
        "measured_to": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "descriptor": descriptor.as_dict(),
        "provenance": provenance(device, "kernel_event", settings),
    }
    write_provenance(out, {**record, "device": record["provenance"]["device_name"]})
    print(f"measured {len(table)} points ({(table['status'] != 'ok').sum()} failed) -> {out}")
    return out


def _versus_llvm(row, policy: str) -> str:
    """The pick's speedup over LLVM's, or why there is none."""
    if row.get(f"{policy}_failed", False):
        return "failed"
    if np.isnan(row["llvm"]):
        return "no llvm"
    return "unmeasured" if np.isnan(row[policy]) else f"{row['llvm'] / row[policy]:4.2f}x"


def judge(path: Path) -> None:
    import pandas as pd

    from gpuperf.decisions.geometry import RULES, KernelDescriptor
    from gpuperf.decisions.geometry_sweep import (
        figure_labels, sweep_choices, sweep_figures, sweep_summary, table_descriptor, unjudged_notes,
    )

    table = pd.read_csv(path)
    descriptor = table_descriptor(table, str(path))
    choices = sweep_choices(table, descriptor, str(path))
    print(f"===== {path.name} =====")
    for note in unjudged_notes(choices, path.name):  # the notes gpuperf geometry-sweep gives
        print(f"note: {note}")
    units = f"{descriptor.unit}s" if descriptor.spec is not None else "compute units"  # a CPU's: no GPU spec
    print(f"device: {descriptor.name} ({descriptor.sms} {units}, up to {descriptor.max_threads_per_block} "
          f"threads per block); {len(table)} points")
    policies = [c for c in ("llvm", "libomptarget", "heuristic", "occupancy", "model", "best") if c in choices]
    print(f"\n{'loop, trip':30s} {'points':>6s} " + " ".join(f"{p:>17s}" for p in policies))
    for _, row in choices.iterrows():
        cells = [f"{row[p + '_threads']}x{row[p + '_blocks']} {_versus_llvm(row, p)}" for p in policies]
        print(f"{row['group']:30s} {row['points']:6d} " + " ".join(f"{c:>17s}" for c in cells))
    print("\n(threads x blocks, then the speedup over llvm's pick, or failed; points: the geometries measured)")
    print("\n== per trip count and overall: speedup over llvm, choices within 10 % of the best ==")
    figures = figure_labels(sweep_figures(choices))
    print(figures[~figures["scope"].str.startswith("loop_")].to_string(index=False))
    print("\n== per policy ==")
    print(sweep_summary(choices).to_string(float_format=lambda v: f"{v:.3f}"))
    kernel = KernelDescriptor(1_000_000)
    ok = table.loc[table["status"] == "ok", "time_s"]
    median_us, fastest_us = float(np.median(ok)) * 1e6, float(ok.min()) * 1e6
    print(f"\n== cost per call against the sweep's median loop time ({median_us:.1f} us) and its fastest "
          f"({fastest_us:.2f} us) ==")
    for name, rule in RULES.items():
        best = min(timeit.repeat(lambda: rule(descriptor, kernel), number=20_000, repeat=5)) / 20_000 * 1e6
        print(f"  {name:13s} {best:7.3f} us per call ({best / median_us:.1e} of the median loop, "
              f"{best / fastest_us:.1e} of the fastest)")
    print()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", action="store_true", help="measure a sweep into --out first, then judge it")
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--threads", type=int, default=2, help="POCL_MAX_PTHREAD_COUNT (0: leave as is)")
    parser.add_argument("--trips", default="1000,100000,1000000")
    parser.add_argument("--cycles", type=int, default=15, help="interleaved cycles per (loop, trip) group")
    parser.add_argument("--out", help="with --measure, the new file to measure into (without, a sweep to judge)")
    parser.add_argument("--table", action="append", default=[],
                        help="a measured sweep to judge (repeatable; default the bundled H100, H200 and pocl sweeps)")
    args = parser.parse_args()
    if args.measure:
        if not args.out:
            parser.error("--measure needs --out NEW.csv.gz (a measured table is never overwritten)")
        paths = [measure(args)]
    else:
        paths = [Path(p) for p in args.table + ([args.out] if args.out else [])] or BUNDLED
    for path in paths:
        judge(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
