"""Speedup models and suggestions: better than a constant, only above the threshold, reasons given."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions import advise_eval
from gpuperf.decisions.advisor import advise, advise_kernel, fitted_model
from gpuperf.datasets.bundled import data_dir
from gpuperf.decisions.advice_features import MODEL_FEATURES, gpu_features, kernel_features
from gpuperf.decisions.optimizations import load_optimizations
from gpuperf.errors import GpuperfError
from gpuperf.decisions.pairs import DEVICE_TARGET, spec_pairs
from gpuperf.decisions.speedup_models import SpeedupModel
from gpuperf.kernels import get_kernel

STENCIL = "stencil2d[local_x=16,local_y=4,outputs_y={outputs},prefetch={prefetch},unroll=1]"


def bundled_gpu_pairs() -> pd.DataFrame:
    """The matvec_bsp and Tesla K40c trace pairs of coalescing and local-memory prefetch (fast to build)."""
    entries = load_optimizations()
    parts = [spec_pairs(spec, name) for name in ("coalescing", "local_memory_prefetch")
             for spec in entries[name].pairs if spec.dataset in ("matvec_bsp", "k40c_traces")]
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module")
def pocl_entries():
    """The built-in entries restricted to their pocl-measured pairs (no large tables to load)."""
    from dataclasses import replace

    entries = load_optimizations()
    chosen = []
    for entry in entries.values():
        specs = tuple(s for s in entry.pairs if s.dataset.endswith(".csv.gz"))
        if specs:
            chosen.append(replace(entry, pairs=specs))
    return chosen


def test_models_beat_a_constant_on_held_out_sizes():
    pairs = bundled_gpu_pairs()
    # the default models without inner-CV selection (which the pocl test below exercises), to stay fast
    result = advise_eval.evaluate(pairs, "inputs", partial(SpeedupModel, select=False))
    assert set(result["optimization"]) == {"coalescing", "local_memory_prefetch"}
    summary = advise_eval.summarise(result).iloc[0]
    assert summary["pairs"] == len(pairs)  # every pair tested once, its size held out
    assert summary["sign_accuracy"] >= 0.9
    assert summary["log2_mae"] < 0.5 * summary["log2_mae_constant"]
    assert 0.8 < summary["median_ratio"] < 1.25


def test_models_beat_a_constant_on_held_out_pocl_sizes(pocl_entries):
    # the two pocl-measured optimizations whose speedups fall on both sides of 1
    chosen = [e for e in pocl_entries if e.name in ("thread_coarsening", "larger_work_groups")]
    pairs = pd.concat([spec_pairs(s, e.name) for e in chosen for s in e.pairs], ignore_index=True)
    assert 0.2 < (pairs["speedup"] > 1).mean() < 0.8
    summary = advise_eval.summarise(advise_eval.evaluate(pairs, "inputs")).iloc[0]
    assert summary["sign_accuracy"] > summary["sign_accuracy_constant"]
    assert summary["log2_mae"] < summary["log2_mae_constant"]


def test_pairs_and_models_are_made_where_the_cache_cannot_be_written(tmp_path, monkeypatch):
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "a_file" / "cache"))  # no folder can be made there
    spec = next(s for s in load_optimizations()["coalescing"].pairs if s.dataset == "matvec_bsp")
    pairs = spec_pairs(spec, "coalescing")
    assert len(pairs) and set(pairs["optimization"]) == {"coalescing"}
    model = fitted_model(pairs)
    assert np.isfinite(model.predict(pairs[list(MODEL_FEATURES)].head(3)).m5p).all()


def test_m5p_cannot_extrapolate_beyond_the_training_speedups():
    pairs = bundled_gpu_pairs()
    pairs = pairs[pairs["optimization"] == "coalescing"]
    model = SpeedupModel().fit(pairs)
    far = pairs[list(MODEL_FEATURES)].head(1).copy() * 1e6
    prediction = model.predict(far)
    assert pairs["speedup"].min() <= prediction.m5p[0] <= pairs["speedup"].max() * (1 + 1e-9)
    assert prediction.familiarity[0] < 0.5 and prediction.confidence[0] < 0.5
    own = model.predict(pairs)
    assert np.median(own.familiarity) == pytest.approx(1.0) and np.median(own.confidence) > 0.9


def test_suggestions_only_above_threshold_and_ranked(pocl_entries):
    kernel = get_kernel(STENCIL.format(outputs=4, prefetch=0))
    features = {**kernel_features(kernel, {"n": 512, "m": 512}), **gpu_features(None)}
    target = DEVICE_TARGET + pd.read_csv(data_dir() / "advise_pairs_pocl.csv.gz")["gpu"][0]
    everything = advise(features, target, threshold=1e-9, entries=pocl_entries, kernel=kernel)
    assert everything.suggestions == everything.assessed and len(everything.assessed) >= 2
    speedups = [s.predicted_speedup for s in everything.assessed]
    assert speedups == sorted(speedups, reverse=True)
    cut = float(np.median(speedups))
    some = advise(features, target, threshold=cut, entries=pocl_entries, kernel=kernel)
    assert [s.optimization for s in some.suggestions] == [s.optimization for s in everything.assessed
                                                          if s.predicted_speedup >= cut]
    assert all(s.predicted_speedup >= cut for s in some.suggestions)
    for s in everything.assessed:
        assert s.explanation["nearest_pairs"] and s.explanation["when_it_helps"]
        assert 0.0 <= s.confidence <= 1.0
    skipped = dict(everything.skipped)
    assert "already has outputs_y=4" in skipped["thread_coarsening"]


def test_applied_optimization_is_not_suggested_again(pocl_entries):
    advice = advise_kernel(get_kernel(STENCIL.format(outputs=1, prefetch=1)), {"n": 512, "m": 512},
                           threshold=1e-9, entries=pocl_entries)
    skipped = dict(advice.skipped)
    # its tile in local memory already: the entry's condition says so before the space's flip is tried
    assert skipped["local_memory_prefetch"].startswith("does not apply: global_loads_per_thread > 1 and "
                                                       "local_memory_bytes == 0 is false")
    assert "unroll factor 4 exceeds" in skipped["unrolling"]
    assert all(s.optimization not in skipped for s in advice.assessed)


def test_a_setting_short_of_the_entrys_before_value_is_taken_to_its_after_value_not_called_applied():
    """larger_work_groups flips local_x 16 -> 32, else local_y 4 -> 16, and thread_coarsening
    outputs_y 1 -> 4: a 4-wide group or 2 outputs per work-item are short of them (not applied), 8
    outputs are beyond; a 64-wide group of 4 rows grows to 16 rows, one of 16 rows has both applied."""
    from gpuperf.decisions.advisor import _space_change

    entries = load_optimizations()
    spec = "stencil2d[local_x={x},local_y=4,outputs_y={y},prefetch=0,unroll=1]"
    for entry, x, y, expected in (("larger_work_groups", 4, 1, (spec.format(x=32, y=1), None)),
                                  ("larger_work_groups", 16, 1, (spec.format(x=32, y=1), None)),
                                  ("thread_coarsening", 16, 2, (spec.format(x=16, y=4), None)),
                                  ("larger_work_groups", 64, 1, (spec.format(x=64, y=1).replace("local_y=4", "local_y=16"), None)),
                                  ("thread_coarsening", 16, 8, (None, f"{spec.format(x=16, y=8)} already has outputs_y=8"))):
        assert _space_change(entries[entry], get_kernel(spec.format(x=x, y=y))) == (*expected, "", "")
    tall = spec.format(x=64, y=1).replace("local_y=4", "local_y=16")
    assert _space_change(entries["larger_work_groups"], get_kernel(tall)) == (
        None, f"{tall} already has local_x=64; {tall} already has local_y=16", "", "")
    # a flip naming a parameter the space lacks is said, beside why the others do not apply
    from dataclasses import replace

    entry = entries["larger_work_groups"]
    odd = replace(entry, apply={**entry.apply, "space_parameter": [{"name": "local_z", "before": 1, "after": 2},
                                                                    {"name": "local_x", "before": 16, "after": 32}]})
    wide = spec.format(x=64, y=1)
    assert _space_change(odd, get_kernel(wide)) == (
        None, f"{wide} already has local_x=64; no variant to apply: apply.space_parameter.name 'local_z' of "
              "larger_work_groups is no parameter of the space stencil2d (local_x, local_y, outputs_y, prefetch, "
              "unroll)", "", "")
    assert _space_change(odd, get_kernel(spec.format(x=16, y=1))) == (
        spec.format(x=32, y=1), None, "no variant to apply: apply.space_parameter.name 'local_z' of "
        "larger_work_groups is no parameter of the space stencil2d (local_x, local_y, outputs_y, prefetch, unroll)", "")


def test_a_variant_of_a_users_space_is_advised_with_the_change_in_its_own_space(pocl_entries, tiled_space):
    """A user's space is no catalog space: named by its file and function, the optimization's variant
    is built there and given as a spec the user can pass back."""
    kernel = get_kernel(f"{tiled_space}[local_x=16]")
    target = DEVICE_TARGET + pd.read_csv(data_dir() / "advise_pairs_pocl.csv.gz")["gpu"][0]
    chosen = [e for e in pocl_entries if e.name == "larger_work_groups"]
    features = {**kernel_features(kernel, {"n": 4096}), **gpu_features(None)}
    advice = advise(features, target, threshold=1e-9, entries=chosen, kernel=kernel, sizes={"n": 4096},
                    min_confidence=0, space=tiled_space)
    (suggestion,) = advice.assessed
    assert suggestion.apply["variant"] == f"{tiled_space}[local_x=32]"
    plain = advise(features, target, threshold=1e-9, entries=chosen, kernel=kernel, sizes={"n": 4096},
                   min_confidence=0)  # the space unnamed: advised from the kernel's features alone
    assert "variant" not in plain.assessed[0].apply


def test_a_catalog_kernel_heading_a_space_is_advised_as_its_default_variant(pocl_entries):
    """`stencil2d` is its space's default variant: unrolling cannot apply (one output per work-item:
    no per-work-item loop to unroll, as in saxpy-like kernels, where it was predicted 6x from
    stencil pairs with loops)."""
    advice = advise_kernel(get_kernel("stencil2d"), {"n": 512, "m": 512}, threshold=1e-9, entries=pocl_entries)
    skipped = dict(advice.skipped)
    assert skipped["unrolling"] == "does not apply: loop_iterations_per_thread > 0 is false for this kernel"
    looped = advise_kernel(get_kernel("stencil2d[outputs_y=2]"), {"n": 512, "m": 512}, threshold=1e-9,
                           entries=pocl_entries)
    assessed = [s.optimization for s in looped.assessed] + [name for name, why in looped.skipped
                                                              if why.startswith("abstained")]
    assert "unrolling" in assessed  # a loop of 2 outputs: unrolled by 2
    assert all(s.apply["variant"].startswith("stencil2d[") for s in advice.assessed if "variant" in s.apply)


def test_space_variant_is_in_apply(pocl_entries):
    kernel = get_kernel(STENCIL.format(outputs=1, prefetch=0))
    features = kernel_features(kernel, {"n": 512, "m": 512})
    advice = advise(features, DEVICE_TARGET + "some other CPU", threshold=1e-9, entries=pocl_entries, kernel=kernel)
    applied = {s.optimization: s.apply.get("variant") for s in advice.assessed}
    assert applied["local_memory_prefetch"] == STENCIL.format(outputs=1, prefetch=1)
    assert applied["thread_coarsening"] == STENCIL.format(outputs=4, prefetch=0)
    assert "using pairs measured on" in advice.assessed[0].explanation["summary"]


def test_the_explanation_says_what_its_confidence_is_beside_p_faster(pocl_entries):
    """Confidence (is the predicted side of 1x right?) and P(faster) differ; the summary says which is which."""
    kernel = get_kernel(STENCIL.format(outputs=1, prefetch=0))
    advice = advise(kernel_features(kernel, {"n": 512, "m": 512}), DEVICE_TARGET + "some other CPU",
                    threshold=1e-9, entries=pocl_entries, kernel=kernel, min_confidence=0.0)
    assert advice.assessed
    for s in advice.assessed:
        summary = s.explanation["summary"]
        assert f"P(faster) = {s.explanation['models']['p_faster']:.2f}" in summary
        assert f"confidence {s.confidence:.2f}: " in summary
        assert "right side of 1x" in summary or "uncalibrated" in summary


def test_the_explanation_says_which_of_confidence_and_p_faster_to_go_by_when_they_disagree():
    """A calibrated confidence of 0.41 beside P(faster) = 0.98: the summary says what each one is."""
    from types import SimpleNamespace

    from gpuperf.decisions.advisor import _explanation
    from gpuperf.decisions.optimizations import Optimization
    from gpuperf.decisions.speedup_models import Prediction

    pairs = pd.DataFrame({"family": ["f"], "kernel": ["k"], "change": ["c"], "configuration": [""], "gpu": ["g"],
                          "speedup": [1.1]})
    model = SimpleNamespace(pairs=pairs, choice=("all", "mean"), calibrator=object())  # a calibrated model
    prediction = Prediction(speedup=np.array([1.3]), knn=np.array([1.2]), m5p=np.array([1.4]),
                            p_faster=np.array([0.98]), confidence=np.array([0.41]), familiarity=np.array([1.0]),
                            neighbours=[np.array([0])])
    entry = Optimization(name="o", title="o", description="", when_it_helps="", example_before="",
                         example_after="", apply={}, pairs=("spec",), path=Path("o.toml"))
    explanation = _explanation(entry, model, 0, prediction, "")
    summary = explanation["summary"]
    assert ("confidence 0.41: how often predictions like this one (1.30x: faster) fell on the right side of 1x "
            "for held-out training pairs, the figure to go by") in summary
    assert ("P(faster) is the logistic regression's uncalibrated estimate that it is faster at all, fitted on "
            "all training pairs and not checked on held-out ones, so it can disagree with the confidence") in summary
    assert explanation["meanings"]["confidence"] in summary and explanation["meanings"]["p_faster"] in summary
    assert explanation["models"]["p_faster"] == 0.98  # the numbers themselves are unchanged

    assert "scaled down" not in summary  # a familiar kernel
    unlike = replace(prediction, familiarity=np.array([0.005]), confidence=np.array([0.01]))
    model.familiarity_floor = 0.5
    assert ("confidence 0.01: how often predictions like this one (1.30x: faster) fell on the right side of 1x for "
            "held-out training pairs, the figure to go by, scaled down by 0.01 because this kernel lies farther from "
            "its nearest training pairs than they lie from theirs (familiarity 0.005)") in _explanation(
        entry, model, 0, unlike, "")["summary"]
    # taken from the same pair measured on another GPU: that confidence is its own, not scaled down
    measured = replace(unlike, measured_on=[("H200",)], model_speedup=np.array([1.1]))
    assert "scaled down" not in _explanation(entry, model, 0, measured, "")["summary"]

    slower = replace(prediction, speedup=np.array([0.8]))
    model.calibrator = None  # too few groups to calibrate
    explanation = _explanation(entry, model, 0, slower, "")
    assert explanation["meanings"]["confidence"] == ("uncalibrated (too few training groups to hold any out): model "
                                                     "agreement and neighbour consistency on the predicted side "
                                                     "(0.80x: not faster)")


def _stub_advise(monkeypatch, predictions: dict[str, tuple[float, float]]):
    """advise() with stubbed pairs and models: entry name -> (predicted speedup, confidence)."""
    import gpuperf.decisions.advisor as advise_module
    from gpuperf.decisions.advice_features import MODEL_FEATURES
    from gpuperf.decisions.optimizations import Optimization
    from gpuperf.decisions.pairs import GPU_TARGET
    from gpuperf.decisions.speedup_models import Prediction

    class Stub:
        def __init__(self, name):
            self.name = name
            self.pairs = pd.DataFrame({"family": ["f"], "kernel": ["k"], "change": ["c"], "configuration": [""],
                                       "input": ["n=1"], "gpu": ["g"], "speedup": [1.0]})
            self.choice = ("all", "mean")
            self.features = MODEL_FEATURES
            self.calibrator = None  # uncalibrated confidence

        def predict(self, query):
            speedup, confidence = predictions[self.name]
            one = np.array([speedup])
            return Prediction(speedup=one, knn=one, m5p=one, p_faster=np.array([0.5]),
                              confidence=np.array([confidence]), familiarity=np.array([1.0]),
                              neighbours=[np.array([0])])

    monkeypatch.setattr(advise_module, "spec_pairs",
                        lambda spec, name, use_cache: pd.DataFrame({"target": [GPU_TARGET], "entry": [name]}))
    monkeypatch.setattr(advise_module, "fitted_model", lambda pairs, use_cache=True: Stub(pairs["entry"].iloc[0]))
    entries = [Optimization(name=name, title=name, description="", when_it_helps="", example_before="",
                            example_after="", apply={}, pairs=("spec",), path=Path("x.toml"))
               for name in predictions]
    return advise_module.advise({"threads": 1024.0}, GPU_TARGET, entries=entries, use_cache=False)


def test_default_threshold_and_min_confidence(monkeypatch):
    # Defaults: suggest at or above 1.05x, with confidence at least 0.5; fastest first.
    # below: 1.0499x -> under the threshold; at: exactly 1.05x -> suggested;
    # high: 1.3x but confidence 0.4999 -> abstained; sure: 1.2x at confidence exactly 0.5 -> suggested.
    advice = _stub_advise(monkeypatch, {"below": (1.0499, 0.9), "at": (1.05, 0.9), "high": (1.3, 0.4999),
                                        "sure": (1.2, 0.5)})
    assert [s.optimization for s in advice.suggestions] == ["sure", "at"]
    assert [s.optimization for s in advice.assessed] == ["high", "sure", "at", "below"]
    assert dict(advice.skipped)["high"].startswith("abstained")


def test_an_uncalibrated_confidence_is_noted_naming_the_entry_and_its_groups(monkeypatch):
    # One training pair: confidence 1.00 passes the default --min-confidence, so advise says it is no chance
    advice = _stub_advise(monkeypatch, {"one_pair": (7.95, 1.0)})
    assert [s.optimization for s in advice.suggestions] == ["one_pair"]
    assert advice.notes == ["one_pair: confidence 1.00 is uncalibrated, not the chance the predicted sign is right: "
                            "its 1 training pair forms 1 (program, input) group, too few to hold any out, so it is "
                            "model agreement and neighbour consistency (1.00 from a single pair), which "
                            "--min-confidence cannot judge"]


def test_the_uncalibrated_note_counts_the_groups_of_the_pairs_inner_cv_samples():
    """Over INNER_MAX_PAIRS pairs, inner CV runs on a sample: a second group only outside it left the model
    uncalibrated while the note said its pairs 'form 2 groups, too few to hold any out'."""
    from types import SimpleNamespace

    from gpuperf.decisions.advisor import _uncalibrated_note
    from gpuperf.decisions.optimizations import Optimization
    from gpuperf.decisions.speedup_models import INNER_MAX_PAIRS, SpeedupModel, inner_cv_sample

    pairs = _pairs(INNER_MAX_PAIRS + 100)
    outside = pairs.index.difference(inner_cv_sample(pairs).index)
    pairs.loc[outside[0], "family"] = "g"  # the other group, unseen by inner CV
    model = SpeedupModel().fit(pairs)
    assert model.calibrator is None and pairs["family"].nunique() == 2
    entry = Optimization(name="e", title="e", description="", when_it_helps="", example_before="",
                         example_after="", apply={}, pairs=("spec",), path=Path("x.toml"))
    note = _uncalibrated_note(entry, model, SimpleNamespace(confidence=[0.9], measured_on=None))
    assert (f"sign is right: the 1,500 of its {len(pairs):,} training pairs sampled for inner CV form 1 (program, "
            "input) group, too few to hold any out") in note


def _pairs(rows: int = 40, seed: int = 0) -> pd.DataFrame:
    from gpuperf.decisions.advice_features import MODEL_FEATURES

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.uniform(1, 100, size=(rows, len(MODEL_FEATURES))), columns=list(MODEL_FEATURES))
    frame["speedup"] = np.exp2(rng.normal(0, 1, rows))
    frame["family"], frame["input"], frame["configuration"] = "f", "n=1", ""
    return frame


def test_speedup_model_uses_ten_neighbours_weighted_by_distance():
    from gpuperf.decisions.speedup_models import NEIGHBOURS, SpeedupModel

    assert NEIGHBOURS == 10
    pairs = _pairs()
    model = SpeedupModel(select=False).fit(pairs)
    prediction = model.predict(pairs.iloc[[3]])
    assert len(prediction.neighbours[0]) == 10  # k = 10 (IBk -K 10)
    # 1/distance weights: a query equal to a training pair (distance 0) gets that pair's speedup
    # exactly; uniform weights would give the mean of its 10 neighbours.
    assert prediction.knn[0] == pytest.approx(pairs["speedup"].iloc[3], rel=1e-9)


def test_m5p_prediction_stays_within_2x_of_the_nearest_pairs():
    from gpuperf.decisions.speedup_models import LOCAL_MARGIN, _Regressions

    # 20 pairs on one feature x = 0..19; log2 speedup 0 for x < 10 and 5 above. The 10 nearest
    # pairs of x = 0 are x = 0..9, all at 0: an M5P prediction of log2 = 10 is clipped to
    # min(0 + 1, 5) = 1 (2x beyond what they measured).
    X = np.arange(20, dtype=float)[:, None]
    y = np.where(X[:, 0] < 10, 0.0, 5.0)
    regressions = _Regressions.fit(X, y, 10, "distance")

    class Runaway:
        def predict(self, Z):
            return np.full(len(Z), 10.0)

    regressed = replace(regressions, m5p=Runaway()).predict(np.array([[0.0]]))
    assert LOCAL_MARGIN == 1.0
    assert regressed["m5p"].tolist() == [1.0]


def test_a_kernel_a_rounding_away_from_training_pairs_that_coincide_is_familiar():
    """Two pairs with the same features lie at distance 0 from each other: a kernel 1e-5 from them (a feature
    written to 4 decimals) had familiarity 0, so confidence 1.0 for the very kernel turned to 0.0."""
    pairs = pd.concat([_pairs(1)] * 2, ignore_index=True).assign(speedup=[7.9, 8.0], input=["n=1", "n=2"])
    model = SpeedupModel().fit(pairs)
    query = pairs.iloc[[0]].copy()
    query[MODEL_FEATURES[0]] *= 1 + 1e-5
    prediction = model.predict(query)
    assert prediction.familiarity[0] == 1.0 and prediction.confidence[0] == pytest.approx(1.0)
    far = pairs.iloc[[0]].copy()
    far[list(MODEL_FEATURES)] *= 4  # an unlike kernel stays unfamiliar
    assert model.predict(far).familiarity[0] < 0.01


def test_the_package_names_are_the_functions_even_once_their_modules_are_loaded():
    """``from gpuperf.decisions import advise`` is the function, not a module of the same name."""
    import gpuperf.decisions.advisor  # noqa: F401 - loading a submodule binds its name on the package
    import gpuperf.decisions.exploration  # noqa: F401
    from gpuperf.decisions import advise, explore

    assert callable(advise) and advise.__module__ == "gpuperf.decisions.advisor"
    assert callable(explore) and explore.__module__ == "gpuperf.decisions.exploration"


def test_advise_reports_each_optimization_as_it_is_taken_up(monkeypatch):
    """A first run fits every entry's models for minutes: progress names each entry in turn."""
    from gpuperf.decisions import advisor
    from gpuperf.decisions.optimizations import load_optimizations

    entries = list(load_optimizations().values())[:3]
    monkeypatch.setattr(advisor, "_condition_verdict", lambda entry, features: False)  # nothing to fit
    seen = []
    advice = advisor.advise({advisor.ADVICE_FEATURES[0]: 1.0}, entries=entries,
                            progress=lambda done, total, name: seen.append((done, total, name)))
    assert seen == [(i, 3, entry.name) for i, entry in enumerate(entries)]
    assert [name for name, _ in advice.skipped] == [entry.name for entry in entries]


MIXED_SPACE = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.space import VariantSpace


def _make(config):
    width = 64 if config["local_x"] == "wide" else config["local_x"]
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions=f"n >= 1 and n mod {width} = 0", name="twice", lang_version=(2018, 2))
    return lp.split_iname(program, "i", width, outer_tag="g.0", inner_tag="l.0")


def mixed():
    return VariantSpace(name="twice", parameters={"local_x": [16, "wide", 32, 64]}, defaults={"local_x": 16},
                        check=lambda c: None, make=_make)
'''


def test_a_space_parameter_with_text_values_is_flipped_by_its_numbers_and_a_text_setting_is_said(tmp_path):
    """A user's space may mix text among a parameter's values: the numbers are the ones a flip can
    step through, and a variant set to the text value is told apart from one already flipped."""
    from gpuperf.decisions.advisor import _space_change

    path = tmp_path / "mixed.py"
    path.write_text(MIXED_SPACE)
    space = f"{path}:mixed"
    entry = load_optimizations()["larger_work_groups"]
    narrow = get_kernel(f"{space}[local_x=16]")
    assert _space_change(entry, narrow, space) == (f"{space}[local_x=32]", None, "", "")
    wide = get_kernel(f"{space}[local_x=wide]")
    changed, reason, *_ = _space_change(entry, wide, space)
    assert changed is None and "has local_x='wide', not a number to take from 16 to 32" in reason


PICKY_SPACES = '''
import loopy as lp
import numpy as np

from gpuperf.kernels.space import VariantSpace


def _tiled(config):
    if config["local_x"] == 32 and config["buggy"]:
        raise ValueError("team bug: 32 not supported")
    program = lp.make_kernel("{[i]: 0<=i<n}", "b[i] = 2*a[i]", [lp.GlobalArg("a,b", np.float32, shape="n"), "..."],
                             assumptions="n >= 1 and n mod 64 = 0", name="twice", lang_version=(2018, 2))
    return lp.split_iname(program, "i", config["local_x"], outer_tag="g.0", inner_tag="l.0")


def picky():
    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64], "buggy": [0]}, defaults={"local_x": 16, "buggy": 0},
                        check=lambda c: "32 is slow here" if c["local_x"] == 32 else None, make=_tiled)


def raising():
    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64], "buggy": [1]}, defaults={"local_x": 16, "buggy": 1},
                        check=lambda c: None, make=_tiled)
'''


def test_an_error_in_a_users_make_is_raised_and_a_fallback_value_is_said(tmp_path):
    """A user's make raising on the flip's ``after`` value was swallowed and the next value advised
    silently; now the error stops the advice, and a value the check refuses gives way to the next
    with a note saying so."""
    from gpuperf.decisions.advisor import _space_change

    path = tmp_path / "picky.py"
    path.write_text(PICKY_SPACES)
    entry = load_optimizations()["larger_work_groups"]
    picky = f"{path}:picky"
    variant, *_, fallback = _space_change(entry, get_kernel(f"{picky}[local_x=16]"), picky)
    assert variant == f"{picky}[buggy=0,local_x=64]"
    assert fallback == "local_x taken to 64, not the entry's 32: variant twice[buggy=0,local_x=32] is invalid: 32 is slow here"
    raising = f"{path}:raising"
    with pytest.raises(GpuperfError, match=r"make raised ValueError: team bug: 32 not supported at .*picky.py:10 on "
                                           r"twice\[buggy=1,local_x=32\]"):
        _space_change(entry, get_kernel(f"{raising}[local_x=16]"), raising)


def test_a_users_make_recording_a_stale_variant_is_one_error_naming_the_space(tmp_path):
    """A make recording another configuration than it built (always local_x=16) gave the kernel itself
    as the optimization's variant, then a bare StopIteration; now one error names the space."""
    from gpuperf.decisions.advisor import _space_change

    path = tmp_path / "stale.py"
    path.write_text(PICKY_SPACES + '''

def stale():
    from gpuperf.kernels import Kernel
    def make(config):
        return Kernel(name="twice", program=_tiled(config), params=("n",), variant={**config, "local_x": 16})
    return VariantSpace(name="twice", parameters={"local_x": [16, 32, 64], "buggy": [0]},
                        defaults={"local_x": 16, "buggy": 0}, check=lambda c: None, make=make)
''')
    space = f"{path}:stale"
    with pytest.raises(GpuperfError, match=r"variant space 'twice' \(.*stale.py:stale\): make built "
                                           r"twice\[buggy=0,local_x=32\] but its Kernel records local_x=16; "):
        _space_change(load_optimizations()["larger_work_groups"], get_kernel(f"{space}[local_x=16]"), space)


def test_an_optimization_whose_variant_refuses_the_sizes_does_not_apply_and_the_others_are_advised(pocl_entries):
    """stencil2d at n=1040 runs, but its outputs_y=4 variant needs n mod 64: advise stopped with that
    assumption error; now thread coarsening alone does not apply at these sizes."""
    advice = advise_kernel(get_kernel("stencil2d"), {"n": 1040, "m": 2048}, threshold=1e-9, entries=pocl_entries,
                           min_confidence=0)
    skipped = dict(advice.skipped)
    assert skipped["thread_coarsening"].startswith("does not apply: no valid outputs_y value after 1: sizes outside "
                                                   "its assumptions: kernel 'stencil2d[")
    assert "violate its assumptions" in skipped["thread_coarsening"]  # nor outputs_y=2's (n mod 32)
    assert advice.assessed  # the other optimizations are still assessed


def test_a_flips_fallback_value_is_taken_where_the_sizes_refuse_its_after_value():
    """stencil2d's outputs_y=4 needs n mod 64; at n=32 thread coarsening did not apply, though outputs_y=2
    (n mod 32) runs there: the sizes are checked for each value the flip may take."""
    from gpuperf.decisions.advisor import _space_change

    entry = load_optimizations()["thread_coarsening"]
    variant, reason, _, fallback = _space_change(entry, get_kernel("stencil2d"), None, {"n": 32, "m": 64})
    assert (variant, reason) == ("stencil2d[local_x=16,local_y=16,outputs_y=2,prefetch=0,unroll=1]", None)
    assert fallback.startswith("outputs_y taken to 2, not the entry's 4: sizes outside its assumptions: kernel "
                               "'stencil2d[local_x=16,local_y=16,outputs_y=4,prefetch=0,unroll=1]': sizes n=32, m=64")


def test_a_model_of_the_change_alone_does_not_assess_a_kernel_with_no_variant_to_change(pocl_entries, monkeypatch):
    """A kernel outside any variant space has no change_* features: a model choosing them predicted its
    training medians, one figure for every such kernel (0.53x for larger work-groups on an H100)."""
    from gpuperf.decisions.advice_features import CHANGE_FEATURES, GPU_FEATURES

    monkeypatch.setattr(SpeedupModel, "features", property(lambda self: CHANGE_FEATURES + GPU_FEATURES))
    advice = advise_kernel(get_kernel("vector_copy"), {"n": 2**20}, threshold=1e-9, entries=pocl_entries,
                           min_confidence=0)
    assert not advice.assessed
    reasons = [why for _, why in advice.skipped if why.startswith("not assessed: its model predicts from what "
                                                                   "the change does to a variant")]
    assert reasons and all("this kernel has no variant with it applied" in why for why in reasons)


def test_a_space_variant_whose_space_lacks_the_entrys_parameters_is_told_so(pocl_entries, monkeypatch, tiled_space):
    """A variant of a space with no local_x or local_y was 'not assessed' for larger work-groups as though
    it were no space's variant ('a kernel of a variant space has'); the space names what it lacks."""
    from gpuperf.decisions.advice_features import CHANGE_FEATURES, GPU_FEATURES

    file = Path(tiled_space.rpartition(":")[0])
    file.write_text(file.read_text().replace("local_x", "width"))
    monkeypatch.setattr(SpeedupModel, "features", property(lambda self: CHANGE_FEATURES + GPU_FEATURES))
    chosen = [e for e in pocl_entries if e.name == "larger_work_groups"]
    with pytest.warns(UserWarning, match="is no parameter of the space"):
        advice = advise_kernel(get_kernel(f"{tiled_space}[width=16]"), {"n": 4096}, threshold=1e-9, entries=chosen,
                               min_confidence=0, space=tiled_space)
    assert dict(advice.skipped)["larger_work_groups"] == (
        "not assessed: its model predicts from what the change does to a variant (change_threads, change_work_groups, "
        f"...), and the space {tiled_space} has no local_x or local_y parameter for it to change")


def test_prefetch_needs_more_than_one_load_per_work_item_and_padding_a_local_tile():
    """b[i] = a[i] was advised local-memory prefetch first (1.7x: nothing to reuse) and padding of a
    local tile it does not have; both now say why they do not apply."""
    entries = load_optimizations()
    advice = advise_kernel(get_kernel("vector_copy"), {"n": 2**20}, gpu="H100", threshold=1e-9, min_confidence=0,
                           entries=[entries["local_memory_prefetch"], entries["padding"]])
    assert not advice.assessed
    assert dict(advice.skipped) == {
        "local_memory_prefetch": "does not apply: global_loads_per_thread > 1 and local_memory_bytes == 0 is false "
                                 "for this kernel",
        "padding": "does not apply: local_memory_bytes > 0 is false for this kernel"}


def test_prefetch_is_not_advised_to_a_kernel_that_stages_its_data_in_local_memory_already():
    """matmul_tiled_prefetch was suggested local-memory prefetching (1.25x) with the lp.add_prefetch recipe."""
    entries = load_optimizations()
    advice = advise_kernel(get_kernel("matmul_tiled_prefetch"), {"n": 1024, "m": 1024, "k": 1024}, gpu="H100",
                           threshold=1e-9, min_confidence=0, entries=[entries["local_memory_prefetch"]])
    assert not advice.assessed
    assert dict(advice.skipped)["local_memory_prefetch"].startswith("does not apply:")


class _Reduced:
    """An object skops saves by its constructor's arguments (turned into another callable below)."""

    def __init__(self, code, scope):
        self.code, self.scope = code, scope

    def __reduce__(self):
        return (_Reduced, (self.code, self.scope))


def test_a_planted_cache_file_calling_a_numpy_function_is_not_loaded(tmp_path):
    """A cache folder others can write to: a .skops file whose object is numpy's runstring(code) is refused."""
    import io
    import json
    import zipfile

    import skops.io as sio

    from gpuperf.decisions.advisor import _load_parts

    marker = tmp_path / "ran"
    source = zipfile.ZipFile(io.BytesIO(sio.dumps(_Reduced(f"open({str(marker)!r}, 'w').write('x')", {}))))
    schema = json.loads(source.read("schema.json"))
    schema["__module__"], schema["__class__"] = "numpy.testing._private.utils", "runstring"
    planted = tmp_path / "model-planted.skops"
    with zipfile.ZipFile(planted, "w") as target:
        for item in source.namelist():
            target.writestr(item, json.dumps(schema) if item == "schema.json" else source.read(item))
    assert _load_parts(planted) is None
    assert not marker.exists()


@pytest.mark.parametrize("threshold", [0.0, -1.0, float("inf"), float("nan")])
def test_a_threshold_that_is_no_positive_finite_speedup_is_refused(threshold):
    with pytest.raises(GpuperfError, match="threshold \\(--threshold\\) must be a positive, finite speedup"):
        advise({"threads": 1024.0}, entries=[], threshold=threshold)


def test_advise_refuses_an_unknown_target_or_gpu():
    """target='gpux' gave advice with every optimization 'not assessed', and gpu='H1000' the H100's."""
    features = {"threads": 1e6}
    with pytest.raises(GpuperfError, match="target 'gpux': 'gpu' .* or 'device:NAME'"):
        advise(features, target="gpux")
    with pytest.raises(GpuperfError, match="unknown GPU 'H1000'"):
        advise(features, gpu="H1000")


def test_advise_kernel_takes_a_kernel_by_its_name_as_extract_features_does(pocl_entries):
    by_name = advise_kernel("stencil2d[outputs_y=2]", {"n": 512, "m": 512}, threshold=1e-9, entries=pocl_entries)
    built = advise_kernel(get_kernel("stencil2d[outputs_y=2]"), {"n": 512, "m": 512}, threshold=1e-9,
                          entries=pocl_entries)
    assert by_name == built
