"""The optimization database: one TOML file per optimization, discovered from folders.

gpuperf ships its entries in ``gpuperf/optimizations/*.toml``. More folders come from the
``GPUPERF_OPTIMIZATIONS`` environment variable (folders separated by ``os.pathsep``) and from the
``extra`` argument (``gpuperf advise --optimizations DIR``); an entry in a later folder replaces
one of the same name, and a file holding only ``name = "X"`` and ``remove = true`` removes entry X
(a built-in one too, without touching the package). Adding, removing or editing an entry is a
matter of files only.

An entry (every text field is required unless marked optional)::

    name = "coalescing"                      # the file's stem
    title = "Coalesce global memory accesses"
    description = "..."
    when_it_helps = "..."
    applies_when = "max_sectors_over_fewest > 3"  # optional: a condition on advice features (MODEL_FEATURES)
                                             # or CONDITION_FEATURES; a NaN one makes it hold; change_*
                                             # ones are judged on the variant with the change applied
    references = ["..."]                      # optional

    [example]
    before = '''...'''
    after = '''...'''

    [apply]
    kind = "loopy"                            # loopy (a transformation) or source (a code change)
    summary = "..."
    transformation = "lp.tag_inames"          # optional
    parameters = {...}                        # optional, free-form
    space_parameter = {name = "prefetch", before = 0, after = 1}   # optional: the variant-space flip
                                              # (or a list of flips, tried in order)

    [[pairs]]                                 # training pairs (see ``PairSpec``)
    dataset = "matvec_bsp"                    # a bundled name, a file in data/, or a path (beside the entry, or from the working folder)
    kernel = "MMGU"
    after_kernel = "MMGC"
    features = "amaris_matvec"
    family = "matmul"
"""

from __future__ import annotations

import ast
import math
import os
import tomllib
import unicodedata
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gpuperf.errors import GpuperfError, GpuperfNote, parser_limits, unknown_name_error
from gpuperf.files import home_path

ENV_VAR = "GPUPERF_OPTIMIZATIONS"
APPLY_KINDS = ("loopy", "source")
_ENTRY_KEYS = {
    "name", "title", "description", "when_it_helps", "applies_when", "references", "example", "apply", "pairs",
}
_APPLY_KEYS = {"kind", "summary", "transformation", "parameters", "space_parameter"}
_PAIR_KEYS = {
    "dataset", "kernel", "after_kernel", "parameter", "before", "after", "factor", "family", "features",
    "configuration", "inputs", "max_pairs_per_gpu", "increasing",
}
DEFAULT_MAX_PAIRS_PER_GPU = 200


@dataclass(frozen=True)
class PairSpec:
    """Which measured before/after points of a dataset are pairs of this optimization.

    Either ``after_kernel`` (the after rows are another kernel of the dataset, at the same sizes
    and GPU) or ``parameter`` with ``before`` and ``after`` (or ``factor``: after = before x factor)
    values (the after row is the same configuration with only that parameter changed); with
    ``increasing``, only pairs whose after value is larger than their before value (a space sampled
    at random: every larger value measured, none smaller).
    ``configuration`` names the columns that must be equal (default: the dataset's parameters);
    ``features`` names how the before kernel's advice features are obtained
    (``gpuperf.decisions.program_features.FEATURE_SOURCES``); ``family`` names the program for
    cross-program evaluation (empty: each row's kernel name); ``inputs`` names the columns that are
    the program's input (problem size), held out together in evaluation (default: the whole
    configuration for ``after_kernel`` pairs, none for parameter changes).
    """

    dataset: str
    kernels: tuple[str, ...]
    features: str
    family: str
    after_kernel: str | None = None
    parameter: str | None = None
    before: tuple[float, ...] = ()
    after: tuple[float, ...] = ()
    factor: float | None = None
    increasing: bool = False
    configuration: tuple[str, ...] | None = None
    inputs: tuple[str, ...] | None = None
    max_pairs_per_gpu: int = DEFAULT_MAX_PAIRS_PER_GPU
    where: str = ""

    @property
    def change(self) -> str:
        """The change in words: ``MMGU -> MMGC`` or ``SA: 0 -> 1``."""
        if self.after_kernel:
            return f"{'/'.join(self.kernels)} -> {self.after_kernel}"
        after = f"x{self.factor:g}" if self.factor else "/".join(f"{v:g}" for v in self.after)
        larger = " (larger)" if self.increasing else ""
        return f"{self.parameter}: {'/'.join(f'{v:g}' for v in self.before)} -> {after}{larger}"


@dataclass(frozen=True)
class Optimization:
    """One entry of the database."""

    name: str
    title: str
    description: str
    when_it_helps: str
    example_before: str
    example_after: str
    apply: Mapping[str, Any]
    pairs: tuple[PairSpec, ...]
    path: Path
    applies_when: str = ""
    references: tuple[str, ...] = field(default_factory=tuple)

    @property
    def space_parameters(self) -> tuple[Mapping[str, Any], ...]:
        """The variant-space flips, in the order they are tried (none, one, or a list)."""
        flips = self.apply.get("space_parameter")
        if flips is None:
            return ()
        return tuple(flips) if isinstance(flips, list) else (flips,)


def builtin_folder() -> Path:
    """The folder of the entries gpuperf ships."""
    return Path(str(resources.files("gpuperf") / "optimizations"))


def database_folders(extra: Iterable[str | Path] = ()) -> list[Path]:
    """The built-in folder, then ``$GPUPERF_OPTIMIZATIONS``, then ``extra``; each must exist (one
    holding no ``*.toml`` is noted: a wrong folder, most likely)."""
    folders = [builtin_folder()]
    env = os.environ.get(ENV_VAR, "")
    named = [(home_path(p, ENV_VAR), ENV_VAR) for p in env.split(os.pathsep) if p.strip()]  # ~ as in GPUPERF_GPUS
    if any(not str(p).strip() for p in extra):  # --optimizations "$DIR", the variable unset: not the current folder
        raise GpuperfError("--optimizations is empty; name a folder of optimization entries (*.toml)")
    named += [(Path(p), "--optimizations") for p in extra]
    for folder, origin in named:
        if not folder.is_dir():
            raise GpuperfError(f"{origin}: optimization folder '{folder}' "
                               + ("is a file, not a folder of entries" if folder.exists() else "does not exist"))
        if not entry_files(folder):
            warnings.warn(GpuperfNote(f"{origin}: optimization folder '{folder}' holds no entries (*.toml)"),
                          stacklevel=2)
        _note_subfolder_entries(folder, origin, {other.resolve() for other, _ in named})
        if all(folder.resolve() != known.resolve() for known in folders):  # a folder named twice is read once
            folders.append(folder)
    return folders


def _note_subfolder_entries(folder: Path, origin: str, named: set[Path]) -> None:
    """Notes the entries in ``folder``'s subfolders (not named folders themselves): entries are read from a
    folder itself, so one moved into a subfolder would otherwise pass unseen."""
    nested = sorted(str(path.relative_to(folder)) for sub in folder.iterdir()
                    if sub.is_dir() and not sub.name.startswith(".") and sub.resolve() not in named
                    for path in entry_files(sub))
    if nested:
        shown = ", ".join(nested[:3]) + (", ..." if len(nested) > 3 else "")
        warnings.warn(GpuperfNote(f"{origin}: optimization folder '{folder}': entries in its subfolders are not "
                                  f"read ({shown}); move them up or name the subfolder as a folder too"),
                      stacklevel=3)


def entry_files(folder: Path) -> list[Path]:
    """The entry files of ``folder``, sorted: its ``*.toml`` files, not hidden ones (a name starting with
    ``.``: an editor's lock or backup file such as Emacs' ``.#entry.toml``)."""
    return sorted(path for path in folder.glob("*.toml") if not path.name.startswith("."))


def only_names(only: Iterable[str] | None) -> list[str]:
    """The names ``--only`` gives (comma-separated, repeatable), each once, in the order given, in the
    Unicode form the database keys them by (:func:`entry_name`)."""
    return list(dict.fromkeys(entry_name(name.strip()) for given in only or () for name in given.split(",")
                              if name.strip()))


def select_entries(database: dict[str, Optimization], only: Iterable[str] | None) -> list[Optimization]:
    """The entries of ``database`` that ``--only`` names, or every entry where it names none; an unknown
    name is an error listing the known ones."""
    names = only_names(only)
    for name in names:
        if name not in database:
            raise unknown_name_error("optimization", name, database)
    return [database[name] for name in names] if names else list(database.values())


def load_optimizations(extra: Iterable[str | Path] = ()) -> dict[str, Optimization]:
    """Every entry by name, sorted; later folders replace earlier entries of the same name."""
    found: dict[str, Optimization] = {}
    for folder in database_folders(extra):
        in_folder: dict[str, Path] = {}
        for path in entry_files(folder):
            data = _read_toml(path)
            if "remove" in data:
                name = _removal(data, path)
                _one_file_per_name(name, path, in_folder)
                if name not in found:
                    raise GpuperfError(f"{path}: removes '{name}', which no earlier folder defines"
                                       f"{'; defined: ' + ', '.join(sorted(found)) if found else ''}")
                del found[name]
                continue
            entry = load_entry(path, data)
            _one_file_per_name(entry.name, path, in_folder)
            found[entry.name] = entry
    return dict(sorted(found.items()))


def _one_file_per_name(name: str, path: Path, in_folder: dict[str, Path]) -> None:
    """Two files of one folder naming one entry (its name in two Unicode normal forms) are an error: which
    one the database kept would depend on how the file names sort."""
    if name in in_folder:
        raise GpuperfError(f"{path}: name: '{name}' is also the entry of {in_folder[name]} in the same folder "
                           f"(file names {ascii(in_folder[name].name)} and {ascii(path.name)}: one name in two "
                           "Unicode normal forms); keep one of the two files")
    in_folder[name] = path


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with parser_limits(path):
            return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise GpuperfError(f"{path}: not valid TOML ({exc})") from None


def _removal(data: Mapping[str, Any], path: Path) -> str:
    """The name a removal file (``name = "X"``, ``remove = true``, nothing else) removes."""
    _no_unknown(data, {"name", "remove"}, f"{path}: a removal file")
    if data["remove"] is not True:
        raise GpuperfError(f"{path}: remove: expected true, got {data['remove']!r} (delete the file to keep the entry)")
    return _file_name(_text(data, "name", path), path)


def entry_name(name: str) -> str:
    """``name`` as the database keys its entry: NFC-normalised, so an 'é' typed as 'e' and an accent
    (NFD, as macOS file names hold it) names the entry typed as one character."""
    return unicodedata.normalize("NFC", name)


def _file_name(name: str, path: Path) -> str:
    """``name`` (NFC-normalised) where it equals ``path``'s file name; an error where it does not. The
    same letters spelt in another Unicode normal form (é as e + an accent, as macOS names files) are equal."""
    name = unicodedata.normalize("NFC", name)
    if name != unicodedata.normalize("NFC", path.stem):
        raise GpuperfError(f"{path}: name: '{name}' must equal the file name '{path.stem}'")
    return name


def get_optimization(name: str, extra: Iterable[str | Path] = ()) -> Optimization:
    """The entry ``name`` names, in either Unicode normal form (entries are named in NFC)."""
    entries = load_optimizations(extra)
    name = entry_name(name)
    if name not in entries:
        raise unknown_name_error("optimization", name, entries)
    return entries[name]


def load_entry(path: str | Path, data: Mapping[str, Any] | None = None) -> Optimization:
    """One entry file (``data``: its parsed TOML, if read already), checked; every error names the
    file and the field at fault."""
    path = Path(path)
    if data is None:
        data = _read_toml(path)
    _no_unknown(data, _ENTRY_KEYS, f"{path}")
    text = {key: _text(data, key, path) for key in ("name", "title", "description", "when_it_helps")}
    text["name"] = _file_name(text["name"], path)
    example = _table(data, "example", path)
    _no_unknown(example, {"before", "after"}, f"{path}: example")
    apply = _table(data, "apply", path)
    _check_apply(apply, path)
    applies_when = data.get("applies_when", "")
    if not isinstance(applies_when, str):
        raise GpuperfError(f"{path}: applies_when: expected a string, got {applies_when!r}")
    _check_condition(applies_when, path)
    references = data.get("references", [])
    if not isinstance(references, list) or not all(isinstance(r, str) for r in references):
        raise GpuperfError(f"{path}: references: expected a list of strings")
    pairs = data.get("pairs", [])
    if not isinstance(pairs, list) or not all(isinstance(p, dict) for p in pairs):
        raise GpuperfError(f"{path}: pairs: expected an array of tables ([[pairs]])")
    if not pairs:
        raise GpuperfError(f"{path}: pairs: no [[pairs]] table; an entry needs measured pairs to learn from")
    return Optimization(
        name=text["name"], title=text["title"], description=text["description"],
        when_it_helps=text["when_it_helps"],
        example_before=_text(example, "before", path, "example.before"),
        example_after=_text(example, "after", path, "example.after"),
        apply=apply, applies_when=applies_when, references=tuple(references),
        pairs=tuple(_pair_spec(p, f"{path}: pairs[{i}]", Path(path).parent) for i, p in enumerate(pairs)), path=path,
    )


def _no_unknown(table: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        raise GpuperfError(f"{where}: unknown field '{unknown[0]}'; known fields: {', '.join(sorted(known))}")


def _text(table: Mapping[str, Any], key: str, path: Path, label: str | None = None) -> str:
    value = table.get(key)
    if value is None:
        raise GpuperfError(f"{path}: missing field '{label or key}'")
    if not isinstance(value, str) or not value.strip():
        raise GpuperfError(f"{path}: {label or key}: expected a non-empty string, got {value!r}")
    return value.strip()


def _table(data: Mapping[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        raise GpuperfError(f"{path}: missing field '{key}' (a [{key}] table)")
    if not isinstance(value, dict):
        raise GpuperfError(f"{path}: {key}: expected a table, got {value!r}")
    return value


def _check_apply(apply: Mapping[str, Any], path: Path) -> None:
    _no_unknown(apply, _APPLY_KEYS, f"{path}: apply")
    kind = _text(apply, "kind", path, "apply.kind")
    if kind not in APPLY_KINDS:
        raise GpuperfError(f"{path}: apply.kind: '{kind}' is not one of {', '.join(APPLY_KINDS)}")
    _text(apply, "summary", path, "apply.summary")
    if "transformation" in apply:
        _text(apply, "transformation", path, "apply.transformation")
    if "parameters" in apply and not isinstance(apply["parameters"], dict):
        raise GpuperfError(f"{path}: apply.parameters: expected a table, got {apply['parameters']!r}")
    flips = apply.get("space_parameter")
    if flips is None:
        return
    expected = '{name = "...", before = NUMBER, after = NUMBER} or a non-empty list of them'
    listed = flips if isinstance(flips, list) else [flips]
    if not listed:
        raise GpuperfError(f"{path}: apply.space_parameter: expected {expected}")
    for position, flip in enumerate(listed):
        numbers = isinstance(flip, dict) and all(
            isinstance(flip.get(k), (int, float)) and not isinstance(flip.get(k), bool) and math.isfinite(flip[k])
            for k in ("before", "after"))
        where = f"apply.space_parameter[{position}]" if isinstance(flips, list) else "apply.space_parameter"
        if not numbers or set(flip) != {"name", "before", "after"} or not isinstance(flip["name"], str) \
                or not flip["name"].strip():
            item = '{name = "...", before = NUMBER, after = NUMBER}'
            raise GpuperfError(f"{path}: {where}: expected {item if isinstance(flips, list) else expected}")
        if flip["before"] == flip["after"]:
            raise GpuperfError(f"{path}: {where}: before and after are both {flip['before']}: a flip needs a direction")


# What an applies_when expression may be made of: features, numbers, comparisons, logic and arithmetic.
CONDITION_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
                   ast.Invert, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.BinOp, ast.Add,
                   ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.BitAnd, ast.BitOr, ast.Name,
                   ast.Load, ast.Constant)


def _check_condition(condition: str, path: Path) -> None:
    """A condition must parse and use only advice features."""
    if not condition:
        return
    from gpuperf.decisions.advice_features import CONDITION_FEATURES, MODEL_FEATURES

    known = MODEL_FEATURES + CONDITION_FEATURES
    try:
        tree = ast.parse(condition, mode="eval")
    except SyntaxError:
        raise GpuperfError(f"{path}: applies_when: '{condition}' is not a valid expression") from None
    except (RecursionError, MemoryError):  # the parser's own limits on nesting
        raise GpuperfError(f"{path}: applies_when: the expression is nested too deeply to read") from None
    refused = next((node for node in ast.walk(tree) if not isinstance(node, CONDITION_NODES)
                    or isinstance(node, ast.Constant) and type(node.value) not in (int, float, bool)), None)
    if refused is not None:  # an attribute, a call, a subscript or a string could run code when evaluated
        what = ast.get_source_segment(condition, refused) or type(refused).__name__
        raise GpuperfError(f"{path}: applies_when: '{condition}' may only compare features and numbers (with and, "
                           f"or, not and arithmetic); '{what}' is not allowed")
    _check_sizes(tree, condition, path)
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} - {"and", "or", "not"}
    unknown = sorted(names - set(known))
    if unknown:
        raise GpuperfError(f"{path}: applies_when: {unknown_name_error('feature', unknown[0], known)}")
    import pandas as pd

    try:  # evaluated as the advisor will, on one row of numbers: a true or false answer, nothing else
        answer = pd.DataFrame({name: [1.0] for name in known}).eval(condition)
        if not isinstance(answer, pd.Series) or answer.dtype != bool:
            kind = answer.dtype if isinstance(answer, pd.Series) else type(answer).__name__
            raise TypeError(f"it gives {kind} values, not true or false")
    except Exception as error:  # noqa: BLE001 - any failure of the user's expression is this one error
        reason = " ".join(str(error).split())
        raise GpuperfError(f"{path}: applies_when: '{condition}' cannot be evaluated on the features ({reason})") from None


# Bounds that keep evaluating a condition quick: pandas folds constant arithmetic in Python integers,
# where ``9**9**9**9`` would never finish.
LARGEST_CONSTANT = 10**15
LARGEST_EXPONENT = 16


def _check_sizes(tree: ast.Expression, condition: str, path: Path) -> None:
    """Refuse integer constants above ``LARGEST_CONSTANT`` and powers whose exponent is not a number of
    magnitude at most ``LARGEST_EXPONENT`` or that nest another power."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and abs(node.value) > LARGEST_CONSTANT:
            raise GpuperfError(f"{path}: applies_when: '{condition}': the number {node.value} is above "
                               f"{LARGEST_CONSTANT:.0e}; write it as a float (e.g. 1e16)")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            exponent = _number(node.right)
            nested = any(isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Pow)
                         for inner in ast.walk(node) if inner is not node)
            if exponent is None or abs(exponent) > LARGEST_EXPONENT or nested:
                what = ast.get_source_segment(condition, node) or "**"
                raise GpuperfError(f"{path}: applies_when: '{condition}': in '{what}' a power's exponent must be "
                                   f"a number from -{LARGEST_EXPONENT} to {LARGEST_EXPONENT}, with no power "
                                   "inside the power")


def _number(node: ast.expr) -> float | None:
    """The value of a numeric constant, signed or not; None for anything else."""
    sign = 1
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        sign = -sign if isinstance(node.op, ast.USub) else sign
        node = node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return sign * node.value
    return None


def _values(value: Any, where: str) -> tuple[float, ...]:
    values = value if isinstance(value, list) else [value]
    if not values or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise GpuperfError(f"{where}: expected a number or a list of numbers, got {value!r}")
    return tuple(float(v) for v in values)


def _pair_spec(table: Mapping[str, Any], where: str, folder: Path | None = None) -> PairSpec:
    """A ``[[pairs]]`` table; a ``dataset`` path relative to the entry's ``folder`` is taken from there."""
    from gpuperf.decisions.program_features import FEATURE_SOURCES

    _no_unknown(table, _PAIR_KEYS, where)
    for key in ("dataset", "kernel", "features"):
        if key not in table:
            raise GpuperfError(f"{where}: missing field '{key}'")
    dataset = table["dataset"]
    if not isinstance(dataset, str) or not dataset:
        raise GpuperfError(f"{where}.dataset: expected a dataset name, got {dataset!r}")
    if folder is not None and not Path(dataset).is_absolute() and (folder / dataset).is_file():
        dataset = str(folder / dataset)  # beside the entry: the same entry reads it from any working folder
    kernels = table["kernel"] if isinstance(table["kernel"], list) else [table["kernel"]]
    if not kernels or not all(isinstance(k, str) and k for k in kernels):
        raise GpuperfError(f"{where}.kernel: expected a kernel name or a list of them")
    features = table["features"]
    if features not in FEATURE_SOURCES:
        raise GpuperfError(f"{where}.features: {unknown_name_error('feature source', str(features), FEATURE_SOURCES)}")
    after_kernel, parameter = table.get("after_kernel"), table.get("parameter")
    if (after_kernel is None) == (parameter is None):
        raise GpuperfError(f"{where}: give either after_kernel or parameter (with before and after or factor)")
    spec: dict[str, Any] = {}
    if after_kernel is not None:
        if not isinstance(after_kernel, str) or not after_kernel:
            raise GpuperfError(f"{where}.after_kernel: expected a kernel name, got {after_kernel!r}")
        if "increasing" in table:
            raise GpuperfError(f"{where}.increasing: only with a parameter (before and after values)")
        if after_kernel in kernels:  # each of its points would pair with itself, a speedup of exactly 1
            raise GpuperfError(f"{where}.after_kernel: '{after_kernel}' is also a before kernel (kernel): its "
                               "points would be paired with themselves")
        spec["after_kernel"] = after_kernel
    else:
        if not isinstance(parameter, str) or not parameter:
            raise GpuperfError(f"{where}.parameter: expected a column name, got {parameter!r}")
        if "before" not in table:
            raise GpuperfError(f"{where}: missing field 'before'")
        if ("after" in table) == ("factor" in table):
            raise GpuperfError(f"{where}: give either 'after' or 'factor'")
        spec.update(parameter=parameter, before=_values(table["before"], f"{where}.before"))
        if "after" in table:
            spec["after"] = _values(table["after"], f"{where}.after")
        else:
            factor = _values(table["factor"], f"{where}.factor")
            if len(factor) != 1 or factor[0] <= 0 or factor[0] == 1:
                raise GpuperfError(f"{where}.factor: expected one positive number other than 1")
            spec["factor"] = factor[0]
        increasing = table.get("increasing", False)
        if not isinstance(increasing, bool):
            raise GpuperfError(f"{where}.increasing: expected true or false, got {increasing!r}")
        spec["increasing"] = increasing
    configuration = table.get("configuration")
    if configuration is not None:
        if not isinstance(configuration, list) or not all(isinstance(c, str) for c in configuration):
            raise GpuperfError(f"{where}.configuration: expected a list of column names")
        spec["configuration"] = tuple(configuration)
    inputs = table.get("inputs")
    if inputs is not None:
        if not isinstance(inputs, list) or not all(isinstance(c, str) for c in inputs):
            raise GpuperfError(f"{where}.inputs: expected a list of column names")
        spec["inputs"] = tuple(inputs)
    limit = table.get("max_pairs_per_gpu", DEFAULT_MAX_PAIRS_PER_GPU)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise GpuperfError(f"{where}.max_pairs_per_gpu: expected a positive integer, got {limit!r}")
    family = table.get("family", "")
    if not isinstance(family, str):
        raise GpuperfError(f"{where}.family: expected a name, got {family!r}")
    return PairSpec(dataset=dataset, kernels=tuple(kernels), features=features, family=family,
                    max_pairs_per_gpu=limit, where=where, **spec)
