"""Measurement kernels: each exposes one cost (after the Loopy performance-model paper's list).

Memory kernels use 256 work-items per group along the array; 2D kernels use 16x16 groups. Size
assumptions (``n mod 256 = 0`` and the like) make loopy's operation and access counts exact.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from gpuperf._lazy import LazyModule
from gpuperf.kernels.catalog import register
from gpuperf.kernels.kernel import LANG, Arrays, Kernel, Sizes

if TYPE_CHECKING:
    import loopy as lp
else:  # imported when a kernel is built: listing the catalog does not need loopy
    lp = LazyModule("loopy")

F32 = np.float32
F64 = np.float64
GROUP_1D = 256
TILE = 16

KernelMaker = Callable[..., Kernel]
Builder = Callable[[KernelMaker], Kernel]


def catalog_kernel(name: str, category: str, description: str, params: tuple[str, ...],
                   default_sizes: Mapping[str, int]) -> Callable[[Builder], Callable[[], Kernel]]:
    """Register ``build(make)`` under ``name``; ``make(**fields)`` is ``Kernel`` with the name, category,
    description, size parameters and default sizes already filled in, so each is written once (and
    the catalog lists them without building the kernel)."""

    def decorate(build: Builder) -> Callable[[], Kernel]:
        make = partial(Kernel, name=name, category=category, description=description, params=params,
                       default_sizes=default_sizes)

        def build_kernel() -> Kernel:
            return build(make)

        build_kernel.__name__ = build_kernel.__qualname__ = name
        build_kernel.__doc__ = build.__doc__
        return register(name, category, description, params, default_sizes)(build_kernel)

    return decorate


def split_1d(program: lp.TranslationUnit, iname: str = "i", size: int = GROUP_1D) -> lp.TranslationUnit:
    """One work-item per value of ``iname``, ``size`` work-items per group."""
    return lp.split_iname(program, iname, size, outer_tag="g.0", inner_tag="l.0")


def tile_2d(program: lp.TranslationUnit, row: str, col: str, size: int = TILE) -> lp.TranslationUnit:
    """``size`` x ``size`` work-groups; ``col`` (the contiguous index) runs along local axis 0."""
    program = lp.split_iname(program, row, size, outer_tag="g.1", inner_tag="l.1")
    return lp.split_iname(program, col, size, outer_tag="g.0", inner_tag="l.0")


# -- global memory -------------------------------------------------------------------------------
@catalog_kernel("vector_copy", "measurement", "b[i] = a[i]: one global load and one store per item",
                params=("n",), default_sizes={"n": 4096})
def vector_copy(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        "b[i] = a[i]",
        assumptions="n>=256 and n mod 256 = 0",
        name="vector_copy",
        lang_version=LANG,
    )
    program = split_1d(lp.add_dtypes(program, {"a,b": F32}))
    return make(
        program=program,
        reference=lambda x, s: {"b": x["a"].copy()},
    )


@catalog_kernel(
    "add_four_vectors",
    "measurement",
    "e[i] = a[i] + b[i] + c[i] + d[i]: four loads, three adds, one store per item",
    params=("n",),
    default_sizes={"n": 4096},
)
def add_four_vectors(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        "e[i] = a[i] + b[i] + c[i] + d[i]",
        assumptions="n>=256 and n mod 256 = 0",
        name="add_four_vectors",
        lang_version=LANG,
    )
    program = split_1d(lp.add_dtypes(program, {"a,b,c,d,e": F32}))
    return make(
        program=program,
        reference=lambda x, s: {"e": x["a"] + x["b"] + x["c"] + x["d"]},
    )


@catalog_kernel("vector_fill", "measurement", "a[i] = 1: one global store per item, no loads",
                params=("n",), default_sizes={"n": 4096})
def vector_fill(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        "a[i] = 1.0f",
        [lp.GlobalArg("a", F32, shape=("n",)), lp.ValueArg("n", np.int32)],
        assumptions="n>=256 and n mod 256 = 0",
        name="vector_fill",
        lang_version=LANG,
    )
    return make(
        program=split_1d(program),
        reference=lambda x, s: {"a": np.ones(s["n"], dtype=F32)},
    )


def _scale_add(make: KernelMaker, stride: int) -> Kernel:
    """y[s*i] = 2*x[s*i] + y[s*i] over n items; x and y hold s*n values, the others stay as they are."""
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        f"y[{stride}*i] = 2.0f*x[{stride}*i] + y[{stride}*i]",
        [lp.GlobalArg("x,y", F32, shape=(f"{stride}*n",)), lp.ValueArg("n", np.int32)],
        assumptions="n>=256 and n mod 256 = 0",
        name=f"scale_add_stride{stride}",
        lang_version=LANG,
    )

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        y = inputs["y"].copy()
        y[::stride] = F32(2) * inputs["x"][::stride] + y[::stride]
        return {"y": y}

    return make(program=split_1d(program), reference=reference)


@catalog_kernel("scale_add_stride1", "measurement", "y[i] = 2 x[i] + y[i]: unit-stride loads and store",
                params=("n",), default_sizes={"n": 4096})
def scale_add_stride1(make: KernelMaker) -> Kernel:
    return _scale_add(make, 1)


@catalog_kernel(
    "scale_add_stride2",
    "measurement",
    "y[2i] = 2 x[2i] + y[2i]: stride-2 loads and store (half of each array unused)",
    params=("n",),
    default_sizes={"n": 4096},
)
def scale_add_stride2(make: KernelMaker) -> Kernel:
    return _scale_add(make, 2)


def _sum_filled(make: KernelMaker, stride: int) -> Kernel:
    """out[i] = a[s*i] + ... + a[s*i + s-1]: stride-s accesses that together read all of a."""
    program = lp.make_kernel(
        f"{{[i, j]: 0<=i<n and 0<=j<{stride}}}",
        f"out[i] = sum(j, a[{stride}*i + j])",
        [
            lp.GlobalArg("a", F32, shape=(f"{stride}*n",)),
            lp.GlobalArg("out", F32, shape=("n",)),
            lp.ValueArg("n", np.int32),
        ],
        assumptions="n>=256 and n mod 256 = 0",
        name=f"sum_filled_stride{stride}",
        lang_version=LANG,
    )
    program = lp.tag_inames(split_1d(program), "j:unr")
    return make(
        program=program,
        reference=lambda x, s: {"out": x["a"].reshape(s["n"], stride).sum(axis=1, dtype=F32)},
    )


@catalog_kernel(
    "sum_filled_stride2", "measurement", "out[i] = a[2i] + a[2i+1]: stride-2 loads that still read every element",
    params=("n",),
    default_sizes={"n": 4096},
)
def sum_filled_stride2(make: KernelMaker) -> Kernel:
    return _sum_filled(make, 2)


@catalog_kernel(
    "sum_filled_stride3",
    "measurement",
    "out[i] = a[3i] + a[3i+1] + a[3i+2]: stride-3 loads that still read every element",
    params=("n",),
    default_sizes={"n": 4096},
)
def sum_filled_stride3(make: KernelMaker) -> Kernel:
    return _sum_filled(make, 3)


# -- matrix multiply and transpose ---------------------------------------------------------------
def matmul_program(name: str) -> lp.TranslationUnit:
    """c = a @ b with a (n x k), b (k x m), in 16x16 work-groups, one work-item per element of c."""
    program = lp.make_kernel(
        "{[i, j, l]: 0<=i<n and 0<=j<m and 0<=l<k}",
        "c[i, j] = sum(l, a[i, l] * b[l, j])",
        assumptions="n>=16 and m>=16 and k>=16 and n mod 16 = 0 and m mod 16 = 0 and k mod 16 = 0",
        name=name,
        lang_version=LANG,
    )
    return tile_2d(lp.add_dtypes(program, {"a,b,c": F32}), "i", "j")


def matmul_reference(inputs: Arrays, sizes: Sizes) -> Arrays:
    return {"c": inputs["a"] @ inputs["b"]}


MATMUL_SIZES = {"n": 64, "m": 128, "k": 32}


@catalog_kernel(
    "matmul_naive",
    "measurement",
    "c = a @ b, (n x k)(k x m): one work-item per element of c, operands read from global memory",
    params=("n", "m", "k"),
    default_sizes=MATMUL_SIZES,
)
def matmul_naive(make: KernelMaker) -> Kernel:
    return make(program=matmul_program("matmul_naive"), reference=matmul_reference)


@catalog_kernel(
    "matmul_tiled_prefetch",
    "measurement",
    "c = a @ b, (n x k)(k x m): 16x16 tiles of a and b prefetched into local memory, with barriers",
    params=("n", "m", "k"),
    default_sizes=MATMUL_SIZES,
)
def matmul_tiled_prefetch(make: KernelMaker) -> Kernel:
    program = lp.split_iname(matmul_program("matmul_tiled_prefetch"), "l", TILE)
    outer = "i_outer, j_outer, l_outer"
    program = lp.add_prefetch(program, "a", ["i_inner", "l_inner"], fetch_outer_inames=outer, default_tag="l.auto")
    program = lp.add_prefetch(program, "b", ["l_inner", "j_inner"], fetch_outer_inames=outer, default_tag="l.auto")
    return make(program=program, reference=matmul_reference)


def transpose_program(name: str, store_coalesced: bool = False) -> lp.TranslationUnit:
    """b = a^T with a (n x m) in 16x16 work-groups. Local axis 0 runs along the rows of a (coalesced
    loads) or, with ``store_coalesced``, along the rows of b (coalesced stores)."""
    program = lp.make_kernel(
        "{[i, j]: 0<=i<n and 0<=j<m}",
        "b[j, i] = a[i, j]",
        assumptions="n>=16 and m>=16 and n mod 16 = 0 and m mod 16 = 0",
        name=name,
        lang_version=LANG,
    )
    program = lp.add_dtypes(program, {"a,b": F32})
    return tile_2d(program, "j", "i") if store_coalesced else tile_2d(program, "i", "j")


TRANSPOSE_SIZES = {"n": 64, "m": 128}


@catalog_kernel("transpose", "measurement", "b = a^T, a (n x m): coalesced loads, stores strided by n",
                params=("n", "m"), default_sizes=TRANSPOSE_SIZES)
def transpose(make: KernelMaker) -> Kernel:
    return make(program=transpose_program("transpose"), reference=lambda x, s: {"b": np.ascontiguousarray(x["a"].T)})


@catalog_kernel(
    "transpose_prefetch",
    "measurement",
    "b = a^T, a (n x m): each 16x16 tile of a is prefetched into local memory, so loads and stores are coalesced",
    params=("n", "m"),
    default_sizes=TRANSPOSE_SIZES,
)
def transpose_prefetch(make: KernelMaker) -> Kernel:
    program = transpose_program("transpose_prefetch", store_coalesced=True)
    program = lp.add_prefetch(
        program, "a", ["i_inner", "j_inner"], fetch_outer_inames="i_outer, j_outer", default_tag="l.auto"
    )
    return make(program=program, reference=lambda x, s: {"b": np.ascontiguousarray(x["a"].T)})


# -- arithmetic ----------------------------------------------------------------------------------
# One dependent chain per work-item: v starts at w = a[i] and is updated k times in a register, so
# the compiler can neither overlap nor drop the updates. The updates keep v finite: add grows
# linearly, mul multiplies by w drawn from [0.999, 1.001], div alternates between 1 and w, exp(-v)
# converges to 0.567 and sqrt to 1. Loopy counts exactly one operation of the named kind per update
# (the negation in exp(-v) is a sign flip, which loopy does not count).
ARITH_UPDATES = {
    "add": ("v + w", lambda v, w: v + w),
    "mul": ("v * w", lambda v, w: v * w),
    "div": ("w / v", lambda v, w: w / v),
    "exp": ("exp(-v)", lambda v, w: np.exp(-v)),
    "sqrt": ("sqrt(v)", lambda v, w: np.sqrt(v)),
}
ARITH_UNROLL = 8
ARITH_INPUT_RANGE = {"mul": (0.999, 1.001)}


def _arith(make: KernelMaker, op: str, dtype: type[np.floating]) -> Kernel:
    update, numpy_update = ARITH_UPDATES[op]
    bits = np.dtype(dtype).itemsize * 8
    program = lp.make_kernel(
        "{[i, r]: 0<=i<n and 0<=r<k}",
        f"""
        for i
          <> w = a[i] {{id=load}}
          <> v = w {{id=init, dep=load}}
          for r
            v = {update} {{id=step, dep=init}}
          end
          out[i] = v {{dep=step}}
        end
        """,
        assumptions=f"n>=256 and n mod 256 = 0 and k>={ARITH_UNROLL} and k mod {ARITH_UNROLL} = 0",
        name=f"arith_f{bits}_{op}",
        lang_version=LANG,
    )
    program = split_1d(lp.add_dtypes(program, {"a,out,w,v": dtype}))
    program = lp.split_iname(program, "r", ARITH_UNROLL, inner_tag="unr")
    program = lp.prioritize_loops(program, "r_outer,r_inner")

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        w = inputs["a"]
        v = w.copy()
        for _ in range(sizes["k"]):
            v = numpy_update(v, w).astype(dtype)
        return {"out": v}

    return make(
        program=program,
        reference=reference,
        input_range=ARITH_INPUT_RANGE.get(op, (0.5, 1.5)),
        rtol=1e-4 if dtype is F32 else 1e-10,
    )


def _register_arith(op: str, dtype: type[np.floating]) -> None:
    bits = np.dtype(dtype).itemsize * 8
    update = ARITH_UPDATES[op][0]
    description = (
        f"k dependent f{bits} {op} operations per work-item on a register (v = {update}); one load, one store"
    )
    decorate = catalog_kernel(f"arith_f{bits}_{op}", "measurement", description, params=("n", "k"),
                              default_sizes={"n": 1024, "k": 64})
    decorate(partial(_arith, op=op, dtype=dtype))


for _dtype in (F32, F64):
    for _op in ARITH_UPDATES:
        _register_arith(_op, _dtype)


# -- launch overhead -----------------------------------------------------------------------------
@catalog_kernel(
    "empty", "measurement", "n work-items whose only instruction is a no-op: launch and scheduling overhead only",
    params=("n",),
    default_sizes={"n": 4096},
)
def empty(make: KernelMaker) -> Kernel:
    """A loopy no-op instruction inside the work-item loop: the device code has an empty body."""
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        "... nop {inames=i}",
        [lp.ValueArg("n", np.int32)],
        assumptions="n>=256 and n mod 256 = 0",
        name="empty",
        lang_version=LANG,
    )
    return make(program=split_1d(program), reference=lambda x, s: {})
