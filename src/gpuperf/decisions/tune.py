"""Tune for real: the exploration's search order, measuring each configuration as it is chosen.

:class:`GuidedSearch` is the ask/tell form of the explorers :func:`explore` simulates: ``ask()``
names the next configuration to measure, ``tell(index, time)`` reports its time (None or NaN:
it failed), and the next ``ask()`` learns from it. Driven by times of a measured space it picks
exactly what the simulation picks, so the simulated figures are what a real run can expect. With
other GPUs' tables of the same parameters it is the transfer-guided search, without them the
online one.

:func:`tune_space` drives it on one of gpuperf's variant spaces: each chosen variant is built
with loopy (a variant that cannot be built counts as failed, as in a campaign), verified and
timed on a device. Without other GPUs' data its first ``RANKED_PICKS`` picks can follow a ranking
by a model trained on other kernels (:func:`rank_by_other_kernels`, the LIFT setting).
:class:`~gpuperf.decisions.kernel_tuner_strategy.GuidedStrategy` runs the same search inside Kernel
Tuner.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gpuperf.decisions.exploration import default_model, make_explorer
from gpuperf.decisions.explorers import next_batch
from gpuperf.decisions.space import Space, configuration_keys, with_literal_texts
from gpuperf.errors import GpuperfError, GpuperfNote, named_values, refuse_one_string, whole_number
from gpuperf.kernels.kernel import variant_label

if TYPE_CHECKING:
    from gpuperf.measure.timing import TimingSettings


# Without other GPUs' data, this many first picks follow a ranking by a model trained on other
# kernels (the LIFT setting), then the online search refits. On the 8 pocl stencil spaces (each
# left out, the PCA + 5-NN ranking trained on the other 7; bench_explore_kernels.py) 3, 5 and 10
# ranked picks need 4.65, 6.11 and 5.50 evaluations to reach 90 % of the best (geometric mean),
# random picks 11.98 and the ranking alone 6.46: 3 was chosen on these same spaces. Those spaces
# are the 64 measured variants of each stencil; a live run ranks all of a space's ~650 variants,
# most of them unlike anything measured, so its first picks can do worse.
RANKED_PICKS = 3


TrainingData = Space | pd.DataFrame | str | Path  # what training_spaces reads


def training_spaces(train: TrainingData | Sequence[TrainingData], params: Sequence[str],
                    search: Space | None = None) -> list[Space]:
    """Each of ``train`` as measured spaces: a :class:`Space` as it is; a table (a DataFrame, a
    CSV or Parquet file, a bundled dataset's name) or a Kernel Tuner cache as one space per
    kernel, GPU and problem size (:func:`~gpuperf.decisions.space.read_training_spaces`). Tables
    are taken whole: leave out the rows of the GPU being tuned. For a ``search`` space, a table
    holding its kernel gives only that kernel's spaces, and spaces sharing no configuration with it
    are left out (each noted, as explore's ``--train``)."""
    from gpuperf.decisions.space import read_training_spaces, training_spaces_from_frame
    from gpuperf.decisions.training import same_kernel_where_held, sharing_configurations

    if isinstance(train, (str, Path, pd.DataFrame, Space)):
        train = [train]
    elif not isinstance(train, Iterable):
        raise GpuperfError(f"train: {type(train).__name__} is not a Space, a table, a path to one or a list of these")
    spaces: list[Space] = []
    for item in train:
        if isinstance(item, Space):
            spaces.append(item)
            continue
        if isinstance(item, pd.DataFrame):
            found, where = training_spaces_from_frame(item, params), "table"
        elif isinstance(item, (str, Path)):
            found, where = read_training_spaces(item, params), str(item)
        else:
            raise GpuperfError(f"train: {type(item).__name__} is not a Space, a table or a path to one")
        spaces += found if search is None else same_kernel_where_held(search, found, where, label="train")
    return spaces if search is None or not spaces else sharing_configurations(search, spaces, label="train")


class GuidedSearch:
    """Which configuration to measure next, refitted on every result (see the module docstring).

    ``configs``: one row per configuration, ``params`` its parameter columns; ``train``: measured
    spaces of the same parameters elsewhere (see :func:`training_spaces`); ``kernel``: the searched
    kernel's name, so that a training table of several kernels gives only that kernel's rows;
    ``gpu``: the GPU searched on, where known; ``start``: the first picks. A configuration is named by
    its label in ``configs``' index (what ``configs.loc`` takes), in ``ask``, ``tell``, ``best`` and
    ``start`` alike.
    """

    def __init__(self, configs: pd.DataFrame, params: Sequence[str], train: TrainingData | Sequence[TrainingData] = (),
                 model: str | None = None, seed: int = 0, gpu: str | None = None,
                 start: Sequence[Any] | None = None, initial: int | None = None, kernel: str | None = None):
        refuse_one_string(params, "params")  # "bx" would read as the parameters b and x
        from gpuperf.datasets.schema import require_frame

        require_frame(configs, "GuidedSearch", "configurations")
        params = list(params)
        missing = [p for p in params if p not in configs.columns]
        if missing:
            raise GpuperfError(f"the configurations have no column(s) {', '.join(missing)}")
        if configs.empty:
            raise GpuperfError("no configurations to search")
        self.labels = configs.index
        self._positions = {label: position for position, label in enumerate(configs.index)}
        configs = configs[params].reset_index(drop=True)
        keys = configuration_keys(configs, params)
        if keys.duplicated().any():  # the search would ask for one configuration twice
            row = int(np.flatnonzero(keys.duplicated().to_numpy())[0])
            raise GpuperfError(f"configuration {_shown(self.labels[row])} ({keys.iloc[row]}) appears twice in the "
                               "configurations; give each once")
        if self.labels.has_duplicates:
            label = self.labels[self.labels.duplicated()][0]
            raise GpuperfError(f"the configurations' index holds the label {_shown(label)} twice; a search names "
                               "each configuration by its label (reset_index(drop=True) numbers them from 0)")
        _check_seed(seed)
        if initial is not None:
            initial = whole_number(initial, "initial")
            if initial < 0:
                raise GpuperfError(f"initial {initial}: the random first picks of a search without train, 0 or more")
        if start is not None:
            start = self._start_positions(start)
        extra = pd.DataFrame({"kernel": [kernel] * len(configs)}) if kernel is not None else pd.DataFrame()
        self.space = Space(params, configs, np.full(len(configs), np.nan), "search", extra=extra, gpu=gpu)
        self.train = training_spaces(train, params, self.space)  # the other GPUs' spaces the search uses
        self.explorer = make_explorer(self.space, self.train, model, True, seed, initial, start)
        self._picked: list[int] = []  # positions of the measured configurations, in order
        self._told: set[int] = set()  # the same, for tell's check (a list's made telling a whole space quadratic)
        self.times = np.full(len(configs), np.nan)  # by position

    def __len__(self) -> int:
        return len(self.space)

    def __repr__(self) -> str:
        return f"GuidedSearch({len(self)} configurations, {len(self._picked)} measured, best {_shown(self.best())})"

    @property
    def measured(self) -> list[Any]:
        """The labels of the configurations measured so far, in order."""
        return [self.labels[i] for i in self._picked]

    def _position(self, label: Any, what: str) -> int:
        """The row of the configuration labelled ``label``, else an error naming it."""
        try:
            position = None if isinstance(label, (bool, np.bool_)) else self._positions.get(label)
        except TypeError:  # unhashable
            position = None
        if position is None:
            count = len(self.labels)
            numbered = isinstance(self.labels, pd.RangeIndex) and self.labels.start == 0 and self.labels.step == 1
            held = f"0 to {count - 1}" if numbered else "see the configurations' index"
            raise GpuperfError(f"{what}: {_shown(label)} is not a label of the {count} configurations ({held})")
        return position

    def _start_positions(self, start: Sequence[Any]) -> list[int]:
        """The rows of the ``start`` labels, each named once, else an error naming the one at fault."""
        if isinstance(start, str) or not isinstance(start, Iterable):  # "c1" would read as the labels c and 1
            raise GpuperfError(f"start lists configuration labels, e.g. [{_shown(start)}], not {_shown(start)}")
        positions: dict[int, None] = {}  # insertion-ordered, with a set's lookup
        for pick in start:
            position = self._position(pick, "start")
            if position in positions:
                raise GpuperfError(f"start: configuration {_shown(pick)} is named more than once")
            positions[position] = None
        return list(positions)

    def ask(self) -> Any:
        """The label of the configuration to measure next."""
        if len(self._picked) >= len(self.space):
            raise GpuperfError("every configuration has been measured")
        return self.labels[self.explorer.next(self._picked, self.times)]

    def ask_batch(self, count: int) -> list[Any]:
        """The labels of ``count`` configurations to measure at once (fewer when fewer are left):
        each pick made as if the ones before it had run at the times the search expects of them."""
        count = batch_count(count)
        if len(self._picked) >= len(self.space):
            raise GpuperfError("every configuration has been measured")
        return [self.labels[i] for i in next_batch(self.explorer, self._picked, self.times, count)]

    def tell(self, label: Any, time: float | None) -> None:
        """The measured time of the configuration labelled ``label`` (None, NaN or pandas' NA: it
        failed). A bad label or time is an error that changes nothing."""
        position = self._position(label, "configuration")
        if position in self._told:
            raise GpuperfError(f"configuration {_shown(label)} was already measured")
        try:
            value = np.nan if time is None or time is pd.NA else float(time)
        except (TypeError, ValueError):
            value = -1.0
        if isinstance(time, (bool, np.bool_)):  # True is no time (a flag passed for one): refused, not read as 1 s
            value = -1.0
        if not (np.isnan(value) or value > 0) or np.isinf(value):
            raise GpuperfError(f"configuration {_shown(label)}: time {time!r} must be positive (or None for a failure)")
        self._picked.append(position)
        self._told.add(position)
        self.times[position] = value

    def best(self) -> Any:
        """The label of the fastest configuration measured so far (None if none ran)."""
        ran = [i for i in self._picked if np.isfinite(self.times[i])]
        return self.labels[min(ran, key=lambda i: self.times[i])] if ran else None


def batch_count(count: Any) -> int:
    """How many configurations a batch asks for: a whole number, at least 1."""
    count = whole_number(count, "a batch's count")
    if count < 1:
        raise GpuperfError(f"a batch of {count} configurations: ask for at least 1")
    return count


def _check_seed(seed: Any) -> None:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise GpuperfError(f"seed {seed!r}: a whole number, 0 or more")


def _shown(label: Any) -> str:
    """A label as a user wrote it (5, not numpy's np.int64(5))."""
    return repr(label.item() if isinstance(label, np.generic) else label)


@dataclass
class Trial:
    """One measured configuration of a tuning run."""

    config: dict[str, Any]
    time_s: float | None
    status: str  # ok, or why it failed: invalid_variant, compile_failed, run_failed, verify_failed
    detail: str = ""


@dataclass
class TuneResult:
    """A tuning run of ``space`` at ``sizes`` on ``device``: its ``trials`` in order (``best()`` the
    fastest that ran, ``table()`` them as a dataset table) and the search (``method``, ``seed``)."""

    space: str
    sizes: dict[str, int]
    device: str
    method: str
    trials: list[Trial] = field(default_factory=list)
    gpu: str | None = None  # the device's name as measurements record it (a GPU name where known)
    locations: list[str] = field(default_factory=list)  # where each trial read back stood ("line 3")
    seed: int | None = None  # the search's seed, where known
    source: str = ""  # the table the trials were read back from (earlier_trials), else ""
    taken: dict[str, Any] = field(default_factory=dict, repr=False)  # how this run's last measured trial was taken

    def best(self) -> Trial | None:
        ran = [t for t in self.trials if t.time_s is not None]
        return min(ran, key=lambda t: t.time_s) if ran else None

    def failure_notes(self) -> list[str]:
        """One line per failure status: how many trials failed so, and the first of them with its
        error (as ``campaign run`` notes a campaign's failures)."""
        failed = [t for t in self.trials if t.status != "ok"]
        lines = []
        for status in dict.fromkeys(t.status for t in failed):
            first = next(t for t in failed if t.status == status)
            count = sum(t.status == status for t in failed)
            lines.append(f"{count} trial(s) {status}, the first ({named_values(first.config)}): "
                         f"{first.detail or 'no error recorded'}")
        return lines

    def table(self) -> pd.DataFrame:
        """One row per trial, in order, in the dataset shape: the space as ``kernel``, the device
        and its ``gpu`` name, the ``variant`` label, the sizes, the parameters, ``time_s`` and
        ``status`` (a table ``explore``, ``ask`` and ``tune`` read back, as SPACE or --train), then
        the search that picked them, ``tune_method`` and ``tune_seed``, where known (so that a resumed
        run goes on with the same search)."""
        from gpuperf.datasets.schema import variant_labels

        rows = [{**{k: "None" if v is None else v for k, v in t.config.items()},  # a setting, not an empty cell
                 "time_s": t.time_s, "status": t.status, "detail": t.detail} for t in self.trials]
        frame = pd.DataFrame(rows)
        params = list(self.trials[0].config) if self.trials else []
        for position, (name, value) in enumerate(self.sizes.items()):
            frame.insert(position, name, value)
        frame.insert(0, "variant", variant_labels(frame, params))
        frame.insert(0, "gpu", self.gpu or self.device)
        frame.insert(0, "device", self.device)
        frame.insert(0, "kernel", self.space)
        if self.trials and self.method:
            frame[METHOD_COLUMN] = self.method
        if self.trials and self.seed is not None:
            frame[SEED_COLUMN] = self.seed
        return frame


def ranked_positions(configs: pd.DataFrame, ranking: pd.DataFrame) -> list[int]:
    """Positions in ``configs`` of the ranked rows (best first; rows not in ``configs`` skipped)."""
    params = list(configs.columns)
    missing = [p for p in params if p not in ranking.columns]
    if missing:
        raise GpuperfError(f"the ranking has no column(s) {', '.join(missing)}")
    position = {key: i for i, key in enumerate(configuration_keys(configs, params))}
    return [position[key] for key in configuration_keys(ranking, params) if key in position]


def rank_by_other_kernels(space_name: str, sizes: Mapping[str, int], table: pd.DataFrame, where: str = "table",
                          progress: Callable[[int, int], None] | None = None) -> pd.DataFrame:
    """``space_name``'s variants ranked by PCA + 5-NN on static features trained on the measured
    variants in ``table`` of other kernels (its rows of this space's kernel are left out)."""
    from gpuperf.decisions.cross_kernel import own_kernel_rows, rank_space
    from gpuperf.kernels.space import get_space

    table = table[~own_kernel_rows(table, get_space(space_name).name)]
    if table.empty:
        raise GpuperfError(f"{where}: no measured variants of other kernels to rank {space_name}'s by")
    return rank_space(space_name, dict(sizes), table, progress=progress, where=where)


def candidate_configurations(space_name: str) -> pd.DataFrame:
    """Every configuration of a catalog variant space its cheap check accepts (nothing is built)."""
    from gpuperf.kernels.space import get_space

    space = get_space(space_name)
    rows = [config for config in space.configurations() if space.rejection(config) is None]
    if not rows:
        raise GpuperfError(f"variant space '{space_name}' has no configuration to try")
    frame = pd.DataFrame(rows, columns=list(space.parameters))
    for name in space.parameters:  # a value None is a setting: kept as None, not read as missing
        if any(row[name] is None for row in rows):
            frame[name] = pd.Series([row[name] for row in rows], dtype=object)
    return frame


METHOD_COLUMN, SEED_COLUMN = "tune_method", "tune_seed"  # the search a tuning table's trials were picked by
TRIAL_COLUMNS = ("kernel", "device", "gpu", "variant", "time_s", "time", "status", "detail",  # beside sizes and
                 METHOD_COLUMN, SEED_COLUMN)  # parameters; time: --json's


def _check_parameter_names(label: str, params: Sequence[str], sizes: Mapping[str, Any]) -> None:
    """Refuse, before anything is measured, a parameter named like a size or a column of the trials'
    table: a trial's row holds both, and one would be lost."""
    for name in params:
        if name in sizes or name in TRIAL_COLUMNS:
            what = "a size parameter" if name in sizes else "a column of the trials' table or --json"
            raise GpuperfError(f"{label}: parameter '{name}' has the name of {what}, so one of the two would be "
                               "lost in a trial's row; rename the parameter")


def tune_space(
    space_name: str,
    sizes: Mapping[str, int],
    device: str = "opencl:0",
    budget: int = 20,
    train: TrainingData | Sequence[TrainingData] = (),
    model: str | None = None,
    seed: int = 0,
    settings: TimingSettings | None = None,
    on_trial: Callable[[TuneResult], None] | None = None,
    ranking: pd.DataFrame | None = None,
    ranked_by: str = "other kernels",
    earlier: TuneResult | None = None,
) -> TuneResult:
    """Measure up to ``budget`` variants of ``space_name`` at ``sizes`` on ``device``, each chosen
    by a :class:`GuidedSearch` that learns from the times so far; ``on_trial`` gets the result
    so far after every trial (to show progress or save it). Without ``train``, ``ranking`` (the
    space's variants best first, e.g. :func:`rank_space` trained on other kernels, or
    :func:`~gpuperf.decisions.count_ranking.rank_space_by_counts`; ``ranked_by`` names what ranked
    them) gives the online search its first ``RANKED_PICKS`` picks instead of random ones.
    ``earlier`` (:func:`earlier_trials`: an interrupted run's trials of the same space, sizes and
    device) resumes that run: its trials count towards ``budget`` and the search learns from them,
    none measured again."""
    from gpuperf.kernels.space import InvalidVariant, check_variant_sizes, get_space
    from gpuperf.measure.devices import MeasureFailure, device_lost, open_device
    from gpuperf.measure.export import known_gpu
    from gpuperf.measure.timing import SharedInputs, measure

    if budget < 1:
        raise GpuperfError(f"budget {budget} must be at least 1 evaluation")
    space = get_space(space_name)
    # wrong sizes fail here, before any trial; the default variant's assumptions bind no other variant
    sizes = space.resolve_sizes(sizes)
    opened = open_device(device)  # and an unknown device
    configs = candidate_configurations(space_name)
    params = list(space.parameters)
    _check_parameter_names(space.label, params, sizes)
    train = training_spaces(train, params)
    start = None if ranking is None or train else ranked_positions(configs, ranking)
    search = GuidedSearch(configs, params, train, model, seed, start=start, initial=RANKED_PICKS if start else None)
    method = ("transfer-guided" if train else "online") + f" ({model or default_model(bool(train), True)})"
    if start:
        method += f", first {RANKED_PICKS} picks ranked by {ranked_by}"
    result = TuneResult(space_name, dict(sizes), device, method, gpu=known_gpu(opened.provenance(), device)[0],
                        seed=int(seed))
    if earlier is not None:
        _resume(result, earlier, search, configs, params)
    shared = SharedInputs()  # every variant computes the space's function: one set of inputs and outputs
    unchecked_noted = False
    for _ in range(min(budget, len(search)) - len(result.trials)):
        index = search.ask()
        config = {p: _plain(configs[p].iloc[index]) for p in params}
        lost = False
        try:
            kernel = space.build(config)
            check_variant_sizes(kernel, sizes)  # sizes outside its assumptions: this variant fails alone
            measured = measure(kernel, sizes, device=device, settings=settings, seed=seed, shared=shared)
            trial = Trial(config, measured.time_s, "ok")
            result.taken = measured.provenance
            if not measured.verified and not unchecked_noted:  # once: every variant of a space is alike
                unchecked_noted = True
                warnings.warn(GpuperfNote(f"{kernel.key}: outputs not checked (verified false): "
                                          + ("the kernel has no NumPy reference" if kernel.reference is None
                                             else "verification is off")), stacklevel=2)
        except InvalidVariant as error:
            trial = Trial(config, None, "invalid_variant", str(error))
        except MeasureFailure as error:
            trial = Trial(config, None, error.status, error.detail.splitlines()[0] if error.detail else "")
            lost = device_lost(error)
        search.tell(index, trial.time_s)
        result.trials.append(trial)
        if on_trial is not None:
            on_trial(result)
        if lost:
            raise GpuperfError(f"{device}: trial {len(result.trials)} ({named_values(config)}) failed: {trial.detail}. After this "
                               "error the device fails every later call in this process, so tuning stops here")
    return result


def earlier_trials(table: pd.DataFrame, where: str, space: str | None = None) -> TuneResult:
    """The trials of a tuning run's ``--out`` table (:meth:`TuneResult.table`), to resume it with
    (its ``source`` names the table; its ``method`` and ``seed`` are the recorded search's, "" and
    None in a table written before they were). ``space``: the space the resumed run tunes, whose
    parameters are read where it is the recorded one, a user's file perhaps moved since (see
    :func:`space_key`)."""
    from gpuperf.datasets.schema import is_ok, measured_rows, row_location

    required = ["kernel", "device", "time_s", "status"]
    missing = [c for c in required if c not in table.columns]
    if missing:
        raise GpuperfError(f"{where}: missing column(s) {', '.join(missing)}: not a table tune --out wrote")
    recorded = {column: _one_value(table, column, where)
                for column in ("kernel", "device", *(["gpu"] if "gpu" in table.columns else []))}
    recorded_space = str(table["kernel"].iloc[0])
    if space is not None and space_key(space) != space_key(recorded_space):  # before the recorded file is loaded
        raise GpuperfError(f"{where}: the run to resume tuned space {space_key(recorded_space)}, this one "
                           f"{space_key(space)}")
    space = space or recorded_space
    params = list(_space_parameters(space, where))
    _same_parameters(table, params, space, where)
    table = with_literal_texts(table, where, params)  # a value None, written as None, is a setting
    sizes = [c for c in table.columns if c not in {*required, *params, *TRIAL_COLUMNS}]
    for column in sizes:  # one run tunes one size
        empty = table[column].isna().to_numpy()
        if empty.any():
            raise GpuperfError(f"{where}: {row_location(table, int(np.flatnonzero(empty)[0]))}: size {column} is empty "
                               "(a row cut short?); every trial names its sizes")
        whole = pd.to_numeric(table[column], errors="coerce").map(lambda v: float(v).is_integer()).to_numpy()
        if not whole.all():
            position = int(np.flatnonzero(~whole)[0])
            raise GpuperfError(f"{where}: {row_location(table, position)}: {column}={_plain(table[column].iloc[position])}"
                               f" is no size (a whole number) and no parameter of {space}: a column tune --out does "
                               "not write (remove it to resume)")
        differs = (table[column] != table[column].iloc[0]).to_numpy()
        if differs.any():
            position = int(np.flatnonzero(differs)[0])
            raise GpuperfError(f"{where}: {row_location(table, position)}: {column}={_plain(table[column].iloc[position])}"
                               f", where {row_location(table, 0)} has {_plain(table[column].iloc[0])}: a tuning "
                               "run's trials are of one size")
    result = TuneResult(space, {c: int(table[c].iloc[0]) for c in sizes}, recorded["device"], "",
                        gpu=recorded.get("gpu"), source=where)
    ran = is_ok(table["status"])  # ok in any case, as every reader of a table takes it
    # each trial that ran has a positive, finite time (else an error naming its line)
    times = measured_rows(table, where)["time_s"] if ran.any() else pd.Series(dtype=float)
    keys = configuration_keys(table[params], params)  # as the search matches configurations
    first_at: dict[str, int] = {}  # configuration -> the position of its trial
    for position, (label, row) in enumerate(table.iterrows()):
        empty = [p for p in params if pd.isna(row[p])]
        if empty:
            raise GpuperfError(f"{where}: {row_location(table, position)}: parameter {empty[0]} is empty (a row cut "
                               "short?); every trial names its configuration")
        key = keys.iloc[position]
        if key in first_at:
            raise GpuperfError(f"{where}: {row_location(table, position)}: configuration "
                               f"{', '.join(f'{p}={_plain(row[p])}' for p in params)} repeats "
                               f"{row_location(table, first_at[key])}; a run measures each configuration once")
        first_at[key] = position
        if not ran.iloc[position] and pd.notna(row["time_s"]):
            raise GpuperfError(f"{where}: {row_location(table, position)}: status {row['status']} with time_s "
                               f"{row['time_s']!r}: a trial that ran has a time, a failed one none")
        time = float(times[label]) if ran.iloc[position] else None
        detail = row.get("detail", "")
        result.locations.append(row_location(table, position))
        status = "ok" if ran.iloc[position] else str(row["status"])  # "OK", " ok " read as ok are ok
        result.trials.append(Trial({p: _plain(row[p]) for p in params}, time, status,
                                   "" if pd.isna(detail) else str(detail)))
    result.method, result.seed = _recorded_search(table, where)
    return result


def _one_value(table: pd.DataFrame, column: str, where: str, empty_hint: str = "") -> str:
    """The one value ``column`` holds in every trial of a tuning table, else an error naming the
    first empty row or how many values it holds."""
    from gpuperf.datasets.schema import row_location

    empty = table[column].isna().to_numpy()
    if empty.any():
        raise GpuperfError(f"{where}: {row_location(table, int(np.flatnonzero(empty)[0]))}: {column} is "
                           f"empty{empty_hint}; every trial of a tuning run names it")
    values = table[column].astype(str).unique()
    if len(values) != 1:
        raise GpuperfError(f"{where}: {len(values)} values of {column}; a tuning run's table has one")
    return str(values[0])


def _recorded_search(table: pd.DataFrame, where: str) -> tuple[str, int | None]:
    """The method and seed a tuning table's trials were picked by ("" and None where it has no such
    column: a table written before they were recorded)."""
    found = {column: _one_value(table, column, where, " (a row cut short?)")
             for column in (METHOD_COLUMN, SEED_COLUMN) if column in table.columns and not table.empty}
    seed = found.get(SEED_COLUMN)
    if seed is not None:
        number = pd.to_numeric(pd.Series([seed]), errors="coerce").iloc[0]
        if pd.isna(number) or not float(number).is_integer() or number < 0:
            raise GpuperfError(f"{where}: {SEED_COLUMN}={seed!r} is no seed (a whole number, 0 or more)")
        seed = int(number)
    return str(found.get(METHOD_COLUMN, "")), seed


def _same_parameters(table: pd.DataFrame, params: Sequence[str], space: str, where: str) -> None:
    """An error when the space's parameters are not those the run tuned (its ``variant`` labels name
    them): the space was edited since."""
    if "variant" not in table.columns or table.empty:
        return
    labels = table["variant"].dropna().astype(str).unique()
    tuned = list(dict.fromkeys(part.partition("=")[0].strip() for label in labels for part in label.split(",")
                               if "=" in part))
    if not tuned:
        return
    # a label leaves out a parameter set to None: one with a column of its own was tuned too
    added = [p for p in params if p not in tuned and p not in table.columns]
    removed = [p for p in tuned if p not in params]
    if added or removed:
        change = "; ".join(part for part in (f"new: {', '.join(added)}" if added else "",
                                             f"no longer: {', '.join(removed)}" if removed else "") if part)
        raise GpuperfError(f"{where}: the space {space} has other parameters than the run to resume tuned ({change}); "
                           "resume with the space as it was, or start a new run")


def space_key(space: str) -> str:
    """What a resumed run must tune as the run it resumes: a catalog space by its name, a user's
    ``file.py:function`` by its file's name and the function (the folder moved, or another machine)."""
    if ".py:" not in space:
        return space
    file, _, function = space.rpartition(":")
    return f"{Path(file).name}:{function}"


def _space_parameters(space: str, where: str) -> Sequence[str]:
    """The parameters of the variant space a tuning table names."""
    from gpuperf.kernels.space import get_space

    try:
        return get_space(space).parameters
    except GpuperfError as error:
        raise GpuperfError(f"{where}: {error}") from None


def _resume(result: TuneResult, earlier: TuneResult, search: GuidedSearch, configs: pd.DataFrame,
            params: Sequence[str]) -> None:
    """``earlier``'s trials told to ``search`` and taken into ``result``, after checking they are of
    the same space, sizes and device, and were picked by the same search (method and seed, where
    recorded)."""
    from gpuperf.datasets.schema import canonical_gpu

    where = earlier.source or "the run to resume"
    for what, theirs, ours in (("space", space_key(earlier.space), space_key(result.space)),
                               ("sizes", named_values(earlier.sizes), named_values(result.sizes)),
                               ("device", _device_key(earlier.device), _device_key(result.device))):
        if theirs != ours:
            raise GpuperfError(f"{where}: the run to resume tuned {what} {theirs}, this one {ours}")
    recorded = earlier.gpu if earlier.gpu not in (None, "", earlier.device) else None  # older runs: the spec
    if recorded is not None and canonical_gpu(recorded) != canonical_gpu(result.gpu):
        raise GpuperfError(f"{where}: the run to resume measured on {recorded}, while {result.device} is "
                           f"{result.gpu}: its times are not this device's; start a new run")
    _check_same_search(earlier, result, where)
    position = {key: i for i, key in enumerate(configuration_keys(configs, params))}
    for number, trial in enumerate(earlier.trials):
        key = configuration_keys(pd.DataFrame([trial.config]), params).iloc[0]
        if key not in position:
            at = f"{earlier.locations[number]}: " if number < len(earlier.locations) else ""
            raise GpuperfError(f"{where}: {at}the run to resume measured {named_values(trial.config)}, not a configuration "
                               f"of {result.space}")
        search.tell(position[key], trial.time_s)
        result.trials.append(trial)


def _check_same_search(earlier: TuneResult, result: TuneResult, where: str) -> None:
    """An error where ``earlier`` records another method or seed than ``result`` searches by: the
    resumed run would not pick what the uninterrupted one would have (a table without them passes)."""
    theirs = (earlier.method or result.method, result.seed if earlier.seed is None else earlier.seed)
    if theirs == (result.method, result.seed):
        return
    raise GpuperfError(f"{where}: the run to resume searched by {theirs[0]} with seed {theirs[1]}, this one by "
                       f"{result.method} with seed {result.seed}; resume it with its options (--start, --train, "
                       f"--model, --seed {theirs[1]}), or give a new --out")


def _device_key(device: str) -> str:
    """A device spec as one spelling (``opencl:0`` is ``opencl:0:0``); as given where it names none here."""
    from gpuperf.measure.devices import canonical_device_name

    try:
        return canonical_device_name(device)
    except GpuperfError:
        return device



def default_variant_time(space_name: str, sizes: Mapping[str, int], device: str = "opencl:0",
                         settings: TimingSettings | None = None, trials: Sequence[Trial] = ()) -> float | None:
    """The time of the space's default variant (a tuning run's reference): its trial's among
    ``trials`` where the run measured it (the best compared with itself timed again would differ
    by the noise), else measured now; None, with a note, where that fails."""
    from gpuperf.kernels.space import InvalidVariant, get_space
    from gpuperf.measure.devices import MeasureFailure
    from gpuperf.measure.timing import measure

    space = get_space(space_name)
    default = {name: str(value) for name, value in space.defaults.items()}
    label = variant_label(space.defaults)
    for trial in trials:
        if trial.time_s is not None and {name: str(value) for name, value in trial.config.items()} == default:
            return trial.time_s
    try:  # (a default whose trial failed is timed again: the failure may have been the device's, once)
        return measure(space.build(space.defaults), sizes, device=device, settings=settings).time_s
    except (InvalidVariant, MeasureFailure) as error:
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        warnings.warn(GpuperfNote(f"the default variant [{label}], the report's reference, could not be timed: "
                                  f"{first}; the report has no speedup over it"), stacklevel=2)
        return None


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value
