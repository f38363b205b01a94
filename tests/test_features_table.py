"""extract_features / feature_table: names, documentation, batches, errors and the GPU hook."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features import FEATURES, extract_features, feature_table, features_markdown
from gpuperf.features.counts import symbolic_counts
from gpuperf.kernels.catalog import get_kernel

from test_features_kernels import lift_listing3, matmul, vector_add

TABLE1 = (
    [f"global_size_{a}" for a in range(3)]
    + [f"local_size_{a}" for a in range(3)]
    + [
        "local_memory_bytes",
        "global_loads_per_thread",
        "global_stores_per_thread",
        "local_loads_per_thread",
        "local_stores_per_thread",
        "cache_lines_per_warp_access",
        "sectors_per_warp_access",
        "barriers_per_thread",
        "ifs_per_thread",
        "loop_iterations_per_thread",
    ]
)
DOCS = Path(__file__).resolve().parents[1] / "docs" / "features.md"


def documented(name: str) -> bool:
    """Whether FEATURES names ``name``, directly or through a <placeholder> pattern."""
    for feature in FEATURES:
        pattern = re.sub(r"<[a-z]+>", "[a-z0-9_]+", re.escape(feature.name).replace(r"\<", "<").replace(r"\>", ">"))
        if re.fullmatch(pattern, name):
            return True
    return False


@pytest.mark.parametrize("name", ["stencil2d", "matmul_tiled_prefetch", "nbody", "vector_copy"])
def test_every_feature_is_a_documented_float(name):
    features = extract_features(get_kernel(name))
    assert set(TABLE1) | {"flops", "global_bytes"} <= set(features)
    assert all(isinstance(v, float) for v in features.values())
    undocumented = [k for k in features if not documented(k)]
    assert not undocumented


def test_documentation_table_is_complete_and_docs_file_is_up_to_date():
    names = [f.name for f in FEATURES]
    assert len(names) == len(set(names))
    assert set(TABLE1) <= set(names)
    assert all(f.unit and f.meaning and f.source for f in FEATURES)
    assert DOCS.read_text(encoding="utf-8") == features_markdown(), (
        "docs/features.md is stale: run python -m gpuperf.features.table docs/features.md"
    )


def test_feature_table_crosses_kernels_and_sizes_and_fills_missing_counts():
    kernels = [vector_add(), "vector_copy"]
    frame = feature_table(kernels, [{"n": 4096}, {"n": 8192}], progress=True)
    assert isinstance(frame, pd.DataFrame) and len(frame) == 4
    assert list(frame.columns[:3]) == ["kernel", "variant", "n"]
    assert list(frame["n"]) == [4096, 8192, 4096, 8192]
    assert list(frame["kernel"]) == ["vector_add", "vector_add", "vector_copy", "vector_copy"]
    # vector_copy does no float adds: its ops_f32_add is 0, not missing
    copy = frame[frame["kernel"] == "vector_copy"]
    assert (copy["ops_f32_add"] == 0).all()
    row = frame.iloc[1]
    assert row["global_loads"] == extract_features(vector_add(), {"n": 8192})["global_loads"]


def test_feature_table_pairs_kernels_with_sizes():
    frame = feature_table([matmul(), lift_listing3()], [{"n": 32}, {"groups": 4}], pairwise=True)
    assert list(frame["flops"]) == [2 * 32**3, 4 * 128]
    assert math.isnan(frame.loc[0, "groups"]) and math.isnan(frame.loc[1, "n"])
    with pytest.raises(GpuperfError, match="2 kernels but 1 parameter sets"):
        feature_table([matmul(), lift_listing3()], [{"n": 32}], pairwise=True)


def test_bad_sizes_raise_one_line_errors():
    with pytest.raises(GpuperfError, match="no size parameter m"):
        extract_features(vector_add(), {"m": 4})
    with pytest.raises(GpuperfError, match="positive integer"):
        extract_features(vector_add(), {"n": -1})
    with pytest.raises(GpuperfError, match="need a value for size parameter"):
        symbolic_counts(vector_add()).evaluate({})
    with pytest.raises(GpuperfError, match="violate the kernel's assumptions"):
        symbolic_counts(vector_add()).evaluate({"n": 4000})  # not a multiple of the group size
    with pytest.raises(GpuperfError, match="needs a gpuperf Kernel, a loopy TranslationUnit or a kernel's name"):
        extract_features(vector_add().entry, {"n": 4})  # a LoopKernel, not its TranslationUnit


def test_evaluation_is_the_same_interpreted_and_compiled():
    counts = symbolic_counts(matmul())
    sizes = [{"n": 16 * k} for k in (1, 2, 3, 4, 5)]
    first = [counts.evaluate(s) for s in sizes]  # the first two interpreted, then compiled
    again = [counts.evaluate(s) for s in sizes]
    assert first == again
    assert [f["flops"] for f in first] == [2 * s["n"] ** 3 for s in sizes]


def test_occupancy_features_on_nvidia_and_nan_on_amd():
    kernel = matmul()
    features = extract_features(kernel, gpu="A100 PCIe 40GB")
    assert 0 < features["occupancy"] <= 1
    assert features["active_blocks_per_sm"] >= 1
    assert features["active_warps_per_sm"] == features["active_blocks_per_sm"] * 256 / 32
    assert features["registers_per_thread"] > 0
    amd = extract_features(kernel, gpu="Instinct MI50")
    assert math.isnan(amd["occupancy"]) and amd["flops"] == features["flops"]
    with pytest.raises(GpuperfError, match="unknown GPU"):
        extract_features(kernel, gpu="no such gpu")


def _evaluated(accesses=(), syncs=None, groups=(4.0, 3.0, 2.0), local=(32, 2, 1)):
    from gpuperf.features.counts import Evaluated

    return Evaluated(counts=None, ops={}, accesses=tuple(accesses), syncs=syncs or {}, groups=groups,
                     local=local, branches=None, loop_iterations=None, local_memory_bytes=0.0)


def _access(dtype: str, itemsize: int, count: float, stride: int, direction: str = "load"):
    from gpuperf.features.counts import AccessRecord, EvaluatedAccess

    record = AccessRecord(space="global", direction=direction, variable="a", dtype=dtype, itemsize=itemsize,
                          count=count, lid_strides=((0, stride),))
    return EvaluatedAccess(record=record, count=count, lid_strides={0: stride}, offset=None, outer=None)


def test_bytes_use_the_element_size_and_reversed_access_is_unit_stride():
    # 100 loads of f64 (8 bytes) walking backwards (stride -1): 800 bytes, class stride1.
    named = _evaluated([_access("f64", 8, 100.0, -1)]).named()
    assert named["global_load_bytes"] == 800.0
    assert named["global_loads_f64_stride1"] == 100.0
    assert "global_loads_f64_stride_gt1" not in named


def test_barriers_and_work_groups_of_a_launch():
    from gpuperf.features.table import _features_from_counts

    # groups 4 x 3 x 2 = 24 work-groups of 32 x 2 x 1 = 64; 2 local + 1 global barrier per work-item.
    features = _features_from_counts(
        _evaluated(syncs={"barrier_local": 2, "barrier_global": 1, "kernel_launch": 1}))
    assert features["work_groups"] == 24.0
    assert features["work_group_size"] == 64.0 and features["threads"] == 24.0 * 64
    assert features["barriers_per_thread"] == 3.0


def test_work_group_size_multiplies_all_three_local_axes():
    from gpuperf.features.table import _features_from_counts

    # local 8 x 4 x 2 = 64 work-items per group; 2 x 1 x 1 groups -> 128 threads.
    features = _features_from_counts(_evaluated(groups=(2.0, 1.0, 1.0), local=(8, 4, 2)))
    assert features["work_group_size"] == 64.0 and features["threads"] == 128.0


def test_occupancy_uses_the_kernels_local_memory_when_nvrtc_reports_less(monkeypatch):
    """NVRTC's static smem (here 0) can miss loopy's local temporaries: the larger counts.
    A100 (cc 8.0): 256 threads = 8 warps x 32 registers. Shared memory 40 KiB + 1 KiB reserved =
    41984 bytes (a multiple of 128); 167936 // 41984 = 4 blocks, below the 8 that warps (64 // 8)
    and registers (16384 // 1024 = 16 warps per sub-partition x 4 // 8) allow: 4 x 8 = 32 warps,
    occupancy 32 / 64 = 0.5."""
    from gpuperf.features import resources
    from gpuperf.features.table import occupancy_features

    monkeypatch.setattr(resources, "compile_resources",
                        lambda kernel, arch: resources.Resources(registers=32, shared_memory_bytes=0, spill_bytes=0, arch=arch))
    features = occupancy_features(matmul(), "A100 PCIe 40GB", 256, 40 * 1024.0)
    assert features["active_blocks_per_sm"] == 4.0 and features["active_warps_per_sm"] == 32.0
    assert features["occupancy"] == 0.5 and features["registers_per_thread"] == 32.0


@pytest.mark.parametrize(("name", "kind"), [("flops", "feature"), ("variant", "column")])
def test_a_size_parameter_named_like_a_feature_or_row_key_is_refused(name, kind):
    """A row holds the sizes beside the features: a size named ``flops`` was overwritten by the feature."""
    import loopy as lp
    import numpy as np

    from test_features_kernels import LANG, as_kernel

    program = lp.make_kernel(f"{{[i]: 0 <= i < {name}}}", "b[i] = 2 * a[i]",
                             assumptions=f"{name} >= 256 and {name} mod 256 = 0", name="by_" + name, lang_version=LANG)
    program = lp.split_iname(lp.add_dtypes(program, {"a,b": np.float32}), "i", 256, outer_tag="g.0", inner_tag="l.0")
    kernel = as_kernel(program, (name,), {name: 1024})
    with pytest.raises(GpuperfError, match=f"size parameter '{name}' has the name of a {kind}"):
        extract_features(kernel, {name: 1024})
    with pytest.raises(GpuperfError, match="rename the parameter"):
        feature_table([kernel], {name: 1024})
