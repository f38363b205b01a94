"""Price a job on a GPU it has barely run on, from its times on other GPUs.

A scheduler has a job's launches (the Rodinia kernels of Amaris et al.'s table) timed on six GPUs
and times one launch of each kernel on a Tesla K20. Every other launch's K20 time is predicted as
``gpuperf predict-gpu`` predicts it: each other GPU's time of the launch, scaled by its ratio to the
K20 on the launch both timed, averaged geometrically. The K20's real times, set aside, score it.

    python examples/price_on_another_gpu.py
"""

from __future__ import annotations

import pandas as pd

from gpuperf.datasets import load_dataset
from gpuperf.models import times_on_gpu

TARGET = "Tesla K20"
LAUNCH = ["input.size.1", "input.size.2", "grid.x", "grid.y", "block.x", "block.y"]  # beside kernel


def main() -> dict[str, float]:
    """Per kernel, the MAPE of the K20 times predicted from one launch timed on it (also printed)."""
    table = load_dataset("rodinia_nvprof")
    table = table[table["status"] == "ok"]
    on_target = table[table["gpu"] == TARGET]
    # The one launch per kernel the scheduler times: the middle one by its time on the K20.
    place = on_target.groupby("kernel")["time_s"].rank(method="first")
    count = on_target.groupby("kernel")["time_s"].transform("size")
    middle = on_target[place == count // 2 + 1]
    known = pd.concat([table[table["gpu"] != TARGET], middle])
    result = times_on_gpu(known, TARGET, LAUNCH, "rodinia_nvprof")

    actual = on_target.groupby(["kernel", *LAUNCH], dropna=False)["time_s"].median().rename("measured")
    scored = result.predicted.join(actual, on=["kernel", *LAUNCH], how="inner")
    scored["error"] = (scored["predicted_time_s"] - scored["measured"]).abs() / scored["measured"]
    per_kernel = scored.groupby("kernel")["error"].mean()
    print(f"{TARGET}: {len(scored)} launches predicted from {len(middle)} timed on it (one per kernel)")
    print(per_kernel.rename("MAPE").to_string(float_format="{:.3f}".format))
    print(f"per-kernel MAPE, mean over kernels: {per_kernel.mean():.3f}")
    return per_kernel.to_dict()


if __name__ == "__main__":
    main()
