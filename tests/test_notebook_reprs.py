"""What a notebook shows for gpuperf's result objects: a line a reader can take in, not pages of
loopy IR, nested explanations or whole frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.linear_model import LinearRegression

from gpuperf.decisions import GuidedSearch
from gpuperf.decisions.advisor import Suggestion
from gpuperf.decisions.space import Space
from gpuperf.evaluation.protocols import Evaluation
from gpuperf.kernels import get_kernel


def test_a_kernel_shows_its_name_and_sizes_not_its_loopy_ir():
    shown = repr(get_kernel("jacobi2d_5pt"))
    assert shown.startswith("Kernel(name='jacobi2d_5pt'") and "params=" in shown and len(shown) < 800
    assert "program" not in shown


def test_a_suggestion_shows_its_speedup_not_its_explanation():
    suggestion = Suggestion("coalescing", "Coalesce", 1.5, 0.9, {"long": "x" * 5000}, {"kind": "loopy"})
    shown = repr(suggestion)
    assert "predicted_speedup=1.5" in shown and "xxxx" not in shown and len(shown) < 200


def test_an_evaluation_shows_its_folds_and_overall_errors():
    predictions = pd.DataFrame({"fold": ["a", "a", "b"], "measured": [1.0, 2.0, 4.0], "predicted": [1.0, 1.0, 5.0]})
    shown = repr(Evaluation("leave-one-gpu-out", ("gpu",), predictions))
    assert shown.startswith("Evaluation('leave-one-gpu-out', 2 folds, 3 held-out rows, mape=0.25")


def test_a_space_and_a_search_show_their_sizes():
    configs = pd.DataFrame({"x": [1, 2, 3]})
    space = Space(["x"], configs, np.array([1.0, np.nan, 2.0]), "cache.json", gpu="A100")
    assert repr(space) == "Space('cache.json' on A100: 3 configurations of x, 1 failed)"
    search = GuidedSearch(configs, ["x"])
    search.tell(2, 1.0)
    assert repr(search) == "GuidedSearch(3 configurations, 1 measured, best 2)"


def test_import_gpuperf_shows_only_its_own_names():
    import gpuperf

    assert not {"version", "distribution", "Path", "PackageNotFoundError"} & set(dir(gpuperf))
    assert "GpuperfError" in dir(gpuperf)


def test_common_notebook_slips_get_one_clear_line():
    """One name where a list goes, sizes as a list, one training space, no features: each was a
    letter-by-letter lookup or a TypeError from deep inside."""
    import pytest

    from gpuperf.decisions.exploration import explore
    from gpuperf.errors import GpuperfError
    from gpuperf.evaluation.protocols import leave_one_gpu_out
    from gpuperf.features import extract_features, feature_table

    assert feature_table("vector_copy", {"n": 256})["kernel"].tolist() == ["vector_copy"]
    assert extract_features("vector_copy", {"n": 256})["threads"] == 256
    with pytest.raises(GpuperfError, match=r"sizes map each size parameter to its value, e.g. \{'n': 1024\}; got a list"):
        extract_features(get_kernel("vector_copy"), [1024])
    configs = pd.DataFrame({"x": [1, 2, 3, 4]})
    space = Space(["x"], configs, np.array([4.0, 3.0, 1.0, 2.0]), "here", gpu="A100")
    other = Space(["x"], configs, np.array([4.0, 3.0, 1.0, 2.0]), "there", gpu="V100")
    assert explore(space, other).order == explore(space, [other]).order
    frame = pd.DataFrame({"gpu": ["A100", "V100"], "n": [1.0, 2.0], "time_s": [1.0, 2.0]})
    with pytest.raises(GpuperfError, match="no feature columns given"):
        leave_one_gpu_out(LinearRegression(), frame, [])
