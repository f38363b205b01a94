"""Extra measurement kernels for calibrating the linear count model on a device.

The measurement kernels in :mod:`gpuperf.kernels.measurement` run 1D, one instruction per
work-item, or chain their arithmetic through a loop. Most computations (stencils, convolutions,
small matrix products) run in 2D 16 x 16 work-groups with straight-line bodies, read each value
several times, or stage a tile in local memory. These kernels expose each of those costs alone:

- ``copy_2d``: the 2D form of ``vector_copy`` (work-group shape and row changes);
- ``shifted_sum_2d``: five loads of one array per output (reuse: five accesses, one footprint);
- ``poly_2d_f32`` / ``poly_2d_f64``: independent straight-line multiply-adds per work-item;
- ``div_2d``, ``sqrt_2d``: independent divisions / square roots per work-item (no loop around them);
- ``local_copy_2d``: each 16 x 16 tile staged through local memory (local stores and loads; each
  work-item reads back what it stored, so loopy puts no barrier between them);
- ``local_reverse_2d``: as ``local_copy_2d``, each row of the tile read back reversed, so that the
  barrier is needed (work-items read what others wrote);
- ``call_mix_2d``: a square root (a function call) with divisions and multiply-adds around it: a CPU
  runs kernels that call functions unvectorised, so their other operations cost more;
- ``row_sum`` / ``column_sum``: a sequential loop per work-item reading along / across its row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuperf._lazy import LazyModule
from gpuperf.kernels.kernel import Arrays, Kernel, Sizes
from gpuperf.kernels.measurement import F32, F64, LANG, KernelMaker, catalog_kernel, split_1d, tile_2d

if TYPE_CHECKING:
    import loopy as lp
else:  # imported when a kernel is built: listing the catalog does not need loopy
    lp = LazyModule("loopy")

SQUARE_TILES = "n>=16 and m>=16 and n mod 16 = 0 and m mod 16 = 0"
SIZES_2D = {"n": 256, "m": 256}
POLY_DEGREE = 8
SPECIAL_TERMS = 4


def _args_2d(inputs: str, output: str, dtype: type[np.floating], padded: int = 0) -> list:
    rows, cols = (f"n+{padded}", f"m+{padded}") if padded else ("n", "m")
    return [
        lp.GlobalArg(inputs, dtype, shape=(rows, cols)),
        lp.GlobalArg(output, dtype, shape=("n", "m")),
        lp.ValueArg("n,m", np.int32),
    ]


def _kernel_2d(name: str, instructions: str, args: list) -> lp.TranslationUnit:
    program = lp.make_kernel(
        "{[i, j]: 0<=i<n and 0<=j<m}", instructions, args, assumptions=SQUARE_TILES, name=name, lang_version=LANG
    )
    return tile_2d(program, "i", "j")


@catalog_kernel("copy_2d", "measurement", "b[i, j] = a[i, j] in 16x16 work-groups: one load and one store per item",
                params=("n", "m"), default_sizes=SIZES_2D)
def copy_2d(make: KernelMaker) -> Kernel:
    program = _kernel_2d("copy_2d", "b[i, j] = a[i, j]", _args_2d("a", "b", F32))
    return make(program=program, reference=lambda x, s: {"b": x["a"].copy()})


@catalog_kernel(
    "shifted_sum_2d",
    "measurement",
    "out[i, j] = sum of a at (i, j) and its 4 neighbours (a padded by 1): five loads of one array per item",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def shifted_sum_2d(make: KernelMaker) -> Kernel:
    program = _kernel_2d(
        "shifted_sum_2d",
        "out[i, j] = a[i, j+1] + a[i+1, j] + a[i+1, j+1] + a[i+1, j+2] + a[i+2, j+1]",
        _args_2d("a", "out", F32, padded=2),
    )

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        a = inputs["a"]
        return {"out": a[:-2, 1:-1] + a[1:-1, :-2] + a[1:-1, 1:-1] + a[1:-1, 2:] + a[2:, 1:-1]}

    return make(program=program, reference=reference)


def _poly(make: KernelMaker, dtype: type[np.floating]) -> Kernel:
    """Horner's rule, written out: v = v*x + c for POLY_DEGREE coefficients, no loop."""
    bits = np.dtype(dtype).itemsize * 8
    suffix = "f" if dtype is F32 else ""
    coefficients = [1.0 / (k + 2) for k in range(POLY_DEGREE)]
    steps = ["for i, j", "<> x = a[i, j] {id=s0}", f"<> v0 = x + 1.0{suffix} {{id=v0, dep=s0}}"]
    for k, c in enumerate(coefficients, start=1):
        steps.append(f"<> v{k} = v{k - 1}*x + {c!r}{suffix} {{id=v{k}, dep=v{k - 1}}}")
    steps += [f"out[i, j] = v{POLY_DEGREE} {{dep=v{POLY_DEGREE}}}", "end"]
    name = f"poly_2d_f{bits}"
    program = _kernel_2d(name, "\n".join(steps), _args_2d("a", "out", dtype))
    program = lp.add_dtypes(program, {f"x,{','.join(f'v{k}' for k in range(POLY_DEGREE + 1))}": dtype})

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        x = inputs["a"]
        v = x + dtype(1)
        for c in coefficients:
            v = (v * x + dtype(c)).astype(dtype)
        return {"out": v}

    return make(program=program, reference=reference, rtol=1e-4 if dtype is F32 else 1e-10)


@catalog_kernel(
    "poly_2d_f32",
    "measurement",
    f"out[i, j] = a degree-{POLY_DEGREE + 1} polynomial of a[i, j] by Horner's rule, written out: "
    f"{POLY_DEGREE} f32 multiplies and {POLY_DEGREE + 1} adds per item, no loop",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def poly_2d_f32(make: KernelMaker) -> Kernel:
    return _poly(make, F32)


@catalog_kernel(
    "poly_2d_f64",
    "measurement",
    f"as poly_2d_f32 in f64: {POLY_DEGREE} multiplies and {POLY_DEGREE + 1} adds per item, no loop",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def poly_2d_f64(make: KernelMaker) -> Kernel:
    return _poly(make, F64)


@catalog_kernel(
    "div_2d",
    "measurement",
    f"out[i, j] = sum of {SPECIAL_TERMS} independent f32 quotients of a[i, j] per item, no loop",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def div_2d(make: KernelMaker) -> Kernel:
    terms = " + ".join(f"{k + 1}.0f / (a[i, j] + {k}.0f)" for k in range(SPECIAL_TERMS))
    program = _kernel_2d("div_2d", f"out[i, j] = {terms}", _args_2d("a", "out", F32))

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        a = inputs["a"]
        return {"out": sum((F32(k + 1) / (a + F32(k)) for k in range(SPECIAL_TERMS)), F32(0)).astype(F32)}

    return make(program=program, reference=reference)


@catalog_kernel(
    "sqrt_2d",
    "measurement",
    f"out[i, j] = sum of {SPECIAL_TERMS} independent f32 square roots of a[i, j] per item, no loop",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def sqrt_2d(make: KernelMaker) -> Kernel:
    terms = " + ".join(f"sqrt(a[i, j] + {k}.0f)" for k in range(SPECIAL_TERMS))
    program = _kernel_2d("sqrt_2d", f"out[i, j] = {terms}", _args_2d("a", "out", F32))

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        a = inputs["a"]
        return {"out": sum((np.sqrt(a + F32(k)) for k in range(SPECIAL_TERMS)), F32(0)).astype(F32)}

    return make(program=program, reference=reference)


@catalog_kernel(
    "local_copy_2d",
    "measurement",
    "b[i, j] = a[i, j] with each 16x16 tile of a staged through local memory: a local store and a local "
    "load per item, no barrier (each item reads back what it stored)",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def local_copy_2d(make: KernelMaker) -> Kernel:
    program = _kernel_2d("local_copy_2d", "b[i, j] = a[i, j]", _args_2d("a", "b", F32))
    program = lp.add_prefetch(
        program, "a", ["i_inner", "j_inner"], fetch_outer_inames="i_outer, j_outer", default_tag="l.auto"
    )
    return make(program=program, reference=lambda x, s: {"b": x["a"].copy()})


def _line_sum(make: KernelMaker, name: str, along_row: bool) -> Kernel:
    """One work-item per output; a sequential loop over the other index of the (n x m) array a."""
    if along_row:
        domain, expression, out_len = "{[i, j]: 0<=i<n and 0<=j<m}", "out[i] = sum(j, a[i, j])", "n"
    else:
        domain, expression, out_len = "{[i, j]: 0<=i<n and 0<=j<m}", "out[j] = sum(i, a[i, j])", "m"
    program = lp.make_kernel(
        domain,
        expression,
        [lp.GlobalArg("a", F32, shape=("n", "m")), lp.GlobalArg("out", F32, shape=(out_len,)),
         lp.ValueArg("n,m", np.int32)],
        assumptions="n>=256 and m>=256 and n mod 256 = 0 and m mod 256 = 0",
        name=name,
        lang_version=LANG,
    )
    program = split_1d(program, "i" if along_row else "j")
    axis = 1 if along_row else 0
    return make(
        program=program,
        reference=lambda x, s: {"out": x["a"].sum(axis=axis, dtype=np.float64).astype(F32)},
    )


@catalog_kernel(
    "row_sum",
    "measurement",
    "out[i] = sum_j a[i, j]: a sequential loop per work-item along its row (stride 1 in the loop, "
    "stride m between work-items)",
    params=("n", "m"),
    default_sizes={"n": 256, "m": 256},
)
def row_sum(make: KernelMaker) -> Kernel:
    return _line_sum(make, "row_sum", along_row=True)


@catalog_kernel(
    "column_sum",
    "measurement",
    "out[j] = sum_i a[i, j]: a sequential loop per work-item down its column (stride m in the loop, "
    "stride 1 between work-items)",
    params=("n", "m"),
    default_sizes={"n": 256, "m": 256},
)
def column_sum(make: KernelMaker) -> Kernel:
    return _line_sum(make, "column_sum", along_row=False)


@catalog_kernel(
    "local_reverse_2d",
    "measurement",
    "b[i, j] = a[i, j'] with j' mirrored within each 16-wide tile, read back from a tile staged in local memory "
    "(a local store, a barrier that matters and a local load per item)",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def local_reverse_2d(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        "{[ig, jg, ii, jj]: 0<=ig and 16*ig<n and 0<=jg and 16*jg<m and 0<=ii,jj<16}",
        "b[16*ig + ii, 16*jg + jj] = a[16*ig + ii, 16*jg + 15 - jj]",
        _args_2d("a", "b", F32),
        assumptions=SQUARE_TILES,
        name="local_reverse_2d",
        lang_version=LANG,
    )
    program = lp.tag_inames(program, "ig:g.1, jg:g.0, ii:l.1, jj:l.0")
    program = lp.add_prefetch(program, "a", ["ii", "jj"], fetch_outer_inames="ig, jg", default_tag="l.auto")

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        a = inputs["a"]
        return {"b": np.ascontiguousarray(a.reshape(sizes["n"], -1, 16)[:, :, ::-1].reshape(a.shape))}

    return make(program=program, reference=reference)


@catalog_kernel(
    "call_mix_2d",
    "measurement",
    "out[i, j] = sqrt(x) + (x*x + 1)/(x + 2) + (2x + 3)/(x*x + 4) with x = a[i, j]: one f32 function call, "
    "two divisions and nine multiply-adds per item, no loop",
    params=("n", "m"),
    default_sizes=SIZES_2D,
)
def call_mix_2d(make: KernelMaker) -> Kernel:
    x = "a[i, j]"
    expression = f"sqrt({x}) + ({x}*{x} + 1.0f)/({x} + 2.0f) + (2.0f*{x} + 3.0f)/({x}*{x} + 4.0f)"
    program = _kernel_2d("call_mix_2d", f"out[i, j] = {expression}", _args_2d("a", "out", F32))

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        a = inputs["a"]
        one, two, three, four = (F32(v) for v in (1, 2, 3, 4))
        return {"out": np.sqrt(a) + (a * a + one) / (a + two) + (two * a + three) / (a * a + four)}

    return make(program=program, reference=reference)
