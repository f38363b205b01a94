"""Measure a seeded sample of every stencil variant space on an OpenCL device, for exploring a kernel's
space with a model trained on the other kernels (the LIFT paper's setting).

Run with ``POCL_MAX_PTHREAD_COUNT=1 POCL_CPU_MAX_CU_COUNT=1`` on pocl (as the committed data was): one
pocl thread is far steadier on a small shared machine. Writes ``benchmarks/stencil_spaces.campaign.toml``
(``--per-space`` configurations drawn per space among those the space's cheap check accepts; the
campaign records any that loopy cannot build), measures it into an SQLite store (resumable: rerun to
continue), then writes every point with its static features to ``data/stencil_spaces_pocl.csv.gz`` and
the provenance next to it. Measured values are copied from the store unchanged.

    python benchmarks/stencil_space_campaign.py [--device opencl:0] [--per-space 64] [--size 1024]
                                                [--cycles 100] [--store FILE] [--out FILE] [--campaign FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "benchmarks" / "stencil_spaces.campaign.toml"
OUT = ROOT / "data" / "stencil_spaces_pocl.csv.gz"
NAME = "stencil_spaces"
POCL_SETTINGS = ("POCL_MAX_PTHREAD_COUNT", "POCL_CPU_MAX_CU_COUNT")
# A stencil's variants are timed in 100 interleaved cycles of short rounds (gpuperf.measure.interleave),
# so the machine's drift over the minutes a space takes does not reorder them; 1: one after the other.
# (100 cycles, as the advisor's pairs: there, two runs agreed on 86 % of the smallest effects' signs,
# against 73 % with 25.) Each point's per-cycle round medians are kept in ``cycle_times_s``.
CYCLES = 100


def sampled_specs(per_space: int, seed: int = 0) -> list[str]:
    """``per_space`` variant specs of each stencil space, drawn without replacement among the
    configurations its check accepts."""
    from gpuperf.kernels.space import get_space, space_names

    specs = []
    for position, name in enumerate(space_names()):
        space = get_space(name)
        accepted = [c for c in space.configurations() if space.check(c) is None]
        rng = np.random.default_rng([seed, position])
        for index in sorted(rng.choice(len(accepted), min(per_space, len(accepted)), replace=False)):
            specs.append(space.key(accepted[index]))
    return specs


def campaign_text(specs: list[str], size: int, cycles: int = CYCLES) -> str:
    timing = ["min_repeats = 10", "min_time_s = 0.05"] if cycles == 1 else [
        "min_repeats = 4", "min_time_s = 0.01", f"cycles = {cycles}"]
    lines = [f'name = "{NAME}"', 'device = "opencl:0"', "seed = 0", "verify = true", "", "[timing]", *timing, ""]
    for spec in specs:
        lines += ["[[kernels]]", f'kernel = "{spec}"', f"sizes = [{{n = {size}, m = {size}}}]", ""]
    return "\n".join(lines)


def main() -> None:
    from gpuperf.measure import load_campaign, run_campaign, store_table
    from gpuperf.datasets.provenance import write_provenance
    from gpuperf.measure.export import campaign_provenance

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="opencl:0")
    parser.add_argument("--store", default=str(ROOT / "benchmarks" / "stencil_spaces.db"))
    parser.add_argument("--per-space", type=int, default=64)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--cycles", type=int, default=CYCLES, help="interleaved cycles per point (1: none)")
    parser.add_argument("--campaign", default=str(CAMPAIGN), help="where to write the campaign file")
    args = parser.parse_args()
    campaign = Path(args.campaign).resolve()
    out = Path(args.out)
    if out.exists():  # a measured table is never overwritten (the bundled one is the default --out)
        raise SystemExit(f"--out {out} exists; name a new file, or move the old one away first")
    load_before = os.getloadavg()
    campaign.write_text(campaign_text(sampled_specs(args.per_space), args.size, args.cycles))
    report = run_campaign(load_campaign(campaign), args.store, device=args.device)
    print(json.dumps(report.to_dict(), indent=2))
    table = store_table(args.store, campaign=NAME, cycle_times=True)
    table.to_csv(out, index=False)
    provenance = campaign_provenance(args.store, NAME, POCL_SETTINGS)
    provenance |= {"command": "python benchmarks/stencil_space_campaign.py " + " ".join(sys.argv[1:]),
                   "campaign": campaign.relative_to(ROOT).as_posix() if campaign.is_relative_to(ROOT) else campaign.name, "points": len(table),
                   "load_average_1min": {"before": round(load_before[0], 2), "after": round(os.getloadavg()[0], 2)}}
    write_provenance(out, provenance)
    print(f"wrote {out} ({len(table)} points)")


if __name__ == "__main__":
    main()
