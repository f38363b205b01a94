"""Leave one GPU out on the Rodinia table by scaling another GPU's time of the same launch: an
experiment beside ``bench_rodinia.py``'s learned models, not one of gpuperf's scenarios.

    python benchmarks/bench_rodinia_scaled_reference.py

For a held-out GPU and a kernel, the reference is the training GPU (or the two) whose profiler
counters of the same launches (timing-derived ones excluded, as everywhere) lie nearest to the
held-out GPU's own: the GK110 Tesla K20's counters match the GK110 GTX Titan's more than the
GK110B Tesla K40's, for one. Its time is scaled by a law of the two GPUs' descriptors:

- ``same``: not at all; ``clock``: the ratio of clocks; ``clock_sms``: of clock x SMs;
- ``waves``: of clock x the launch's waves of blocks (blocks over SMs x resident blocks per SM);
- ``bandwidth``: of DRAM bandwidth; ``waves_bw``: the geometric mean of ``waves`` and ``bandwidth``.

Per kernel, the law and the number of references are chosen by an inner leave-one-GPU-out on the
training GPUs only (each predicted from the others), so nothing of the held-out GPU's times
enters. Prints the per-kernel MAPE of every law with the nearest reference, the nested choice per
(GPU, kernel), and the macro MAPE per GPU to set beside ``bench_rodinia.py``'s nested/select.
About 2 minutes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gpuperf.evaluation.reproduce import rodinia_table
from gpuperf.evaluation.tables import counter_columns

KEY = ["kernel", "input.size.1", "input.size.2", "grid.x", "grid.y", "block.x", "block.y"]
LAWS = ("same", "clock", "clock_sms", "waves", "bandwidth", "waves_bw")
DESCRIPTORS = ["gpu_clock_mhz", "gpu_sms", "gpu_memory_bandwidth_gbs", "gpu_max_threads_per_sm",
               "gpu_max_blocks_per_sm", "gpu_registers_per_sm", "gpu_shared_memory_per_sm_bytes"]


class Table:
    """The Rodinia launches, one row per (launch, GPU), with the counters compared between GPUs."""

    def __init__(self) -> None:
        table = rodinia_table()
        self.counters = [c for c in counter_columns(table) if c not in ("elapsed_cycles_sm", "active_cycles",
                                                                       "active_warps")]
        table = table.groupby([*KEY, "gpu"], as_index=False).median(numeric_only=True)
        self.gpus = sorted(table["gpu"].unique())
        self.kernels = sorted(table["kernel"].unique())
        self.descriptors = table.groupby("gpu")[DESCRIPTORS].first()
        self.rows = {group: part.set_index(KEY) for group, part in table.groupby(["kernel", "gpu"])}

    def waves(self, launches: pd.DataFrame, gpu: str) -> np.ndarray:
        """Waves of blocks each launch needs on ``gpu`` (resident blocks per SM by threads,
        registers, shared memory and the block limit)."""
        d = self.descriptors.loc[gpu]
        threads = launches["block.x"] * launches["block.y"]
        registers = launches["registers.per.thread"].clip(lower=1) * threads
        shared = launches["static.smem"]
        resident = np.minimum.reduce([
            np.full(len(launches), d.gpu_max_blocks_per_sm), d.gpu_max_threads_per_sm // threads,
            d.gpu_registers_per_sm // registers,
            np.where(shared > 0, d.gpu_shared_memory_per_sm_bytes // shared.clip(lower=1), np.inf)])
        blocks = launches["grid.x"] * launches["grid.y"]
        return np.ceil(blocks / (d.gpu_sms * np.maximum(resident, 1))).to_numpy()

    def scale(self, law: str, launches: pd.DataFrame, source: str, target: str) -> np.ndarray:
        """What a time on ``source`` is multiplied by to stand for ``target``'s."""
        s, t = self.descriptors.loc[source], self.descriptors.loc[target]
        clock = s.gpu_clock_mhz / t.gpu_clock_mhz
        bandwidth = s.gpu_memory_bandwidth_gbs / t.gpu_memory_bandwidth_gbs
        waves = clock * self.waves(launches, target) / self.waves(launches, source)
        return np.broadcast_to({
            "same": 1.0, "clock": clock, "clock_sms": clock * s.gpu_sms / t.gpu_sms, "waves": waves,
            "bandwidth": bandwidth, "waves_bw": np.sqrt(waves * bandwidth)}[law], (len(launches),))

    def distance(self, kernel: str, gpu: str, other: str) -> float:
        """Median over shared launches of the mean |log(1 + counter)| difference."""
        mine, theirs = self.rows[(kernel, gpu)], self.rows[(kernel, other)]
        shared = mine.index.intersection(theirs.index)
        if shared.empty:
            return np.inf
        a = np.log1p(mine.loc[shared, self.counters].clip(lower=0))
        b = np.log1p(theirs.loc[shared, self.counters].clip(lower=0))
        return float(np.median((a - b).abs().mean(axis=1)))

    def predict(self, kernel: str, gpu: str, training: list[str], law: str, references: int) -> pd.Series:
        mine = self.rows[(kernel, gpu)]
        nearest = sorted((self.distance(kernel, gpu, o), o) for o in training if (kernel, o) in self.rows)
        logs = []
        for _, other in nearest[:references]:
            theirs = self.rows[(kernel, other)]
            shared = mine.index.intersection(theirs.index)
            scaled = theirs.loc[shared, "time_s"] * self.scale(law, theirs.loc[shared].reset_index(), other, gpu)
            logs.append(np.log(scaled.reindex(mine.index)))
        return np.exp(pd.concat(logs, axis=1).mean(axis=1))

    def mape(self, kernel: str, gpu: str, predicted: pd.Series) -> float:
        measured = self.rows[(kernel, gpu)]["time_s"]
        known = predicted.notna()
        return float((np.abs(measured[known] - predicted[known]) / measured[known]).mean())


def main() -> None:
    pd.set_option("display.width", 200)
    data = Table()
    options = [(law, n) for law in LAWS for n in (1, 2)]
    every, chosen = [], []
    for gpu in data.gpus:
        training = [g for g in data.gpus if g != gpu]
        for kernel in (k for k in data.kernels if (k, gpu) in data.rows):
            for law in LAWS:
                every.append({"gpu": gpu, "kernel": kernel, "law": law,
                              "mape": data.mape(kernel, gpu, data.predict(kernel, gpu, training, law, 1))})
            inner = {}
            for option in options:  # each training GPU predicted from the other training GPUs
                scores = [data.mape(kernel, held, data.predict(kernel, held, [g for g in training if g != held],
                                                               *option))
                          for held in training if (kernel, held) in data.rows]
                inner[option] = float(np.mean(scores))
            best = min(inner, key=inner.get)
            chosen.append({"gpu": gpu, "kernel": kernel, "choice": f"{best[0]}/{best[1]}",
                           "inner_mape": inner[best], "mape": data.mape(kernel, gpu, data.predict(kernel, gpu,
                                                                                                   training, *best))})
    print("== per-kernel MAPE of each law, nearest reference by counters")
    print(pd.DataFrame(every).pivot_table(index=["gpu", "kernel"], columns="law", values="mape").round(3).to_string())
    chosen = pd.DataFrame(chosen)
    print("\n== law and references chosen per kernel by inner leave-one-GPU-out on the training GPUs")
    print(chosen.round(3).to_string(index=False))
    print("\n== macro MAPE per held-out GPU (to set beside bench_rodinia.py's nested/select)")
    print(chosen.groupby("gpu")["mape"].mean().round(3).to_string())


if __name__ == "__main__":
    main()
