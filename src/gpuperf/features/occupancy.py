"""The CUDA occupancy calculator: how many blocks of a kernel fit on one SM at a time.

Follows the rules of NVIDIA's occupancy calculator as written in the CUDA toolkit's
``cuda_occupancy.h`` (``cudaOccMaxActiveBlocksPerMultiprocessor``; CUDA 13.0's, which covers
Blackwell) for compute capability 3.0 to 12.x, with the default cache / shared-memory carve-out preference, partitioned global caching
off and no block barriers beyond ``__syncthreads``:

* registers are allocated per warp, ``regs x 32`` rounded up to 256; each SM's register file is
  split among its sub-partitions (4; 2 on cc 6.0), and warps are placed per sub-partition;
* shared memory is allocated per block in units of 256 bytes (128 on cc >= 8.0), and from cc 8.0
  the driver reserves 1 KiB of it per block;
* at most ``max_threads_per_sm / 32`` warps and ``max_blocks_per_sm`` blocks live on an SM.
The SM capacities come from the GPU's descriptor; a block may use shared memory up to the
descriptor's (opt-in) per-block maximum.

AMD GPUs follow LLVM's AMDGPU occupancy model (``AMDGPUBaseInfo.cpp``: ``getMaxWavesPerEU``,
``getVGPRAllocGranule``, ``getTotalNumVGPRs``, ``getMaxWorkGroupsPerCU``; ``GCNSubtarget``'s
occupancy with VGPRs and LDS), with VGPRs as the registers per thread:

* a work-group's wavefronts are placed on the unit's SIMDs (4 per CU on GCN and CDNA; RDNA
  compiles in WGP mode, where a work-group processor of two CUs, 4 SIMDs, is the unit, as HIP's
  ``multiProcessorCount`` counts it); each SIMD holds ``waves_per_simd`` wavefronts, fewer when
  VGPRs (rounded up to the target's granule) run out;
* LDS is allocated per work-group in 512-byte units from 64 KiB per CU (128 KiB per WGP);
* work-groups of more than one wavefront are limited by the barriers, 16 per CU (32 per WGP).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpuperf.errors import GpuperfError, whole_number
from gpuperf.hardware.specs import GpuSpec

LIMITERS = ("warps", "registers", "shared_memory", "blocks")
REGISTER_ALLOCATION_UNIT = 256  # registers, per warp
MAX_REGISTERS_PER_BLOCK = 65536  # cc 3.0 to 12.x, but for the embedded GPUs below
HALF_REGISTER_FILE_PER_BLOCK = ((3, 2), (5, 3), (6, 2))  # Tegra K1, X1 (Jetson Nano, TX1), X2 (TX2): 32768
SUPPORTED_MAJORS = (3, 5, 6, 7, 8, 9, 10, 11, 12)


@dataclass(frozen=True)
class Occupancy:
    """Blocks and warps resident per SM, as a fraction of the SM's warp slots (AMD: work-groups and
    wavefronts per ``unit``, a CU or, on RDNA, a work-group processor of two CUs)."""

    occupancy: float
    active_blocks_per_sm: int
    active_warps_per_sm: int
    limiter: str
    block_limits: dict[str, int | None]  # blocks per SM each resource alone allows (None: no limit)
    unit: str = "SM"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class AmdCompute:
    """The wavefront resources of one CU of an AMD gfx target (LLVM's AMDGPUBaseInfo.cpp)."""

    simds_per_cu: int
    waves_per_simd: int  # getMaxWavesPerEU
    vgprs_per_simd: int  # getTotalNumVGPRs at the GPU's wavefront size
    vgpr_granule: int  # getVGPRAllocGranule at that wavefront size
    wgp_mode: bool  # RDNA: work-groups are placed on a work-group processor of two CUs


AMD_COMPUTE = {
    "gfx906": AmdCompute(simds_per_cu=4, waves_per_simd=10, vgprs_per_simd=256, vgpr_granule=4, wgp_mode=False),
    "gfx90a": AmdCompute(simds_per_cu=4, waves_per_simd=8, vgprs_per_simd=512, vgpr_granule=8, wgp_mode=False),
    "gfx942": AmdCompute(simds_per_cu=4, waves_per_simd=8, vgprs_per_simd=512, vgpr_granule=8, wgp_mode=False),
    "gfx1032": AmdCompute(simds_per_cu=2, waves_per_simd=16, vgprs_per_simd=1024, vgpr_granule=16, wgp_mode=True),
    "gfx1100": AmdCompute(simds_per_cu=2, waves_per_simd=16, vgprs_per_simd=1536, vgpr_granule=24, wgp_mode=True),
}
AMD_LDS_GRANULE = 512  # bytes
AMD_BARRIERS_PER_CU = 16  # work-groups of more than one wavefront (getMaxWorkGroupsPerCU)


def amd_compute(gpu: GpuSpec) -> AmdCompute:
    """The wavefront resources of an AMD GPU's gfx target (error for targets not described)."""
    if gpu.vendor != "AMD" or not has_rules(gpu):
        raise GpuperfError(
            f"AMD occupancy rules cover {', '.join(AMD_COMPUTE)}; '{gpu.name}' is {gpu.compute_capability}"
        )
    return AMD_COMPUTE[gpu.compute_capability]


def has_rules(gpu: GpuSpec) -> bool:
    """Whether the occupancy rules here cover ``gpu`` (its compute capability or gfx target)."""
    if gpu.vendor == "AMD":
        return gpu.compute_capability in AMD_COMPUTE
    return gpu.cc_version is not None and gpu.cc_version[0] in SUPPORTED_MAJORS


def cus_per_unit(gpu: GpuSpec) -> int:
    """CUs in the unit work-groups are placed on: 2 for RDNA's work-group processor, else 1 (and 1
    for an NVIDIA SM)."""
    return 2 if gpu.vendor == "AMD" and amd_compute(gpu).wgp_mode else 1


def register_sub_partitions(cc: tuple[int, int]) -> int:
    """SM sub-partitions registers are split among (cuda_occupancy.h: 2 on GP100, else 4)."""
    return 2 if cc == (6, 0) else 4


def shared_memory_granularity(cc: tuple[int, int]) -> int:
    """Bytes shared memory is allocated in per block (cuda_occupancy.h)."""
    return 128 if cc[0] >= 8 else 256


def reserved_shared_memory_per_block(cc: tuple[int, int]) -> int:
    """Shared memory the CUDA driver reserves per block (1 KiB from cc 8.0)."""
    return 1024 if cc[0] >= 8 else 0


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _compute_capability(gpu: GpuSpec) -> tuple[int, int]:
    cc = gpu.cc_version
    if gpu.vendor != "NVIDIA" or cc is None:
        raise GpuperfError(
            f"the CUDA occupancy calculator covers NVIDIA GPUs; '{gpu.name}' is {gpu.vendor} ({gpu.compute_capability})"
        )
    if not has_rules(gpu):
        raise GpuperfError(f"occupancy rules cover compute capability 3.0 to 12.x; '{gpu.name}' has {gpu.compute_capability}")
    return cc


def max_registers_per_block(cc: tuple[int, int]) -> int:
    """The registers one block may use (the CUDA programming guide's table of compute capabilities)."""
    return MAX_REGISTERS_PER_BLOCK // 2 if cc in HALF_REGISTER_FILE_PER_BLOCK else MAX_REGISTERS_PER_BLOCK


def _register_block_limit(gpu: GpuSpec, cc: tuple[int, int], warps_per_block: int, registers: int) -> int | None:
    """Blocks per SM the register file allows (0 if one block cannot get its registers)."""
    registers_per_warp = _round_up(registers * gpu.warp_size, REGISTER_ALLOCATION_UNIT)
    if registers_per_warp == 0:
        return None
    partitions = register_sub_partitions(cc)
    # The hardware checks a block's registers as if its warps filled every sub-partition.
    if registers_per_warp * _round_up(warps_per_block, partitions) > max_registers_per_block(cc):
        return 0
    warps_per_partition = (gpu.registers_per_sm // partitions) // registers_per_warp
    return warps_per_partition * partitions // warps_per_block


def check_block_limits(gpu: GpuSpec, threads_per_block: int, registers_per_thread: int,
                       shared_memory_per_block: int) -> None:
    """An error naming the first per-block limit of ``gpu``'s descriptor a block exceeds (threads,
    registers per thread, shared memory): such a block cannot launch. A limit the descriptor lacks
    is not checked."""
    limits = (("threads per block", threads_per_block, 1, gpu.max_threads_per_block, ""),
              ("registers per thread", registers_per_thread, 0, gpu.max_registers_per_thread, ""),
              ("shared memory per block", shared_memory_per_block, 0, gpu.max_shared_memory_per_block_bytes, " bytes"))
    for what, value, least, most, unit in limits:
        if most is not None and not least <= value <= most:
            raise GpuperfError(f"{what} {value}{unit} is outside {least}..{most} allowed on {gpu.name}")


def occupancy(
    gpu: GpuSpec, threads_per_block: int, registers_per_thread: int, shared_memory_per_block: int = 0
) -> Occupancy:
    """Occupancy of blocks of ``threads_per_block`` threads, each thread using
    ``registers_per_thread`` registers and each block ``shared_memory_per_block`` bytes."""
    threads_per_block, registers_per_thread, shared_memory_per_block = (
        whole_number(threads_per_block, "threads per block"),
        whole_number(registers_per_thread, "registers per thread"),
        whole_number(shared_memory_per_block, "shared memory per block"),
    )
    if gpu.vendor == "AMD":
        return amd_occupancy(gpu, threads_per_block, registers_per_thread, shared_memory_per_block)
    cc = _compute_capability(gpu)
    check_block_limits(gpu, threads_per_block, registers_per_thread, shared_memory_per_block)
    warps_per_block = -(-threads_per_block // gpu.warp_size)
    max_warps = gpu.max_threads_per_sm // gpu.warp_size

    registers = _register_block_limit(gpu, cc, warps_per_block, registers_per_thread)
    if cc == (6, 0) and _register_block_limit(gpu, (6, 1), warps_per_block, registers_per_thread) == 0:
        registers = 0  # cuda_occupancy.h: what cannot run on GP10x is refused on GP100 too
    if registers == 0:
        raise GpuperfError(
            f"a block of {threads_per_block} threads x {registers_per_thread} registers needs more than the "
            f"{max_registers_per_block(cc)} registers one block may use on {gpu.name}"
        )
    shared = _round_up(shared_memory_per_block + reserved_shared_memory_per_block(cc), shared_memory_granularity(cc))
    limits = {
        "warps": max_warps // warps_per_block,
        "registers": registers,
        "shared_memory": gpu.shared_memory_per_sm_bytes // shared if shared else None,
        "blocks": gpu.max_blocks_per_sm,
    }
    blocks = min(value for value in limits.values() if value is not None)
    warps = blocks * warps_per_block
    limiter = next(name for name in LIMITERS if limits[name] == blocks)
    return Occupancy(
        occupancy=warps / max_warps,
        active_blocks_per_sm=blocks,
        active_warps_per_sm=warps,
        limiter=limiter,
        block_limits=limits,
    )


def amd_occupancy(gpu: GpuSpec, threads: int, vgprs: int, lds_bytes: int) -> Occupancy:
    """Work-groups and wavefronts resident per CU (per work-group processor on RDNA) by LLVM's
    AMDGPU rules (see the module docstring); ``vgprs`` per work-item, ``lds_bytes`` per work-group."""
    compute = amd_compute(gpu)
    check_block_limits(gpu, threads, vgprs, lds_bytes)
    cus = cus_per_unit(gpu)
    simds = compute.simds_per_cu * cus
    slots = simds * compute.waves_per_simd
    waves = -(-threads // gpu.warp_size)
    if vgprs == 0:
        waves_per_simd = compute.waves_per_simd
    else:
        waves_per_simd = min(compute.waves_per_simd, compute.vgprs_per_simd // _round_up(vgprs, compute.vgpr_granule))
    if -(-waves // simds) > waves_per_simd:
        raise GpuperfError(
            f"a work-group of {threads} work-items x {vgprs} VGPRs needs more VGPRs than its "
            f"{'work-group processor' if cus == 2 else 'CU'}'s SIMDs hold on {gpu.name}"
        )
    lds = _round_up(lds_bytes, AMD_LDS_GRANULE)
    limits = {
        "warps": slots // waves,
        "registers": simds * waves_per_simd // waves,
        "shared_memory": gpu.shared_memory_per_sm_bytes * cus // lds if lds else None,
        "blocks": AMD_BARRIERS_PER_CU * cus if waves > 1 else None,
    }
    blocks = min(value for value in limits.values() if value is not None)
    limiter = next(name for name in LIMITERS if limits[name] == blocks)
    return Occupancy(
        occupancy=blocks * waves / slots,
        active_blocks_per_sm=blocks,
        active_warps_per_sm=blocks * waves,
        limiter=limiter,
        block_limits=limits,
        unit="WGP" if cus == 2 else "CU",
    )
