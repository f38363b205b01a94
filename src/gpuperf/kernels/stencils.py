"""The LIFT stencil benchmarks (2D, float32) as gpuperf kernels.

Boundary handling: every neighbourhood input is a *padded* array with a halo of ``r`` cells on each
side, shape ``(n + 2r, m + 2r)``, as LIFT's ``Pad`` primitive produces; output ``(i, j)`` reads input
cells ``(i + r + di, j + r + dj)``. Every global index therefore stays affine in the local ids (no
``min``/``max`` clamping and no branches in index expressions), so the access analysis sees plain strides.
Filling the halo by repeating the edge (``np.pad(x, r, mode="edge")``) gives LIFT's ``Pad(clamp)`` and
Rodinia's clamp-to-edge results; the kernels compute on whatever the halo holds, and the NumPy
references do the same. Inputs that are read only at the centre (HotSpot's power) are not padded.

Each base kernel maps ``j`` (columns, contiguous) to ``l.0``/``g.0`` and ``i`` (rows) to ``l.1``/``g.1``
in 16 x 16 work-groups, one output per work-item; ``gpuperf.kernels.space`` derives the variants.
Sizes ``n`` (rows) and ``m`` (columns) must be multiples of 16 (of a variant's tile for variants).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

import numpy as np

from gpuperf._lazy import LazyModule
from gpuperf.kernels.catalog import register
from gpuperf.kernels.kernel import LANG, Arrays, Kernel, Sizes

if TYPE_CHECKING:
    import islpy as isl
    import loopy as lp
else:  # imported when a kernel is built: listing the catalog does not need loopy
    isl, lp = LazyModule("islpy"), LazyModule("loopy")

F32 = np.float32
BASE_GROUP = 16
PARAMS = ("n", "m")  # every stencil's size parameters: rows and columns of its outputs
DEFAULT_SIZES = {"n": 4096, "m": 4096}

Offset = tuple[int, int]
Accessor = Callable[[str, int, int], str]


def f32(value: float) -> str:
    """A float32 literal for loopy source, e.g. ``0.25f``."""
    return f"{float(F32(value))!r}f"


@dataclass(frozen=True, eq=False)
class Stencil:
    """A 2D stencil: its loopy body (written against an accessor for padded inputs) and NumPy reference.

    ``body(at)`` returns the loopy instructions; ``at(name, di, dj)`` names padded input ``name`` at
    offset ``(di, dj)`` from the output cell. ``reference(inputs, sizes)`` computes on the padded inputs.
    """

    name: str
    description: str
    radius: int
    padded_inputs: tuple[str, ...]
    body: Callable[[Accessor], str]
    reference: Callable[[Arrays, Sizes], Arrays]
    plain_inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ("out",)
    rtol: float = 1e-4
    weights: Mapping[Offset, float] = field(default_factory=dict)

    @cached_property
    def offsets(self) -> dict[str, tuple[Offset, ...]]:
        """The offsets each padded input is read at."""
        seen: dict[str, set[Offset]] = {name: set() for name in self.padded_inputs}

        def record(name: str, di: int, dj: int) -> str:
            seen[name].add((di, dj))
            return "0"

        self.body(record)
        return {name: tuple(sorted(points)) for name, points in seen.items()}

    def footprint(self, name: str, rows: int, cols: int) -> tuple[int, int]:
        """Rows and columns of ``name`` a ``rows x cols`` block of outputs reads (its bounding box)."""
        points = self.offsets[name]
        di = [p[0] for p in points]
        dj = [p[1] for p in points]
        return rows + max(di) - min(di), cols + max(dj) - min(dj)

    def instructions(self) -> str:
        r = self.radius
        body = self.body(lambda name, di, dj: f"{name}[i + {r + di}, j + {r + dj}]")
        return f"for i, j\n{body}\nend"

    def untransformed(self) -> lp.TranslationUnit:
        """The loopy program over ``{[i, j]}`` with no mapping to the launch grid (cached)."""
        return _untransformed(self)


@lru_cache(maxsize=None)
def _untransformed(stencil: Stencil) -> lp.TranslationUnit:
    pad = 2 * stencil.radius
    args = [lp.GlobalArg(a, F32, shape=(f"n + {pad}", f"m + {pad}")) for a in stencil.padded_inputs]
    args += [lp.GlobalArg(a, F32, shape=("n", "m")) for a in stencil.plain_inputs + stencil.outputs]
    return lp.make_kernel(
        "{[i, j]: 0 <= i < n and 0 <= j < m}",
        stencil.instructions(),
        [*args, lp.ValueArg("n", np.int32), lp.ValueArg("m", np.int32)],
        assumptions=f"n >= {BASE_GROUP} and m >= {BASE_GROUP} and n mod {BASE_GROUP} = 0 "
        f"and m mod {BASE_GROUP} = 0",
        name=stencil.name,
        lang_version=LANG,
    )


# -- mapping to the launch grid (shared with the variant spaces) --------------------------------
def tile(program: lp.TranslationUnit, local_x: int, tile_y: int) -> lp.TranslationUnit:
    """Columns to ``j_group`` (g.0) x ``j_local`` (l.0); rows to ``i_group`` (g.1) x ``i_tile``."""
    divisible = [f"n mod {tile_y} = 0"] if tile_y > BASE_GROUP else []
    divisible += [f"m mod {local_x} = 0"] if local_x > BASE_GROUP else []
    if divisible:
        program = lp.assume(program, " and ".join(divisible))
    program = lp.split_iname(
        program, "j", local_x, outer_iname="j_group", inner_iname="j_local", outer_tag="g.0", inner_tag="l.0"
    )
    program = lp.split_iname(program, "i", tile_y, outer_iname="i_group", inner_iname="i_tile", outer_tag="g.1")
    return box_domains(program)


def box_domains(program: lp.TranslationUnit) -> lp.TranslationUnit:
    """Write each loop domain as per-iname bounds where that is exact under the assumptions.

    ``split_iname`` leaves bounds such as ``j_local < m - 32 j_group``; loopy's counting (without
    barvinok) overestimates over such domains, but counts a box exactly.
    """
    kernel = program.default_entrypoint
    return program.with_kernel(kernel.copy(domains=[_boxed(kernel, d) for d in kernel.domains]))


def _boxed(kernel: lp.LoopKernel, domain: isl.BasicSet) -> isl.BasicSet:
    """``domain`` as a box of per-iname bounds, or unchanged if no box equals it."""
    from loopy.isl_helpers import boxify

    inames = domain.get_var_names(isl.dim_type.set)
    if not inames:
        return domain
    assumptions = kernel.assumptions.align_params(domain.space)
    constrained = domain.intersect_params(assumptions)
    try:
        box = boxify(kernel.cache_manager, constrained, inames, None)
    except (isl.Error, NotImplementedError):
        return domain
    pieces = box.to_set().gist_params(assumptions).get_basic_sets()
    exact = box.intersect_params(assumptions) == constrained and len(pieces) == 1
    return pieces[0] if exact else domain


def split_tile_rows(program: lp.TranslationUnit, outputs_y: int) -> lp.TranslationUnit:
    """Each work-item (``i_local``, l.1) computes ``outputs_y`` adjacent rows (``i_seq``)."""
    return lp.split_iname(
        program, "i_tile", outputs_y, outer_iname="i_local", inner_iname="i_seq", outer_tag="l.1"
    )


def make_kernel(stencil: Stencil, program: lp.TranslationUnit, variant: Mapping | None = None) -> Kernel:
    return Kernel(
        name=stencil.name,
        program=program,
        params=PARAMS,
        reference=stencil.reference,
        category="stencil",
        description=stencil.description,
        default_sizes=DEFAULT_SIZES,
        variant=dict(variant or {}),
        rtol=stencil.rtol,
    )


def base_kernel(stencil: Stencil) -> Kernel:
    program = tile(stencil.untransformed(), BASE_GROUP, BASE_GROUP)
    return make_kernel(stencil, split_tile_rows(program, 1))


# -- NumPy helpers --------------------------------------------------------------------------------
def shifted(padded: np.ndarray, radius: int, di: int, dj: int, sizes: Sizes) -> np.ndarray:
    """The ``n x m`` window of a padded array at offset ``(di, dj)`` from the output cells."""
    n, m = sizes["n"], sizes["m"]
    return padded[radius + di : radius + di + n, radius + dj : radius + dj + m]


def weighted_stencil(name: str, description: str, weights: Mapping[Offset, float]) -> Stencil:
    """``out = sum(w * in[offset])`` over the given offsets (float32 weights)."""
    radius = max(max(abs(di), abs(dj)) for di, dj in weights)

    def body(at: Accessor) -> str:
        terms = " + ".join(f"{f32(w)} * {at('a', di, dj)}" for (di, dj), w in weights.items())
        return f"out[i, j] = {terms}"

    def reference(x: Arrays, s: Sizes) -> Arrays:
        total = np.zeros((s["n"], s["m"]), F32)
        for (di, dj), w in weights.items():
            total += F32(w) * shifted(x["a"], radius, di, dj, s)
        return {"out": total}

    return Stencil(name, description, radius, ("a",), body, reference, weights=dict(weights))


# -- the benchmarks -------------------------------------------------------------------------------
FIVE_POINT = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
STENCIL2D = weighted_stencil(
    "stencil2d",
    "LIFT Stencil2D: 5-point weighted stencil (centre 0.5, N 0.1, S 0.15, W 0.05, E 0.2)",
    dict(zip(FIVE_POINT, (0.5, 0.1, 0.15, 0.05, 0.2))),
)
JACOBI2D_5PT = weighted_stencil(
    "jacobi2d_5pt", "Jacobi 2D 5-point: mean of the cell and its 4 neighbours", {p: 0.2 for p in FIVE_POINT}
)
JACOBI2D_9PT = weighted_stencil(
    "jacobi2d_9pt",
    "Jacobi 2D 9-point: mean of the 3 x 3 neighbourhood",
    {(di, dj): 1 / 9 for di in (-1, 0, 1) for dj in (-1, 0, 1)},
)
_BINOMIAL = (1, 4, 6, 4, 1)
GAUSSIAN_5X5 = weighted_stencil(
    "gaussian_5x5",
    "Gaussian blur, 5 x 5 binomial weights (25 points)",
    {(di - 2, dj - 2): wi * wj / 256 for di, wi in enumerate(_BINOMIAL) for dj, wj in enumerate(_BINOMIAL)},
)


def _gradient_body(at: Accessor) -> str:
    diffs = [f"<float32> d{k} = c - {at('a', di, dj)}" for k, (di, dj) in enumerate(FIVE_POINT[1:])]
    return "\n".join(
        [f"<float32> c = {at('a', 0, 0)}", *diffs,
         f"out[i, j] = c + 1.0f / sqrt({f32(1e-4)} + d0*d0 + d1*d1 + d2*d2 + d3*d3)"]
    )


def _gradient_reference(x: Arrays, s: Sizes) -> Arrays:
    c = shifted(x["a"], 1, 0, 0, s)
    diffs = [c - shifted(x["a"], 1, di, dj, s) for di, dj in FIVE_POINT[1:]]
    total = F32(1e-4) + sum(d * d for d in diffs)
    return {"out": c + F32(1) / np.sqrt(total)}


GRADIENT = Stencil(
    "gradient",
    "Gradient (PPCG): out = c + 1 / sqrt(1e-4 + sum of squared differences to the 4 neighbours)",
    1,
    ("a",),
    _gradient_body,
    _gradient_reference,
)

SRAD_Q0SQR = 0.053787  # speckle scale (Rodinia computes it from a region of interest; fixed here)
SRAD_LAMBDA = 0.5  # Rodinia's default update factor


def _srad1_body(at: Accessor) -> str:
    q0 = SRAD_Q0SQR
    return f"""
    <float32> jc = {at('J', 0, 0)}
    <float32> dn = {at('J', -1, 0)} - jc
    <float32> ds = {at('J', 1, 0)} - jc
    <float32> dw = {at('J', 0, -1)} - jc
    <float32> de = {at('J', 0, 1)} - jc
    <float32> g2 = (dn*dn + ds*ds + dw*dw + de*de) / (jc*jc)
    <float32> lap = (dn + ds + dw + de) / jc
    <float32> num = 0.5f*g2 - 0.0625f*(lap*lap)
    <float32> den = 1.0f + 0.25f*lap
    <float32> qsqr = num / (den*den)
    <float32> ratio = (qsqr - {f32(q0)}) / {f32(q0 * (1 + q0))}
    out[i, j] = fmin(fmax(1.0f / (1.0f + ratio), 0.0f), 1.0f)
    """


def _srad1_reference(x: Arrays, s: Sizes) -> Arrays:
    jc = shifted(x["J"], 1, 0, 0, s)
    dn, ds, dw, de = (shifted(x["J"], 1, di, dj, s) - jc for di, dj in FIVE_POINT[1:])
    g2 = (dn * dn + ds * ds + dw * dw + de * de) / (jc * jc)
    lap = (dn + ds + dw + de) / jc
    num = F32(0.5) * g2 - F32(0.0625) * (lap * lap)
    den = F32(1) + F32(0.25) * lap
    qsqr = num / (den * den)
    q0 = SRAD_Q0SQR
    ratio = (qsqr - F32(q0)) / F32(q0 * (1 + q0))
    return {"out": np.clip(F32(1) / (F32(1) + ratio), F32(0), F32(1))}


SRAD1 = Stencil(
    "srad1",
    "Rodinia SRAD kernel 1: diffusion coefficient from the image's 4-neighbour derivatives",
    1,
    ("J",),
    _srad1_body,
    _srad1_reference,
    rtol=1e-3,
)


def _srad2_body(at: Accessor) -> str:
    return f"""
    <float32> jc = {at('J', 0, 0)}
    <float32> cc = {at('c', 0, 0)}
    <float32> div = cc*({at('J', -1, 0)} - jc) + {at('c', 1, 0)}*({at('J', 1, 0)} - jc) \
        + cc*({at('J', 0, -1)} - jc) + {at('c', 0, 1)}*({at('J', 0, 1)} - jc)
    out[i, j] = jc + {f32(0.25 * SRAD_LAMBDA)}*div
    """


def _srad2_reference(x: Arrays, s: Sizes) -> Arrays:
    def at(name: str, di: int, dj: int) -> np.ndarray:
        return shifted(x[name], 1, di, dj, s)

    jc, cc = at("J", 0, 0), at("c", 0, 0)
    div = (
        cc * (at("J", -1, 0) - jc)
        + at("c", 1, 0) * (at("J", 1, 0) - jc)
        + cc * (at("J", 0, -1) - jc)
        + at("c", 0, 1) * (at("J", 0, 1) - jc)
    )
    return {"out": jc + F32(0.25 * SRAD_LAMBDA) * div}


SRAD2 = Stencil(
    "srad2",
    "Rodinia SRAD kernel 2: image update from the coefficients (centre, south, east) and derivatives",
    1,
    ("J", "c"),
    _srad2_body,
    _srad2_reference,
    rtol=1e-3,
)


def _hotspot_constants(grid: int = 512) -> dict[str, float]:
    """Rodinia HotSpot's coefficients for a ``grid x grid`` chip (its defaults)."""
    t_chip, chip, k_si, spec_heat, factor, max_pd, precision = 0.0005, 0.016, 100.0, 1.75e6, 0.5, 3.0e6, 0.001
    cell = chip / grid
    cap = factor * spec_heat * t_chip * cell * cell
    r_x = cell / (2.0 * k_si * t_chip * cell)
    r_z = t_chip / (k_si * cell * cell)
    step = precision / (max_pd / (factor * t_chip * spec_heat))
    return {"step_div_cap": step / cap, "rx_1": 1 / r_x, "ry_1": 1 / r_x, "rz_1": 1 / r_z, "amb_temp": 80.0}


HOTSPOT = _hotspot_constants()


def _hotspot_body(at: Accessor) -> str:
    k = {key: f32(v) for key, v in HOTSPOT.items()}
    return f"""
    <float32> tc = {at('temp', 0, 0)}
    out[i, j] = tc + {k['step_div_cap']}*(power[i, j] \
        + ({at('temp', 1, 0)} + {at('temp', -1, 0)} - 2.0f*tc)*{k['ry_1']} \
        + ({at('temp', 0, 1)} + {at('temp', 0, -1)} - 2.0f*tc)*{k['rx_1']} \
        + ({k['amb_temp']} - tc)*{k['rz_1']})
    """


def _hotspot_reference(x: Arrays, s: Sizes) -> Arrays:
    def t(di: int, dj: int) -> np.ndarray:
        return shifted(x["temp"], 1, di, dj, s)

    k = {key: F32(v) for key, v in HOTSPOT.items()}
    tc = t(0, 0)
    delta = (
        x["power"]
        + (t(1, 0) + t(-1, 0) - F32(2) * tc) * k["ry_1"]
        + (t(0, 1) + t(0, -1) - F32(2) * tc) * k["rx_1"]
        + (k["amb_temp"] - tc) * k["rz_1"]
    )
    return {"out": tc + k["step_div_cap"] * delta}


HOTSPOT2D = Stencil(
    "hotspot2d",
    "Rodinia HotSpot: one explicit step of the chip temperature from temperature and power",
    1,
    ("temp",),
    _hotspot_body,
    _hotspot_reference,
    plain_inputs=("power",),
)

STENCILS: dict[str, Stencil] = {
    s.name: s
    for s in (STENCIL2D, SRAD1, SRAD2, HOTSPOT2D, GRADIENT, JACOBI2D_5PT, JACOBI2D_9PT, GAUSSIAN_5X5)
}


def _register(stencil: Stencil) -> None:
    register(stencil.name, "stencil", stencil.description, PARAMS, DEFAULT_SIZES)(lambda: base_kernel(stencil))


for _stencil in STENCILS.values():
    _register(_stencil)
