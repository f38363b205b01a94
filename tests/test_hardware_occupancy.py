"""The CUDA occupancy calculator, against cases worked out by hand from its rules.

Rules (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor):
  R1 warps:    blocks <= (max_threads_per_sm / 32) // ceil(threads / 32)
  R2 registers: per warp ceil32(regs) = roundup(regs * 32, 256); per sub-partition
                (65536 / 4 registers; 2 sub-partitions on cc 6.0) fit floor(16384 / per-warp) warps;
                blocks <= (warps per sub-partition x 4) // warps per block
  R3 shared:   per block roundup(smem + reserved, granularity); granularity 256 B before cc 8.0,
                128 B from cc 8.0, where 1 KiB per block is reserved; blocks <= smem per SM // that
  R4 blocks:   blocks <= max blocks per SM (16 on cc 3.x / 7.5 / 8.6, 24 on 8.9 / 12.0, 32 on 5.x-7.0 / 8.0 /
               9.0 / 10.0)
"""

from __future__ import annotations

import random
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from gpuperf.errors import GpuperfError
from gpuperf.features.occupancy import occupancy
from gpuperf.hardware import get_gpu, gpus

CASES = [
    # gpu, threads, registers, smem -> blocks, warps, occupancy, limiter
    # R1: 64 / 8 = 8 blocks; R2: 32 regs -> 1024 per warp, 16384 / 1024 = 16 warps x 4 = 64 -> 8; tie, full SM.
    ("V100", 256, 32, 0, 8, 64, 1.0, "warps"),
    # R2: 64 regs -> 2048 per warp, 16384 / 2048 = 8 warps x 4 = 32 warps -> 4 blocks of 8 warps = 50 %.
    ("A100", 256, 64, 0, 4, 32, 0.5, "registers"),
    # R2 granularity: 33 regs -> 1056 -> 1280 per warp, 16384 / 1280 = 12 warps x 4 = 48 -> 6 blocks, 75 %.
    ("V100", 256, 33, 0, 6, 48, 0.75, "registers"),
    # R3: (49152 + 1024 reserved) = 50176 per block; 167936 // 50176 = 3 blocks of 4 warps = 12 / 64.
    ("A100", 128, 32, 49152, 3, 12, 0.1875, "shared_memory"),
    # R3 reservation: 41984 + 1024 = 43008 -> 167936 // 43008 = 3 (4 without the reserved KiB).
    ("A100", 64, 32, 41984, 3, 6, 0.09375, "shared_memory"),
    # R3 on cc 7.0, no reservation: 41984 = 164 x 256 -> 98304 // 41984 = 2 blocks.
    ("V100", 64, 32, 41984, 2, 4, 0.0625, "shared_memory"),
    # R3 granularity on cc 7.5: 13100 -> 13312 (52 x 256); 65536 // 13312 = 4 (5 unrounded); 8 of 32 warps.
    ("RTX 2080 Ti", 64, 32, 13100, 4, 8, 0.25, "shared_memory"),
    # R4: one-warp blocks; R1 would allow 64, R4 stops at 32 -> 32 warps of 64.
    ("V100", 32, 32, 0, 32, 32, 0.5, "blocks"),
    # R4 on Kepler: 16 blocks of one warp = 16 of 64 warps.
    ("K40", 32, 32, 0, 16, 16, 0.25, "blocks"),
    # R2 at 255 regs: 8160 -> 8192 per warp, 2 warps per sub-partition x 4 = 8 warps -> 2 blocks of 4.
    ("K40", 128, 255, 0, 2, 8, 0.125, "registers"),
    # R2 with 2 sub-partitions (GP100): 192 regs -> 6144 per warp; 32768 // 6144 = 5 x 2 = 10 warps -> 5 blocks.
    ("Tesla P100 PCIe 12GB", 64, 192, 0, 5, 10, 0.15625, "registers"),
    # Same kernel on GP102 (4 sub-partitions): 16384 // 6144 = 2 x 4 = 8 warps -> 4 blocks.
    ("GTX 1080 Ti", 64, 192, 0, 4, 8, 0.125, "registers"),
    # cc 8.6: 1536 threads = 48 warps; 48 // 8 = 6 blocks of 256 threads, full SM.
    ("RTX 3090", 256, 32, 0, 6, 48, 1.0, "warps"),
    # cc 9.0: 227 KiB opt-in block + 1 KiB reserved fills the 228 KiB SM: one block.
    ("H100", 1024, 32, 232448, 1, 32, 0.5, "shared_memory"),
    # cc 12.0: 24 one-warp blocks of the 48 warp slots.
    ("RTX 5090", 32, 32, 0, 24, 24, 0.5, "blocks"),
    # cc 12.0: 99 KiB opt-in block + 1 KiB reserved fills the 100 KiB SM.
    ("RTX 5090", 256, 32, 101376, 1, 8, 8 / 48, "shared_memory"),
]


@pytest.mark.parametrize("gpu,threads,registers,smem,blocks,warps,fraction,limiter", CASES)
def test_hand_worked_cases(gpu, threads, registers, smem, blocks, warps, fraction, limiter):
    result = occupancy(get_gpu(gpu), threads, registers, smem)
    assert (result.active_blocks_per_sm, result.active_warps_per_sm) == (blocks, warps)
    assert result.occupancy == pytest.approx(fraction)
    assert result.limiter == limiter
    assert result.block_limits[limiter] == blocks


@pytest.mark.parametrize("gpu", ["V100", "Tesla P100 PCIe 12GB"])
def test_no_registers_and_no_shared_memory_impose_no_limit(gpu):
    result = occupancy(get_gpu(gpu), 128, 0, 0)
    assert result.block_limits["registers"] is None and result.block_limits["shared_memory"] is None
    assert result.active_blocks_per_sm == 16


@pytest.mark.parametrize(
    "gpu,threads,registers,smem,message",
    [
        ("V100", 2048, 32, 0, r"threads per block 2048 is outside 1\.\.1024"),
        ("V100", 0, 32, 0, r"threads per block 0 is outside"),
        ("V100", 256, 256, 0, r"registers per thread 256 is outside 0\.\.255"),
        ("GTX 680", 256, 64, 0, r"registers per thread 64 is outside 0\.\.63"),
        ("V100", 256, 32, 98305, r"shared memory per block 98305 bytes is outside 0\.\.98304"),
        ("A100", 1024, 65, 0, r"1024 threads x 65 registers needs more than the 65536"),
        ("W7800", 256, 257, 0, r"registers per thread 257 is outside 0\.\.256"),
        ("MI50", 1024, 256, 0, r"work-group of 1024 work-items x 256 VGPRs needs more VGPRs than its CU"),
    ],
)
def test_invalid_launches_are_refused_clearly(gpu, threads, registers, smem, message):
    with pytest.raises(GpuperfError, match=message):
        occupancy(get_gpu(gpu), threads, registers, smem)


HARNESS = r"""
#include <cstdio>
#include "cuda_occupancy.h"
int main() {
  int major, minor, maxTpb, maxTpsm, regsSm, threads, regs;
  long smemSm, smemOptin, reserved, smem;
  while (scanf("%d %d %d %d %d %ld %ld %ld %d %d %ld", &major, &minor, &maxTpb, &maxTpsm, &regsSm, &smemSm,
               &smemOptin, &reserved, &threads, &regs, &smem) == 11) {
    cudaOccDeviceProp prop;
    prop.computeMajor = major; prop.computeMinor = minor;
    prop.maxThreadsPerBlock = maxTpb; prop.maxThreadsPerMultiprocessor = maxTpsm;
    prop.regsPerBlock = 65536; prop.regsPerMultiprocessor = regsSm; prop.warpSize = 32;
    prop.sharedMemPerBlock = 49152; prop.sharedMemPerMultiprocessor = smemSm; prop.numSms = 1;
    prop.sharedMemPerBlockOptin = smemOptin; prop.reservedSharedMemPerBlock = reserved;
    cudaOccFuncAttributes attr;
    attr.maxThreadsPerBlock = maxTpb; attr.numRegs = regs; attr.sharedSizeBytes = 0;
    attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN; attr.maxDynamicSharedSizeBytes = smemOptin;
    cudaOccDeviceState state;
    cudaOccResult result;
    int err = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &prop, &attr, &state, threads, smem);
    printf("%d %d %u\n", err, result.activeBlocksPerMultiprocessor, result.limitingFactors);
  }
  return 0;
}
"""
LIMITER_BITS = {"warps": 1, "registers": 2, "shared_memory": 4, "blocks": 8}


def _occupancy_header() -> Path | None:
    for root in sorted(Path("/usr/local").glob("cuda*/include"), reverse=True):
        if (root / "cuda_occupancy.h").exists():
            return root
    return None


@pytest.mark.skipif(_occupancy_header() is None or shutil.which("g++") is None, reason="needs the CUDA toolkit's cuda_occupancy.h and g++")
def test_agrees_with_the_cuda_toolkit_calculator(tmp_path):
    source = tmp_path / "occ.cpp"
    source.write_text(HARNESS)
    binary = tmp_path / "occ"
    subprocess.run(["g++", "-O1", f"-I{_occupancy_header()}", str(source), "-o", str(binary)], check=True)
    rng = random.Random(7)
    cases = []
    for gpu in (g for g in gpus() if g.vendor == "NVIDIA"):
        major, minor = gpu.cc_version
        for _ in range(150):
            threads = rng.choice([32, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 1024, rng.randint(1, 1024)])
            registers = rng.choice([0, 16, 24, 32, 33, 40, 48, 64, 72, 96, 128, 168, 192, 255, rng.randint(1, 255)])
            registers = min(registers, gpu.max_registers_per_thread)
            smem = rng.choice([0, 0, 1, 1000, 4096, 13100, 16384, 41984, 49152, rng.randint(0, gpu.max_shared_memory_per_block_bytes)])
            smem = min(smem, gpu.max_shared_memory_per_block_bytes)
            cases.append((gpu, threads, registers, smem))
    lines = [
        f"{g.cc_version[0]} {g.cc_version[1]} {g.max_threads_per_block} {g.max_threads_per_sm} {g.registers_per_sm} "
        f"{g.shared_memory_per_sm_bytes} {g.max_shared_memory_per_block_bytes} {1024 if g.cc_version[0] >= 8 else 0} "
        f"{t} {r} {s}"
        for g, t, r, s in cases
    ]
    output = subprocess.run([str(binary)], input="\n".join(lines) + "\n", capture_output=True, text=True, check=True)
    results = [tuple(int(v) for v in line.split()) for line in output.stdout.splitlines()]
    assert len(results) == len(cases)
    for (gpu, threads, registers, smem), (error, blocks, bits) in zip(cases, results):
        assert error == 0
        label = f"{gpu.name} {threads} threads {registers} regs {smem} B"
        if blocks == 0:
            with pytest.raises(GpuperfError):
                occupancy(gpu, threads, registers, smem)
            continue
        result = occupancy(gpu, threads, registers, smem)
        assert result.active_blocks_per_sm == blocks, label
        assert bits & LIMITER_BITS[result.limiter], label


@pytest.mark.parametrize(
    "gpu,threads,vgprs,lds,blocks,limiter,unit",
    [
        # llvm-calc-occupancy's documented example: gfx90a, 512 work-items, 50 VGPRs -> 8 waves per SIMD
        ("MI250X", 512, 50, 0, 4, "warps", "CU"),
        # gfx906: 90 VGPRs round up to 92, 256 // 92 = 2 waves per SIMD; 3-wave groups: 8 waves // 3
        ("MI50", 192, 90, 0, 2, "registers", "CU"),
        # one-wavefront work-groups are limited only by the 40 wave slots of a gfx906 CU
        ("MI50", 64, 0, 0, 40, "warps", "CU"),
        # larger ones by the 16 barriers of a CU
        ("MI50", 128, 0, 0, 16, "blocks", "CU"),
        # RDNA in WGP mode: 4 SIMDs x 16 wave32 slots, 128 KiB LDS; 40 KiB per group -> 3 groups
        ("W6600", 256, 32, 40 * 1024, 3, "shared_memory", "WGP"),
        ("W6600", 256, 32, 0, 8, "warps", "WGP"),
        # gfx1100: 1536 VGPRs per SIMD, granule 24: 100 VGPRs -> 120, 12 waves per SIMD, 48 per WGP
        ("W7800", 1024, 100, 0, 1, "registers", "WGP"),
        ("W7800", 128, 100, 0, 12, "registers", "WGP"),
    ],
)
def test_amd_work_groups_follow_llvms_amdgpu_rules(gpu, threads, vgprs, lds, blocks, limiter, unit):
    result = occupancy(get_gpu(gpu), threads, vgprs, lds)
    assert (result.active_blocks_per_sm, result.limiter, result.unit) == (blocks, limiter, unit)
    waves = -(-threads // get_gpu(gpu).warp_size)
    assert result.active_warps_per_sm == blocks * waves


def test_the_mi250x_example_fills_8_waves_per_simd():
    result = occupancy(get_gpu("MI250X"), 512, 50, 0)
    assert result.active_warps_per_sm / 4 == 8 and result.occupancy == 1.0


def test_register_check_rounds_warps_up_to_the_sub_partitions():
    from gpuperf.features.occupancy import occupancy
    from gpuperf.hardware.specs import get_gpu

    # An SM with 128 K registers (GK210) but at most 64 K per block. 800 threads = 25 warps x 80
    # registers: 2560 per warp; 25 x 2560 = 64000 fits, but the hardware checks 28 warps (25 rounded
    # up to 4 sub-partitions): 28 x 2560 = 71680 > 65536, so the block cannot launch.
    gpu = replace(get_gpu("Tesla K40"), registers_per_sm=131072)
    with pytest.raises(GpuperfError, match="registers one block may use"):
        occupancy(gpu, 800, 80)
    # 24 warps x 2560 = 61440 fits: 32768 // 2560 = 12 warps per sub-partition, 48 // 24 = 2 blocks.
    assert occupancy(gpu, 768, 80).block_limits["registers"] == 2


def test_amd_waves_of_a_work_group_are_spread_over_simds_rounding_up():
    """gfx906 (MI50): 128 VGPRs -> 256 // 128 = 2 waves per SIMD. 576 work-items are 9 wave64s over 4
    SIMDs: one SIMD must hold ceil(9 / 4) = 3 > 2, so the group cannot be placed (floor(9 / 4) = 2
    would wrongly let it). 512 work-items (8 waves, 2 per SIMD) fit: 4 x 2 // 8 = 1 group."""
    with pytest.raises(GpuperfError, match="work-group of 576 work-items x 128 VGPRs needs more VGPRs"):
        occupancy(get_gpu("MI50"), 576, 128, 0)
    assert occupancy(get_gpu("MI50"), 512, 128, 0).active_blocks_per_sm == 1


def test_amd_lds_is_allocated_in_512_byte_granules():
    """2100 bytes of LDS a work-group take 2560: 65536 // 2560 = 25 work-groups a CU (not 31)."""
    result = occupancy(get_gpu("MI250X"), 64, 0, 2100)
    assert result.block_limits["shared_memory"] == 25 and result.active_blocks_per_sm == 25


def test_gp100_refuses_a_block_of_registers_gp10x_cannot_run():
    """320 threads x 192 registers: GP10x's four register sub-partitions hold 8 such warps, not 10;
    cuda_occupancy.h refuses the block on GP100 (two sub-partitions) as well."""
    with pytest.raises(GpuperfError, match="a block of 320 threads x 192 registers needs more than"):
        occupancy(get_gpu("Tesla P100 PCIe 12GB"), 320, 192, 0)
    assert occupancy(get_gpu("Tesla P100 PCIe 12GB"), 256, 192, 0).active_blocks_per_sm == 1


def test_an_embedded_gpu_gives_one_block_half_the_register_file():
    """cc 5.3 (Jetson Nano, TX1): at most 32768 registers a block. 1024 threads x 64 registers need
    65536: refused there, run on a GTX 980 (cc 5.2); 512 threads fit both."""
    nano = replace(get_gpu("GTX 980"), name="Jetson Nano", compute_capability="5.3", sms=1)
    with pytest.raises(GpuperfError, match="needs more than the 32768 registers one block may use on Jetson Nano"):
        occupancy(nano, 1024, 64)
    assert occupancy(get_gpu("GTX 980"), 1024, 64).active_blocks_per_sm == 1
    assert occupancy(nano, 512, 64).active_blocks_per_sm == 2
