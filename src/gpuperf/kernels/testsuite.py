"""Test kernels: whole computations (stencil, n-body, convolution, ...) on which models are checked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from gpuperf._lazy import LazyModule
from gpuperf.kernels.kernel import Arrays, Kernel, Sizes
from gpuperf.kernels.measurement import F32, LANG, KernelMaker, catalog_kernel, split_1d, tile_2d

if TYPE_CHECKING:
    import loopy as lp
else:  # imported when a kernel is built: listing the catalog does not need loopy
    lp = LazyModule("loopy")

SQUARE_TILES = "n>=16 and m>=16 and n mod 16 = 0 and m mod 16 = 0"


@catalog_kernel(
    "finite_difference_5pt",
    "test",
    "5-point Laplacian of u ((n+2) x (m+2)) at its n x m interior points, 16x16 work-groups",
    params=("n", "m"),
    default_sizes={"n": 64, "m": 64},
)
def finite_difference_5pt(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        "{[i, j]: 0<=i<n and 0<=j<m}",
        "out[i, j] = u[i, j+1] + u[i+2, j+1] + u[i+1, j] + u[i+1, j+2] - 4.0f*u[i+1, j+1]",
        [
            lp.GlobalArg("u", F32, shape=("n+2", "m+2")),
            lp.GlobalArg("out", F32, shape=("n", "m")),
            lp.ValueArg("n,m", np.int32),
        ],
        assumptions=SQUARE_TILES,
        name="finite_difference_5pt",
        lang_version=LANG,
    )

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        u = inputs["u"]
        centre = u[1:-1, 1:-1]
        return {"out": u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - F32(4) * centre}

    return make(
        program=tile_2d(program, "i", "j"),
        reference=reference,
    )


SKINNY_K = 16


@catalog_kernel(
    "skinny_matmul",
    "test",
    f"c = a @ b, (n x {SKINNY_K})({SKINNY_K} x m): short inner dimension, b's columns for a group in local memory",
    params=("n", "m"),
    default_sizes={"n": 256, "m": 64},
)
def skinny_matmul(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        f"{{[i, j, l]: 0<=i<n and 0<=j<m and 0<=l<{SKINNY_K}}}",
        "c[i, j] = sum(l, a[i, l] * b[l, j])",
        [
            lp.GlobalArg("a", F32, shape=("n", SKINNY_K)),
            lp.GlobalArg("b", F32, shape=(SKINNY_K, "m")),
            lp.GlobalArg("c", F32, shape=("n", "m")),
            lp.ValueArg("n,m", np.int32),
        ],
        assumptions=SQUARE_TILES,
        name="skinny_matmul",
        lang_version=LANG,
    )
    program = tile_2d(program, "i", "j")
    program = lp.add_prefetch(
        program, "b", ["l", "j_inner"], fetch_outer_inames="i_outer, j_outer", default_tag="l.auto"
    )
    program = lp.tag_inames(program, "l:unr")
    return make(
        program=program,
        reference=lambda x, s: {"c": x["a"] @ x["b"]},
    )


NBODY_GROUP = 128
NBODY_SOFTENING2 = 0.01


@catalog_kernel(
    "nbody",
    "test",
    "all-pairs gravitational potential of n bodies, phi[i] = sum_j m[j] / sqrt(|x_j - x_i|^2 + eps^2), "
    f"tiles of {NBODY_GROUP} bodies in local memory",
    params=("n",),
    default_sizes={"n": 512},
)
def nbody(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        "{[i, j]: 0<=i<n and 0<=j<n}",
        f"""
        for i
          <> xi = x[i] {{id=xi}}
          <> yi = y[i] {{id=yi}}
          <> zi = z[i] {{id=zi}}
          <> total = 0.0f {{id=zero}}
          for j
            <> dx = x[j] - xi {{id=dx, dep=xi}}
            <> dy = y[j] - yi {{id=dy, dep=yi}}
            <> dz = z[j] - zi {{id=dz, dep=zi}}
            total = total + mass[j] / sqrt(dx*dx + dy*dy + dz*dz + {NBODY_SOFTENING2}f) \
                {{id=add, dep=zero:dx:dy:dz}}
          end
          phi[i] = total {{dep=add}}
        end
        """,
        assumptions=f"n>={NBODY_GROUP} and n mod {NBODY_GROUP} = 0",
        name="nbody",
        lang_version=LANG,
    )
    program = lp.add_dtypes(program, {"x,y,z,mass,phi,xi,yi,zi,total,dx,dy,dz": F32})
    program = split_1d(program, "i", NBODY_GROUP)
    program = lp.split_iname(program, "j", NBODY_GROUP)
    for array, reader in (("x", "dx"), ("y", "dy"), ("z", "dz"), ("mass", "add")):
        program = lp.add_prefetch(
            program,
            array,
            ["j_inner"],
            fetch_outer_inames="i_outer, j_outer",
            default_tag="l.auto",
            within=f"id:{reader}",
        )

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        positions = np.stack([inputs["x"], inputs["y"], inputs["z"]], axis=1).astype(np.float64)
        distance2 = ((positions[None, :, :] - positions[:, None, :]) ** 2).sum(axis=2) + NBODY_SOFTENING2
        return {"phi": (inputs["mass"][None, :] / np.sqrt(distance2)).sum(axis=1).astype(F32)}

    return make(
        program=program,
        reference=reference,
    )


FILTER = 5


@catalog_kernel(
    "convolution_2d",
    "test",
    f"{FILTER}x{FILTER} filter over an image ((n+{FILTER - 1}) x (m+{FILTER - 1})), n x m valid outputs, "
    "image tile in local memory",
    params=("n", "m"),
    default_sizes={"n": 64, "m": 64},
)
def convolution_2d(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        f"{{[i, j, fi, fj]: 0<=i<n and 0<=j<m and 0<=fi,fj<{FILTER}}}",
        "out[i, j] = sum((fi, fj), f[fi, fj] * img[i + fi, j + fj])",
        [
            lp.GlobalArg("img", F32, shape=(f"n+{FILTER - 1}", f"m+{FILTER - 1}")),
            lp.GlobalArg("f", F32, shape=(FILTER, FILTER)),
            lp.GlobalArg("out", F32, shape=("n", "m")),
            lp.ValueArg("n,m", np.int32),
        ],
        assumptions=SQUARE_TILES,
        name="convolution_2d",
        lang_version=LANG,
    )
    program = tile_2d(program, "i", "j")
    program = lp.add_prefetch(
        program,
        "img",
        ["i_inner", "j_inner", "fi", "fj"],
        fetch_outer_inames="i_outer, j_outer",
        default_tag="l.auto",
    )
    program = lp.tag_inames(program, "fi:unr, fj:unr")

    def reference(inputs: Arrays, sizes: Sizes) -> Arrays:
        windows = np.lib.stride_tricks.sliding_window_view(inputs["img"], (FILTER, FILTER))
        return {"out": np.einsum("ijab,ab->ij", windows, inputs["f"]).astype(F32)}

    return make(
        program=program,
        reference=reference,
    )


NODES = 16
ELEMENTS_PER_GROUP = 16


@catalog_kernel(
    "element_local_diff",
    "test",
    f"du[e, i] = sum_j D[i, j] u[e, j]: a {NODES}x{NODES} differentiation matrix applied to each of nelements "
    "elements, D in local memory",
    params=("nelements",),
    default_sizes={"nelements": 256},
)
def element_local_diff(make: KernelMaker) -> Kernel:
    program = lp.make_kernel(
        f"{{[e, i, j]: 0<=e<nelements and 0<=i,j<{NODES}}}",
        "du[e, i] = sum(j, D[i, j] * u[e, j])",
        [
            lp.GlobalArg("D", F32, shape=(NODES, NODES)),
            lp.GlobalArg("u,du", F32, shape=("nelements", NODES)),
            lp.ValueArg("nelements", np.int32),
        ],
        assumptions=f"nelements>={ELEMENTS_PER_GROUP} and nelements mod {ELEMENTS_PER_GROUP} = 0",
        name="element_local_diff",
        lang_version=LANG,
    )
    program = lp.split_iname(program, "e", ELEMENTS_PER_GROUP, outer_tag="g.0", inner_tag="l.1")
    program = lp.tag_inames(program, "i:l.0")
    program = lp.add_prefetch(program, "D", ["i", "j"], fetch_outer_inames="e_outer", default_tag="l.auto")
    program = lp.tag_inames(program, "j:unr")
    return make(
        program=program,
        reference=lambda x, s: {"du": x["u"] @ x["D"].T},
    )
