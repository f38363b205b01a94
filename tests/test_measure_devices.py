"""Device names, and the CUDA path's code, argument marshalling and launch geometry (no GPU needed)."""

from __future__ import annotations

import importlib.util
import re

import loopy as lp
import numpy as np
import pytest

from gpuperf.errors import GpuperfError
from gpuperf.kernels.catalog import get_kernel
from gpuperf.kernels.kernel import Kernel
from gpuperf.measure.cuda import (
    DeviceArg,
    DeviceFunction,
    LaunchStep,
    check_supported,
    cuda_code,
    launch_exprs,
    launch_plan,
    marshal_args,
    scratch_shapes,
)
from gpuperf.measure.devices import available_devices, canonical_device_name, open_device

LANG = lp.version.LOOPY_USE_LANGUAGE_VERSION_2018_2
HAS_CUPY = importlib.util.find_spec("cupy") is not None


@pytest.mark.opencl
def test_opencl_0_is_the_first_device_and_has_a_canonical_name() -> None:
    names = [name for name, _ in available_devices()]
    assert names[0] == "opencl:0" and names[1].startswith("opencl:")
    assert canonical_device_name("opencl:0") == names[1]
    assert canonical_device_name("OpenCL") == names[1]
    assert canonical_device_name(names[1]) == names[1]
    device = open_device("opencl:0")
    assert device is open_device(names[1])  # opened once per process
    assert device.provenance()["device_name"]


@pytest.mark.parametrize("name", ["opencl:7:0", "opencl:9", "tpu:0", "gpu"])
def test_unknown_devices_list_the_available_ones(name: str) -> None:
    with pytest.raises(GpuperfError, match=rf"device '{name}'.*available devices: opencl:0 \(same as opencl:"):
        open_device(name)


@pytest.mark.skipif(HAS_CUPY, reason="CuPy is installed here")
def test_cuda_without_cupy_says_why_and_lists_devices() -> None:
    with pytest.raises(GpuperfError, match=r"device 'cuda:0' is not available \(CuPy does not import.*available devices: opencl:0"):
        open_device("cuda:0")


def _two_pass() -> Kernel:
    program = lp.make_kernel(
        "{[i,j]: 0<=i<n and 0<=j<m}",
        """
        t[i] = 2*a[i] {id=w}
        ... gbarrier {id=gb, dep=w}
        c[j] = t[j] * alpha {dep=gb}
        """,
        [lp.GlobalArg("a", np.float32, shape="n"), lp.GlobalArg("c", np.float32, shape="m"),
         lp.ValueArg("alpha", np.float32),
         lp.TemporaryVariable("t", np.float32, shape="n", address_space=lp.AddressSpace.GLOBAL), "..."],
        assumptions="n>=128 and n mod 128 = 0 and m>=32 and m mod 32 = 0 and m <= n", name="two_pass", lang_version=LANG,
    )
    program = lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")
    program = lp.split_iname(program, "j", 32, outer_tag="g.0", inner_tag="l.0")
    return Kernel("two_pass", program, ("n", "m", "alpha"))


def test_cuda_code_and_signature_of_vector_copy() -> None:
    code, functions = cuda_code(get_kernel("vector_copy"))
    assert '__global__' in code and "blockIdx" in code
    assert functions == (DeviceFunction("vector_copy", (
        DeviceArg("a", np.dtype(np.float32), True),
        DeviceArg("b", np.dtype(np.float32), True),
        DeviceArg("n", np.dtype(np.int32), False),
    )),)


def test_cuda_launch_plan_follows_the_sizes() -> None:
    plan = launch_plan(get_kernel("vector_copy"), {"n": 2**20})
    assert plan == [LaunchStep("vector_copy", (4096, 1, 1), (256, 1, 1))]
    two = launch_plan(_two_pass(), {"n": 1024, "m": 256, "alpha": 3})
    assert two == [LaunchStep("two_pass", (8, 1, 1), (128, 1, 1)), LaunchStep("two_pass_0", (8, 1, 1), (32, 1, 1))]


def test_a_cuda_launch_past_the_grids_y_limit_is_named_before_anything_is_allocated() -> None:
    """jacobi2d_5pt at n = 1048592 needs 65537 blocks along y: the driver said only 'invalid argument'."""
    from gpuperf.measure.devices import RunFailed

    with pytest.raises(RunFailed, match=r"kernel 'jacobi2d_5pt' at n=1048592, m=16: its grid has 65,537 along y, past "
                                        r"CUDA's limit of 65,535"):
        launch_plan(get_kernel("jacobi2d_5pt"), {"n": 1048592, "m": 16})
    assert launch_plan(get_kernel("jacobi2d_5pt"), {"n": 1048560, "m": 16})[0].grid[1] == 65535


def _scaled_sum() -> Kernel:
    program = lp.make_kernel(
        "{[i]: 0<=i<n}", "c[i] = alpha * a[i] + b[i]",
        [lp.GlobalArg("a,b,c", np.float32, shape="n"), lp.ValueArg("alpha", np.float32), "..."],
        assumptions="n>=64 and n mod 64 = 0", name="scaled_sum", lang_version=LANG,
    )
    return Kernel("scaled_sum", lp.split_iname(program, "i", 64, outer_tag="g.0", inner_tag="l.0"), ("n", "alpha"))


def test_marshalling_orders_arguments_and_types_scalars() -> None:
    kernel = _scaled_sum()
    _, (function,) = cuda_code(kernel)
    assert {a.name for a in function.args} == {"a", "b", "c", "alpha", "n"}
    sizes = {"n": 1024, "alpha": 3}
    assert scratch_shapes(kernel, [function], sizes) == {}
    buffers = {name: np.zeros(1024, np.float32) for name in "abc"}
    args = marshal_args(function, buffers, sizes)
    assert len(args) == len(function.args)
    for arg, value in zip(function.args, args):
        if arg.is_pointer:
            assert value is buffers[arg.name]
        else:
            assert type(value) is arg.dtype.type and value == sizes[arg.name]
    kinds = {a.name: type(v) for a, v in zip(function.args, args) if not a.is_pointer}
    assert kinds == {"alpha": np.float32, "n": np.int32}
    with pytest.raises(GpuperfError, match="needs array 'a'"):
        marshal_args(function, {}, sizes)
    with pytest.raises(GpuperfError, match="needs scalar 'alpha'"):
        marshal_args(function, buffers, {"n": 1024})


def test_programs_cuda_cannot_emit_whole_are_refused_before_any_gpu_work() -> None:
    kernel = _two_pass()
    _, functions = cuda_code(kernel)
    exprs = launch_exprs(kernel)
    assert set(exprs) == {"two_pass", "two_pass_0"}
    assert scratch_shapes(kernel, functions, {"n": 1024, "m": 256, "alpha": 1}) == {"t": ((1024,), np.dtype(np.float32))}
    with pytest.raises(GpuperfError, match="needs 2 device kernels.*missing two_pass_0"):
        check_supported(functions, exprs)
    copy = get_kernel("vector_copy")
    check_supported(cuda_code(copy)[1], launch_exprs(copy))  # one device kernel: accepted


def _nvrtc_ptx(code: str) -> str:
    """Compile CUDA source to PTX with NVRTC (no GPU needed); raise with the log on failure."""
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    err, program = nvrtc.nvrtcCreateProgram(code.encode(), b"kernel.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    (err,) = nvrtc.nvrtcCompileProgram(program, 1, [b"--gpu-architecture=compute_80"])
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(program, log)
        raise AssertionError(log.decode())
    _, size = nvrtc.nvrtcGetPTXSize(program)
    ptx = b" " * size
    nvrtc.nvrtcGetPTX(program, ptx)
    return ptx.decode()


@pytest.mark.parametrize("spec", ["vector_copy", "jacobi2d_5pt[local_x=32,local_y=4,outputs_y=2,prefetch=1,unroll=2]"])
def test_generated_cuda_compiles_with_nvrtc(spec: str) -> None:
    code, functions = cuda_code(get_kernel(spec))
    ptx = _nvrtc_ptx(code)
    for function in functions:
        assert f".entry {function.name}(" in ptx  # extern "C": the name CuPy looks up


class _FailingRuntime:
    """Stands in for a device after a fault: every call repeats the fault."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getattr__(self, name):
        def fail(*args, **kwargs):
            raise self.error
        return fail


@pytest.mark.opencl
def test_releasing_a_launch_never_hides_the_failure_already_raised() -> None:
    """After a fault, the queue (or CUDA device) repeats its error when the buffers are released;
    close() must not raise it over the launch's own failure."""
    device = open_device("opencl:0")
    launch = device.compile(get_kernel("vector_copy")).bind({"n": 1024}, {"a": np.ones(1024, np.float32)})
    queue = launch.queue
    launch.queue = _FailingRuntime(RuntimeError("CL_OUT_OF_RESOURCES"))
    launch.close()  # no exception
    assert launch.arrays == {}
    queue.finish()


class _CupyError(Exception):
    """A CuPy runtime error: its module and its CUDA status are what gpuperf reads."""

    __module__ = "cupy_backends.cuda.api.runtime"

    def __init__(self, status: int) -> None:
        super().__init__(f"status {status}")
        self.status = status


def test_sticky_cuda_errors_are_told_from_others_through_the_chain_of_causes() -> None:
    from gpuperf.measure.devices import DeviceLost, RunFailed, device_lost

    def wrapped(inner: Exception) -> RunFailed:
        try:
            raise inner
        except Exception as exc:  # noqa: BLE001
            try:
                raise RunFailed("kernel 'k' failed to run") from exc
            except RunFailed as outer:
                return outer

    assert device_lost(wrapped(_CupyError(700)))  # cudaErrorIllegalAddress
    assert device_lost(wrapped(_CupyError(719)))  # cudaErrorLaunchFailure
    assert not device_lost(wrapped(_CupyError(701)))  # too many resources requested: not sticky
    assert not device_lost(wrapped(ValueError("status 700")))
    assert device_lost(DeviceLost("lost"))


def _padded_laplacian() -> Kernel:
    """Writes only the interior of its padded output; the reference leaves the border zero."""
    program = lp.make_kernel(
        "{[i,j]: 0<=i<n and 0<=j<m}",
        "out[i+1,j+1] = a[i,j+1] + a[i+2,j+1] + a[i+1,j] + a[i+1,j+2] - 4*a[i+1,j+1]",
        [lp.GlobalArg("a", np.float32, shape="(n+2, m+2)"), lp.GlobalArg("out", np.float32, shape="(n+2, m+2)"),
         "..."],
        assumptions="n mod 16 = 0 and m mod 16 = 0 and n>=16 and m>=16", name="padded", lang_version=(2018, 2))
    program = lp.split_iname(program, "j", 16, outer_tag="g.0", inner_tag="l.0")
    program = lp.split_iname(program, "i", 16, outer_tag="g.1", inner_tag="l.1")

    def reference(inputs, sizes):
        a = inputs["a"]
        out = np.zeros_like(a)
        out[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4 * a[1:-1, 1:-1]
        return {"out": out}

    return Kernel(name="padded", program=program, params=("n", "m"), reference=reference)


@pytest.mark.opencl
def test_output_buffers_start_as_zeros_so_an_unwritten_border_checks_against_the_reference() -> None:
    """The output was allocated uninitialised: the border held whatever memory was there, and the
    check failed or passed by chance (max relative error 2e+14, then 4e+18, then ok)."""
    from gpuperf.measure.timing import TimingSettings, measure

    device = open_device("opencl:0")
    kernel = _padded_laplacian()
    for _ in range(3):  # fill freed memory with garbage the next buffers may reuse
        junk = device.compile(kernel).bind({"n": 64, "m": 64}, {"a": np.full((66, 66), 7e30, np.float32),
                                                                "out": np.full((66, 66), -3e33, np.float32)})
        junk.close()
    launch = device.compile(kernel).bind({"n": 64, "m": 64}, {"a": np.ones((66, 66), np.float32)})
    assert not launch.arrays["out"].get().any()
    launch.close()
    settings = TimingSettings(min_repeats=1, max_repeats=2, min_time_s=0.0)
    for n in (32, 64):
        assert measure(kernel, {"n": n, "m": n}, settings=settings).time_s > 0


def test_opencl_n_counts_devices_over_all_platforms_and_cuda_defaults_to_its_first(monkeypatch) -> None:
    from gpuperf.measure import devices

    listed = [("opencl:0:0", "a"), ("opencl:0:1", "b"), ("opencl:1:0", "c")]
    monkeypatch.setattr(devices, "opencl_devices", lambda: listed)
    assert [canonical_device_name(f"opencl:{n}") for n in range(3)] == ["opencl:0:0", "opencl:0:1", "opencl:1:0"]
    assert canonical_device_name("opencl:0:1") == "opencl:0:1" and canonical_device_name("opencl:1:0") == "opencl:1:0"
    with pytest.raises(GpuperfError, match="device 'opencl:3' does not exist"):  # exactly the count: one past the end
        canonical_device_name("opencl:3")
    monkeypatch.setattr(devices, "cuda_devices", lambda: [("cuda:0", "x"), ("cuda:1", "y")])
    assert canonical_device_name("cuda") == "cuda:0" and canonical_device_name("cuda:1") == "cuda:1"


@pytest.mark.opencl
def test_a_kernel_needing_more_local_memory_than_the_device_has_is_refused_before_it_runs() -> None:
    """pocl crashed the process (a segfault) launching a kernel whose local array was past its 2 MiB."""
    from gpuperf.measure.devices import RunFailed
    from gpuperf.measure.timing import measure

    device = open_device("opencl:0")
    words = int(device.device.local_mem_size) // 4 + 1024
    program = lp.make_kernel("{[io,ii,j]: 0<=io<n/16 and 0<=ii<16 and 0<=j<%d}" % words, """
        tmp[j] = a[16*io + ii] {id=store}
        ... lbarrier {id=wait, dep=store}
        b[16*io + ii] = tmp[ii] {dep=wait}
        """, [lp.GlobalArg("a", np.float32, "n"), lp.GlobalArg("b", np.float32, "n"), lp.ValueArg("n", np.int32),
              lp.TemporaryVariable("tmp", np.float32, (words,), address_space=lp.AddressSpace.LOCAL)],
        name="big_local", assumptions="n>=16 and n mod 16 = 0", lang_version=LANG)
    kernel = Kernel("big_local", lp.tag_inames(program, {"io": "g.0", "ii": "l.0"}), ("n",))
    with pytest.raises(RunFailed, match=rf"kernel 'big_local' needs {words * 4:,} bytes of local memory, more than "
                                        rf"the {words * 4 - 4096:,} of opencl:0:0"):
        measure(kernel, {"n": 64}, verify=False)


@pytest.mark.opencl
def test_arrays_in_fortran_order_or_with_padded_rows_are_laid_out_as_the_kernels_code_indexes_them() -> None:
    """Every buffer was uploaded in C order: loopy's check refused the launch ("strides mismatch on
    argument 'a'"), and a kernel taking C-order data at Fortran strides would read the wrong elements."""
    from gpuperf.measure.timing import TimingSettings, measure

    program = lp.make_kernel("{[i,j]: 0<=i<n and 0<=j<m}", "b[i,j] = 2*a[i,j] + i", [
        lp.GlobalArg("a", np.float32, "n,m", order="F"), lp.GlobalArg("b", np.float32, "n,m", strides="(m+3,1)"),
        lp.ValueArg("n", np.int32), lp.ValueArg("m", np.int32)], name="strided", lang_version=LANG)
    kernel = Kernel("strided", lp.tag_inames(program, {"i": "l.0", "j": "g.0"}), ("n", "m"),
                    reference=lambda a, s: {"b": 2 * a["a"] + np.arange(s["n"])[:, None]})
    sizes = {"n": 16, "m": 8}
    assert [kernel.array_strides(arg, sizes) for arg in kernel.array_args] == [(4, 64), (44, 4)]
    measured = measure(kernel, sizes, settings=TimingSettings(warmup=0, min_repeats=1, max_repeats=1, min_time_s=0.0))
    assert measured.verified and measured.max_rel_error < 1e-6


def test_a_strided_host_array_of_no_elements_is_empty():
    from gpuperf.measure.devices import strided_host_array

    empty = strided_host_array((0, 8), np.dtype(np.float32), (44, 4))
    assert empty.shape == (0, 8) and empty.size == 0
    padded = strided_host_array((2, 3), np.dtype(np.float32), (16, 4), np.arange(6, dtype=np.float32).reshape(2, 3))
    assert padded.tolist() == [[0, 1, 2], [3, 4, 5]] and padded.base.size == 4 * 4 + 3 * 4


def test_no_opencl_device_says_why_in_devices_and_in_a_device_error(monkeypatch, capsys) -> None:
    """pocl with no usable driver (POCL_DEVICES=cuda on a CI runner): `devices` printed one blank line
    with status 0, and measuring said only "available devices: none"."""
    import pyopencl as cl

    from gpuperf.cli import main
    from gpuperf.measure import cuda

    class Empty:
        name = "Portable Computing Language "

        def get_devices(self) -> list:
            return []

    monkeypatch.setattr(cl, "get_platforms", lambda: [Empty()])
    monkeypatch.setattr(cuda, "cupy_missing_reason", lambda: "is not available (no CuPy)")
    reason = "OpenCL: platform 'Portable Computing Language' has no devices; CUDA is not available (no CuPy)"
    assert main(["devices"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err == f"note: no device to measure on: {reason}\n"
    assert main(["devices", "--json"]) == 0
    assert capsys.readouterr().out.strip() == "[]"
    with pytest.raises(GpuperfError, match=re.escape(f"available devices: none ({reason})")):
        canonical_device_name("opencl:0")

    def no_platform() -> list:
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(cl, "get_platforms", no_platform)
    with pytest.raises(GpuperfError, match="none \\(OpenCL: no OpenCL platform \\(LogicError: clGetPlatformIDs failed"):
        canonical_device_name("opencl:0")


def test_a_device_whose_compiler_builds_nothing_is_one_error_when_it_is_opened(monkeypatch):
    """pocl's LLVM 14 on a CPU it does not know (AMD family 26) fails every build with "unknown target CPU
    'generic'": opening the device says so once, naming the device, its platform and the compiler's error,
    instead of every kernel of a campaign failing to compile on it."""
    import pyopencl as cl

    from gpuperf.measure.devices import OTHER_DEVICES, UNKNOWN_HOST_CPU
    from gpuperf.measure.opencl import OpenCLDevice

    class Program:
        def __init__(self, context, source: str) -> None:
            assert "__kernel" in source

        def build(self, *args, **kwargs):
            raise RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device>:\n\n"
                               "error: unknown target CPU 'generic'\nDevice failed to build the program")

    monkeypatch.setattr(cl, "Program", Program)
    with pytest.raises(GpuperfError) as raised:
        OpenCLDevice(0, 0)
    assert re.fullmatch(r"device 'opencl:0:0' \(.+\) cannot build OpenCL programs: error: unknown target CPU "
                        r"'generic' \((.+)\)", str(raised.value)).group(1) == UNKNOWN_HOST_CPU + OTHER_DEVICES
    assert OTHER_DEVICES == "; gpuperf devices lists the others"  # where to find a device that measures


class _BuildsNothing:
    """pyopencl.Program on a compiler that knows not the CPU: every build fails; the sources asked for are kept."""

    sources: list[str] = []

    def __init__(self, context, source: str) -> None:
        self.sources.append(source)

    def build(self, *args, **kwargs):
        raise RuntimeError("clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\nBuild on <pyopencl.Device>:\n\n"
                           "error: unknown target CPU 'generic'\nDevice failed to build the program")


def test_devices_says_which_device_cannot_build_kernels_and_why(monkeypatch, capsys):
    """devices listed an OpenCL device whose compiler builds nothing (pocl's LLVM 14 on a CPU it does not
    know) as any other, and measuring on it then failed: each device's row now says it cannot build kernels
    with the compiler's first error and its hint, from one build per device of the program opening it builds.
    The hint names another device without pointing at gpuperf devices, the command showing it."""
    import json

    import pyopencl as cl
    from rich.console import Console

    from gpuperf.cli import main, output
    from gpuperf.measure.devices import UNKNOWN_HOST_CPU
    from gpuperf.measure.opencl import OpenCLDevice

    monkeypatch.setattr(_BuildsNothing, "sources", [])
    monkeypatch.setattr(cl, "Program", _BuildsNothing)
    assert main(["devices", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    opencl = [row for row in rows if row["device"].startswith("opencl")]
    reason = f"error: unknown target CPU 'generic' ({UNKNOWN_HOST_CPU})"
    assert len(opencl) >= 2 and all(row["cannot_build"] == reason for row in opencl)
    assert "another device, or another CPU OpenCL runtime" in reason and "gpuperf devices" not in reason
    assert "docs/measuring.md in gpuperf's source repository says how" in reason  # the way on: the page that says how to use Intel's CPU runtime
    assert len(_BuildsNothing.sources) == len(opencl) - 1  # one build per device: the alias opencl:0 takes its answer
    with pytest.raises(GpuperfError):
        OpenCLDevice(0, 0)
    assert len(set(_BuildsNothing.sources)) == 1  # the program opening a device builds
    monkeypatch.setattr(output, "console", Console(width=80, force_terminal=True, color_system=None))
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    assert "┃ cannot build kernels" in out
    body = [line for line in out.splitlines() if line.startswith("│")]
    assert all(len(line) == 80 for line in body)  # wrapped in the table at words, not by the terminal
    cells = [[cell.strip() for cell in line[1:-1].split("│")] for line in body]
    assert " ".join(" ".join(row[2] for row in cells).split()) == " ".join([reason] * len(opencl))


@pytest.mark.opencl
def test_devices_does_not_flag_a_device_that_builds_kernels(capsys):
    import json

    from gpuperf.cli import main

    assert main(["devices", "--json"]) == 0
    rows = {row["device"]: row for row in json.loads(capsys.readouterr().out)}
    # the marker checked that opencl:0 builds; another platform's device beside it may not (pocl on a CPU its
    # LLVM does not know, beside Intel's CPU runtime), and only that one is flagged
    default = rows["opencl:0"]["description"].removeprefix("same as ")
    assert rows["opencl:0"]["cannot_build"] is None and rows[default]["cannot_build"] is None
    assert main(["devices"]) == 0
    table = capsys.readouterr().out
    assert ("cannot build" in table) == any(row["cannot_build"] for row in rows.values())
