"""Defaults, JSON keys and load behaviour users rely on, pinned where mutation testing found them unchecked:
``measure``'s documented defaults and notes, ``advise``'s default threshold and JSON sections, and what
loading a user's ``file.py:function`` leaves behind."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from gpuperf.cli import main
from gpuperf.errors import GpuperfError


# -- measure: the defaults docs/measuring.md names, the JSON keys and the notes ----------------------


def _fake_measure(monkeypatch, samples=(0.25, 0.25), stable=True, verified=True):
    """``gpuperf measure`` with ``measure`` replaced: records what it was asked and returns a fixed result."""
    calls = {}

    def fake(kernel, sizes, device, verify, settings, seed):  # noqa: ANN001, ANN202
        calls.update(kernel=kernel.name, sizes=sizes, device=device, verify=verify, settings=settings, seed=seed)
        return SimpleNamespace(
            time_s=0.25, time_s_min=0.25, time_s_iqr=0.0, repeats=len(samples), device="opencl:0:0",
            verified=verified, kernel=kernel.name, sizes=dict(sizes), retries=1, stable=stable, max_rel_error=0.0,
            compile_s=0.5, global_size=[4096], local_size=[128], provenance={"loopy": "x"}, samples=list(samples))

    monkeypatch.setattr("gpuperf.measure.timing.measure", fake)
    return calls


def test_measure_asks_for_the_documented_default_repeats_time_seed_and_device(monkeypatch, capsys):
    """docs/measuring.md: [--device opencl:0] [--min-repeats 5] [--min-time 0.1] [--max-repeats 1000] [--seed 0]."""
    calls = _fake_measure(monkeypatch)
    assert main(["measure", "vector_copy", "-p", "n=4096", "--json"]) == 0
    settings = calls["settings"]
    assert (settings.min_repeats, settings.min_time_s, settings.max_repeats) == (5, 0.1, 1000)
    assert calls["seed"] == 0 and calls["device"] == "opencl:0" and calls["verify"] is True


def test_measure_json_has_every_documented_key_and_its_notes(monkeypatch, capsys):
    _fake_measure(monkeypatch)
    assert main(["measure", "vector_copy", "-p", "n=4096", "--min-time", "0.5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"time_s", "time_s_min", "time_s_iqr", "repeats", "device", "verified", "kernel", "sizes",
                         "retries", "stable", "max_rel_error", "compile_s", "global_size", "local_size",
                         "provenance", "notes"}
    assert data["local_size"] == [128] and data["global_size"] == [4096]
    assert data["notes"] == []  # 0.25 + 0.25 s reach --min-time 0.5 exactly: not short of it


def test_an_unsteady_time_is_noted_in_the_json_and_on_stderr(monkeypatch, capsys):
    _fake_measure(monkeypatch, stable=False)
    assert main(["measure", "vector_copy", "-p", "n=4096", "--min-time", "0.5", "--json"]) == 0
    captured = capsys.readouterr()
    (note,) = json.loads(captured.out)["notes"]
    assert note.startswith("the runs' spread stayed wide after 1 re-measure(s)")
    assert f"note: {note}" in captured.err


# -- advise: the default threshold and confidence, and the JSON sections -----------------------------


def _suggestion(name: str, speedup: float, confidence: float):
    from gpuperf.decisions.advisor import Suggestion

    return Suggestion(optimization=name, title=name, predicted_speedup=speedup, confidence=confidence,
                      explanation={"summary": "s"}, apply={"summary": "a"})


def _fake_advise(monkeypatch):
    """``gpuperf advise`` with ``advise_kernel`` replaced: records the threshold and confidence asked for."""
    from gpuperf.decisions.advisor import Advice

    calls = {}
    at = _suggestion("at_threshold", 1.05, 0.9)
    below = _suggestion("below", 1.04996, 0.4996)  # would round onto 1.05 and 0.5

    def fake(kernel, sizes, gpu, device, threshold, entries, **options):  # noqa: ANN001, ANN202
        calls.update(threshold=threshold, min_confidence=options["min_confidence"])
        return Advice([at], [at, below], [("skipped_one", "does not apply")], ["a note"])

    monkeypatch.setattr("gpuperf.decisions.advisor.advise_kernel", fake)
    return calls


def test_advise_defaults_to_threshold_1_05_and_confidence_0_5(monkeypatch, capsys):
    """docs/advise.md: --threshold (default 1.05); docs/decisions.md: [--min-confidence 0.5]."""
    calls = _fake_advise(monkeypatch)
    assert main(["advise", "vector_copy", "-p", "n=4096", "--json"]) == 0
    assert calls == {"threshold": 1.05, "min_confidence": 0.5}


def test_advise_json_sections_and_a_speedup_at_the_threshold_is_not_below_it(monkeypatch, capsys):
    _fake_advise(monkeypatch)
    assert main(["advise", "vector_copy", "-p", "n=4096", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert list(data) == ["subject", "suggestions", "below_threshold", "not_suggested", "notes"]
    assert [s["optimization"] for s in data["suggestions"]] == ["at_threshold"]
    assert [s["optimization"] for s in data["below_threshold"]] == ["below"]  # 1.05 is at, not below, 1.05
    (below,) = data["below_threshold"]  # rounded no closer to the bounds than tells it apart from them
    assert (below["predicted_speedup"], below["confidence"]) == (1.04996, 0.4996)
    assert data["not_suggested"] == [{"optimization": "skipped_one", "reason": "does not apply"}]
    assert data["notes"] == ["a note"]


# -- loading a user's file.py:function --------------------------------------------------------------


def _user_modules(stem: str) -> list[str]:
    return [name for name in sys.modules if name.startswith(f"gpuperf_user_{stem}_")]


def test_a_file_that_fails_to_import_leaves_no_module_behind(tmp_path):
    from gpuperf.kernels.loader import load_user_kernel

    (tmp_path / "fails_midway.py").write_text("X = 1\nraise RuntimeError('half done')\n")
    with pytest.raises(GpuperfError, match="failed to import: RuntimeError: half done"):
        load_user_kernel(f"{tmp_path / 'fails_midway.py'}:f")
    assert _user_modules("fails_midway") == []


SAXPY = '''
import loopy as lp
import numpy as np


def saxpy():
    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "y[i] = alpha*x[i] + y[i]",
        [lp.ValueArg("alpha", np.float32), lp.GlobalArg("x,y", np.float32, shape="n"), lp.ValueArg("n", np.int32)],
        assumptions="n>=128 and n mod 128 = 0", name="saxpy", lang_version=(2018, 2))
    return lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")
'''


def test_a_kernel_file_in_a_folder_with_brackets_is_no_variant(tmp_path):
    """Only a spec ending in its closing bracket names a variant: runs[1]/k.py:saxpy is a file."""
    from gpuperf.kernels import get_kernel

    folder = tmp_path / "runs[1]"
    folder.mkdir()
    (folder / "k.py").write_text(SAXPY)
    assert get_kernel(f"{folder / 'k.py'}:saxpy").params == ("n",)
    with pytest.raises(GpuperfError, match=r"unknown kernel 'vector_copy\[n=1'"):
        get_kernel("vector_copy[n=1")


def test_a_variant_spec_with_a_trailing_space_is_still_that_variant():
    """As ``variant_space_name`` reads " my.py:space [local_x=16] ", a trailing space does not unmake a variant."""
    from gpuperf.kernels import get_kernel

    assert get_kernel("stencil2d[local_x=8] ").variant["local_x"] == 8


def test_what_a_kernel_file_prints_while_it_is_imported_goes_to_stderr(tmp_path, capsys):
    from gpuperf.kernels.loader import load_user_kernel

    (tmp_path / "chatty_import.py").write_text("print('importing the kernels')\n" + SAXPY)
    assert load_user_kernel(f"{tmp_path / 'chatty_import.py'}:saxpy").params == ("n",)
    captured = capsys.readouterr()
    assert captured.out == "" and "importing the kernels" in captured.err


def test_a_name_that_is_no_function_is_not_called_and_the_error_lists_only_the_files_own_functions(tmp_path):
    from gpuperf.kernels.loader import load_user_kernel

    (tmp_path / "some.py").write_text("from os.path import join\nTILE = 3\n" + SAXPY)
    with pytest.raises(GpuperfError, match=r"does not define a function 'TILE'; it defines saxpy$"):
        load_user_kernel(f"{tmp_path / 'some.py'}:TILE")


def test_a_module_beside_the_file_comes_before_one_of_that_name_elsewhere_on_the_path(tmp_path, monkeypatch):
    """The file's folder goes first on sys.path while it loads, as ``python file.py`` would put it, and
    behind the program's own entries after."""
    from gpuperf.kernels.loader import call_user_function

    for folder, tile in (("elsewhere", 1), ("mine", 2)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "tiles_c.py").write_text(f"TILE = {tile}\n")
    (tmp_path / "mine" / "user.py").write_text("from tiles_c import TILE\n\n\ndef tile():\n    return TILE\n")
    monkeypatch.setattr("sys.path", [str(tmp_path / "elsewhere"), *sys.path])
    result, _, _ = call_user_function(f"{tmp_path / 'mine' / 'user.py'}:tile")
    assert result == 2 and sys.path[0] == str(tmp_path / "elsewhere") and str(tmp_path / "mine") in sys.path


def test_a_kernel_file_in_a_folder_with_a_colon_is_split_at_its_last_colon(tmp_path):
    from gpuperf.kernels.loader import load_user_kernel

    folder = tmp_path / "run:2"
    folder.mkdir()
    (folder / "k.py").write_text(SAXPY)
    assert load_user_kernel(f"{folder / 'k.py'}:saxpy").params == ("n",)


def test_an_unknown_kernel_name_is_one_error_naming_the_close_ones():
    from gpuperf.kernels import get_kernel

    with pytest.raises(GpuperfError, match=r"unknown kernel 'vector_cpy'.*vector_copy"):
        get_kernel("vector_cpy")


def test_a_space_named_as_a_kernel_is_checked_before_its_default_variant_is_built(tmp_path):
    """A function returning a VariantSpace stands for its default variant; a default outside the
    space's values is the space's error, naming the file and function, not a kernel built anyway."""
    from gpuperf.kernels.loader import load_user_kernel

    (tmp_path / "wide.py").write_text(
        "from gpuperf.kernels.space import VariantSpace\n" + SAXPY.replace("def saxpy():", "def saxpy(config=None):")
        + "\n\ndef wide():\n    return VariantSpace(name='wide', parameters={'local_x': [32, 64]}, "
          "defaults={'local_x': 48}, check=lambda c: None, make=lambda c: saxpy())\n")
    with pytest.raises(GpuperfError, match=r"wide.py:wide\): defaults give local_x=48, which is not one of its "
                                           r"values 32, 64"):
        load_user_kernel(f"{tmp_path / 'wide.py'}:wide")


def test_a_ratio_of_exactly_0_8_is_within_the_documented_0_8_to_1_25_band():
    import pandas as pd

    from gpuperf.decisions.advise_eval import summarise

    results = pd.DataFrame({"measured": [0.8, 1.25, 2.0], "predicted": [1.0, 1.0, 1.0], "knn": [1.0] * 3,
                            "m5p": [1.0] * 3, "p_faster": [0.5] * 3, "constant": [1.0] * 3,
                            "confidence": [0.9] * 3})
    assert summarise(results).iloc[0]["ratio_within_0.8_1.25"] == pytest.approx(2 / 3)
    rounded = results.assign(measured=[0.72, 1.25, 2.0], predicted=[0.9, 1.0, 1.0])  # 0.72 / 0.9 = 0.7999999999999999
    assert summarise(rounded).iloc[0]["ratio_within_0.8_1.25"] == pytest.approx(2 / 3)
    above = results.assign(measured=[0.8, 2.35, 2.0], predicted=[1.0, 1.88, 1.0])  # 2.35 / 1.88 = 1.2500000000000002
    assert summarise(above).iloc[0]["ratio_within_0.8_1.25"] == pytest.approx(2 / 3)


def test_row_without_a_profile_is_refused(capsys):
    assert main(["advise", "vector_copy", "-p", "n=4096", "--row", "2"]) == 2
    assert "--row picks a row of the --profile table; a KERNEL has none" in capsys.readouterr().err
