"""Fit a performance model on a bundled table and judge it on GPUs it never saw.

Loads the Rodinia nvprof table (Amaris et al.: profiler counters of Rodinia kernels on 7 GPUs),
joins each GPU's descriptor, and holds out each GPU in turn: a scikit-learn Pipeline (Amaris et
al.'s Spearman + clustering feature selection, then a random forest on the log2 of the time) is
fitted on the other GPUs and predicts the held-out one. Prints MAPE and the geometric-mean
relative error per GPU, then fits the model on every GPU's launches, saves it (JSON, no pickle) and
loads it back, checking its feature names.

    python examples/fit_model.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from sklearn.compose import ColumnTransformer
from sklearn.ensemble import RandomForestRegressor
from sklearn.pipeline import Pipeline

from gpuperf.datasets import load_dataset
from gpuperf.evaluation import counter_columns, join_gpu_descriptors, leave_one_gpu_out
from gpuperf.models import LogTarget, SpearmanClusterSelector, load_model, save_model

LAUNCH = ["grid.x", "grid.y", "block.x", "block.y", "registers.per.thread", "static.smem"]
GPU = ["gpu_sms", "gpu_cores", "gpu_clock_mhz", "gpu_memory_bandwidth_gbs", "gpu_peak_f32_gflops"]
ROWS_PER_CELL = 200  # training rows per (kernel, GPU): lud_perimeter alone has 42 000 launches


def make_estimator(counters: list[str]) -> LogTarget:
    """Select at most 8 of the launch and counter columns; GPU descriptor columns pass through."""
    select = ColumnTransformer([("select", SpearmanClusterSelector(k=8), LAUNCH + counters)],
                               remainder="passthrough", verbose_feature_names_out=False)
    forest = RandomForestRegressor(n_estimators=50, max_features=3, random_state=0, n_jobs=1)
    return LogTarget(Pipeline([("select", select), ("forest", forest)]))


def main() -> dict[str, float]:
    """Per held-out GPU, the MAPE of its predicted times (also printed, with the GMRE)."""
    table = join_gpu_descriptors(load_dataset("rodinia_nvprof"))
    counters = counter_columns(table)  # profiler counters, minus rates and cycles (the time in disguise)
    features = LAUNCH + counters + GPU
    estimator = make_estimator(counters)

    evaluation = leave_one_gpu_out(estimator, table, features, max_train_rows=ROWS_PER_CELL)
    per_gpu = evaluation.per_group
    print(per_gpu[["n", "mape", "gmre"]].to_string(float_format="{:.3f}".format))
    print(f"overall: MAPE {evaluation.overall['mape']:.3f}, GMRE {evaluation.overall['gmre']:.3f}")

    training = table.sample(frac=1, random_state=0).groupby(["kernel", "gpu"]).head(ROWS_PER_CELL)
    model = estimator.fit(training[features], training["time_s"])
    chosen = model.regressor_.named_steps["select"].get_feature_names_out()
    print(f"fitted on {len(training)} launches of every GPU; features used: {', '.join(chosen)}")
    with tempfile.TemporaryDirectory() as folder:
        path = save_model(model, Path(folder) / "rodinia_forest.json")
        loaded = load_model(path, feature_names=features)  # a different column list would be refused
        predicted = loaded.predict(table[features].iloc[:3]) * 1e6
        measured = table["time_s"].iloc[:3].to_numpy() * 1e6
        print(f"saved and reloaded {path.name}: first launches predicted {predicted.round(1)} us, "
              f"measured {measured.round(1)} us")
    return per_gpu["mape"].to_dict()


if __name__ == "__main__":
    main()
