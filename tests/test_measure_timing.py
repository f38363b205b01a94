"""Timing methodology (with scripted run functions) and real measurements on the OpenCL CPU device."""

from __future__ import annotations

import itertools
import os
from types import SimpleNamespace

import loopy as lp
import numpy as np
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.kernels.catalog import get_kernel
from gpuperf.kernels.kernel import Kernel
from gpuperf.measure import CompileFailed, TimingSettings, VerifyFailed, measure
from gpuperf.measure.devices import compile_failure
from gpuperf.measure.opencl import OpenCLCompiled
from gpuperf.measure.timing import elementwise_misses, max_relative_error, summarize, time_kernel

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2
FAST = TimingSettings(warmup=1, min_repeats=5, min_time_s=0.01, max_repeats=200)


class Scripted:
    """A stand-in for ``Launch.run_many``: the scripted device times in order; counts launches."""

    def __init__(self, times: list[float]) -> None:
        self.times = iter(times)
        self.calls = 0
        self.batches: list[int] = []

    def __call__(self, count: int) -> list[float]:
        self.calls += count
        self.batches.append(count)
        return [next(self.times) for _ in range(count)]


def test_round_stops_at_min_repeats_once_min_time_is_reached() -> None:
    run = Scripted([1.0] * 100)
    timing = time_kernel(run, TimingSettings(warmup=2, min_repeats=5, min_time_s=0.1, max_repeats=50))
    assert len(timing.samples) == 5
    assert run.calls == 7  # two warm-ups + five timed
    assert timing.kernel_total_s == pytest.approx(7.0)


def test_round_continues_until_min_time() -> None:
    run = Scripted([1 / 64] * 100)
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=0.125, max_repeats=50))
    assert len(timing.samples) == 8  # 8 x 1/64 s reaches 1/8 s
    assert run.batches == [5, 3]  # min_repeats, then what the minimum time still needs


def test_round_is_capped_by_max_repeats() -> None:
    run = Scripted([1e-6] * 100)
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=1.0, max_repeats=20))
    assert len(timing.samples) == 20


def test_robust_statistics() -> None:
    median, minimum, iqr = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert (median, minimum, iqr) == (3.0, 1.0, 2.0)  # the outlier moves neither median nor IQR


def test_wide_round_is_retaken_and_the_steadiest_kept() -> None:
    noisy = [1.0, 5.0, 1.0, 5.0, 1.0]
    steady = [2.0, 2.0, 2.0, 2.0, 2.0]
    run = Scripted(noisy + steady)
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=0, iqr_limit=0.1, max_retries=2))
    assert timing.retries == 1 and timing.stable
    assert timing.samples == tuple(steady) and timing.median == 2.0
    assert timing.kernel_total_s == pytest.approx(sum(noisy) + sum(steady))


def test_retries_are_bounded_and_recorded_as_unstable() -> None:
    run = Scripted(itertools.cycle([1.0, 5.0]))  # type: ignore[arg-type]
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=4, min_time_s=0, max_repeats=4, max_retries=2))
    assert timing.retries == 2 and not timing.stable
    assert run.calls == 12


def test_timing_settings_reject_unknown_and_bad_values() -> None:
    with pytest.raises(GpuperfError, match=r"f.toml: timing.min_repeat: unknown"):
        TimingSettings.from_mapping({"min_repeat": 3}, "f.toml: timing")
    with pytest.raises(GpuperfError, match="whole number"):
        TimingSettings.from_mapping({"min_repeats": 2.5}, "t")
    assert TimingSettings.from_mapping({"min_time_s": 1}, "t").min_time_s == 1.0


def test_max_relative_error() -> None:
    want = {"c": np.array([1.0, 2.0, 4.0])}
    assert max_relative_error({"c": np.array([1.0, 2.0, 4.0])}, want) == (0.0, "c")
    error, name = max_relative_error({"c": np.array([1.0, 2.0, 3.0])}, want)
    assert name == "c" and error == pytest.approx(0.25)
    assert max_relative_error({"c": np.array([np.nan, 2.0, 4.0])}, want)[0] == float("inf")
    with pytest.raises(GpuperfError, match=r"output 'c' has shape \(2,\), the reference's \(3,\)"):
        max_relative_error({"c": np.zeros(2)}, want)
    with pytest.raises(GpuperfError, match="the reference returns no value for d, which the kernel writes"):
        max_relative_error({"c": np.array([1.0, 2.0, 4.0]), "d": np.zeros(3)}, want)  # d would go unchecked


def test_elementwise_misses_catch_an_offset_that_hides_under_the_normwise_error() -> None:
    want = np.arange(1.0, 10_001.0)  # an inclusive prefix sum of ones
    got = want - 1.0  # the exclusive one: off by one everywhere, 1e-4 of the largest element
    assert max_relative_error({"c": got}, {"c": want})[0] <= 1e-4
    name, misses, size = elementwise_misses({"c": got}, {"c": want}, rtol=1e-4)
    assert (name, size) == ("c", 10_000) and misses == np.count_nonzero(1.0 > 1e-4 * want + 1e-5 * 10_000)
    rounded = want.astype(np.float32) * (1 + 3e-7)  # float32 rounding, and an element near zero
    assert elementwise_misses({"c": np.append(rounded, 1e-9)}, {"c": np.append(want, 0.0)}, rtol=1e-4) is None


@pytest.mark.slow
@pytest.mark.opencl
def test_an_output_off_everywhere_by_a_small_share_of_its_largest_fails_verification() -> None:
    program = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = i + a[i]", assumptions="n>=64 and n mod 64 = 0",
                             name="offset", lang_version=LANG)
    program = lp.split_iname(lp.add_dtypes(program, {"a,c": np.float64}), "i", 64, outer_tag="g.0", inner_tag="l.0")
    wrong = Kernel("offset", program, ("n",), reference=lambda x, s: {"c": np.arange(s["n"]) + x["a"] + 1})
    with pytest.raises(VerifyFailed, match=r"output 'c' differs from the reference element-wise: [\d,]+ of 16,384 "
                                           r"elements \(\d+\.\d%\) are off by more than rtol 0.0001") as info:
        measure(wrong, {"n": 16384}, settings=FAST)
    assert info.value.max_rel_error < 1e-4  # the normwise error alone passed it


def _copy_program(name: str) -> lp.TranslationUnit:
    program = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = a[i] + 1", assumptions="n>=64 and n mod 64 = 0",
                             name=name, lang_version=LANG)
    program = lp.add_dtypes(program, {"a,c": np.float32})
    return lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")


@pytest.mark.slow
@pytest.mark.opencl
def test_copy_time_grows_with_size_and_is_verified() -> None:
    small = measure("vector_copy", {"n": 2**12}, settings=FAST)
    large = measure("vector_copy", {"n": 2**22}, settings=FAST)
    assert small.verified and large.verified and small.max_rel_error == 0.0
    assert large.time_s > 20 * small.time_s  # 1024x the bytes; noise cannot flip this
    assert large.time_s_min <= large.time_s and large.time_s_iqr >= 0
    assert large.repeats >= 5 and large.repeats == len(large.samples)
    assert large.global_size == (2**22, 1, 1) and large.local_size == (256, 1, 1)
    assert large.device.startswith("opencl:")
    prov = large.provenance
    for key in ("device_name", "driver_version", "platform_version", "pyopencl", "loopy", "numpy", "host",
                "timestamp", "gpuperf", "timer"):
        assert prov[key], key
    assert prov["timestamp"].endswith("+00:00") and prov["timer"] == "kernel_event"


@pytest.mark.slow
@pytest.mark.opencl
def test_mismatch_with_the_reference_is_reported_with_its_error() -> None:
    wrong = Kernel("plus_one", _copy_program("plus_one"), ("n",), reference=lambda x, s: {"c": x["a"]})
    with pytest.raises(VerifyFailed, match="max relative error") as info:
        measure(wrong, {"n": 256}, settings=FAST)
    assert info.value.status == "verify_failed" and info.value.max_rel_error > 0.3
    unchecked = measure(wrong, {"n": 256}, verify=False, settings=FAST)
    assert not unchecked.verified and unchecked.time_s > 0


@pytest.mark.slow
@pytest.mark.opencl
def test_compile_failure_and_bad_sizes() -> None:
    program = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = no_such_function(a[i])", name="broken", lang_version=LANG)
    broken = Kernel("broken", lp.add_dtypes(program, {"a,c": np.float32}), ("n",))
    with pytest.raises(CompileFailed, match="no_such_function") as info:
        measure(broken, {"n": 64}, settings=FAST)
    assert info.value.status == "compile_failed"
    with pytest.raises(GpuperfError, match="assumptions"):
        measure(get_kernel("vector_copy"), {"n": 1000}, settings=FAST)


def _two_pass() -> Kernel:
    """c[j] = 2 a[n-1-j] + 1 through a global temporary t: two device kernels."""
    program = lp.make_kernel(
        "{[i,j]: 0<=i,j<n}",
        """
        t[i] = 2*a[i] {id=w}
        ... gbarrier {id=gb, dep=w}
        c[j] = t[n-1-j] + 1 {dep=gb}
        """,
        [lp.GlobalArg("a,c", np.float32, shape="n"),
         lp.TemporaryVariable("t", np.float32, shape="n", address_space=lp.AddressSpace.GLOBAL), "..."],
        assumptions="n>=64 and n mod 64 = 0", name="two_pass", lang_version=LANG,
    )
    program = lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0")
    program = lp.split_iname(program, "j", 64, outer_tag="g.0", inner_tag="l.0")
    return Kernel("two_pass", program, ("n",), reference=lambda x, s: {"c": 2 * x["a"][::-1] + 1})


@pytest.mark.slow
@pytest.mark.opencl
def test_several_device_kernels_are_timed_as_one_span() -> None:
    kernel = _two_pass()
    result = measure(kernel, {"n": 4096}, settings=FAST)
    assert result.verified and result.time_s > 0
    assert result.provenance["timer"] == "gated_marker_span"


@pytest.mark.slow
@pytest.mark.opencl
def test_a_batchs_launches_share_one_global_temporary() -> None:
    """Each launch of a batch allocating (and first touching) its own global temporary made pocl's
    batched launches of a two-pass program several times slower than one launch: the launches of one
    binding reuse a single temporary buffer, so a batch of 12 holds one temporary's bytes, not 12."""
    from gpuperf.measure.devices import open_device
    from gpuperf.measure.timing import prepare

    n = 1 << 16
    compiled = open_device("opencl:0").compile(_two_pass())
    calls = []
    executor = compiled.executor

    def spy(queue, **kwargs):  # noqa: ANN001, ANN202 - loopy's executor, recorded
        calls.append(kwargs.get("allocator"))
        return executor(queue, **kwargs)

    compiled.executor = spy
    prepared = prepare(compiled, {"n": n})
    try:
        assert prepared.verified
        assert len(prepared.launch.run_many(12)) == 12
        pools = {id(allocator) for allocator in calls}
        assert None not in calls and len(pools) == 1, "every launch takes its temporaries from one pool"
        assert calls[0].managed_bytes <= 2 * 4 * n, "the batch's 13 launches held one temporary between them"
    finally:
        prepared.launch.close()


def test_round_batch_rounds_up_what_the_minimum_time_still_needs() -> None:
    """1/64 s each, min_time_s 0.12: after 5 launches (5/64 = 0.078125 s) the round still needs
    0.041875 s = 2.68 launches, rounded up to 3; 8/64 = 0.125 s then reaches the minimum."""
    run = Scripted([1 / 64] * 100)
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=5, min_time_s=0.12, max_repeats=50))
    assert run.batches == [5, 3] and len(timing.samples) == 8


def test_of_equally_wide_rounds_the_first_is_kept() -> None:
    """[1..5]: median 3, IQR 4-2 = 2, spread 2/3; [2..10 step 2]: median 6, IQR 4, spread 4/6, the
    same. Neither meets iqr_limit 0.1; on a tie the first round stays the steadiest."""
    first, second = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0]
    run = Scripted(first + second)
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=5, max_repeats=5, min_time_s=0,
                                             iqr_limit=0.1, max_retries=1))
    assert timing.retries == 1 and not timing.stable
    assert timing.samples == tuple(first) and timing.median == 3.0


def test_a_round_whose_spread_equals_the_limit_is_steady() -> None:
    """[9, 9.5, 10, 10.5, 11]: median 10, Q1 9.5, Q3 10.5, IQR 1, spread 1/10 = iqr_limit 0.1
    exactly: the limit is inclusive, so no retry is taken."""
    run = Scripted([9.0, 9.5, 10.0, 10.5, 11.0] * 3)
    timing = time_kernel(run, TimingSettings(warmup=0, min_repeats=5, max_repeats=5, min_time_s=0,
                                             iqr_limit=0.1, max_retries=2))
    assert timing.retries == 0 and timing.stable and run.calls == 5


def test_min_repeats_may_equal_max_repeats() -> None:
    """1 <= min_repeats <= max_repeats: equal bounds (a fixed number of repeats) are allowed."""
    settings = TimingSettings.from_mapping({"min_repeats": 7, "max_repeats": 7}, "t")
    assert settings.min_repeats == settings.max_repeats == 7
    with pytest.raises(GpuperfError, match="need 1 <= min_repeats <= max_repeats"):
        TimingSettings.from_mapping({"min_repeats": 8, "max_repeats": 7}, "t")


def _twice() -> Kernel:
    """A one-line kernel whose build failures the next tests make up."""
    program = lp.make_kernel("{[i]: 0<=i<n}", "c[i] = 2*a[i]", name="twice", lang_version=LANG)
    return Kernel("twice", lp.add_dtypes(program, {"a,c": np.float32}), ("n",))


def test_a_compile_failure_names_the_compilers_first_error() -> None:
    kernel = _twice()
    log = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
           "Build on <device>:\n\nerror: /root/.cache/pocl/kcache/tempfile_X.cl:4:65: cannot combine with "
           "previous 'void' declaration specifier\nerror: /root/.cache/pocl/kcache/tempfile_X.cl:4:72: expected ')'")
    failure = compile_failure(kernel, RuntimeError(log))
    assert failure.status == "compile_failed" and log in failure.detail
    assert str(failure) == (
        "kernel 'twice' failed to compile: RuntimeError: clBuildProgram failed: BUILD_PROGRAM_FAILURE; "
        "error: line 4:65: cannot combine with previous 'void' declaration specifier")
    assert str(compile_failure(kernel, ValueError("no build log"))) == (
        "kernel 'twice' failed to compile: ValueError: no build log")


def test_a_compile_failure_on_a_cpu_the_drivers_compiler_does_not_know_says_no_kernel_compiles_there() -> None:
    """pocl's LLVM names a CPU newer than itself 'generic' and refuses it: every kernel fails alike, so
    the error says it is the machine, not the kernel's code, and where to measure instead."""
    from gpuperf.measure.devices import OTHER_DEVICES, UNKNOWN_HOST_CPU

    kernel = _twice()
    log = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
           "Build on <pyopencl.Device 'pthread-AMD EPYC'>:\n\nerror: unknown target CPU 'generic'\n"
           "Device pthread-AMD EPYC failed to build the program")
    failure = compile_failure(kernel, RuntimeError(log))
    assert str(failure) == ("kernel 'twice' failed to compile: RuntimeError: clBuildProgram failed: "
                            f"BUILD_PROGRAM_FAILURE; error: unknown target CPU 'generic' ({UNKNOWN_HOST_CPU}{OTHER_DEVICES})")
    assert "no kernel compiles on this device" in UNKNOWN_HOST_CPU and "gpuperf devices lists the others" in str(failure)
    other = compile_failure(kernel, RuntimeError("clBuildProgram failed\nerror: line 4: expected ')'"))
    assert UNKNOWN_HOST_CPU not in str(other)  # a kernel's own error gets no such word


@pytest.mark.slow
@pytest.mark.opencl
def test_shared_inputs_serve_every_variant_of_a_space_from_one_reference_run(monkeypatch) -> None:
    """A tuning run's variants compute one function: the seeded inputs are built and the reference run
    once per size, read-only; another size, a kernel of another function or another seed gets its own."""
    from gpuperf.kernels.space import get_space
    from gpuperf.measure.timing import SharedInputs

    runs = []
    original = Kernel.expected_outputs
    monkeypatch.setattr(Kernel, "expected_outputs", lambda self, inputs, sizes=None: runs.append(self.key)
                        or original(self, inputs, sizes))
    space, shared = get_space("jacobi2d_5pt"), SharedInputs()
    sizes = {"n": 64, "m": 64}
    first = space.build({**space.defaults, "local_x": 16, "local_y": 4})
    second = space.build({**space.defaults, "local_x": 32, "local_y": 2, "outputs_y": 2})
    for variant in (first, second):
        measured = measure(variant, sizes, settings=FAST, shared=shared)
        assert measured.verified and measured.max_rel_error < 1e-5
    assert len(runs) == 1  # the second variant was checked against the first's reference outputs
    inputs = shared.inputs(second, second.resolve_sizes(sizes), 0)
    assert inputs is shared.inputs(first, first.resolve_sizes(sizes), 0)
    assert all(not array.flags.writeable for array in inputs.values() if isinstance(array, np.ndarray))
    with pytest.raises(ValueError, match="read-only"):
        inputs["a"][0, 0] = 0.0
    measure(first, {"n": 64, "m": 128}, settings=FAST, shared=shared)
    measure(first, sizes, settings=FAST, shared=shared, seed=1)
    measure("vector_copy", {"n": 256}, settings=FAST, shared=shared)
    assert len(runs) == 4
    assert shared.inputs(first, first.resolve_sizes(sizes), 0) is not inputs  # only the last key is kept


@pytest.mark.slow
@pytest.mark.opencl
def test_shared_inputs_let_a_reference_work_in_its_inputs() -> None:
    from gpuperf.measure.timing import SharedInputs

    def in_place(x, s):
        x["a"] += 1.0  # a reference may write into the arrays it is given
        return {"c": x["a"]}

    copy = Kernel("copy_in_place", _copy_program("copy_in_place"), ("n",), reference=in_place)
    shared = SharedInputs()
    assert measure(copy, {"n": 256}, settings=FAST, shared=shared).verified
    assert measure(copy, {"n": 256}, settings=FAST, shared=shared).verified


def test_a_reference_nan_or_infinity_is_matched_exactly_or_named() -> None:
    """A reference holding NaN gave 'max relative error inf' whatever the kernel wrote."""
    want = {"c": np.array([1.0, np.nan, np.inf, 4.0])}
    assert max_relative_error({"c": np.array([1.0, np.nan, np.inf, 4.0])}, want) == (0.0, "c")
    assert max_relative_error({"c": np.array([1.0, np.nan, np.inf, 2.0])}, want)[0] == pytest.approx(0.5)
    with pytest.raises(GpuperfError, match=r"output 'c': the reference holds nan at \(1,\), the kernel 0.0 \(2 such"):
        max_relative_error({"c": np.array([1.0, 0.0, 3.0, 4.0])}, want)


def test_settings_made_in_python_are_checked_as_a_campaign_file_is():
    """TimingSettings(min_repeats=0, min_time_s=0) crashed measure with 'cannot convert float NaN to integer',
    warmup=-1 blamed the kernel ('failed to run: IndexError')."""
    from gpuperf.measure.timing import TimingSettings

    cases = {
        "min_repeats=0": (dict(min_repeats=0, min_time_s=0.0), r"TimingSettings: need 1 <= min_repeats <= max_repeats"),
        "warmup=-1": (dict(warmup=-1), r"TimingSettings.warmup: must be a finite, non-negative number, not -1"),
        "max below min": (dict(max_repeats=2), r"need 1 <= min_repeats <= max_repeats \(min_repeats 5, max_repeats 2\)"),
        "cycles=0": (dict(cycles=0), r"TimingSettings.cycles: must be at least 1, not 0"),
        "min_time_s=-1": (dict(min_time_s=-1.0), r"TimingSettings.min_time_s: must be a finite, non-negative number"),
        "warmup=1.5": (dict(warmup=1.5), r"TimingSettings.warmup: must be a whole number, not 1.5"),
    }
    for case, (values, message) in cases.items():
        with pytest.raises(GpuperfError, match=message):
            TimingSettings(**values)
    with pytest.raises(GpuperfError, match=r"^campaign.toml \[timing\].cycles: must be at least 1, not 0$"):
        TimingSettings.from_mapping({"cycles": 0}, "campaign.toml [timing]")
    assert TimingSettings.from_mapping({"min_time_s": 1, "warmup": 3.0}, "t") == TimingSettings(warmup=3, min_time_s=1.0)
    assert isinstance(TimingSettings.from_mapping({"warmup": 3.0}, "t").warmup, int)
    # a whole float and NumPy numbers are the plain numbers they stand for (a float warmup failed to run)
    made = TimingSettings(warmup=2.0, cycles=np.int64(3), min_time_s=np.float32(0.05))
    assert (made.warmup, made.cycles) == (2, 3) and type(made.warmup) is int and type(made.cycles) is int
    assert type(made.min_time_s) is float and made.min_time_s == pytest.approx(0.05)


@pytest.mark.opencl
def test_sizes_past_the_kernels_int32_indices_are_refused_before_anything_is_allocated():
    """At n = 2**31 the generated code's int indices wrap around (an out-of-bounds access on a GPU)."""
    from gpuperf.measure.devices import RunFailed

    with pytest.raises(RunFailed, match=r"copy_2d at n=65536, m=65536: array 'a' holds 4,294,967,296 elements, more "
                                        r"than the kernel's int32 indices reach \(2,147,483,647\); make the program "
                                        r"with index_dtype=np.int64"):
        measure(get_kernel("copy_2d"), {"n": 65536, "m": 65536}, settings=TimingSettings(min_time_s=0.0))


@pytest.mark.opencl
def test_a_measurements_minimum_and_spread_are_its_samples() -> None:
    result = measure("vector_copy", {"n": 2**12}, settings=TimingSettings(warmup=1, min_repeats=20, min_time_s=0.0,
                                                                           max_retries=0))
    samples = np.asarray(result.samples)
    assert result.time_s == float(np.median(samples)) and result.time_s_min == samples.min()
    q1, q3 = np.percentile(samples, [25, 75])
    assert result.time_s_iqr == pytest.approx(q3 - q1, rel=1e-12, abs=0)


@pytest.mark.opencl
def test_the_drivers_compiler_output_goes_into_the_failure_not_onto_stderr(capfd) -> None:
    """pocl wrote "2 errors generated." on stderr before gpuperf's one-line error; other runtimes write nothing
    there, so the check is that stderr stays clean and the failure names the compiler's complaint."""
    program = lp.make_kernel("{[i]: 0<=i<n}", [lp.CInstruction("i", "c[i] = no_such_name;", assignees="c[i]")],
                             [lp.GlobalArg("c", np.float32, "n"), lp.ValueArg("n", np.int32)], name="unbuilt",
                             lang_version=LANG)
    with pytest.raises(CompileFailed) as info:
        measure(Kernel("unbuilt", program, ("n",)), {"n": 64}, verify=False, settings=FAST)
    written = capfd.readouterr().err
    assert "generated" not in written and "error" not in written.lower()
    assert "no_such_name" in info.value.detail


def test_what_the_compiler_writes_on_stderr_while_failing_is_kept_in_the_failure(monkeypatch, capfd) -> None:
    """Whatever a driver's compiler writes on stderr as a build fails (pocl's "2 errors generated.") is appended
    to the failure's detail and kept off stderr, whichever OpenCL runtime is installed (no device is opened)."""

    def build_that_complains(self, target):
        os.write(2, b"2 errors generated.\n")
        raise RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE")

    monkeypatch.setattr(Kernel, "for_target", build_that_complains)
    with pytest.raises(CompileFailed) as info:
        OpenCLCompiled(SimpleNamespace(context=None), get_kernel("vector_copy"))
    assert "generated" not in capfd.readouterr().err
    assert info.value.detail.endswith("\n2 errors generated.\n")
