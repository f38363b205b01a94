"""The Kernel: a loopy program with its size parameters, launch geometry and NumPy reference."""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from gpuperf._lazy import LazyModule
from gpuperf.errors import GpuperfError

if TYPE_CHECKING:
    import loopy as lp
    from pymbolic.primitives import ExpressionNode

    from gpuperf.kernels.index_arrays import IndexUses
else:  # imported when a kernel is built or read: listing the catalog, spaces or GPUs does not need loopy
    lp = LazyModule("loopy")

Sizes = Mapping[str, int]
Arrays = dict[str, np.ndarray]
Reference = Callable[[Arrays, Sizes], Arrays]
LANG = (2018, 2)  # loopy's LOOPY_USE_LANGUAGE_VERSION_2018_2, the language version the catalog's kernels are written in


def _is_device_array(arg: Any) -> bool:
    """Whether a kernel argument is an array in device memory (a ``__constant`` one too)."""
    return isinstance(arg, (lp.ArrayArg, lp.ConstantArg))


# Words the generated code cannot use as a name (of the program, an argument, a temporary or a loop
# index): the C99/C11 keywords (ISO C 6.4.1); OpenCL C's keywords (its specification's "Keywords":
# address-space, function and access qualifiers, built-in data types; not the words it keeps for
# future use, such as quad, complex and uniform, which its compilers accept); and CUDA C++'s: the
# C++17 keywords and alternative tokens, CUDA's qualifiers and built-in variables.
RESERVED_WORDS = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile while
    _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
    __global global __local local __constant constant __private private __generic generic __kernel kernel
    __read_only read_only __write_only write_only __read_write read_write __attribute__ pipe
    bool uchar ushort uint ulong half size_t ptrdiff_t intptr_t uintptr_t
    image1d_t image1d_array_t image1d_buffer_t image2d_t image2d_array_t image2d_depth_t image3d_t
    sampler_t event_t queue_t ndrange_t clk_event_t reserve_id_t
    alignas alignof and and_eq asm bitand bitor catch char16_t char32_t class compl const_cast constexpr
    decltype delete dynamic_cast explicit export false friend mutable namespace new noexcept not not_eq
    nullptr operator or or_eq protected public reinterpret_cast static_assert static_cast template
    this thread_local throw true try typeid typename using virtual wchar_t xor xor_eq
    __global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ __launch_bounds__
    threadIdx blockIdx blockDim gridDim warpSize
""".split()) | {  # and OpenCL C's vector types: float4, int2, ...
    f"{scalar}{width}" for scalar in "char uchar short ushort int uint long ulong float double half".split()
    for width in (2, 3, 4, 8, 16)
}


# Names a kernel function cannot take because OpenCL C or CUDA declare a function of that name where
# the kernel is defined (OpenCL C's built-in functions: math, integer, common, geometric, relational,
# synchronisation, work-item, async-copy and atomic ones; and ``main``). An argument or loop index may
# still use them: it only hides the function inside the kernel.
BUILTIN_FUNCTIONS = frozenset("""
    main printf
    acos acosh acospi asin asinh asinpi atan atan2 atanh atanpi atan2pi cbrt ceil copysign cos cosh cospi erf
    erfc exp exp2 exp10 expm1 fabs fdim floor fma fmax fmin fmod fract frexp hypot ilogb ldexp lgamma lgamma_r
    log log2 log10 log1p logb mad maxmag minmag modf nan nextafter pow pown powr remainder remquo rint rootn
    round rsqrt sin sincos sinh sinpi sqrt tan tanh tanpi tgamma trunc
    abs abs_diff add_sat hadd rhadd clamp clz ctz mad_hi mad_sat max min mul_hi rotate sub_sat upsample popcount
    mad24 mul24 degrees mix radians step smoothstep sign cross dot distance length normalize fast_distance
    fast_length fast_normalize isequal isnotequal isgreater isgreaterequal isless islessequal islessgreater
    isfinite isinf isnan isnormal isordered isunordered signbit any all bitselect select shuffle shuffle2
    barrier mem_fence read_mem_fence write_mem_fence work_group_barrier get_work_dim get_global_size
    get_global_id get_local_size get_local_id get_num_groups get_group_id get_global_offset
    async_work_group_copy async_work_group_strided_copy wait_group_events prefetch
    atomic_add atomic_sub atomic_xchg atomic_inc atomic_dec atomic_cmpxchg atomic_min atomic_max atomic_and
    atomic_or atomic_xor atom_add atom_sub atom_xchg atom_inc atom_dec atom_cmpxchg atom_min atom_max
""".split())


def constants_as_global(program: lp.TranslationUnit) -> lp.TranslationUnit:
    """``program`` with its ``__constant`` arrays (``lp.ConstantArg``) declared global and read-only:
    loopy's statistics skip a ConstantArg's loads (gpuperf counts them as the global loads they are,
    read through a cache), and its CUDA code declares one ``__constant__ float *``, which CUDA refuses."""
    entry = program.default_entrypoint
    if not any(isinstance(arg, lp.ConstantArg) for arg in entry.args):
        return program
    args = [lp.ArrayArg(**arg.get_copy_kwargs(), address_space=lp.AddressSpace.GLOBAL, is_input=True, is_output=False)
            if isinstance(arg, lp.ConstantArg) else arg for arg in entry.args]
    return program.with_kernel(entry.copy(args=args))


def is_data_scalar(arg: Any) -> bool:
    """A floating-point or complex value argument (saxpy's ``alpha``): data, not a size."""
    return (isinstance(arg, lp.ValueArg) and arg.dtype is not None
            and np.dtype(arg.dtype.numpy_dtype).kind in "fc")


def reserved_name(program: lp.TranslationUnit) -> tuple[str, str] | None:
    """(what it names, the word) for the first name in ``program`` (of a loopy kernel in it, one
    of its arguments, temporaries or loop indices) that is in ``RESERVED_WORDS``, or a kernel's name in
    ``BUILTIN_FUNCTIONS``; None if none is."""
    for callee in program.callables_table.values():
        if not isinstance(callee, lp.CallableKernel):
            continue
        knl = callee.subkernel
        named = ([("program name", knl.name)] + [("argument", a.name) for a in knl.args]
                 + [("temporary", t) for t in knl.temporary_variables]
                 + [("loop index", i) for i in sorted(knl.all_inames())])
        for what, name in named:
            if name in RESERVED_WORDS or (what == "program name" and name in BUILTIN_FUNCTIONS):
                return what, name
    return None


class SizesViolateAssumptions(GpuperfError):
    """Sizes a kernel's program assumptions exclude: one variant may refuse what another accepts."""


def _as_given(value: object, number: int) -> str:
    """A size as its user wrote it: a float as Python prints it (``1e+300``, not its 301 digits), else the
    whole number."""
    if isinstance(value, (float, np.floating)):
        return str(float(value))
    return str(number)


def one_entrypoint(program: lp.TranslationUnit, name: str) -> lp.LoopKernel:
    """The program's one entry point; an error naming them where it has several (``lp.merge``)."""
    if len(program.entrypoints) != 1:
        raise GpuperfError(f"kernel {name}: the program has {len(program.entrypoints)} entry points "
                           f"({', '.join(sorted(program.entrypoints)) or 'none'}); gpuperf times one kernel launch: "
                           "pick one with program.with_entrypoints('NAME')")
    return program.default_entrypoint


def kernel_from_program(program: lp.TranslationUnit, name: str, description: str) -> Kernel:
    """A Kernel of a bare TranslationUnit, with no NumPy reference: its size parameters are the
    value arguments except floating-point ones that no loop bound names (data, like saxpy's ``alpha``)."""
    entry = one_entrypoint(program, name)
    bounds = entry.all_params()
    params = tuple(a.name for a in entry.args
                   if isinstance(a, lp.ValueArg) and (not is_data_scalar(a) or a.name in bounds))
    return Kernel(name=name, program=program, params=params, category="user", description=description)


def variant_label(variant: Mapping[str, Any]) -> str:
    """A stable, readable label for a variant's parameters: ``a=1,b=2`` (empty for the base kernel)."""
    return ",".join(f"{key}={variant[key]}" for key in sorted(variant))


SOURCE_FILE = re.compile(r"(.+\.(cl|cu|cuh|cpp|cc|c|h|hpp))(:.*)?$", re.IGNORECASE)
PYTHON_FILE_OTHER_CASE = re.compile(r"(.+\.(?!py(?::|$))(?i:py))(:.*)?$")  # K.PY, k.Py: not read as kernel files
MEASUREMENT_FILE = re.compile(r"(.+\.(csv|tsv|txt|parquet|json)(\.(gz|bz2|xz|zip|zst))?)(:.*)?$", re.IGNORECASE)


def refuse_measurement_file(spec: str, kind: str) -> None:
    """An error where a kernel or space (``kind``) is named by a file of measurements (a table, a profile,
    a Kernel Tuner cache), which the commands taking a kernel or space never read, naming those that do."""
    measured = MEASUREMENT_FILE.match(spec)
    if not measured:
        return
    name = measured[1]
    uses = (f"gpuperf explore {name} searches a measured space, gpuperf ask names the next configuration of a "
            "table of them to measure, and Kernel Tuner tunes with gpuperf's GuidedStrategy" if kind == "variant space"
            else f"gpuperf advise --profile {name} advises a profiled launch, gpuperf fit and evaluate model a table")
    raise GpuperfError(f"{name}: a file of measurements (a table, a profile or a Kernel Tuner cache), not a "
                       f"{kind}, which is a catalog name or path/to/file.py:function; {uses}")


def refuse_source_file(spec: str) -> None:
    """An error where a kernel or space is named by an OpenCL or CUDA source file, which gpuperf
    does not read as it is."""
    source = SOURCE_FILE.match(spec)
    if source:
        raise GpuperfError(f"{source[1]}: gpuperf reads kernels from Python files, as path/to/file.py:function "
                           "returning a loopy TranslationUnit or a gpuperf Kernel (docs/kernels.md in gpuperf's source "
                           "repository); an "
                           "OpenCL or CUDA source becomes one through loopy (lp.make_kernel), not as it is")
    other_case = PYTHON_FILE_OTHER_CASE.match(spec)
    if other_case:
        raise GpuperfError(f"{other_case[1]}: gpuperf reads kernels and spaces from files whose name ends in "
                           "'.py' (lower case); rename it, as path/to/file.py:function")


@dataclass(frozen=True, eq=False)
class Kernel:
    """A loopy TranslationUnit with a name, its size parameters and a NumPy reference.

    ``program`` must not have been preprocessed (add dtypes with ``lp.add_dtypes``, not
    ``lp.add_and_infer_dtypes``) so that it can be retargeted to OpenCL or CUDA.
    ``reference(inputs, sizes)`` returns the expected value of every output array.
    """

    name: str
    program: lp.TranslationUnit = field(repr=False)  # thousands of characters of loopy IR
    params: tuple[str, ...]
    reference: Reference | None = None
    category: str = "user"
    description: str = ""
    default_sizes: Mapping[str, int] = field(default_factory=dict)
    variant: Mapping[str, Any] = field(default_factory=dict)
    rtol: float = 1e-4
    input_range: tuple[float, float] = (0.5, 1.5)
    # integer inputs: whole numbers from 1 to 64, none zero (a divisor) and varied enough to tell an
    # integer kernel's results apart; an index array needs its own range (or a kernel of its own inputs)
    integer_range: tuple[int, int] = (1, 64)

    def __post_init__(self) -> None:
        if isinstance(self.params, str):  # "nx" would read as the parameters n and x
            raise GpuperfError(f"kernel {self.name}: params lists names, e.g. ('{self.params}',), "
                               f"not the string '{self.params}'")
        one_entrypoint(self.program, self.name)
        clash = reserved_name(self.program)
        if clash:
            what, word = clash
            kind = ("the name of an OpenCL C built-in function (or main)" if word not in RESERVED_WORDS
                    else "a reserved word of C, OpenCL C or CUDA")
            raise GpuperfError(f"kernel '{self.key}': {what} '{word}' is {kind}, which its generated code cannot "
                               "use as a name; rename it")
        object.__setattr__(self, "program", self._typed(self.program))

    def _typed(self, program: lp.TranslationUnit) -> lp.TranslationUnit:
        """``program`` with a dtype on every array and data argument: those left out (``b`` in
        ``b[i] = a[i] + 1``) as loopy infers them, given with ``lp.add_dtypes`` so the program stays
        unpreprocessed (a size parameter left out keeps loopy's index type, as its code has it)."""
        program = self._sizes_typed(program)
        entry = program.default_entrypoint
        untyped = [arg.name for arg in entry.args
                   if arg.dtype is None and (_is_device_array(arg) or arg.name not in self.params)]
        if not untyped:
            return program
        try:
            inferred = lp.infer_unknown_types(program, expect_completion=True).default_entrypoint
        except Exception as exc:  # noqa: BLE001 - loopy's inference errors name no argument
            why = (str(exc).strip().splitlines() or [""])[0]
            raise GpuperfError(f"kernel '{self.key}': argument(s) {', '.join(untyped)} have no dtype and loopy "
                               f"cannot infer one ({type(exc).__name__}: {why}); give them one with "
                               f"lp.add_dtypes(program, {{'{untyped[0]}': np.float32, ...}})") from None
        return lp.add_dtypes(program, {arg.name: arg.dtype for arg in inferred.args if arg.name in untyped})

    def _sizes_typed(self, program: lp.TranslationUnit) -> lp.TranslationUnit:
        """``program`` with the kernel's index type on each size parameter left without a dtype that no
        loop domain names (``m`` of ``x`` shaped ``m``, an offset ``k`` in ``a[i + k]``): loopy types a
        domain's parameters so, but cannot infer these, and its code generation fails on them."""
        entry = program.default_entrypoint
        domain = entry.all_params()
        untyped = [arg.name for arg in entry.args if isinstance(arg, lp.ValueArg) and arg.dtype is None
                   and arg.name in self.params and arg.name not in domain]
        if not untyped:
            return program
        return lp.add_dtypes(program, dict.fromkeys(untyped, entry.index_dtype))

    # -- identity -----------------------------------------------------------------------------
    @property
    def variant_label(self) -> str:
        return variant_label(self.variant)

    @property
    def key(self) -> str:
        """``name`` or ``name[variant]``: unique within a catalog and its spaces."""
        return f"{self.name}[{self.variant_label}]" if self.variant else self.name

    @cached_property
    def entry(self) -> lp.LoopKernel:
        """The loopy kernel that is the program's entry point."""
        return self.program.default_entrypoint

    # -- sizes --------------------------------------------------------------------------------
    @cached_property
    def extents(self) -> frozenset[str]:
        """The parameters that bound a loop or size an array (they must be positive, or, a part of an
        extent such as ``n + pad``, at least 0); any other integer parameter (an offset, a flag) may be any
        whole number."""
        from pymbolic.mapper.dependency import DependencyMapper

        shaped = {variable.name for arg in self.array_args for extent in arg.shape or ()
                  if not isinstance(extent, int) for variable in DependencyMapper()(extent)}
        return frozenset(self.entry.all_params()) | frozenset(shaped)

    @cached_property
    def paddings(self) -> frozenset[str]:
        """The parameters of :attr:`extents` that are only ever a part of an array's extent (``pad`` in
        ``n + pad``): 0 is a size for them."""
        from pymbolic.primitives import Variable

        whole = {extent.name for arg in self.array_args for extent in arg.shape or () if isinstance(extent, Variable)}
        return self.extents - whole - frozenset(self.entry.all_params())

    @cached_property
    def unlisted_bounds(self) -> tuple[str, ...]:
        """Value arguments the loop domains use that ``params`` does not list (a mistake: none should;
        a bound read from an array, such as CSR's ``rowptr[i]``, is not an argument and is fine)."""
        arguments = {a.name for a in self.entry.args if isinstance(a, lp.ValueArg)}
        return tuple(sorted((set(self.entry.all_params()) & arguments) - set(self.params)))

    @cached_property
    def stray_params(self) -> tuple[str, ...]:
        """Size parameters ``params`` lists that the program names nowhere, as an argument, a loop bound or
        an array's extent (a typo, or one ``lp.fix_parameters`` fixed): a value given for one would change nothing."""
        named = {a.name for a in self.entry.args} | self.extents
        return tuple(name for name in self.params if name not in named)

    def resolve_sizes(self, sizes: Mapping[str, Any] | None = None, assumptions: bool = True) -> dict[str, int]:
        """Check ``sizes`` names every size parameter (defaults fill gaps) and nothing else, and (unless
        ``assumptions`` is False: sizes for any variant of a space) that the program's assumptions hold."""
        if self.stray_params:
            stray = self.stray_params
            raise GpuperfError(
                f"kernel '{self.key}': its size parameters list {', '.join(stray)}, which its program names nowhere "
                f"(fixed by lp.fix_parameters, or misspelt?), so a value given for it would change nothing; "
                f"remove {stray[0]} from the Kernel's params")
        unlisted = self.unlisted_bounds
        if unlisted:
            raise GpuperfError(
                f"kernel '{self.key}': its loop domains use {', '.join(unlisted)}, which its size parameters "
                f"({', '.join(self.params) or 'none'}) do not list; add {unlisted[0]} to the Kernel's params"
            )
        if sizes is not None and not isinstance(sizes, Mapping):
            example = ", ".join(f"'{p}': 1024" for p in self.params[:2])
            raise GpuperfError(f"kernel '{self.key}': sizes map each size parameter to its value, e.g. {{{example}}}; "
                               f"got a {type(sizes).__name__}")
        merged = dict(self.default_sizes)
        merged.update(sizes or {})
        unknown = sorted(set(merged) - set(self.params))
        scalars = [name for name in unknown if name in {a.name for a in self.scalar_args}]
        if scalars:
            raise GpuperfError(
                f"'{scalars[0]}' is a data argument of kernel '{self.key}', not a size parameter: its value "
                f"is drawn at random like the input arrays' (input_range, integer_range); its size parameters: "
                f"{', '.join(self.params) or '(none)'}"
            )
        if unknown:
            raise GpuperfError(
                f"kernel '{self.key}' has no size parameter {', '.join(unknown)}; "
                f"its parameters: {', '.join(self.params) or '(none)'}"
            )
        missing = [p for p in self.params if p not in merged]
        if missing:
            raise GpuperfError(
                f"kernel '{self.key}' needs a value for {', '.join(missing)} (pass -p {missing[0]}=...)"
            )
        resolved: dict[str, int] = {}
        for name in self.params:
            value = merged[name]
            if isinstance(value, bool):
                raise GpuperfError(f"size parameter {name}={value!r} is not an integer")
            try:
                number = int(value)
            except (TypeError, ValueError, OverflowError):  # OverflowError: an infinite float
                raise GpuperfError(f"size parameter {name}={value!r} is not an integer") from None
            if not isinstance(value, str) and number != value:  # exact: a float of a size past 2**53 is not
                raise GpuperfError(f"size parameter {name}={value!r} must be a whole number")
            if number < 0 and name in self.paddings:
                raise GpuperfError(f"size parameter {name}={value!r} must be 0 or more (it is part of an array's "
                                   "extent)")
            if number < 1 and name in self.extents - self.paddings:
                raise GpuperfError(f"size parameter {name}={value!r} must be a positive integer (it bounds a loop "
                                   "or sizes an array)")
            self._check_range(name, number, value)
            resolved[name] = number
        for arg in self.array_args:  # an extent of several parameters (n + pad) is positive, whatever pad is
            for extent, value in zip(arg.shape or (), self.array_shape(arg, resolved)):
                if value < 1:
                    raise GpuperfError(f"array {arg.name} of kernel {self.name}: extent {extent} is {value} at "
                                       f"these sizes; an array's extents must be positive")
        if assumptions:
            self._check_assumptions(resolved)
        return resolved

    def _check_range(self, name: str, number: int, given: object) -> None:
        """An error when ``number`` (``given`` as a whole number) does not fit the integer type of argument
        ``name`` (loopy gives one declared without a type the kernel's index type, int32 by default)."""
        arg = self.entry.arg_dict.get(name)
        if arg is None:
            return
        dtype = (arg.dtype or self.entry.index_dtype).numpy_dtype
        if dtype.kind not in "iu":
            return
        limits = np.iinfo(dtype)
        if not limits.min <= number <= limits.max:
            wider = (f"; declare it wider (lp.ValueArg('{name}', np.int64)) for sizes this large"
                     if dtype.itemsize < 8 else "")
            raise GpuperfError(f"size parameter {name}={_as_given(given, number)} does not fit kernel {self.name}'s {dtype} argument "
                               f"({limits.min} to {limits.max}){wider}")

    def _check_assumptions(self, sizes: Mapping[str, int]) -> None:
        """Refuse sizes the program's assumptions exclude (e.g. ``n mod 256 = 0``)."""
        import islpy as isl

        assumptions = self.entry.assumptions
        if assumptions.plain_is_universe():
            return
        point = assumptions
        for name, value in sizes.items():
            index = point.space.find_dim_by_name(isl.dim_type.param, name)
            if index >= 0:
                point = point.fix_val(isl.dim_type.param, index, value)
        if point.is_empty():
            given = ", ".join(f"{k}={v}" for k, v in sizes.items())
            raise SizesViolateAssumptions(f"kernel '{self.key}': sizes {given} violate its assumptions {assumptions}")

    # -- launch geometry ----------------------------------------------------------------------
    @cached_property
    def launch_exprs(self) -> tuple[tuple[ExpressionNode | int, ...], tuple[ExpressionNode | int, ...]]:
        """(work-groups per dimension, work-items per group per dimension) as expressions of the sizes.

        Read from the preprocessed program: preprocessing can add hardware axes (a reduction
        realized across local ids), which the raw program does not show.
        """
        try:
            processed = lp.preprocess_program(self.program)
            groups, local = processed[self.entry.name].get_grid_size_upper_bounds_as_exprs(processed.callables_table)
        except Exception as exc:  # noqa: BLE001 - loopy and isl raise many types (islpy.Error, KeyError)
            reason = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
            raise GpuperfError(f"kernel '{self.key}': loopy cannot work out its launch grid "
                               f"({type(exc).__name__}: {reason})") from None
        return tuple(groups), tuple(local)

    def launch(self, sizes: Mapping[str, Any] | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(global size, local size) in work-items, three dimensions each, for these sizes."""
        from pymbolic import evaluate

        resolved = self.resolve_sizes(sizes)
        groups, local = self.launch_exprs
        groups_n = [int(evaluate(g, resolved)) for g in groups] + [1, 1, 1]
        local_n = [int(evaluate(l_, resolved)) for l_ in local] + [1, 1, 1]
        global_n = [g * l_ for g, l_ in zip(groups_n[:3], local_n[:3])]
        return (global_n[0], global_n[1], global_n[2]), (local_n[0], local_n[1], local_n[2])

    # -- arguments ----------------------------------------------------------------------------
    @cached_property
    def outputs(self) -> tuple[str, ...]:
        """Names of the global arrays the kernel writes."""
        written = self.entry.get_written_variables()
        return tuple(a.name for a in self.array_args if a.name in written)

    @cached_property
    def array_args(self) -> tuple[lp.ArrayArg | lp.ConstantArg, ...]:
        """The kernel's array arguments: global arrays and ``__constant`` ones (``lp.ConstantArg``)."""
        return tuple(a for a in self.entry.args if _is_device_array(a))

    @cached_property
    def scalar_args(self) -> tuple[lp.ValueArg, ...]:
        """Value arguments that are not size parameters (saxpy's ``alpha``): inputs like the arrays."""
        return tuple(a for a in self.entry.args if isinstance(a, lp.ValueArg) and a.name not in self.params)

    def array_shape(self, arg: lp.ArrayArg, sizes: Mapping[str, int]) -> tuple[int, ...]:
        from pymbolic import evaluate

        return tuple(int(evaluate(s, dict(sizes))) for s in arg.shape)

    def array_strides(self, arg: lp.ArrayArg, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """Byte strides the generated code indexes ``arg`` with at ``sizes``: what its ``order`` or
        ``strides`` say (Fortran order, padded rows); C order where its layout is not strides alone
        (a vector axis)."""
        from loopy.kernel.array import FixedStrideArrayDimTag
        from pymbolic import evaluate

        shape = self.array_shape(arg, sizes)
        itemsize = np.dtype(arg.dtype.numpy_dtype).itemsize
        tags = arg.dim_tags or ()
        if len(tags) == len(shape) and all(isinstance(t, FixedStrideArrayDimTag) and t.stride is not lp.auto
                                           for t in tags):
            return tuple(int(evaluate(t.stride, dict(sizes))) * itemsize for t in tags)
        return np.empty(shape, np.dtype(arg.dtype.numpy_dtype)).strides

    def buffer_bytes(self, sizes: Mapping[str, Any] | None = None) -> int:
        """Bytes of every global array at ``sizes``: what one launch holds on the device."""
        resolved = self.resolve_sizes(sizes)
        return sum(int(np.prod(self.array_shape(arg, resolved))) * np.dtype(arg.dtype.numpy_dtype).itemsize
                   for arg in self.array_args)

    def make_inputs(self, sizes: Mapping[str, Any] | None = None, seed: int = 0) -> Arrays:
        """Random inputs for every array the kernel reads and every data scalar: values in ``input_range``,
        whole numbers in ``integer_range`` for an integer type."""
        resolved = self.resolve_sizes(sizes)
        rng = np.random.default_rng(seed)
        read = self.entry.get_read_variables()
        inputs: Arrays = {}
        self._check_index_ranges(resolved)
        for arg in self.array_args:
            if arg.name in self.outputs and arg.name not in read:
                continue
            shape = self.array_shape(arg, resolved)
            dtype = np.dtype(arg.dtype.numpy_dtype)
            inputs[arg.name] = self._draw(rng, dtype, shape)
        for arg in self.scalar_args:
            dtype = np.dtype(arg.dtype.numpy_dtype)
            inputs[arg.name] = dtype.type(self._draw(rng, dtype, ()))
        return inputs

    @cached_property
    def index_uses(self) -> IndexUses:
        """How the kernel's integer array arguments' values index its arguments (``idx`` in
        ``out[idx[i]]``, ``src[idx[i] + 1]``, or through ``<> t = idx[i]; src[t]``), worked out once per kernel."""
        from gpuperf.kernels.index_arrays import IndexUses, index_array_uses

        integers = {arg.name for arg in self.array_args if np.dtype(arg.dtype.numpy_dtype).kind in "iu"}
        if not integers:
            return IndexUses(frozenset(), ())
        return index_array_uses(self.entry, integers, {arg.name for arg in self.array_args})

    def _check_index_ranges(self, sizes: Mapping[str, int]) -> None:
        """An error, before any input is drawn, where an integer array's values index an axis of another
        array (``out[idx[i]]``, ``src[idx[i] + 1]``) that ``integer_range``, shifted by the constant added,
        reaches past (the kernel would read or write past the array's end: on pocl, corrupting the
        process's memory), or are used in a way no range bounds (a loop's bounds, ``2 * idx[i]``). A kernel
        drawing inputs of its own (a subclass overriding ``make_inputs``) is not checked."""
        least, most = self.integer_range
        if self.index_uses.unbounded:
            raise GpuperfError(
                f"kernel {self.name}: {self.index_uses.unbounded[0]}, so gpuperf cannot tell which of the inputs "
                f"it draws at random ({least} to {most}, integer_range) stay inside the arrays; give the kernel "
                "inputs of its own (a Kernel subclass whose make_inputs draws valid ones) to measure it")
        arrays = {arg.name: arg for arg in self.array_args}
        for index, indexed, axis, offset in sorted(self.index_uses.shifted):
            extent = self.array_shape(arrays[indexed], sizes)[axis]
            if least + offset >= 0 and most + offset <= extent - 1:
                continue
            shifted = f" plus {offset}" if offset > 0 else f" minus {-offset}" if offset else ""
            reach = "past its end" if most + offset > extent - 1 else "before its start"
            low, high = max(0, -offset), extent - 1 - offset
            fits = f"make the kernel a gpuperf Kernel with integer_range=({low}, {high}), or " if low <= high else ""
            raise GpuperfError(
                f"kernel {self.name}: array {index}{shifted} indexes axis {axis} of {indexed} (extent {extent} at "
                f"these sizes), but its inputs are drawn from {least} to {most} (integer_range): they would reach "
                f"{reach}; {fits}sizes where {indexed} is longer")

    def _draw(self, rng: np.random.Generator, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """Random values of ``dtype``: whole numbers in ``integer_range``, True and False alike for a bool,
        real and imaginary parts each in ``input_range`` for a complex type, else values in ``input_range``."""
        low, high = self.input_range
        if dtype.kind in "iu":
            least, most = self.integer_range
            return rng.integers(least, most + 1, size=shape).astype(dtype)
        if dtype.kind == "b":
            return rng.integers(0, 2, size=shape).astype(bool)
        if dtype.kind == "c":
            return (rng.uniform(low, high, size=shape) + 1j * rng.uniform(low, high, size=shape)).astype(dtype)
        return rng.uniform(low, high, size=shape).astype(dtype)

    def expected_outputs(self, inputs: Arrays, sizes: Mapping[str, Any] | None = None) -> Arrays:
        """The reference outputs for ``inputs`` (error if the kernel has no reference)."""
        if self.reference is None:
            raise GpuperfError(f"kernel '{self.key}' has no NumPy reference to check against")
        return self.reference(inputs, self.resolve_sizes(sizes))

    # -- code ---------------------------------------------------------------------------------
    def for_target(self, target: lp.TargetBase) -> lp.TranslationUnit:
        """The program retargeted (e.g. ``lp.CudaTarget()``); for CUDA, which has no ``__constant__``
        pointer argument, its ``__constant`` arrays are read-only global ones (``const __restrict__``)."""
        program = constants_as_global(self.program) if isinstance(target, lp.CudaTarget) else self.program
        try:
            return program.copy(target=target)
        except lp.LoopyError as exc:
            raise GpuperfError(
                f"kernel '{self.key}' cannot be retargeted ({exc}); build it with lp.add_dtypes, "
                "not lp.add_and_infer_dtypes"
            ) from None

    @cached_property
    def generation_refusal(self) -> str | None:
        """Why loopy's checks before linearization refuse the program, in one line (an access it cannot
        prove in bounds at every size, such as ``a[k]`` for ``k < m`` on an array of ``n``; a write race),
        or None. Such a kernel fails to compile at any sizes. The checks code generation makes on the
        linearized program (an unused group axis) are not run: they cost a schedule."""
        from loopy.check import pre_schedule_checks

        printed = io.StringIO()  # loopy prints a program that fails its checks: not on gpuperf's output
        try:
            with contextlib.redirect_stdout(printed):
                pre_schedule_checks(lp.preprocess_program(self.program))
        except Exception as exc:  # noqa: BLE001 - loopy and isl raise many types
            reason = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
            return f"{type(exc).__name__}: {reason}"
        return None

    @cached_property
    def _device_codes(self) -> dict[str, str]:
        """Each target's device source generated so far: the program is fixed, and a campaign export or a
        feature table asks for it once per point (10,000 points generated the same code 10,000 times)."""
        return {}

    def device_code(self, target: str = "opencl") -> str:
        """Generated device source: ``opencl`` or ``cuda`` (generated once per target)."""
        targets = {"opencl": lp.OpenCLTarget, "cuda": lp.CudaTarget}
        if target not in targets:
            raise GpuperfError(f"unknown code target '{target}'; use opencl or cuda")
        if target not in self._device_codes:
            self._device_codes[target] = self._generated_code(targets[target](), target)
        return self._device_codes[target]

    def _generated_code(self, code_target: lp.TargetBase, target: str) -> str:
        """loopy's device source of the program for ``code_target`` (named ``target`` in errors)."""
        program = self.for_target(code_target)
        printed = io.StringIO()  # loopy prints a program that fails its checks: not on gpuperf's output
        explained = False
        try:
            with contextlib.redirect_stdout(printed):
                return lp.generate_code_v2(program).device_code()
        except Exception as exc:  # noqa: BLE001 - loopy and isl raise many types (a data type the target has no
            # name for: ValueError; an unrolled loop of symbolic length: islpy.Error; a clashing name: KeyError)
            explained = True  # its program dump adds nothing to the one-line reason
            reason = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
            raise GpuperfError(f"kernel '{self.key}': loopy cannot generate its {target} code "
                               f"({type(exc).__name__}: {reason})") from None
        finally:
            if not explained:
                sys.stderr.write(printed.getvalue())

    def with_variant(self, program: lp.TranslationUnit, **variant: Any) -> Kernel:
        """A copy of this kernel with a transformed program and the variant's parameters recorded."""
        from dataclasses import replace

        return replace(self, program=program, variant={**self.variant, **variant})


# What the library's functions taking a kernel accept (``extract_features``, ``measure``, ...; see
# ``catalog.as_kernel``): a Kernel, a name as ``get_kernel`` takes, or a bare loopy TranslationUnit.
KernelLike = Union[Kernel, str, "lp.TranslationUnit"]
