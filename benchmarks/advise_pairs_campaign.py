"""Measure the stencil before/after variants behind gpuperf's generated optimization pairs.

Run with ``POCL_MAX_PTHREAD_COUNT=1 POCL_CPU_MAX_CU_COUNT=1`` (as the committed data was): pocl then
runs each kernel on one thread, which other processes on a small shared machine disturb far less.
Writes the campaign file ``benchmarks/advise_pairs.campaign.toml``, measures it on an OpenCL device
into an SQLite store (resumable: rerun to continue), then writes every measured point with its
static features to ``data/advise_pairs_pocl.csv.gz`` and the provenance next to it
(``data/advise_pairs_pocl.provenance.json``). Measured values are copied from the store unchanged.

    python benchmarks/advise_pairs_campaign.py [--device opencl:0] [--store benchmarks/advise_pairs.db]

Each stencil's variants at one size are timed interleaved (``cycles`` in the campaign's timing);
``cycle_times_s`` holds every point's per-cycle round medians (';'-separated, in cycle order) and
``cycle_group`` the cycles' identifier (the advisor pairs cycle by cycle only within one).

A repeat run into another store and file measures the same points again, e.g. to see how far the
speedups move between runs (``data/advise_pairs_pocl_repeat.csv.gz``):

    python benchmarks/advise_pairs_campaign.py --store /tmp/repeat.db --out data/advise_pairs_pocl_repeat.csv.gz
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "benchmarks" / "advise_pairs.campaign.toml"
OUT = ROOT / "data" / "advise_pairs_pocl.csv.gz"

STENCILS = ("stencil2d", "jacobi2d_9pt", "hotspot2d", "gradient")
SIZES = (512, 768, 1024)
LOCAL = ((16, 4), (32, 4), (16, 16))  # (local_x, local_y)
WORK = ((1, 1), (2, 1), (2, 2), (4, 1), (4, 4))  # (outputs_y, unroll)
# Each variant is timed in CYCLES rounds interleaved with the other variants of its stencil and size
# (gpuperf.measure.interleave): a pair's speedup is then the median of its per-cycle ratios, taken
# under the same machine state. Timed one after the other instead, the same pair's speedup moved by a
# median factor of 1.4 between two runs on an idle machine; interleaved in 25 cycles, by 1.05-1.10 (a
# busy machine), in 100 cycles by 1.02-1.03 (an idle one).
CYCLES = 100
MIN_REPEATS = 4  # launches per round: short rounds keep a pair's two rounds of one cycle close in time
# One pocl thread: timings of a 2-core machine shared with other work are far steadier on one core.
POCL_SETTINGS = ("POCL_MAX_PTHREAD_COUNT", "POCL_CPU_MAX_CU_COUNT")


def planned_points(sizes: tuple[int, ...] = SIZES) -> list[tuple[str, int]]:
    """(variant spec, size) of every planned point."""
    return [
        (f"{stencil}[local_x={lx},local_y={ly},outputs_y={outputs},prefetch={prefetch},unroll={unroll}]", size)
        for stencil, (lx, ly), (outputs, unroll), prefetch, size in itertools.product(
            STENCILS, LOCAL, WORK, (0, 1), sizes)
    ]


def campaign_text(cycles: int = CYCLES, min_repeats: int = MIN_REPEATS, sizes: tuple[int, ...] = SIZES) -> str:
    lines = [
        'name = "advise_pairs"',
        'device = "opencl:0"',
        "seed = 0",
        "verify = true",
        "",
        "[timing]",
        f"min_repeats = {min_repeats}",
        "min_time_s = 0.01",
        f"cycles = {cycles}",
        "",
    ]
    size_list = ", ".join(f"{{n = {s}, m = {s}}}" for s in sizes)
    for spec in dict.fromkeys(spec for spec, _ in planned_points(sizes)):
        lines += ["[[kernels]]", f'kernel = "{spec}"', f"sizes = [{size_list}]", ""]
    return "\n".join(lines)


KEEP = (
    "kernel", "variant", "gpu", "device", "source", "n", "m", "local_x", "local_y", "outputs_y", "prefetch", "unroll",
    "time_s", "time_s_min", "time_s_iqr", "repeats", "status", "cycle_times_s", "cycle_group",
)


def main() -> None:
    from gpuperf.decisions.advice_features import ADVICE_FEATURES
    from gpuperf.measure import load_campaign, run_campaign, store_table
    from gpuperf.datasets.provenance import write_provenance
    from gpuperf.measure.export import campaign_provenance

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--store", default=str(ROOT / "benchmarks" / "advise_pairs.db"))
    parser.add_argument("--out", default=str(OUT), help="the CSV to write (provenance next to it)")
    parser.add_argument("--cycles", type=int, default=CYCLES, help="interleaved cycles per point")
    parser.add_argument("--min-repeats", type=int, default=MIN_REPEATS, help="launches per round at least")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="n = m of each point, comma-separated (a GPU needs larger grids than pocl)")
    parser.add_argument("--campaign", default=str(CAMPAIGN), help="where to write the campaign file")
    args = parser.parse_args()
    sizes = tuple(int(size) for size in args.sizes.split(","))
    out = Path(args.out)
    if out.exists():  # a measured table is never overwritten (the bundled one is the default --out)
        raise SystemExit(f"--out {out} exists; name a new file, or move the old one away first")
    load_before = os.getloadavg()
    campaign = Path(args.campaign)
    campaign.write_text(campaign_text(args.cycles, args.min_repeats, sizes))
    report = run_campaign(load_campaign(campaign), args.store, device=args.device)
    print(json.dumps(report.to_dict(), indent=2))
    table = store_table(args.store, campaign="advise_pairs", cycle_times=True)
    planned = {spec for spec, _ in planned_points(sizes)}
    table = table[table["kernel_key"].isin(planned) & table["n"].isin(sizes)].copy()
    columns = [c for c in KEEP if c in table.columns] + [c for c in ADVICE_FEATURES if c in table.columns]
    table[columns].to_csv(out, index=False)
    record = campaign_provenance(args.store, "advise_pairs", POCL_SETTINGS)
    record |= {
        "command": "python benchmarks/advise_pairs_campaign.py " + " ".join(sys.argv[1:]),
        "campaign": campaign.name,
        "device": record["device"] or args.device,
        "load_average_1min": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)},
        "points": len(table), "ok": int((table["status"] == "ok").sum()),
    }
    provenance = write_provenance(out, record)
    print(f"wrote {out} ({len(table)} points) and {provenance}")


if __name__ == "__main__":
    main()
