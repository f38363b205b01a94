"""Which columns of a measurement table a model may take as features when none are named.

Default features: every numeric column except

- the keys (``kernel``, ``variant``, ``gpu``, ``device``, ``source``), ``time_s`` and ``status``;
- timing statistics and predictions: names starting with ``time_s_`` or ``predicted_``, ending in
  ``_time_s`` or ``_pred_s``, and ``repeats``, ``n_invocations``;
- any other time, in any unit: a name ending in the word ``time``, ``times``, ``duration``,
  ``elapsed``, ``runtime`` or ``timestamp``, optionally followed by a unit and a statistic
  (``time_ms``, ``benchmark_time_ms``, ``compile_time``, ``Duration (us)``, ``gpu__time_duration.avg``),
  and Nsight Compute's ``gpu__time_*`` metrics (``gpu__time_active.sum``); ``time_steps`` is not one;
  a name ending in a time unit (``latency_ms``, ``kernel_us``, ``mean (ms)``, ``latency_s``; not a rate's
  ``gb_s``) or starting with one and ``per`` (``ms_per_iter``), and ``latency`` or ``wall`` as a word;
  what is computed from the time: ``GBps``, ``TFLOPS``, ``GFLOPS``, ``TOPS``, ``MLUPS``, ``speedup`` (a plain word
  such an abbreviation spells, ``tops`` or ``tips`` in lower case, is a count, not a rate); a GPU descriptor
  column (:func:`~gpuperf.datasets.join.descriptor_columns`: ``gpu_clock_mhz``, ``gpu_peak_f32_gflops``)
  is none of these, but a table's own ``gpu_*`` column is judged by its name like any other (``gpu_ms``);
- profiler metrics computed from the elapsed time (throughputs, utilisations, IPC by any name, such as
  ``*.per_cycle_active`` or ``Warp Cycles Per Issued Instruction``, elapsed and
  active cycles, shares of a peak or of the elapsed time such as ``flop_sp_efficiency``,
  ``sm_efficiency``, ``Mem Busy`` and ``*.pct_of_peak_sustained_elapsed``: with a count they give
  the time away), and rates (``/s``, ``per_second``, ``per_s``, ``per sec``);
- launch bookkeeping (IDs, streams, start times) and how a gpuperf measurement went (``retries``,
  ``stable``, ``verified``, ``max_rel_error``, ``compile_s``);
- what observers read during the run (Kernel Tuner's NVML and power observers): names with
  ``energy``, ``power``, ``watt``, ``temperature``, ``freq`` or ``clock`` and per-watt rates (``/W``),
  unless the column is a tuning parameter named in the ``variant`` labels (``nvml_gr_clock=1080``);
  energy is power times the time, and the others are not known before the run;
- GPU descriptor fields that some GPU gpuperf describes lacks (``gpu_base_clock_mhz``,
  ``gpu_compute_capability``, ...): a model using one could not predict those GPUs (name it with
  ``--features`` to use it anyway);
- columns with a missing or infinite value (a note names those that are otherwise numbers, with
  the first such row), and columns of numbers a spreadsheet saved as text (``150,994,944``,
  ``4,5``, ``50%``) or with no name in the header (an index written with the table): a note names
  those too, as it names a column of numbers held as categories (a pandas ``category`` column).
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Hashable, Sequence

import numpy as np
import pandas as pd

from gpuperf.datasets.join import descriptor_columns
from gpuperf.datasets.schema import MEASUREMENT_OUTCOMES, require_frame, row_location, variant_parameters
from gpuperf.errors import GpuperfNote, clipped
from gpuperf.evaluation.tables import is_timing_derived

# What observers read during a run (energy, power, clocks, temperature; see the module notes).
OBSERVED = re.compile(r"energy|power|watt|/w$|temperature|freq|clock", re.IGNORECASE)
# A time in any unit (see the module notes): the word last, or before a unit and a statistic.
TIME_NAMED = re.compile(r"(^|[_\W])(time|times|duration|elapsed|runtime|timestamp)"
                        r"([_\W]+(s|sec|secs|seconds|ms|msec|us|usec|µs|ns|nsec))?"
                        r"([_\W]+(sum|avg|mean|median|min|max|total|std))?[_\W]*$", re.IGNORECASE)
# Nsight Compute's times of a launch (gpu__time_duration, gpu__time_active, gpu__time_start, ...).
PROFILER_TIME = re.compile(r"^gpu__time_", re.IGNORECASE)
# A rate by its name (GFLOP/s, bytes_per_second, gflops_per_s, reads per sec): the time in disguise.
PER_SECOND = re.compile(r"per[_\W]*(s|sec|secs|second|seconds)([_\W]|$)", re.IGNORECASE)
# A time by its unit alone (latency_ms, kernel_us, "mean (ms)", ms_per_iter) or by a word for one
# (latency, wall clock), and what is computed from a time (GB/s as GBps, TFLOPS, a speedup).
TIME_UNIT_NAMED = re.compile(r"[_\W](sec|secs|seconds|ms|msec|us|usec|µs|ns|nsec)[_\W]*$|(?<![kmgt]b)[_\W]s[_\W]*$"
                             r"|^(s|sec|ms|msec|us|usec|µs|ns|nsec)[_\W]*per([_\W]|$)"
                             r"|(^|[_\W])(latency|wall|walltime|wallclock)([_\W]|$)", re.IGNORECASE)
# Throughputs by their usual abbreviations: operations (TOPS, GOPS, GIOPS), instructions (MIPS, GIPS) or
# (lattice) updates (MLUPS, GUPS, MFLUPS) per second, frames per second (FPS).
THROUGHPUT_ABBREVIATION = re.compile(r"(?:^|[^a-z])(?:[kmgtp](?:i?ops|ips|f?l?ups)|fps)$", re.IGNORECASE)
# Plain words those abbreviations spell: a column named so in lower case (or capitalised) counts tops, tips,
# mip levels, ... and is no rate; in capitals (TOPS, MIPS) or after another word (kernel_tops) it is one.
ABBREVIATION_WORDS = frozenset({"tops", "tips", "mips", "pops", "pips", "pups", "mops", "kips"})
FROM_TIME = re.compile(r"gbps|gb/s|[tgm]flops|speedup|slowdown", re.IGNORECASE)
# pandas' name for a column whose header cell is empty (an index written with the table, most often).
UNNAMED = re.compile(r"Unnamed: \d+(_level_\d+)?")
# A number as a spreadsheet may save it: thousands separators, a decimal comma, a percent sign.
FORMATTED_NUMBER = r"[-+]?(\d{1,3}(,\d{3})+(\.\d*)?|\d+(,\d+)?|\d*\.\d+|\d+\.)\s*%?"
# The keys, the measured time and how it was taken: never features.
KEYS_AND_OUTCOMES = ("kernel", "variant", "gpu", "device", "source", "time_s", "status", "repeats", "n_invocations")
# What profilers record about a launch that says nothing of the kernel: IDs, streams, start times, which
# run of a repeated trace it was and which launch of its kernel within the run (k40c_traces' run, occurrence).
LAUNCH_BOOKKEEPING = ("ID", "Process ID", "Context", "Stream", "CC", "start_s", "correlation_id", "context",
                      "stream", "invocations", "run", "occurrence")


def is_default_feature(column: str, parameters: Sequence[str] = ()) -> bool:
    """Whether a numeric column's name allows it as a default feature (see the module notes);
    ``parameters`` are the tuning parameters, features whatever their names."""
    name = str(column)
    if name in parameters:
        return True
    per_second = "/s" in name or PER_SECOND.search(name) is not None  # a rate: the time in disguise
    descriptor = name in descriptor_columns()  # a clock or peak of the GPU, not of the run (a table's gpu_ms is)
    observed = OBSERVED.search(name) is not None and not descriptor
    timed = not descriptor and ((TIME_UNIT_NAMED.search(name) or FROM_TIME.search(name)) is not None
                                or is_throughput_abbreviation(name))
    return (name not in KEYS_AND_OUTCOMES and name not in LAUNCH_BOOKKEEPING and name not in MEASUREMENT_OUTCOMES
            and not per_second and not observed and not timed and not is_measured_time(name)
            and not is_timing_derived(name)
            and TIME_NAMED.search(name) is None and PROFILER_TIME.search(name) is None
            and name not in partial_descriptor_fields())


def is_throughput_abbreviation(name: str) -> bool:
    """Whether ``name`` is a throughput by its usual abbreviation (``TOPS``, ``gops``, ``kernel_tops``,
    ``MLUPS``, ``fps``); a plain word it spells, in lower case or capitalised (``tops``, ``Tips``), is a count."""
    if name.lower() in ABBREVIATION_WORDS and not name.isupper():
        return False
    return THROUGHPUT_ABBREVIATION.search(name) is not None


def partial_descriptor_fields() -> frozenset[str]:
    """The ``gpu_*`` descriptor columns that some GPU gpuperf describes has no value for."""
    from gpuperf.hardware.specs import descriptors_state

    return _partial_descriptor_fields(descriptors_state())


@functools.cache
def _partial_descriptor_fields(state: tuple) -> frozenset[str]:
    from gpuperf.datasets.join import gpu_feature_table
    from gpuperf.hardware.specs import gpus

    table = gpu_feature_table([gpu.name for gpu in gpus()])
    return frozenset(str(column) for column in table.columns if table[column].isna().any())


def users_partial_descriptor_fields() -> dict[str, list[str]]:
    """The ``gpu_*`` descriptor columns every GPU of gpus.toml has and a user's (``GPUPERF_GPUS``) lacks,
    each with the user's GPUs lacking it: fields :func:`partial_descriptor_fields` leaves out because of them."""
    from gpuperf.hardware.specs import descriptors_state

    return _users_partial_descriptor_fields(descriptors_state())


@functools.cache
def _users_partial_descriptor_fields(state: tuple) -> dict[str, list[str]]:
    from gpuperf.datasets.join import gpu_feature_table
    from gpuperf.hardware.specs import gpus, is_users_gpu

    table = gpu_feature_table([gpu.name for gpu in gpus()]).set_index("gpu")
    users = [gpu.name for gpu in gpus() if is_users_gpu(gpu)]
    bundled = table.drop(index=users)
    return {str(column): [name for name in users if pd.isna(table.at[name, column])] for column in table.columns
            if bundled[column].notna().all() and table.loc[users, column].isna().any()}


def is_measured_time(column: str) -> bool:
    """The measured time, a statistic of it, or a prediction of it (by its column name)."""
    return (column == "time_s" or column.startswith(("time_s_", "predicted_"))
            or column.endswith(("_time_s", "_pred_s")))


def default_features(frame: pd.DataFrame, where: str | None = None) -> list[Hashable]:
    """The numeric columns allowed as default features with no missing or infinite value (their
    labels as the frame has them: ``7`` stays an integer, so it finds its column); with
    ``where`` (the table's name), a :class:`~gpuperf.errors.GpuperfNote` warning names the allowed
    columns left out for a missing or non-number value, and the first row with one."""
    require_frame(frame, where or "default_features")
    chosen, left_out, unnamed, formatted, categories, users = [], [], [], [], [], []
    parameters = variant_parameters(frame)
    users_partial = users_partial_descriptor_fields() if where is not None else {}
    for position, column in enumerate(frame.columns, start=1):
        values = frame[column]
        if str(column) in users_partial and column not in parameters and values.notna().any():
            lacking = users_partial[str(column)]
            users.append(f"{column} ({', '.join(lacking)} {'has' if len(lacking) == 1 else 'have'} none)")
        if not is_default_feature(column, parameters) or values.isna().all():
            continue
        if UNNAMED.fullmatch(str(column)):  # a header cell left empty: most often an index pandas wrote
            unnamed.append(f"column {position}")
            continue
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
        finite = np.isfinite(numbers)
        if (pd.api.types.is_numeric_dtype(values) or _big_integers(values)) and finite.all():
            chosen.append(column)
        elif isinstance(values.dtype, pd.CategoricalDtype) and finite.all():  # 64, 128, 256 as categories
            categories.append(str(column))
        elif (~finite).any() and finite.mean() >= 0.5:  # a number column with some bad cells, not text
            first = int(np.flatnonzero(~finite)[0])
            value = values.iloc[first]
            shown = "missing" if pd.isna(value) else repr(value if isinstance(value, str) else float(value))
            shown = clipped(shown)  # a cell of megabytes quoted in part
            left_out.append(f"{column} ({row_location(frame, first)}: {shown})")
        elif _formatted_numbers(values):
            first = int(np.flatnonzero(~finite & values.notna().to_numpy())[0])
            formatted.append(f"{column} ({row_location(frame, first)}: {clipped(repr(values.iloc[first]))})")
    if users:  # gpuperf's own GPUs all have it: the user's GPU file is why the table's column goes unused
        warnings.warn(GpuperfNote(f"{where}: left out of the default features, a descriptor field a GPU of "
                                  f"GPUPERF_GPUS lacks (a model using it could not price that GPU): "
                                  f"{', '.join(users)}; name one in --features to use it"), stacklevel=2)
    if where is not None and left_out:
        warnings.warn(GpuperfNote(f"{where}: left out of the default features for a missing or non-number value: "
                                  f"{', '.join(left_out)}; fill them, or name the features with --features"),
                      stacklevel=2)
    if where is not None and formatted:
        warnings.warn(GpuperfNote(f"{where}: left out of the default features, numbers saved as text with thousands "
                                  f"separators, decimal commas or %: {', '.join(formatted)}; save them as plain "
                                  "numbers"), stacklevel=2)
    if where is not None and categories:
        warnings.warn(GpuperfNote(f"{where}: left out of the default features, numbers held as categories (a pandas "
                                  f"category column): {', '.join(categories)}; convert them to numbers "
                                  "(.astype(float)) to use them"), stacklevel=2)
    if where is not None and unnamed:
        warnings.warn(GpuperfNote(f"{where}: left out of the default features, a column with no name in the header "
                                  f"(an index written with the table?): {', '.join(unnamed)}; name it to use it"),
                      stacklevel=2)
    return chosen


def _big_integers(values: pd.Series) -> bool:
    """Whether a column pandas read as objects holds whole numbers only, some past 64 bits (a counter of
    2**64 or more: pandas keeps such a column as Python ints)."""
    kept = values.dropna()
    return values.dtype == object and bool(len(kept)) and all(
        isinstance(value, (int, np.integer)) and not isinstance(value, bool) for value in kept)


def _formatted_numbers(values: pd.Series) -> bool:
    """Whether every value of a text column is a number as a spreadsheet formats it (``150,994,944``,
    ``4,5``, ``50%``), some with a separator or %, which pandas reads as text."""
    texts = values.dropna().astype(str).str.strip()
    return bool(len(texts)) and texts.str.fullmatch(FORMATTED_NUMBER).all() and texts.str.contains("[,%]").any()
