"""gpuperf's static features against an H200's hardware counters (data/sector_profile_h200.csv.gz).

For each group of cases (catalog kernels; stencil variants without and with local-memory prefetch):
global load and store sectors per request (gpuperf: the LIFT paper's sectors per warp access,
averaged over the warp requests; ncu: L1TEX sectors / requests), warp-level requests per launch
(gpuperf: warps with a lane making the access, each pass of a fetch loop with the lanes its bounds
leave on), the same requests scaled to the machine code's global load/store instructions where none
sits in a loop (``*_requests_compiled``: NVRTC's cubin disassembled by nvdisasm), NVRTC registers per
thread and the theoretical occupancy. "ratio" is gpuperf / measured; "within" counts cases within 1 % and 10 %.

    python benchmarks/bench_static_counters.py           # static features computed now (about 3 minutes the first time; the compiled kernels are cached)
    python benchmarks/bench_static_counters.py --stored  # the static features stored beside the counters
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
TABLE = ROOT / "data" / "sector_profile_h200.csv.gz"
MEASURED = {
    "ld_sectors_per_request": ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
    "st_sectors_per_request": ("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
    "ld_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", None),
    "st_requests": ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", None),
    "ld_requests_compiled": ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", None),
    "st_requests_compiled": ("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", None),
}


def group_of(row: pd.Series) -> str:
    if row["category"] != "stencil_variant":
        return "catalog kernels"
    return "variants, prefetch" if "prefetch=1" in row["spec"] else "variants, no prefetch"


def measured(table: pd.DataFrame, name: str) -> pd.Series:
    top, bottom = MEASURED[name]
    return table[top] / table[bottom] if bottom else table[top]


def compared(table: pd.DataFrame) -> pd.DataFrame:
    """One row per group and quantity: cases, within 1 % / 10 %, median and range of the ratio."""
    rows = []
    groups = table.apply(group_of, axis=1)
    for group in ("catalog kernels", "variants, no prefetch", "variants, prefetch"):
        part = table[groups == group]
        quantities = {name: part[f"static_{name}"] / measured(part, name) for name in MEASURED
                      if f"static_{name}" in part}
        quantities["registers"] = part["static_registers"] / part["launch__registers_per_thread"]
        quantities["occupancy"] = 100 * part["static_occupancy"] / part["sm__maximum_warps_per_active_cycle_pct"]
        for name, ratio in quantities.items():
            ratio = ratio.replace([np.inf, -np.inf], np.nan).dropna()
            if not len(ratio):
                continue
            rows.append({"group": group, "quantity": name, "cases": len(ratio),
                         "within 1 %": int(((ratio - 1).abs() <= 0.01).sum()),
                         "within 10 %": int(((ratio - 1).abs() <= 0.10).sum()),
                         "median ratio": round(float(ratio.median()), 3),
                         "range": f"{ratio.min():.2f}-{ratio.max():.2f}"})
    return pd.DataFrame(rows)


def live_static(table: pd.DataFrame) -> pd.DataFrame:
    """The table with its static columns computed by this checkout's gpuperf."""
    from sector_profile import static_features

    fresh = pd.DataFrame([static_features(spec, json.loads(sizes))
                          for spec, sizes in zip(table["spec"], table["sizes"])], index=table.index)
    return table.assign(**{column: fresh[column] for column in fresh.columns})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", action="store_true", help="use the static features stored in the table")
    parser.add_argument("--table", type=Path, default=TABLE)
    args = parser.parse_args()
    table = pd.read_csv(args.table)
    if not args.stored:
        table = live_static(table)
    print(f"{args.table.name}: {len(table)} launches, static features "
          f"{'as stored' if args.stored else 'computed now'}\n")
    print(compared(table).to_string(index=False))
    catalog = table[table["category"] != "stencil_variant"]
    off = catalog[(catalog["static_ld_requests"] / measured(catalog, "ld_requests") - 1).abs() > 0.1]
    if len(off):
        print("\ncatalog kernels whose load requests differ by more than 10 % (gpuperf counts each load in the "
              "source; the compiler loads a repeated element once: ld_requests_compiled above counts the machine code's "
              "loads):")
        print(off[["spec", "static_ld_requests", MEASURED["ld_requests"][0]]].to_string(index=False))


if __name__ == "__main__":
    main()
