"""Measurement kernels: each exposes one cost (after the Loopy performance-model paper's list)."""

from __future__ import annotations

import loopy as lp
import numpy as np

from gpuperf.kernels.catalog import register
from gpuperf.kernels.kernel import Kernel

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2
F32 = np.float32


@register("vector_copy", "measurement", "b[i] = a[i]: one global load and one store per item")
def vector_copy() -> Kernel:
    program = lp.make_kernel(
        "{[i]: 0<=i<n}",
        "b[i] = a[i]",
        assumptions="n>=256 and n mod 256 = 0",
        name="vector_copy",
        lang_version=LANG,
    )
    program = lp.add_dtypes(program, {"a,b": F32})
    program = lp.split_iname(program, "i", 256, outer_tag="g.0", inner_tag="l.0")
    return Kernel(
        name="vector_copy",
        program=program,
        params=("n",),
        reference=lambda x, s: {"b": x["a"].copy()},
        category="measurement",
        description="b[i] = a[i]",
        default_sizes={"n": 4096},
    )
