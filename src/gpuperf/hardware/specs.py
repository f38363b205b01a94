"""GPU descriptors: the hardware parameters of every GPU gpuperf knows, loaded from gpus.toml and from
the TOML files (or folders of them) that ``GPUPERF_GPUS`` names, in the same format: a user's own
GPUs, which replace a bundled GPU of the same name."""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from gpuperf.errors import GpuperfError, clipped, parser_limits
from gpuperf.files import home_path

SPECS_FILE = "gpus.toml"
USER_SPECS = "GPUPERF_GPUS"  # os.pathsep-separated TOML files or folders of them: a user's own GPUs
VENDORS = ("NVIDIA", "AMD")


@dataclass(frozen=True)
class GpuSpec:
    """One GPU's descriptor (see gpus.toml for the meaning and units of each field).

    Optional fields are ``None`` where the value is not known with confidence.
    """

    name: str
    vendor: str
    architecture: str
    compute_capability: str
    sms: int
    cores_per_sm: int
    boost_clock_mhz: float
    memory_bandwidth_gbs: float
    memory_gb: float
    l2_bytes: int
    shared_memory_per_sm_bytes: int
    max_shared_memory_per_block_bytes: int
    max_threads_per_block: int
    warp_size: int
    peak_f32_gflops: float
    base_clock_mhz: float | None = None
    peak_f64_gflops: float | None = None
    registers_per_sm: int | None = None
    max_registers_per_thread: int | None = None
    max_threads_per_sm: int | None = None
    max_blocks_per_sm: int | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""

    @property
    def cores(self) -> int:
        return self.sms * self.cores_per_sm

    @property
    def cc_version(self) -> tuple[int, int] | None:
        """NVIDIA compute capability as ``(major, minor)``; ``None`` for AMD."""
        match = re.fullmatch(r"(\d+)\.(\d+)", self.compute_capability)
        return (int(match[1]), int(match[2])) if match else None

    def as_features(self) -> dict[str, float]:
        """Numeric descriptor parameters, ``gpu_``-prefixed; unknown values are NaN."""
        features = {
            f"gpu_{f.name}": math.nan if getattr(self, f.name) is None else float(getattr(self, f.name))
            for f in fields(self)
            if f.name in NUMERIC_FIELDS
        }
        cc = self.cc_version
        features["gpu_compute_capability"] = math.nan if cc is None else cc[0] + cc[1] / 10
        features["gpu_cores"] = float(self.cores)
        features["gpu_flops_per_byte"] = self.peak_f32_gflops / self.memory_bandwidth_gbs
        return features

    def as_dict(self) -> dict[str, Any]:
        """Every field, for JSON output."""
        return {f.name: list(v) if isinstance(v := getattr(self, f.name), tuple) else v for f in fields(self)}


TEXT_FIELDS = ("name", "vendor", "architecture", "compute_capability", "source")
NUMERIC_FIELDS = tuple(f.name for f in fields(GpuSpec) if f.name not in TEXT_FIELDS and f.name != "aliases")
WHOLE_FIELDS = tuple(f.name for f in fields(GpuSpec) if f.type in ("int", "int | None"))
REQUIRED_FIELDS = tuple(f.name for f in fields(GpuSpec) if f.default is not None and f.name not in ("aliases", "source"))
# Needed for the occupancy calculator, so required of every NVIDIA GPU.
NVIDIA_REQUIRED = ("registers_per_sm", "max_registers_per_thread", "max_threads_per_sm", "max_blocks_per_sm")


def normalize_name(name: str) -> str:
    """Lower case without '-', '_' or spaces, in one Unicode normal form (NFC: an 'é' typed as one
    character or as 'e' and an accent is one letter): the key names and aliases are matched on."""
    return re.sub(r"[-_\s]+", "", unicodedata.normalize("NFC", name)).lower()


def _capability_order(text: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in str(text).split("."))


def _spec_from_entry(entry: dict[str, Any], limits: dict[str, dict[str, Any]], where: str = SPECS_FILE) -> GpuSpec:
    label = f"{where}: GPU '{entry.get('name', '?')}'"
    values = {**limits.get(str(entry.get("compute_capability")), {}), **entry}
    known = {f.name for f in fields(GpuSpec)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise GpuperfError(f"{label} has unknown field {', '.join(unknown)}")
    _check_capability(values, label)  # before the limits it names are looked for
    missing = [name for name in REQUIRED_FIELDS if name not in values]
    if values.get("vendor") == "NVIDIA":
        missing += [name for name in NVIDIA_REQUIRED if name not in values]
    if missing:
        capability = entry.get("compute_capability")
        limited = set().union(*limits.values()) if limits else set()  # the fields a limits table gives
        unlisted = (values.get("vendor") == "NVIDIA" and capability is not None and str(capability) not in limits
                    and bool(limited & set(missing)))
        raise GpuperfError(f"{label} lacks field {', '.join(missing)}" + (
            f" (gpuperf has no limits for compute capability {capability}, which would give them: "
            f"it knows {', '.join(sorted(limits, key=_capability_order))}; give them in the GPU's entry)"
            if unlisted and limits else ""))
    for name in TEXT_FIELDS:
        value = values.get(name, "")
        if not isinstance(value, str) or (name != "source" and not value.strip()):
            raise GpuperfError(f"{label} field {name}={value!r} must be {'text' if name == 'source' else 'a name'} "
                               "in quotes")
    aliases = values.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) and a.strip() for a in aliases):
        raise GpuperfError(f"{label} field aliases={aliases!r} must be a list of names in quotes")
    for field, spelling in (("name", values["name"]), *(("aliases", alias) for alias in aliases)):
        if not normalize_name(spelling):  # '-' is looked up as '': an empty --gpu "$GPU" would name it
            raise GpuperfError(f"{label} field {field} has {spelling!r}, which is no name: lookup ignores case, "
                               "'-', '_' and spaces, and nothing else is left")
    if values["vendor"] not in VENDORS:
        raise GpuperfError(f"{label} has vendor '{values['vendor']}'; use one of {', '.join(VENDORS)}")
    for name in NUMERIC_FIELDS:
        value = values.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise GpuperfError(f"{label} field {name}={value!r} must be a positive number")
        if name in WHOLE_FIELDS and not float(value).is_integer():
            raise GpuperfError(f"{label} field {name}={value!r} must be a whole number")
        if name in WHOLE_FIELDS:  # sms = 100.0 is 100 SMs: a count, as range() and block counts take it
            values[name] = int(value)
    _check_limits_named(values, set(values) - set(entry), label)
    values["aliases"] = tuple(aliases)
    return GpuSpec(**values)


def _check_limits_named(values: dict[str, Any], inherited: set[str], label: str) -> None:
    """:func:`_check_consistent`, its error saying where a field the entry does not give came from (its
    compute capability's limits), so that the user finds what to give in the entry."""
    try:
        _check_consistent(values, label)
    except GpuperfError as error:
        named = [name for name in sorted(inherited) if re.search(rf"\b{name}=", str(error))]
        if not named:
            raise
        raise GpuperfError(f'{error} ({", ".join(named)} from [limits."{values["compute_capability"]}"]; give '
                           f"{'it' if len(named) == 1 else 'them'} in the GPU's entry)") from None


def _check_capability(values: dict[str, Any], label: str) -> None:
    """An error for a compute capability no NVIDIA or AMD GPU is named by ('sm_89', 'gfx90a:sramecc+')."""
    capability, vendor = values.get("compute_capability"), values.get("vendor")
    if not isinstance(capability, str):
        return  # named as ill-typed with the other text fields
    if vendor == "NVIDIA" and not re.fullmatch(r"\d+\.\d+", capability):
        digits = re.sub(r"\D", "", capability)
        hint = f" (write '{digits[:-1]}.{digits[-1]}')" if len(digits) >= 2 else ""
        raise GpuperfError(f"{label} field compute_capability={capability!r} is no CUDA compute capability: major."
                           f"minor, as '8.9'{hint}")
    if vendor == "AMD" and not re.fullmatch(r"gfx[0-9a-f]+", capability):
        raise GpuperfError(f"{label} field compute_capability={capability!r} is no AMD target: gfx and its "
                           "number in lower case, as 'gfx90a', without :feature suffixes")


PEAK_TOLERANCE = 4.0  # a datasheet's own convention (dual issue) stays within it; a unit slip does not
MIN_BANDWIDTH_GBS = 10.0  # below any GPU's memory bandwidth: 3.9 is TB/s written as GB/s
MIN_L2_BYTES = 131_072  # the smallest GPU L2 (Tegra K1, Jetson TK1): 50 is MiB, 65536 KiB written as bytes
MIN_SHARED_PER_SM_BYTES = 16_384  # below any GPU's: 164 is KiB written as bytes
MIN_REGISTERS_PER_SM = 8_192  # below any GPU's: 256 is KiB of registers
MAX_BANDWIDTH_GBS = 50_000.0  # above any GPU's (B200: 8000): 320000 is MB/s
MAX_MEMORY_GB = 4_096.0  # above any GPU's: 16384 is MiB
MIN_CLOCK_MHZ = 100.0  # below any GPU's boost clock: 1.5 is GHz written as MHz


def _check_limits(values: dict[str, Any], label: str) -> None:
    """Errors for per-block and per-SM limits no GPU has: an NVIDIA warp other than 32 threads, threads per
    SM not whole warps, a block larger than the SM it runs on, in threads or shared memory."""
    warp, per_sm = values["warp_size"], values.get("max_threads_per_sm")
    if values.get("vendor") == "NVIDIA" and warp != 32:
        raise GpuperfError(f"{label} field warp_size={warp!r}: every NVIDIA GPU's warp is 32 threads")
    if per_sm is not None and per_sm % warp:
        raise GpuperfError(f"{label} field max_threads_per_sm={per_sm!r} is not a whole number of {warp}-thread warps")
    if per_sm is not None and values["max_threads_per_block"] > per_sm:
        raise GpuperfError(f"{label} field max_threads_per_block={values['max_threads_per_block']!r} is above "
                           f"max_threads_per_sm={per_sm!r}: a block runs on one SM")
    if values["max_shared_memory_per_block_bytes"] > values["shared_memory_per_sm_bytes"]:
        raise GpuperfError(f"{label} field max_shared_memory_per_block_bytes="
                           f"{values['max_shared_memory_per_block_bytes']!r} is above shared_memory_per_sm_bytes="
                           f"{values['shared_memory_per_sm_bytes']!r}: a block runs on one SM")


def _check_consistent(values: dict[str, Any], label: str) -> None:
    """Errors for fields that contradict each other or slipped a unit: the FP32 peak against the FMA
    rate its SMs, cores and boost clock give (as gpus.toml defines it), a base clock above the boost
    clock or below a quarter of it, a boost clock, bandwidth or L2 too small for any GPU, an FP64 peak above FP32."""
    base, boost = values.get("base_clock_mhz"), values["boost_clock_mhz"]
    if base is not None and base > boost:
        raise GpuperfError(f"{label} field base_clock_mhz={base!r} is above boost_clock_mhz={boost!r}")
    if base is not None and base < boost / 4:
        raise GpuperfError(f"{label} field base_clock_mhz={base!r} is below a quarter of boost_clock_mhz={boost!r}: "
                           "is it in GHz (MHz wanted)?")
    if values["memory_bandwidth_gbs"] < MIN_BANDWIDTH_GBS:
        raise GpuperfError(f"{label} field memory_bandwidth_gbs={values['memory_bandwidth_gbs']!r} is below "
                           f"{MIN_BANDWIDTH_GBS:g} GB/s: is it in TB/s (GB/s wanted)?")
    if values["l2_bytes"] < MIN_L2_BYTES:
        raise GpuperfError(f"{label} field l2_bytes={values['l2_bytes']!r} is below {MIN_L2_BYTES} bytes: "
                           "is it in KiB or MiB (bytes wanted)?")
    for field, low, high, slip in (
            ("shared_memory_per_sm_bytes", MIN_SHARED_PER_SM_BYTES, math.inf, "in KiB (bytes wanted)"),
            ("registers_per_sm", MIN_REGISTERS_PER_SM, math.inf, "in KiB (32-bit registers wanted)"),
            ("memory_bandwidth_gbs", 0, MAX_BANDWIDTH_GBS, "in MB/s (GB/s wanted)"),
            ("memory_gb", 0, MAX_MEMORY_GB, "in MiB or MB (GB wanted)")):
        value = values.get(field)
        if value is not None and not low <= value <= high:
            bound = f"below {low:g}" if value < low else f"above {high:g}"
            raise GpuperfError(f"{label} field {field}={value!r} is {bound}, beyond any GPU: is it {slip}?")
    _check_limits(values, label)
    f64 = values.get("peak_f64_gflops")
    if f64 is not None and f64 > values["peak_f32_gflops"] * 1.01:
        raise GpuperfError(f"{label} field peak_f64_gflops={f64!r} is above peak_f32_gflops="
                           f"{values['peak_f32_gflops']!r}: no GPU runs double precision faster (GFLOP/s wanted)")
    rate = 2 * values["sms"] * values["cores_per_sm"] * boost / 1000
    ratio = values["peak_f32_gflops"] / rate
    if not 1 / PEAK_TOLERANCE <= ratio <= PEAK_TOLERANCE:
        raise GpuperfError(
            f"{label} field peak_f32_gflops={values['peak_f32_gflops']!r} is {ratio:.3g}x the FMA rate "
            f"2 x sms x cores_per_sm x boost_clock_mhz / 1000 = {rate:.6g}: is a clock in GHz or the peak in "
            "another unit (GFLOP/s, MHz wanted)?")
    if boost < MIN_CLOCK_MHZ:  # with the peak in TFLOP/s too, the two slips cancel in the ratio above
        raise GpuperfError(f"{label} field boost_clock_mhz={boost!r} is below {MIN_CLOCK_MHZ:g} MHz: is it in GHz "
                           f"(MHz wanted), and peak_f32_gflops={values['peak_f32_gflops']!r} in TFLOP/s "
                           "(GFLOP/s wanted)?")


def gpus() -> list[GpuSpec]:
    """Every GPU descriptor, in the order of gpus.toml, then the user's (``GPUPERF_GPUS``)."""
    return list(_load())


def descriptors_state() -> tuple:
    """``GPUPERF_GPUS`` as set now and the place, modification time and size of each file it names: the
    descriptors (and what is cached from them) are read again when it changes, in a process that
    runs on (a notebook, a service)."""
    value = os.environ.get(USER_SPECS, "")
    if not value.strip():
        return ()
    try:
        files = user_spec_files()
    except GpuperfError:  # read again on every call: loading raises the error each time
        return value, object()
    found = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            found.append((str(path), None))
        else:
            found.append((str(path.resolve()), stat.st_mtime_ns, stat.st_size))
    return value, tuple(found)


def _load() -> tuple[GpuSpec, ...]:
    return _load_for(descriptors_state())


@cache
def _load_for(state: tuple) -> tuple[GpuSpec, ...]:
    """The descriptors; ``state`` (:func:`descriptors_state`) is part of the cache's key alone."""
    bundled, limits = _bundled()
    specs = dict(bundled)
    _add_user_specs(specs, limits, _build_index(tuple(specs.values())))  # the index fails on a shared spelling
    _build_index(tuple(specs.values()))  # and on one two users' GPUs share
    return tuple(specs.values())


@cache
def _bundled() -> tuple[dict[str, GpuSpec], dict[str, dict[str, Any]]]:
    """gpuperf's own descriptors (gpus.toml) by name, and its [limits] per compute capability."""
    table = _parse(resources.files("gpuperf.hardware").joinpath(SPECS_FILE).read_text(encoding="utf-8"), SPECS_FILE)
    limits = table.get("limits", {})
    return {spec.name: spec for spec in (_spec_from_entry(entry, limits) for entry in table.get("gpu", []))}, limits


def is_users_gpu(spec: GpuSpec) -> bool:
    """Whether ``spec`` comes from a file ``GPUPERF_GPUS`` names (a GPU of the user's or one replacing gpuperf's)."""
    return _bundled()[0].get(spec.name) is not spec


def descriptor_file(spec: GpuSpec) -> str | None:
    """The file ``spec`` comes from: gpuperf's gpus.toml, or the ``GPUPERF_GPUS`` file describing it (for
    an error naming where to add a field); None for a descriptor made in Python."""
    if not is_users_gpu(spec):
        return SPECS_FILE
    for path in user_spec_files():
        entries = _parse(path.read_text(encoding="utf-8-sig"), str(path)).get("gpu", [])
        if any(isinstance(entry, dict) and entry.get("name") == spec.name for entry in entries):
            return str(path)
    return None


def _add_user_specs(specs: dict[str, GpuSpec], limits: dict[str, dict[str, Any]],
                    bundled: dict[str, GpuSpec]) -> None:
    """Add (or replace, by name) the GPUs of the files ``GPUPERF_GPUS`` names; the bundled [limits]
    per compute capability apply, each field unless a file gives its own."""
    users_spellings: dict[str, tuple[str, str]] = {}  # a user's name or alias, normalised -> (its GPU, its file)
    for path in user_spec_files():
        try:
            own = _parse(path.read_text(encoding="utf-8-sig"), str(path))
        except UnicodeDecodeError:
            raise GpuperfError(f"{path}: not a TOML file of GPU descriptors (not UTF-8 text)") from None
        entries, own_limits = own.get("gpu", []), own.get("limits", {})
        if not isinstance(entries, list) or not entries:
            raise GpuperfError(f"{path}: no [[gpu]] entry (the format of gpuperf's gpus.toml)")
        if not isinstance(own_limits, dict) or not all(isinstance(table, dict) for table in own_limits.values()):
            raise GpuperfError(f'{path}: limits is a table of tables, one per compute capability ([limits."8.7"])')
        for number, entry in enumerate(entries, start=1):
            if not isinstance(entry, dict):
                raise GpuperfError(f"{path}: gpu entry {number} is {entry!r}, not a table of fields ([[gpu]] with "
                                   "name = ..., vendor = ...)")
            spec = _spec_from_entry(entry, _merged_limits(limits, own_limits), str(path))
            key = normalize_name(spec.name)
            if key in users_spellings:
                gpu, where = users_spellings[key]
                raise GpuperfError(f"{path}: GPU '{spec.name}' is described twice (also in {where})"
                                   if normalize_name(gpu) == key else
                                   f"{path}: GPU '{spec.name}': name '{spec.name}' is an alias of {gpu} (in {where})")
            replaced = bundled.get(key)
            if replaced is not None and normalize_name(replaced.name) != key:
                raise GpuperfError(f"{path}: GPU '{spec.name}': name '{spec.name}' is an alias of {replaced.name}; "
                                   f"name the entry '{replaced.name}' to replace it")
            for alias in spec.aliases:
                other = bundled.get(normalize_name(alias))
                if other is not None and normalize_name(other.name) != key:
                    raise GpuperfError(f"{path}: GPU '{spec.name}': alias '{alias}' already names {other.name}")
                named = users_spellings.setdefault(normalize_name(alias), (spec.name, str(path)))
                if named[0] != spec.name:
                    raise GpuperfError(f"{path}: GPU '{spec.name}': alias '{alias}' already names {named[0]} "
                                       f"(in {named[1]})")
            users_spellings.setdefault(key, (spec.name, str(path)))
            specs.pop(replaced.name if replaced is not None else "", None)
            specs[spec.name] = spec


def _merged_limits(limits: dict[str, dict[str, Any]], own: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The bundled [limits] with a file's own laid over them field by field: a file's
    ``[limits."8.9"]`` naming one field keeps gpuperf's other fields for 8.9."""
    return {capability: {**limits.get(capability, {}), **own.get(capability, {})} for capability in {**limits, **own}}


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        with parser_limits(where):
            return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise GpuperfError(f"{where}: {exc}") from None


def user_spec_files() -> list[Path]:
    """The TOML files ``GPUPERF_GPUS`` names: files, and the ``*.toml`` files of folders."""
    files = []
    for part in os.environ.get(USER_SPECS, "").split(os.pathsep):
        if not part.strip():
            continue
        path = home_path(part.strip(), USER_SPECS)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix.lower() == ".toml" and p.is_file())
            if not found:
                raise GpuperfError(f"{USER_SPECS}: {path}: a folder with no .toml file of GPU descriptors")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise GpuperfError(f"{USER_SPECS}: {path}: no such file or folder")
    return files


def _name_index() -> dict[str, GpuSpec]:
    return _index_for(descriptors_state())


@cache
def _index_for(state: tuple) -> dict[str, GpuSpec]:
    return _build_index(_load_for(state))


def _build_index(specs: tuple[GpuSpec, ...]) -> dict[str, GpuSpec]:
    index: dict[str, GpuSpec] = {}
    for spec in specs:
        for spelling in (spec.name, *spec.aliases):
            key = normalize_name(spelling)
            if key in index and index[key] is not spec:
                raise GpuperfError(f"GPU descriptors ({SPECS_FILE}, {USER_SPECS}): '{spelling}' names both "
                                   f"{index[key].name} and {spec.name}")
            index[key] = spec
    return index


def canonical_gpu_name(name: Any) -> str | None:
    """The canonical name for a GPU name or alias; ``None`` if unknown (or not a string)."""
    if not isinstance(name, str):
        return None
    spec = _lookup(normalize_name(name))
    return spec.name if spec else None


BRAND_WORDS = ("nvidia", "amd", "geforce", "tesla", "quadro", "instinct", "radeon")  # normalised


def _without_brands(key: str) -> Iterator[str]:
    """A normalised name, then it with the brand words a driver or tool puts first dropped one by one
    (``nvidiateslav100pcie32gb``, ``teslav100pcie32gb``, ``v100pcie32gb``)."""
    yield key
    while True:
        brand = next((word for word in BRAND_WORDS if key.startswith(word) and len(key) > len(word)), None)
        if brand is None:
            return
        key = key[len(brand):]
        yield key


def spelling_key(name: str) -> str:
    """``name`` normalised (:func:`normalize_name`) without the brand words a driver or tool puts
    before it: how two spellings of a GPU gpuperf does not describe are matched."""
    *_, last = _without_brands(normalize_name(name))
    return last


def other_boards_note(name: str) -> str | None:
    """A note where ``name`` is a model name gpuperf takes as one board (``A100``: the A100 PCIe 40GB,
    not the A100 SXM4 80GB gpuperf also describes; ``V100``: the PCIe 32GB board, not an SXM2; ``MI250X``: one of
    its two dies); None where ``name`` is the board's own (brand words aside), an alias the user's own
    ``GPUPERF_GPUS`` entry lists, or unknown."""
    key = spelling_key(name)
    spec = _lookup(key)
    if spec is None or key == spelling_key(spec.name):
        return None
    if is_users_gpu(spec) and any(key == spelling_key(alias) for alias in spec.aliases):
        return None  # the user's own entry lists this spelling: the user means that GPU
    others = sorted({other.name for other in _load() if other is not spec
                     and any(spelling_key(spelling).startswith(key) for spelling in (other.name, *other.aliases))})
    if not others:  # the board's own name with more after it (Tesla K40c, H100 SXM5 80GB) is that board
        if key.startswith(spelling_key(spec.name)):
            return None
        return (f"note: '{name}' is taken as the {spec.name}: name the board if it ran on another (one gpuperf "
                "does not describe is added by GPUPERF_GPUS=my_gpus.toml)")
    return (f"note: '{name}' is taken as the {spec.name}; gpuperf also describes the {', '.join(others)}: "
            "name the board if it ran on another")


def _lookup(key: str) -> GpuSpec | None:
    """The descriptor a normalised name names, exactly or once the brand words a driver or tool puts
    before it are dropped one by one (``NVIDIA Tesla V100-PCIE-32GB``, ``Instinct MI250X``)."""
    index = _name_index()
    return next((index[stripped] for stripped in _without_brands(key) if stripped in index), None)


def get_gpu(name: str) -> GpuSpec:
    """The descriptor for a name or alias (case, '-', '_' and spaces ignored)."""
    spec = _lookup(normalize_name(str(name)))
    if spec is None and not str(name).strip():  # --gpu "$GPU", the variable unset: said as import says it
        raise GpuperfError(f"unknown GPU '{name}': the name is empty; name a GPU (see gpuperf gpus)")
    if spec is None:
        raise GpuperfError(f"unknown GPU '{clipped(str(name))}'; {gpu_suggestion(str(name)[:200])} ({DESCRIBE_HINT})")
    return spec


DESCRIBE_HINT = "a GPU gpuperf does not describe is added by a file of [[gpu]] entries: GPUPERF_GPUS=my_gpus.toml"


def gpu_suggestion(name: str) -> str:
    """A "did you mean ..." hint naming the nearest descriptors, or the known GPUs."""
    index = _name_index()
    key = normalize_name(name)
    # names holding the one given, or held in it (an alias such as a100 in nvidiaa100), first
    containing = sorted((k for k in index if key and (key in k or k in key)), key=len, reverse=True)
    # then names sharing a model number's start (h100nvl: h100pcie), the longest shared start first
    model = spelling_key(name)  # brand words aside: nvidia and tesla are no model number

    def start(k: str) -> int:
        return len(os.path.commonprefix([spelling_key(k), model]))

    shared = sorted((k for k in index if start(k) >= 4), key=start, reverse=True)
    close = containing + shared + difflib.get_close_matches(key, list(index), n=8, cutoff=0.5)
    names = list(dict.fromkeys(index[k].name for k in close))[:3]
    if names:
        return f"did you mean {', '.join(names)}?"
    return f"known: {', '.join(spec.name for spec in gpus())} (see gpuperf gpus)"
