"""The public functions' type hints admit what their docstrings and docs/*.md say they take."""

from __future__ import annotations

import inspect
import types
import typing

import loopy as lp
import pytest

from gpuperf.decisions.advisor import advise_kernel
from gpuperf.features.table import extract_features, feature_table
from gpuperf.kernels.kernel import Kernel, KernelLike
from gpuperf.measure.timing import measure
from gpuperf.models.linear_calibration import predict_kernel


def _hint(function, parameter: str) -> set:
    """The types a parameter's hint admits (unions flattened one level down)."""
    annotation = inspect.signature(function).parameters[parameter].annotation
    probe = types.SimpleNamespace(__annotations__={"value": annotation})
    hint = typing.get_type_hints(probe, {**function.__globals__, "lp": lp, "KernelLike": KernelLike})["value"]
    admitted = set()
    for part in typing.get_args(hint) or (hint,):
        admitted |= set(typing.get_args(part)) if typing.get_origin(part) is typing.Union else {part}
    return admitted


@pytest.mark.parametrize("function", [extract_features, measure, predict_kernel, advise_kernel])
def test_a_function_taking_a_kernel_admits_a_kernel_its_name_and_a_bare_translation_unit(function):
    assert {Kernel, str, lp.TranslationUnit} <= _hint(function, "kernel")


def test_feature_table_admits_one_kernel_or_several_of_any_kind():
    admitted = _hint(feature_table, "kernels")
    assert {Kernel, str, lp.TranslationUnit} <= admitted
    assert any(typing.get_origin(part) is not None and lp.TranslationUnit in typing.get_args(typing.get_args(part)[0])
               for part in admitted)  # Iterable[KernelLike]


def test_next_configuration_admits_the_training_data_guided_search_takes():
    from pathlib import Path

    import pandas as pd

    from gpuperf.decisions.ask import next_configuration
    from gpuperf.decisions.space import Space
    from gpuperf.decisions.tune import GuidedSearch

    admitted = _hint(next_configuration, "train")
    assert {Space, pd.DataFrame, str, Path} <= admitted
    assert admitted == _hint(GuidedSearch.__init__, "train")


def test_guided_search_start_admits_labels_of_any_kind_as_ask_and_tell_do():
    import pandas as pd

    from gpuperf.decisions.tune import GuidedSearch

    hint = _hint(GuidedSearch.__init__, "start") - {type(None)}
    assert [typing.get_args(part) for part in hint] == [(typing.Any,)]
    configs = pd.DataFrame({"x": [1, 2, 3]}, index=["c1", "c2", "c3"])
    assert GuidedSearch(configs, ["x"], start=["c3"]).ask() == "c3"


def test_advise_profile_admits_a_tables_row_and_a_table_of_one_row_as_documented():
    import pandas as pd

    from gpuperf.decisions.advisor import advise_profile

    assert {pd.Series, pd.DataFrame} <= _hint(advise_profile, "row")
