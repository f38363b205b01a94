"""Drive gpuperf's guided search as an ask/tell loop, as an autotuner would.

The GEMM tuning space (CLBlast's 15 parameters) of the bundled Schoonhoven et al. table, measured on
7 GPUs: the Tesla K20 is the GPU being tuned, and the other 6 GPUs' measurements of the same space
are the training data. Here each "measurement" looks up the K20's recorded time, so the run
replays what a real tuner would see (a real tuner compiles and times the configuration instead,
and stops at its budget). Prints how many evaluations reached 90 % of the best against random
order's exact expectation: the search picks exactly what ``gpuperf explore`` simulates.

    python examples/guided_search.py
"""

from __future__ import annotations

import numpy as np

from gpuperf.datasets import load_dataset
from gpuperf.decisions import GuidedSearch, normalised_performance, random_expected_evals

GPU = "Tesla K20"
PARAMS = ["MWG", "NWG", "KWG", "MDIMC", "NDIMC", "MDIMA", "NDIMB", "KWI", "VWM", "VWN", "STRM", "STRN", "SA", "SB",
          "PRECISION"]  # in any order: the search picks the same
BUDGET = 40


def main() -> dict[str, float | None]:
    """The evaluations the search and random order need to reach 90 % of the best, and the space size."""
    table = load_dataset("schoonhoven_spaces")
    gemm = table[table["kernel"] == "GEMM"]
    space = gemm[gemm["gpu"] == GPU].reset_index(drop=True)
    others = gemm[gemm["gpu"] != GPU]  # never the tuned GPU's own rows
    times = space["time_s"].where(space["status"] == "ok").to_numpy(dtype=float)  # NaN: failed
    best = np.nanmin(times)

    search = GuidedSearch(space[PARAMS], PARAMS, train=others, gpu=GPU)
    evals_to_90 = None
    for evaluation in range(1, BUDGET + 1):
        index = search.ask()
        time = times[index]  # a real tuner compiles and times configuration `index` here
        search.tell(index, None if np.isnan(time) else float(time))
        if time <= best / 0.9:  # within 90 % of the best: known here only because the space was measured
            evals_to_90 = evaluation
            break

    chosen = search.best()
    config = ", ".join(f"{name}={space.loc[chosen, name]:g}" for name in PARAMS)
    print(f"GEMM on {GPU}: {len(space)} configurations, trained on {others['gpu'].nunique()} other GPUs")
    print(f"best found after {len(search.measured)} evaluations: {times[chosen] * 1e3:.3f} ms "
          f"({best / times[chosen]:.0%} of the best, {best * 1e3:.3f} ms) with {config}")
    random_90 = random_expected_evals(normalised_performance(times), 0.9)
    print(f"evaluations to reach 90 % of the best: guided {evals_to_90}, random order {random_90:.1f} (expected)")
    return {"evals_to_90": evals_to_90, "random_expected_evals_to_90": random_90, "configurations": len(space)}


if __name__ == "__main__":
    main()
