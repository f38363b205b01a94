"""Commands about hardware: GPU descriptors, compiled kernel resources, occupancy."""

from __future__ import annotations

from typing import Optional

import typer

from gpuperf.cli.output import boards_note, described_gpu, kernel_sizes, print_json, print_table
from gpuperf.errors import GpuperfError

GPU_COLUMNS = {
    "name": "GPU",
    "compute_capability": "cc / target",
    "sms": "SMs",
    "cores_per_sm": "cores/SM",
    "boost_clock_mhz": "boost MHz",
    "memory_bandwidth_gbs": "GB/s",
    "memory_gb": "GB",
    "l2_mib": "L2 MiB",
    "peak_f32_gflops": "f32 GFLOP/s",
    "peak_f64_gflops": "f64 GFLOP/s",
}


def gpus_command(
    as_json: bool = typer.Option(False, "--json", metavar="", help="print every field as JSON"),
) -> None:
    """List the GPUs gpuperf has descriptors for."""
    from gpuperf.hardware import gpus

    specs = gpus()
    if as_json:
        print_json([spec.as_dict() for spec in specs])
        return
    rows = [{**spec.as_dict(), "l2_mib": spec.l2_bytes / 2**20} for spec in specs]
    rows = [{label: _rounded(row[key]) for key, label in GPU_COLUMNS.items()} for row in rows]
    print_table(rows, title="GPU descriptors (gpuperf gpus --json for every field)")


def _rounded(value: object) -> object:
    """Large figures as whole numbers, so the table shows 19492 rather than 1.949e+04."""
    return round(value) if isinstance(value, float) and value >= 10000 else value


def resources_command(
    kernel: str = typer.Argument(..., help=r"catalog name, name\[param=value,...] or path/file.py:function"),
    params: Optional[list[str]] = typer.Option(None, "-p", "--param", help="size parameter, e.g. -p n=4096"),
    arch: Optional[str] = typer.Option(None, "--arch", help="sm_XX (default: the --gpu's, else sm_90)"),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="also compute the occupancy on this GPU"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Registers, shared memory and spills of a kernel, compiled with NVRTC, and the global loads and stores its machine code makes (SASS, by nvdisasm)."""
    from gpuperf.features.compiled import compiled_memory
    from gpuperf.features.occupancy import occupancy
    from gpuperf.features.resources import (
        DEFAULT_ARCH,
        arch_for_gpu,
        compile_resources,
        device_kernel_count,
        whole_program_error,
    )
    from gpuperf.hardware import get_gpu
    from gpuperf.kernels import get_kernel

    described_gpu(gpu)  # an empty --gpu is a mistake, not no GPU
    spec = get_gpu(gpu) if gpu is not None else None
    if spec is not None and spec.vendor != "NVIDIA":
        raise GpuperfError(f"--gpu {gpu}: NVRTC counts NVIDIA registers, which say nothing of {spec.vendor} VGPRs; "
                           "for an occupancy give the VGPRs to gpuperf occupancy --registers")
    found = get_kernel(kernel)
    sizes = kernel_sizes(found, params)
    count = device_kernel_count(found)
    if count > 1:
        raise whole_program_error(found, count)
    _, local = found.launch(sizes)
    threads = local[0] * local[1] * local[2]
    chosen_arch = arch or (arch_for_gpu(spec) if spec else DEFAULT_ARCH)
    used = compile_resources(found, chosen_arch)
    result = {"kernel": found.key, "sizes": sizes, "threads_per_block": threads, **used.as_dict()}
    try:
        machine = compiled_memory(found, used.arch)
    except GpuperfError as exc:  # the registers stand without the disassembler
        result["machine_code"], result["machine_code_error"] = None, str(exc)
    else:
        result["machine_code"] = {k: v for k, v in machine.as_dict().items() if k not in ("arch", "function")}
    if spec:
        fit = occupancy(spec, threads, used.registers, used.shared_memory_bytes)
        result["gpu"] = spec.name
        own = f"sm_{spec.cc_version[0]}{spec.cc_version[1]}" if spec.cc_version else None
        if arch is not None and own is not None and used.arch != own:  # own may be older than NVRTC compiles for
            import sys

            note = (f"the occupancy on {spec.name} ({own}) uses the registers and shared memory compiled for "
                    f"{used.arch}")
            result["notes"] = [note]
            print(f"note: {note}", file=sys.stderr)
        result["occupancy"] = {k: v for k, v in fit.as_dict().items() if k != "block_limits"}
        named = boards_note(gpu)
        if named:
            result["notes"] = [*result.get("notes", []), named]
    if as_json:
        print_json(result)
        return
    rows = [{"quantity": key, "value": value} for key, value in result.items() if not isinstance(value, dict)]
    rows += [{"quantity": f"machine_code.{k}", "value": v} for k, v in (result["machine_code"] or {}).items()]
    rows += [{"quantity": f"occupancy.{k}", "value": v} for k, v in result.get("occupancy", {}).items()]
    print_table(rows, title=f"{found.key}: resources for {used.arch} (NVRTC)")


def occupancy_command(
    gpu: str = typer.Option(..., "--gpu", help="GPU name or alias (see gpuperf gpus)"),
    threads: int = typer.Option(..., "--threads", help="threads per block"),
    registers: int = typer.Option(..., "--registers", help="registers per thread (AMD: VGPRs)"),
    smem: int = typer.Option(0, "--smem", help="shared memory per block, bytes"),
    as_json: bool = typer.Option(False, "--json", metavar="", help="print JSON"),
) -> None:
    """Occupancy by the CUDA occupancy calculator's rules (AMD GPUs: LLVM's AMDGPU rules, per CU or, on RDNA, per work-group processor of two CUs)."""
    from gpuperf.features.occupancy import occupancy
    from gpuperf.hardware import get_gpu

    described_gpu(gpu, required=True)
    spec = get_gpu(gpu)
    fit = occupancy(spec, threads, registers, smem)
    boards_note(gpu)  # on stderr: the JSON has no notes
    if as_json:
        print_json({"gpu": spec.name, **fit.as_dict()})
        return
    rows = [{"quantity": key, "value": value} for key, value in fit.as_dict().items() if key != "block_limits"]
    rows += [{"quantity": f"blocks allowed by {k}", "value": v if v is not None else "no limit"} for k, v in fit.block_limits.items()]
    print_table(rows, title=f"occupancy on {spec.name}: {threads} threads, {registers} registers, {smem} B shared")


def register(app: typer.Typer) -> None:
    """Add this area's commands to ``app``."""
    app.command("gpus")(gpus_command)
    app.command("resources")(resources_command)
    app.command("occupancy")(occupancy_command)
