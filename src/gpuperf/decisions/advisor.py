"""The optimization advisor: ranked suggestions for a kernel, with predicted speedup and reasons.

``advise_kernel(kernel, sizes, gpu=...)`` describes a gpuperf kernel by its static features;
``advise_profile(row)`` describes a profiled launch by its counters (``gpuperf.decisions.profile``).
Both call ``advise(features, target)``: for every optimization in the database that applies, the
speedup models trained on its pairs for that target (``speedup_models``) predict
time_before / time_after, and those predicted at or above ``threshold`` are returned, fastest
first, each with its confidence, an explanation (the entry's "when it helps" and the nearest
training pairs) and how to apply it.

Targets: ``gpu`` (pairs measured on GPUs, the GPU descriptor among the features) or
``device:NAME`` (pairs measured on that device, e.g. the pocl CPU device). Fitted models are cached
under ``$GPUPERF_CACHE_DIR/advise`` next to the pairs, keyed by the pairs they were fitted on.
"""

from __future__ import annotations

import hashlib
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd

from gpuperf.decisions.advice_features import (
    ADVICE_FEATURES, ANALYSABLE, CHANGE_FEATURES, CONDITION_FEATURES, GPU_FEATURES, MODEL_FEATURES,
    PER_ACCESS_FEATURES, gpu_features, kernel_change_features, kernel_features, with_condition_features,
)
from gpuperf.decisions.condition_logic import verdict
from gpuperf.decisions.optimizations import Optimization, load_optimizations
from gpuperf.decisions.pairs import (
    DEVICE_TARGET, GPU_TARGET, cache_dir, number_text, spec_pairs, unvalued_features_note,
)
from gpuperf.decisions.speedup_models import Prediction, SpeedupModel, inner_cv_sample, pair_groups
from gpuperf.errors import GpuperfError, GpuperfNote
from gpuperf.files import write_cache_file
from gpuperf.kernels.kernel import Kernel, KernelLike

DEFAULT_THRESHOLD = 1.05
# Confidence is the calibrated chance that the predicted sign is right: below one half a suggestion
# is more likely a slowdown than a speedup, so the advisor abstains by default.
DEFAULT_MIN_CONFIDENCE = 0.5
# Called as each optimization is taken up: (done, total, its name).
Progress = Callable[[int, int, str], None]
MODEL_FORMAT = 8  # raise when the cached speedup models change (8: M5P breaks ties by column values, not positions)
NEAREST_SHOWN = 3


@dataclass
class Suggestion:
    """One optimization's predicted effect: ``predicted_speedup`` (time before / time after),
    ``confidence`` (0 to 1), ``explanation`` (why: ``summary``, the models' predictions, the nearest
    training pairs, ...) and ``apply`` (how: the entry's kind, loopy transformation, parameters and,
    for a variant space's variant, the ``variant`` with it applied); ``to_dict`` gives the JSON."""

    optimization: str
    title: str
    predicted_speedup: float
    confidence: float
    explanation: dict[str, Any] = field(repr=False)
    apply: dict[str, Any] = field(repr=False)

    def to_dict(self, threshold: float | None = None, min_confidence: float | None = None) -> dict[str, Any]:
        """The suggestion as JSON values: the speedup to 4 decimals and the confidence to 3, or more
        where fewer would carry it across ``threshold`` or ``min_confidence`` (1.20133 is not 1.2013)."""
        return {
            "optimization": self.optimization, "title": self.title,
            "predicted_speedup": _rounded_apart(self.predicted_speedup, threshold, 4),
            "confidence": _rounded_apart(self.confidence, min_confidence, 3),
            "explanation": self.explanation, "apply": self.apply,
        }


def _rounded_apart(value: float, bound: float | None, decimals: int) -> float:
    """``value`` rounded to ``decimals``, or to more where rounding would move it across ``bound``."""
    if bound is None:
        return round(value, decimals)
    return float(decimals_apart(value, bound, decimals))


@dataclass
class Advice:
    """Suggestions above the threshold, every assessed prediction, and what was not assessed and why."""

    suggestions: list[Suggestion]
    assessed: list[Suggestion] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # mistakes found in the entries (a parameter the space lacks)


# -- targets ---------------------------------------------------------------------------------------
def device_target(device: str) -> str:
    """The pair target of a measurement device (``opencl:0``): ``device:`` + its name."""
    from gpuperf.measure import open_device

    name = open_device(device).provenance().get("device_name", device)
    return DEVICE_TARGET + name


def _target_pairs(pairs: pd.DataFrame, target: str) -> tuple[pd.DataFrame, str]:
    """The pairs for ``target``; for an unmeasured device, those of any measured device (with a note)."""
    chosen = pairs[pairs["target"] == target]
    if chosen.empty and target.startswith(DEVICE_TARGET):
        other = pairs[pairs["target"].str.startswith(DEVICE_TARGET)]
        if not other.empty:
            names = ", ".join(sorted(other["target"].str.removeprefix(DEVICE_TARGET).unique()))
            return other, f"no pairs measured on this device; using pairs measured on {names}"
    return chosen, ""


def _no_pairs_reason(all_pairs: list[pd.DataFrame], target: str) -> str:
    """Why an optimization has no training pairs for ``target``, and what would give it some."""
    measured = sorted(set().union(*(set(p["target"]) for p in all_pairs))) if all_pairs else []
    on_devices = [t.removeprefix(DEVICE_TARGET) for t in measured if t.startswith(DEVICE_TARGET)]
    if target == GPU_TARGET and on_devices:
        return (f"its pairs were measured on a device ({', '.join(on_devices)}), not on GPUs; "
                "advise for a device with --device")
    if not measured:
        return "its entry yields no measured pairs"
    if target.startswith(DEVICE_TARGET) and not on_devices:
        return "its pairs were measured on GPUs only, none on a device; advise for a GPU with --gpu"
    return f"no training pairs for {target.removeprefix(DEVICE_TARGET)}"


# -- models ------------------------------------------------------------------------------------------
# What a cached model holds beyond skops' own trusted types: exactly these (a wider set, such as any
# numpy function, would let a planted cache file call it with arguments of its choosing).
SAFE_TYPES = ("gpuperf.models.m5p.M5PRegressor", "gpuperf.models.learned.signed_log1p", "numpy.dtype")


def _model_path(pairs: pd.DataFrame) -> Path:
    import sklearn

    import gpuperf

    digest = hashlib.sha256(pd.util.hash_pandas_object(pairs, index=False).to_numpy().tobytes())
    digest.update(f"{MODEL_FORMAT}|{gpuperf.__version__}|{sklearn.__version__}".encode())
    return cache_dir() / f"model-{digest.hexdigest()[:24]}.skops"


def _load_parts(path: Path) -> dict[str, Any] | None:
    """Saved model parts, or None when the file is unreadable or holds a type outside the safe set."""
    import skops.io as sio

    try:
        types = sio.get_untrusted_types(file=path)
        if not set(types) <= set(SAFE_TYPES):
            return None
        return sio.load(path, trusted=types)
    except Exception:  # noqa: BLE001 - any damaged cache file is refitted
        return None


def fitted_model(pairs: pd.DataFrame, use_cache: bool = True) -> SpeedupModel:
    """A SpeedupModel fitted on ``pairs``, from the on-disk cache (skops) when it holds one for them."""
    import skops.io as sio

    pairs = pairs.reset_index(drop=True)
    path = _model_path(pairs)
    parts = _load_parts(path) if use_cache and path.is_file() else None
    if parts is not None:
        try:
            return SpeedupModel.from_parts(parts, pairs)
        except (GpuperfError, KeyError, AttributeError, TypeError, ValueError):  # parts of another shape: refitted
            pass
    model = SpeedupModel().fit(pairs)
    if use_cache:
        write_cache_file(path, lambda temporary: sio.dump(model.parts(), temporary))
    return model


# -- applicability -----------------------------------------------------------------------------------
def _condition_holds(entry: Optimization, features: Mapping[str, float]) -> bool:
    """Whether ``applies_when`` holds; one that unknown (NaN) features decide counts as holding."""
    return _condition_verdict(entry, features) is not False


def _condition_verdict(entry: Optimization, features: Mapping[str, float]) -> bool | None:
    """Whether ``applies_when`` holds, None when unknown (NaN) features decide it (a false side of an
    ``and`` decides it without them); false only on the accesses gpuperf could analyse, where some it
    could not (:func:`_partly_judged`), is not known either."""
    if not entry.applies_when:
        return True
    features = with_condition_features(features)
    if _unknown_in_condition(entry, features):
        return verdict(entry.applies_when, features)
    frame = pd.DataFrame([{name: features.get(name, math.nan) for name in MODEL_FEATURES + CONDITION_FEATURES}])
    holds = bool(frame.eval(entry.applies_when).iloc[0])
    if not holds and _partly_judged(entry, features):  # the accesses left out may make it hold
        return verdict(entry.applies_when, {**features, **dict.fromkeys(PER_ACCESS_FEATURES, math.nan)})
    return holds


def _condition_names(entry: Optimization) -> set[str]:
    """The feature names ``applies_when`` uses."""
    import ast

    return {n.id for n in ast.walk(ast.parse(entry.applies_when, mode="eval")) if isinstance(n, ast.Name)}


def _unknown_in_condition(entry: Optimization, features: Mapping[str, float]) -> list[str]:
    """The features ``applies_when`` uses that are unknown (NaN) for this kernel (no global access
    gpuperf can analyse, say), in the order of their names."""
    if not entry.applies_when:
        return []
    features = with_condition_features(features)
    return sorted(name for name in _condition_names(entry) if pd.isna(features.get(name, math.nan)))


def _partly_judged(entry: Optimization, features: Mapping[str, float]) -> list[str]:
    """The per-access features ``applies_when`` uses where some global accesses could not be analysed
    (``analysable_access_fraction`` below 1): those describe the analysable accesses only."""
    share = features.get(ANALYSABLE, math.nan)
    if not entry.applies_when or share is None or pd.isna(share) or share >= 1:
        return []
    return sorted(_condition_names(entry) & set(PER_ACCESS_FEATURES))


def _waits_for_change(entry: Optimization, features: Mapping[str, float]) -> bool:
    """Whether what leaves ``entry``'s condition unjudged includes what the optimization changes
    (``change_*``), known only once the variant with it applied is (:func:`_with_change`)."""
    return any(name in CHANGE_FEATURES for name in _unknown_in_condition(entry, features))


def _not_judged_note(entry: Optimization, features: Mapping[str, float]) -> str:
    """Why ``entry``'s condition is assessed as if it held: unknown features, or per-access ones that
    leave accesses out."""
    unknown = _unknown_in_condition(entry, features)
    if unknown:
        return (f"{entry.name}: its condition {entry.applies_when} cannot be judged for this kernel "
                f"({', '.join(unknown)} unknown), so it is assessed as if it held")
    return (f"{entry.name}: its condition {entry.applies_when} cannot be judged for this kernel: it is false on the "
            f"global accesses gpuperf can analyse, but {ANALYSABLE} is {features[ANALYSABLE]:.3g} (the others, such "
            f"as an index array's gather or scatter, are not in {', '.join(_partly_judged(entry, features))}), "
            "so it is assessed as if it held")


class SpaceChange(NamedTuple):
    """What an optimization changes in a space variant."""

    variant: str | None  # the variant spec with the optimization applied
    reason: str | None  # why it does not apply
    note: str  # a mistake in the entry: a parameter the space lacks
    fallback: str = ""  # where a flip's ``after`` value gives no variant: the value taken instead, and why


def _space_change(entry: Optimization, kernel: Kernel | None, space_name: str | None = None,
                  sizes: Mapping[str, Any] | None = None) -> SpaceChange:
    """(variant spec with the optimization applied, reason it does not apply, a note on why there is
    no variant where the entry names a parameter the space lacks, a note on a fallback value) for a
    variant of the space ``space_name`` (``file.py:function`` for a user's; default: the catalog space
    named as the kernel). The entry's flips are tried in order, and the first that gives a variant is
    used. A variant whose parameter already lies at or beyond a flip's ``after`` value has it applied;
    one short of it (the flip's ``before``, or further back) is taken to ``after``, else the next valid
    value that way (said in ``fallback``); a value whose variant ``sizes`` (when given) do not fit counts
    as invalid. An error in the user's own ``check`` or ``make`` is raised."""
    flips = entry.space_parameters
    if kernel is None or not flips:
        return SpaceChange(None, None, "")
    from gpuperf.kernels.space import get_space

    if space_name is not None:
        space = get_space(space_name)
    elif kernel.category == "user":  # a user's kernel named like a catalog space is none of its variants
        return SpaceChange(None, None, "")
    else:
        space_name = kernel.name
        try:
            space = get_space(space_name)
        except GpuperfError:  # not a space's variant: the optimization changes what its features say
            return SpaceChange(None, None, "")
    variant = dict(kernel.variant) or dict(space.defaults)  # a catalog kernel heading a space is its default
    reasons, notes = [], []
    for flip in flips:
        if flip["name"] not in variant:  # a typo in the entry, or an optimization this space does not parametrise
            notes.append(f"no variant to apply: apply.space_parameter.name '{flip['name']}' of {entry.name} is "
                         f"no parameter of the space {space_name} ({', '.join(space.parameters)})")
            continue
        changed, reason, fallback = _flipped(space, space_name, variant, flip, kernel.key, sizes)
        if changed:
            return SpaceChange(changed, None, "; ".join(notes), fallback)
        reasons.append(reason)
    if not reasons:
        return SpaceChange(None, None, "; ".join(notes))
    return SpaceChange(None, "; ".join(reasons + notes), "")


def _flipped(space: Any, space_name: str, variant: Mapping[str, Any], flip: Mapping[str, Any],
             label: str, sizes: Mapping[str, Any] | None = None) -> tuple[str | None, str, str]:
    """(the variant with ``flip`` applied, or why there is none, and why another value than the flip's
    ``after`` was taken). A value the space lists not, or whose variant the space refuses or ``sizes``
    lie outside the assumptions of (``InvalidVariant``), gives way to the next; any other error (the
    user's ``make`` raising) is raised."""
    from gpuperf.kernels.space import InvalidVariant, check_variant_sizes

    name, current = flip["name"], variant[flip["name"]]
    before, after = flip["before"], flip["after"]
    if not _is_number(current):  # the entry's flips are numbers: a text setting is neither short of nor past them
        return None, f"{label} has {name}={current!r}, not a number to take from {before} to {after}", ""
    increasing = after > before
    if not (current < after if increasing else current > after):
        return None, f"{label} already has {name}={current}", ""
    allowed = space.parameters[name]
    towards = [v for v in allowed if _is_number(v) and v != after and ((v > current) if increasing else (v < current))]
    reasons = []
    for value in [after] + sorted(towards, reverse=not increasing):
        if value not in allowed:
            reasons.append(f"{space.label}: {name}={value!r} is not one of {', '.join(str(v) for v in allowed)}")
            continue
        try:
            built = space.build({**variant, name: value})
            _check_recorded(space, {**variant, name: value}, built)
            if sizes is not None:
                check_variant_sizes(built, sizes)
        except InvalidVariant as exc:
            reasons.append(str(exc))
            continue
        fallback = "" if value == after else f"{name} taken to {value}, not the entry's {after}: {reasons[0]}"
        return f"{space_name}[{built.variant_label}]", "", fallback
    return None, f"no valid {name} value after {current}: {reasons[0] if reasons else 'none larger'}", ""


def _check_recorded(space: Any, config: Mapping[str, Any], built: Kernel) -> None:
    """An error naming the space where the variant ``make`` built for ``config`` records another
    configuration (a stale one): its spec would name some other variant."""
    wanted = space.complete(config)
    wrong = [f"{key}={built.variant.get(key)!r}" for key, value in wanted.items() if built.variant.get(key) != value]
    if wrong:
        raise GpuperfError(f"{space.label}: make built {space.key(wanted)} but its Kernel records {', '.join(wrong)}; "
                           "a variant must record the configuration it was built for (Kernel(variant=config))")


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _apply_info(entry: Optimization, variant: str | None) -> dict[str, Any]:
    info = {key: value for key, value in entry.apply.items()}
    if variant:
        info["variant"] = variant
    return info


# -- explanation -------------------------------------------------------------------------------------
CONFIDENCE_MEANS = ("how often predictions like this one ({speedup:.2f}x: {side}) fell on the right side of 1x for "
                    "held-out training pairs, the figure to go by")
UNCALIBRATED_MEANS = ("uncalibrated (too few training groups to hold any out): model agreement and neighbour "
                      "consistency on the predicted side ({speedup:.2f}x: {side})")
MEASURED_HERE_MEANS = ("not a prediction: the share of this GPU's own measurements of this very pair on the measured "
                       "side ({speedup:.2f}x: {side})")
P_FASTER_MEANS = ("the logistic regression's uncalibrated estimate that it is faster at all, fitted on all training "
                  "pairs and not checked on held-out ones, so it can disagree with the confidence")


def _measured_here(prediction: Prediction, row: int) -> bool:
    """Whether the query's own GPU measured this very pair (its measurement is the answer)."""
    here = getattr(prediction, "measured_here", None)
    return bool(here is not None and here[row])


def meanings(prediction: Prediction, row: int, calibrated: bool) -> dict[str, str]:
    """What the explanation's confidence and P(faster) each mean, in words, for one prediction."""
    speedup = float(prediction.speedup[row])
    side = "faster" if speedup > 1 else "not faster"
    means = MEASURED_HERE_MEANS if _measured_here(prediction, row) else (
        CONFIDENCE_MEANS if calibrated else UNCALIBRATED_MEANS)
    confidence = means.format(side=side, speedup=speedup)
    return {"confidence": confidence, "p_faster": P_FASTER_MEANS}


def _measured_elsewhere(prediction: Prediction, row: int) -> str:
    """Words for a prediction taken from the same pair measured on GPUs ('' for a models' prediction)."""
    gpus = prediction.measured_on[row] if prediction.measured_on else ()
    if not gpus:
        return ""
    if _measured_here(prediction, row):
        return (f"this very change of this kernel at these sizes was measured on this GPU ({', '.join(gpus)}): "
                f"{prediction.speedup[row]:.2f}x, its own measurement, not a prediction (other GPUs' measurements "
                f"left aside); the models alone would predict {prediction.model_speedup[row]:.2f}x; ")
    return (f"this very change of this kernel at these sizes was measured on {', '.join(gpus)}: "
            f"{prediction.speedup[row]:.2f}x from those measurements (GPUs weighted by likeness), not the models' "
            f"{prediction.model_speedup[row]:.2f}x; ")


def _scaled_down(model: SpeedupModel, prediction: Prediction, row: int) -> str:
    """Words for a confidence lowered because the kernel is unlike the training pairs ('' where it is not,
    and for a prediction from the pair measured on other GPUs, whose confidence has its own calibration)."""
    if prediction.measured_on and prediction.measured_on[row]:
        return ""
    familiarity = float(prediction.familiarity[row])
    floor = getattr(model, "familiarity_floor", 1.0) if model.calibrator is not None else 1.0
    if familiarity >= floor:
        return ""
    return (f", scaled down by {familiarity / floor:.3g} because this kernel lies farther from its nearest training "
            f"pairs than they lie from theirs (familiarity {familiarity:.3g})")


def _uncalibrated_note(entry: Optimization, model: SpeedupModel, prediction: Prediction) -> str:
    """A note where ``entry``'s confidence is uncalibrated: its training pairs (those inner CV samples of
    them) hold too few (program, input) groups to hold any out ('' where it is calibrated, or taken from the
    pair measured on GPUs)."""
    if model.calibrator is not None or (prediction.measured_on and prediction.measured_on[0]):
        return ""
    sample = inner_cv_sample(model.pairs)  # the pairs whose groups decided it
    groups = len(set(pair_groups(sample)))
    count = len(sample)
    pairs = (f"its {count} training pair{'s' * (count != 1)}" if count == len(model.pairs)
             else f"the {count:,} of its {len(model.pairs):,} training pairs sampled for inner CV")
    return (f"{entry.name}: confidence {prediction.confidence[0]:.2f} is uncalibrated, not the chance the predicted "
            f"sign is right: {pairs} form{'s' * (count == 1)} {groups} "
            f"(program, input) group{'s' * (groups != 1)}, too few to hold any out, so it is model agreement and "
            "neighbour consistency (1.00 from a single pair), which --min-confidence cannot judge")


def _explanation(entry: Optimization, model: SpeedupModel, row: int, prediction, note: str) -> dict[str, Any]:
    near = model.pairs.iloc[prediction.neighbours[row][:NEAREST_SHOWN]]
    nearest = [
        {"family": r.family, "kernel": r.kernel, "change": r.change, "configuration": r.configuration,
         "gpu": r.gpu, "measured_speedup": round(float(r.speedup), 4)}
        for r in near.itertuples()
    ]
    measured = model.pairs.iloc[prediction.neighbours[row]]["speedup"]
    meant = meanings(prediction, row, model.calibrator is not None)
    summary = _measured_elsewhere(prediction, row) + (
        f"k-NN predicts {prediction.knn[row]:.2f}x, M5P {prediction.m5p[row]:.2f}x, logistic regression "
        f"P(faster) = {prediction.p_faster[row]:.2f}; the {len(measured)} nearest of {len(model.pairs)} "
        f"training pairs measured {measured.min():.2f}x to {measured.max():.2f}x; confidence "
        f"{prediction.confidence[row]:.2f}: {meant['confidence']}{_scaled_down(model, prediction, row)}; "
        f"P(faster) is {meant['p_faster']}"
    )
    explanation = {
        "summary": summary + (f" ({note})" if note else ""),
        "when_it_helps": entry.when_it_helps,
        "models": {"knn": round(float(prediction.knn[row]), 4), "m5p": round(float(prediction.m5p[row]), 4),
                   "p_faster": round(float(prediction.p_faster[row]), 4)},
        "meanings": meant,
        "chosen_model": {"feature_set": model.choice[0], "regression": model.choice[1]},
        "familiarity": round(float(prediction.familiarity[row]), 3),
        "nearest_pairs": nearest,
        "training_pairs": len(model.pairs),
        "measured_on": list(prediction.measured_on[row]) if prediction.measured_on else [],
        "measured_on_this_gpu": _measured_here(prediction, row),
    }
    return explanation


# -- advising ----------------------------------------------------------------------------------------
class _NotAssessed(Exception):
    """Why one optimization is not assessed for the kernel: it does not apply, or nothing predicts it."""


@dataclass(frozen=True)
class _Request:
    """What :func:`advise` is asked about, as each optimization's assessment reads it: the kernel's
    ``features`` (and the ``query`` of model features made of them), the pair ``target``, the kernel,
    its variant ``space`` and ``sizes`` where it is a space's variant, the ``gpu``, whether to
    ``use_cache``, and the ``note`` every suggestion's summary carries."""

    features: Mapping[str, float]
    query: pd.DataFrame
    target: str
    kernel: Kernel | None
    space: str | None
    sizes: Mapping[str, Any] | None
    gpu: str | None
    use_cache: bool
    note: str


def advise(
    features: Mapping[str, float],
    target: str = GPU_TARGET,
    threshold: float = DEFAULT_THRESHOLD,
    entries: Iterable[Optimization] | None = None,
    kernel: Kernel | None = None,
    use_cache: bool = True,
    note: str = "",
    sizes: Mapping[str, Any] | None = None,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    progress: Progress | None = None,
    gpu: str | None = None,
    space: str | None = None,
) -> Advice:
    """Suggestions for a kernel described by ``features`` (advice + GPU features) on ``target``.

    For a variant of a variant space (``kernel``, a variant of the space named ``space``,
    ``file.py:function`` for a user's; by default the catalog space of its name), what each
    optimization changes (``change_*``) comes from the variant with it applied at ``sizes``;
    otherwise from ``features`` (NaN: imputed).
    Predictions at or above ``threshold`` but with confidence below ``min_confidence`` are not
    suggested: the advisor abstains and says so in ``skipped``. ``features`` must give at least one
    of the kernel features the models know (``ADVICE_FEATURES``); others missing are imputed.
    Where the training pairs hold this very change of ``kernel`` at ``sizes``, measured on some GPU,
    those measurements predict it (the GPUs weighted by their likeness to ``gpu``), not the models; where
    ``gpu`` itself measured it, its own measurement is the answer (``measured_on_this_gpu``).
    ``progress(done, total, name)`` is called as each optimization is taken up (a first run builds
    and fits every entry's pairs and models, minutes; later runs read them from the cache)."""
    _check_advice_settings(threshold, min_confidence, target)
    if gpu is not None:
        from gpuperf.hardware.specs import get_gpu

        gpu = get_gpu(gpu).name  # an unknown name is an error naming the nearest, as advise_kernel's
    _check_features_describe_a_kernel(features)
    entries = list(load_optimizations().values() if entries is None else entries)
    assessed, skipped, notes = [], [], []
    if not entries:  # every entry removed (remove = true): nothing was assessed, which is no prediction
        notes.append("the optimization database holds no entries: no optimization was assessed")
        warnings.warn(GpuperfNote(notes[-1]), stacklevel=2)
    query = pd.DataFrame([{name: features.get(name, math.nan) for name in MODEL_FEATURES}])
    request = _Request(features, query, target, kernel, space, sizes, gpu, use_cache, note)
    for done, entry in enumerate(entries):
        if progress is not None:
            progress(done, len(entries), entry.name)
        said = len(notes)
        try:
            assessed.append(_assessed(entry, request, notes))
        except _NotAssessed as reason:
            skipped.append((entry.name, str(reason)))
        finally:  # said where every output shows it (a suggestion may rest on it), and before an error raised
            for text in notes[said:]:
                warnings.warn(GpuperfNote(text), stacklevel=2)
    return _ranked_advice(assessed, skipped, notes, threshold, min_confidence)


def _check_advice_settings(threshold: float, min_confidence: float, target: str) -> None:
    """An error naming the setting where ``threshold``, ``min_confidence`` or ``target`` is none advise takes."""
    if not 0 < threshold < math.inf:
        raise GpuperfError(f"threshold (--threshold) must be a positive, finite speedup, got {threshold}")
    if not 0.0 <= min_confidence <= 1.0:
        raise GpuperfError(f"min_confidence (--min-confidence) must lie in [0, 1], got {min_confidence}")
    if not isinstance(target, str) or not (target == GPU_TARGET or (target.startswith(DEVICE_TARGET)
                                                                     and len(target) > len(DEVICE_TARGET))):
        raise GpuperfError(f"target {target!r}: '{GPU_TARGET}' (pairs measured on GPUs) or '{DEVICE_TARGET}NAME' "
                           "(pairs measured on a device; device_target('opencl:0') gives it)")


def _check_features_describe_a_kernel(features: Mapping[str, float]) -> None:
    """An error where ``features`` give none of the kernel features the models know (``ADVICE_FEATURES``),
    naming the names it gives that are no features."""
    if any(not pd.isna(features.get(name, math.nan)) for name in ADVICE_FEATURES):
        return
    unknown = sorted(set(features) - set(MODEL_FEATURES) - set(CONDITION_FEATURES))
    raise GpuperfError("advise: the features describe no kernel the models know: give some of "
                       f"{', '.join(ADVICE_FEATURES[:4])}, ... (ADVICE_FEATURES)"
                       + (f"; unknown names: {', '.join(unknown[:5])}" if unknown else ""))


def _assessed(entry: Optimization, request: _Request, notes: list[str]) -> Suggestion:
    """``entry``'s predicted effect on the kernel of ``request``, with the notes said on the way added to
    ``notes``; :class:`_NotAssessed` where it does not apply or nothing predicts it."""
    waits = _judge_condition(entry, request.features, notes)
    change = _applied_in_variant(entry, request, notes)
    pairs, pair_note = _pairs_for_target(_measured_pairs(entry, request.use_cache, notes), request.target)
    model = fitted_model(pairs, request.use_cache)
    changed = _query_with_change(request, change.variant)
    if waits:
        _judge_condition_with_change(entry, request.features, changed, notes)
    _check_change_described(entry, model, changed, request, change.note)
    identified = _with_identity(changed, entry, request.kernel, change.variant, request.sizes, request.gpu,
                                request.space)
    prediction = model.predict(identified)
    if uncalibrated := _uncalibrated_note(entry, model, prediction):
        notes.append(uncalibrated)
    said = "; ".join(n for n in (request.note, pair_note, change.note, change.fallback) if n)
    return Suggestion(
        optimization=entry.name, title=entry.title,
        predicted_speedup=float(prediction.speedup[0]), confidence=float(prediction.confidence[0]),
        explanation=_explanation(entry, model, 0, prediction, said), apply=_apply_info(entry, change.variant),
    )


def _judge_condition(entry: Optimization, features: Mapping[str, float], notes: list[str]) -> bool:
    """Judge ``entry``'s condition on the kernel's ``features``: :class:`_NotAssessed` where it is false, a
    note where it cannot be judged; True where what leaves it unjudged is what the optimization changes,
    judged once that is known (:func:`_judge_condition_with_change`)."""
    applies = _condition_verdict(entry, features)
    if applies is False:
        raise _NotAssessed(f"does not apply: {entry.applies_when} is false for this kernel")
    waits = applies is None and _waits_for_change(entry, features)
    if applies is None and not waits:
        notes.append(_not_judged_note(entry, features))
    return waits


def _judge_condition_with_change(entry: Optimization, features: Mapping[str, float], changed: pd.DataFrame,
                                 notes: list[str]) -> None:
    """Judge ``entry``'s condition on ``features`` with what the change does (``changed``'s ``change_*``):
    :class:`_NotAssessed` where it is false, a note where it still cannot be judged."""
    with_change = {**features, **{name: float(changed[name].iloc[0]) for name in CHANGE_FEATURES}}
    applies = _condition_verdict(entry, with_change)
    if applies is False:
        raise _NotAssessed(f"does not apply: {entry.applies_when} is false for this change")
    if applies is None:
        notes.append(_not_judged_note(entry, with_change))


def _applied_in_variant(entry: Optimization, request: _Request, notes: list[str]) -> SpaceChange:
    """What ``entry`` changes in the kernel's space variant (:func:`_space_change`), a mistake in the entry (a
    parameter the space lacks) noted with its file; :class:`_NotAssessed` where it does not apply."""
    change = _space_change(entry, request.kernel, request.space, request.sizes)
    if change.note:
        notes.append(f"{entry.path}: {change.note}")
    if change.reason:
        raise _NotAssessed(f"does not apply: {change.reason}")
    return change


def _measured_pairs(entry: Optimization, use_cache: bool, notes: list[str]) -> list[pd.DataFrame]:
    """The pairs of each of ``entry``'s pair specs that has any, a table's feature column that holds no value
    noted (not silently imputed); a mistake in its pairs (a misspelt dataset, kernel or parameter) is a note
    and :class:`_NotAssessed`, so that the other entries go on."""
    try:
        all_pairs = [spec_pairs(spec, entry.name, use_cache) for spec in entry.pairs]
    except GpuperfError as exc:
        notes.append(f"{exc} ({entry.name} is not assessed)")
        raise _NotAssessed(f"not assessed: {exc}") from exc
    for spec, part in zip(entry.pairs, all_pairs):
        if unvalued := unvalued_features_note(spec, part):
            notes.append(unvalued)
    return [p for p in all_pairs if not p.empty]


def _pairs_for_target(all_pairs: list[pd.DataFrame], target: str) -> tuple[pd.DataFrame, str]:
    """The pairs among ``all_pairs`` that train ``target``'s models and a note on them (:func:`_target_pairs`);
    :class:`_NotAssessed` saying why there are none."""
    pairs, pair_note = _target_pairs(pd.concat(all_pairs, ignore_index=True), target) if all_pairs else (None, "")
    if pairs is None or pairs.empty:
        raise _NotAssessed(f"not assessed: {_no_pairs_reason(all_pairs, target)}")
    return pairs, pair_note


def _query_with_change(request: _Request, variant: str | None) -> pd.DataFrame:
    """``request``'s query with what turning its kernel into ``variant`` changes (:func:`_with_change`);
    :class:`_NotAssessed` where that variant refuses the sizes (an assumption)."""
    try:
        return _with_change(request.query, request.kernel, variant, request.sizes)
    except GpuperfError as exc:
        raise _NotAssessed(f"does not apply at these sizes: {exc}") from exc


def _check_change_described(entry: Optimization, model: SpeedupModel, changed: pd.DataFrame, request: _Request,
                            space_note: str) -> None:
    """:class:`_NotAssessed` where ``changed`` values none of the kernel features ``model`` reads, which would
    predict the training medians (:func:`_no_variant_reason`)."""
    described = [f for f in model.features if f not in GPU_FEATURES]
    if described and changed[described].isna().to_numpy().all():
        raise _NotAssessed(_no_variant_reason(entry, described, request.kernel, request.space, space_note))


def _ranked_advice(assessed: list[Suggestion], skipped: list[tuple[str, str]], notes: list[str], threshold: float,
            min_confidence: float) -> Advice:
    """The advice of every ``assessed`` prediction, fastest first: those at or above ``threshold`` suggested,
    but for those whose confidence is below ``min_confidence``, abstained from and said among ``skipped``."""
    assessed = sorted(assessed, key=lambda s: s.predicted_speedup, reverse=True)
    suggested = [s for s in assessed if s.predicted_speedup >= threshold]
    abstained = [(s.optimization, f"abstained: predicted {s.predicted_speedup:.2f}x, but confidence "
                  f"{decimals_apart(s.confidence, min_confidence)} is below {min_confidence:g}")
                 for s in suggested if s.confidence < min_confidence]
    return Advice([s for s in suggested if s.confidence >= min_confidence], assessed, [*skipped, *abstained], notes)


def _no_variant_reason(entry: Optimization, described: list[str], kernel: Kernel | None, space: str | None,
                       space_note: str) -> str:
    """Why an entry whose model reads only what its change does is not assessed: this kernel is no
    space's variant, or (``space_note`` said) its space has none of the parameters the entry changes."""
    start = f"not assessed: its model predicts from what the change does to a variant ({', '.join(described[:2])}, ...)"
    if space_note and kernel is not None:
        names = " or ".join(flip["name"] for flip in entry.space_parameters)
        return f"{start}, and the space {space or kernel.name} has no {names} parameter for it to change"
    return f"{start}, and this kernel has no variant with it applied (a kernel of a variant space has)"


def decimals_apart(value: float, bound: float, decimals: int = 2) -> str:
    """``value`` with ``decimals`` decimals, or more where fewer would print it as ``bound`` or on the
    bound's other side (0.4996 against 0.5: 0.4996, not 0.50; 1.2013329 against 1.20133: 1.201333, not
    1.2013), so that a comparison with the bound reads as it came out."""
    for places in range(decimals, 8):
        text = f"{value:.{places}f}"
        shown = float(text)
        if value == bound or (shown != bound and (shown < bound) == (value < bound)):
            return text
    return repr(value)


def _with_change(query: pd.DataFrame, kernel: Kernel | None, variant: str | None,
                 sizes: Mapping[str, Any] | None) -> pd.DataFrame:
    """``query`` with the ``change_*`` features of turning ``kernel`` into ``variant`` (when both known)."""
    if kernel is None or variant is None:
        return query
    from gpuperf.kernels import get_kernel

    change = kernel_change_features(kernel, get_kernel(variant), sizes)
    return query.assign(**{name: change[name] for name in CHANGE_FEATURES})


def _with_identity(query: pd.DataFrame, entry: Optimization, kernel: Kernel | None, variant: str | None,
                   sizes: Mapping[str, Any] | None, gpu: str | None, space: str | None = None) -> pd.DataFrame:
    """``query`` with the pair identity (kernel, change, configuration at ``sizes``, GPU) that finds the
    same pair among the training pairs, when ``kernel`` is a catalog space's variant that ``variant``
    changes (a user's space, ``space``, is none of the catalog's, whatever its kernels are named)."""
    query = query.assign(gpu=gpu)
    if kernel is None or variant is None or not _of_catalog_space(kernel, space):
        return query
    from gpuperf.decisions.pair_transfer import labelled
    from gpuperf.kernels import get_kernel
    from gpuperf.kernels.space import get_space

    before = dict(kernel.variant) or dict(get_space(kernel.name).defaults)
    changed = get_kernel(variant).variant
    name = next(key for key in before if changed.get(key) != before[key])  # the flip applied
    after = changed[name]
    others = {key: value for key, value in before.items() if key != name}
    return query.assign(kernel=kernel.name, change=f"{name}: {number_text(before[name])} -> {number_text(after)}",
                        configuration=labelled({**(sizes or {}), **others}), input="")


def _of_catalog_space(kernel: Kernel, space: str | None) -> bool:
    """Whether ``kernel`` is a variant of the catalog space named as it (the training pairs' kernels),
    not of a user's space (``file.py:function``) whose kernels share the name."""
    return kernel.category != "user" and space in (None, kernel.name)


def kernel_query(kernel: Kernel, sizes: Mapping[str, Any] | None, gpu: str | None) -> dict[str, float]:
    """The advice features of ``kernel`` at ``sizes`` with ``gpu``'s descriptor (NaN without one)."""
    return {**kernel_features(kernel, sizes), **gpu_features(gpu)}


def advise_kernel(
    kernel: KernelLike,
    sizes: Mapping[str, Any] | None = None,
    gpu: str | None = None,
    device: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    entries: Iterable[Optimization] | None = None,
    use_cache: bool = True,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    progress: Progress | None = None,
    space: str | None = None,
) -> Advice:
    """Suggestions for a gpuperf kernel (a ``Kernel``, a loopy TranslationUnit, or a catalog name, variant or
    ``path/file.py:function``, as ``extract_features`` takes): for ``gpu`` (a GPU name), a measured
    ``device``, or any GPU. ``space`` names the variant space ``kernel`` is a variant of (``file.py:function`` for a
    user's), where that is not the catalog space named as the kernel."""
    from gpuperf.kernels.catalog import as_kernel

    kernel = as_kernel(kernel, "advise_kernel")
    if gpu is not None and device is not None:
        raise GpuperfError("give either --gpu or --device, not both")
    target = device_target(device) if device else GPU_TARGET
    note = "" if gpu or device else "no --gpu given: the GPU features are the training pairs' medians"
    return advise(kernel_query(kernel, sizes, gpu), target, threshold, entries, kernel, use_cache, note, sizes,
                  min_confidence, progress, gpu, space)


def advise_profile(
    row: Mapping[str, Any] | pd.Series | pd.DataFrame,
    gpu: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    entries: Iterable[Optimization] | None = None,
    where: str = "profile row",
    use_cache: bool = True,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    progress: Progress | None = None,
) -> Advice:
    """Suggestions for a profiled launch (nvprof-style counters, see ``gpuperf.decisions.profile``):
    ``row`` a mapping of its columns (a dict, a table's row) or a table of that one row."""
    from gpuperf.decisions.profile import COUNTERS, profile_features, profile_gpu
    from gpuperf.hardware.specs import canonical_gpu_name

    if isinstance(row, pd.DataFrame):  # each column a Series would read as "not a number"
        if len(row) != 1:
            raise GpuperfError(f"{where}: a table of {len(row)} rows; advise_profile advises one launch: pass one "
                               "row (frame.iloc[i]) or a table of one")
        row = row.iloc[0]

    if gpu is None:
        gpu = profile_gpu(row, where)
    else:
        try:
            named = profile_gpu(row, where)
        except GpuperfError:  # a GPU gpuperf does not describe: --gpu says which it is
            named = None
        if named is not None and canonical_gpu_name(gpu) != named:
            raise GpuperfError(f"--gpu {gpu}: {where} was profiled on the {named}, and its counters are that GPU's; "
                               "--gpu is for a row that names no GPU, or one gpuperf does not describe")
    counted = profile_features(row, where)
    features = {**counted, **gpu_features(gpu)}
    uncounted = [name for name in COUNTERS if math.isnan(counted[name])]
    notes = [] if gpu else ["no GPU named: the GPU features are the training pairs' medians"]
    if uncounted:
        notes.append(f"the profile has no counter for {', '.join(uncounted)}: imputed from the training pairs")
    note = "; ".join(notes)
    return advise(features, GPU_TARGET, threshold, entries, None, use_cache, note, None, min_confidence, progress, gpu)
