"""Parallel loops launched with a chosen geometry: the kernels a (threads, blocks) sweep measures.

A loop of ``n`` independent iterations runs as a grid-stride loop: ``blocks`` work-groups of
``threads`` work-items, work-item ``t`` of group ``b`` doing iterations ``(k * blocks + b) *
threads + t`` for k = 0, 1, ... while below ``n``. So any geometry runs the whole loop: a grid
larger than ``n`` leaves work-items idle, a smaller one loops (the launch-geometry heuristic's
capped *long* loops). The geometry is fixed in the generated code (one build per geometry); ``n``
stays a size parameter. Bodies (``LOOP_BODIES``):

* ``saxpy``: ``y[i] = a * x[i] + y[i]``, two loads and a store per iteration (memory-bound);
* ``polynomial``: ``y[i]`` = a degree-``POLYNOMIAL_DEGREE`` polynomial of ``x[i]`` by Horner's rule,
  one load and a store for 2 x degree flops (compute-bound).
"""

from __future__ import annotations

from collections.abc import Callable

import loopy as lp
import numpy as np

from gpuperf.errors import GpuperfError, unknown_name_error
from gpuperf.kernels.kernel import Arrays, Kernel, Sizes

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2
F32 = np.float32
POLYNOMIAL_DEGREE = 32
COEFFICIENTS = tuple(1.0 / (k + 1) for k in range(POLYNOMIAL_DEGREE + 1))


def _horner(value: str) -> str:
    expression = f"{COEFFICIENTS[-1]!r}f"
    for coefficient in reversed(COEFFICIENTS[:-1]):
        expression = f"({expression}) * {value} + {coefficient!r}f"
    return expression


def _polynomial_reference(inputs: Arrays, sizes: Sizes) -> Arrays:
    x = inputs["x"]
    value = np.full_like(x, F32(COEFFICIENTS[-1]))
    for coefficient in reversed(COEFFICIENTS[:-1]):
        value = value * x + F32(coefficient)
    return {"y": value}


def _saxpy_reference(inputs: Arrays, sizes: Sizes) -> Arrays:
    return {"y": F32(2.0) * inputs["x"] + inputs["y"]}


# body name -> (instruction on element ``{i}``, arrays read, reference, input range)
LOOP_BODIES: dict[str, tuple[str, str, Callable[[Arrays, Sizes], Arrays], tuple[float, float]]] = {
    "saxpy": ("y[{i}] = 2.0f * x[{i}] + y[{i}]", "x,y", _saxpy_reference, (0.5, 1.5)),
    "polynomial": ("y[{i}] = " + _horner("x[{i}]"), "x,y", _polynomial_reference, (0.0, 0.9)),
}


def grid_stride_loop(body: str, threads: int, blocks: int) -> Kernel:
    """The ``body`` loop over ``n`` iterations as ``blocks`` work-groups of ``threads`` work-items
    (``saxpy`` or, as its kernel is named, ``loop_saxpy``)."""
    body = body.removeprefix("loop_")
    if body not in LOOP_BODIES:
        raise unknown_name_error("parallel loop", body, LOOP_BODIES)
    if threads < 1 or blocks < 1:
        raise GpuperfError(f"a launch needs at least one thread and one block, not {threads} x {blocks}")
    instruction, arrays, reference, input_range = LOOP_BODIES[body]
    index = f"(k * {blocks} + b) * {threads} + t"
    program = lp.make_kernel(
        f"{{[b, t, k]: 0 <= b < {blocks} and 0 <= t < {threads} and 0 <= k and {index} < n}}",
        instruction.format(i=index),
        [lp.ValueArg("n", np.int64), lp.GlobalArg("x", F32, "n"), lp.GlobalArg("y", F32, "n")],
        assumptions="n >= 1",
        index_dtype=np.int64,  # the loop bound isl derives multiplies ids by the grid size: int32 overflows
        name=f"loop_{body}",
        lang_version=LANG,
    )
    program = lp.tag_inames(program, {"b": "g.0", "t": "l.0"})
    kernel = Kernel(
        name=f"loop_{body}",
        program=program,
        params=("n",),
        reference=reference,
        category="loop",
        description=f"{body} over n iterations as a grid-stride loop",
        default_sizes={"n": 4096},
        input_range=input_range,
    )
    return kernel.with_variant(program, threads=threads, blocks=blocks)
