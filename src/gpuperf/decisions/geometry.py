"""Launch geometry: how many threads per block and how many blocks to launch a parallel loop with.

A loop of ``trip`` independent iterations (one per thread, or a grid-stride loop when fewer
threads are launched) is described by a :class:`KernelDescriptor` (registers per thread, shared
memory per block, trip count); the GPU by a :class:`DeviceDescriptor`. Policies:

* ``heuristic`` (Lloyd et al.): *short* loops (trip <= SMs) get ``trip`` blocks of one thread;
  *ideal* loops ``ceil(trip / tpb)`` blocks of the preferred ``tpb`` threads; *long* loops, whose
  ideal grid exceeds what the GPU holds at once, are capped at the maximum resident blocks
  (SMs x blocks per SM that the registers and shared memory allow) and loop over the rest;
* ``llvm``: LLVM's default work-group size for the GPU's vendor (``GV_Default_WG_Size`` in
  llvm/Frontend/OpenMP/OMPGridValues.h: 128 threads on NVIDIA, 256 on AMD) and ``ceil(trip / threads)``
  blocks;
* ``libomptarget``: the NVIDIA plugin's rule for a combined ``teams distribute parallel for``
  (``GenericKernelTy::getNumBlocks``): 128 threads; below 3200 x 128 iterations the threads drop
  to a power of two so that 3200 blocks would do, and to 32 below 3200 x 32 iterations (so 128
  iterations run as 4 blocks of 32); blocks ``ceil(trip / threads)``, at most 3200 when blocks
  are reused for high trip counts;
* ``occupancy``: ``cudaOccupancyMaxPotentialBlockSize``'s choice, the block size (a multiple of
  the warp) with the highest occupancy, the largest on ties, and ``ceil(trip / threads)`` blocks
  (on AMD GPUs by LLVM's AMDGPU occupancy rules);
* ``model``: a learned time model (see :mod:`gpuperf.decisions.geometry_model`) picks the threads,
  and ``ceil(trip / threads)`` blocks (not the sweep's forest of :mod:`gpuperf.decisions.geometry_sweep`,
  which picks blocks too).
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import asdict, dataclass, replace

from gpuperf.errors import GpuperfError, GpuperfNote, unknown_name_error, whole_number
from gpuperf.features.occupancy import check_block_limits, cus_per_unit, has_rules, occupancy
from gpuperf.hardware.specs import GpuSpec, descriptor_file, get_gpu

POLICIES = ("heuristic", "llvm", "libomptarget", "occupancy", "model")
LLVM_THREADS = 128  # NVPTXGridValues.GV_Default_WG_Size (llvm/Frontend/OpenMP/OMPGridValues.h)
LLVM_AMD_THREADS = 256  # AMDGPUGridValues.GV_Default_WG_Size, wave64 and wave32 alike
# libomptarget's NVPTX grid values (llvm/Frontend/OpenMP/OMPGridValues.h).
OMP_DEFAULT_THREADS = 128
OMP_DEFAULT_BLOCKS = 3200
OMP_MAX_BLOCKS = 1 << 16
OMP_MIN_THREADS_LOW_TRIP = 32
DEFAULT_REGISTERS = 32
PER_SM_LIMITS = ("max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm")  # optional fields geometry needs


@dataclass(frozen=True, eq=False)
class DeviceDescriptor:
    """What a launch-geometry policy needs to know about a GPU (compared and hashed by identity,
    so caches keyed on it stay cheap; :func:`device_descriptor` keeps one per GPU name)."""

    name: str
    sms: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    registers_per_sm: int
    shared_memory_per_sm_bytes: int
    max_threads_per_block: int
    warp_size: int
    preferred_threads_per_block: int
    spec: GpuSpec | None = None
    unit: str = "SM"

    @classmethod
    def from_spec(cls, spec: GpuSpec, preferred_threads_per_block: int | None = None) -> "DeviceDescriptor":
        """A GPU descriptor's limits per unit blocks are placed on (an SM; on AMD a CU, or on RDNA a
        work-group processor of two CUs, as HIP counts multiprocessors); the preferred block is the
        smallest that can fill a unit's thread slots within its block limit
        (``max_threads_per_sm / max_blocks_per_sm``, whole warps)."""
        lacking = [name for name in PER_SM_LIMITS if getattr(spec, name) is None]
        if lacking:
            where = descriptor_file(spec)
            raise GpuperfError(f"{where + ': ' if where else ''}GPU '{spec.name}' lacks field {', '.join(lacking)}, which "
                               "launch geometry needs (threads, blocks and registers per SM or CU); give "
                               f"{'it' if len(lacking) == 1 else 'them'} in its entry")
        ruled = has_rules(spec)
        if not ruled:  # a user's GPU of a target the rules do not know: its plain limits stand
            target = spec.compute_capability or "no compute capability"
            warnings.warn(GpuperfNote(f"no occupancy rules for {spec.name} ({target}): resident blocks follow its "
                                      "descriptor's plain per-SM limits"), stacklevel=2)
        cus = cus_per_unit(spec) if ruled else 1
        threads, blocks = spec.max_threads_per_sm * cus, spec.max_blocks_per_sm * cus
        preferred = preferred_threads_per_block or max(spec.warp_size, _round_up(-(-threads // blocks), spec.warp_size))
        return cls(
            name=spec.name,
            sms=spec.sms // cus,
            max_threads_per_sm=threads,
            max_blocks_per_sm=blocks,
            registers_per_sm=spec.registers_per_sm * cus,
            shared_memory_per_sm_bytes=spec.shared_memory_per_sm_bytes * cus,
            max_threads_per_block=spec.max_threads_per_block,
            warp_size=spec.warp_size,
            preferred_threads_per_block=min(preferred, spec.max_threads_per_block),
            spec=spec,
            unit="SM" if spec.vendor == "NVIDIA" else ("WGP" if cus == 2 else "CU"),
        )

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in asdict(self).items() if k != "spec"}


@dataclass(slots=True)
class KernelDescriptor:
    """Resources of one thread / block and the loop's parallelism (its trip count)."""

    trip: int
    registers: int = DEFAULT_REGISTERS
    shared_memory_bytes: int = 0

    def __post_init__(self) -> None:
        self.trip = whole_number(self.trip, "trip count")
        self.registers = whole_number(self.registers, "registers")
        self.shared_memory_bytes = whole_number(self.shared_memory_bytes, "shared memory bytes")
        if self.trip < 1:
            raise GpuperfError(f"trip count {self.trip} must be at least 1")
        if self.registers < 0:
            raise GpuperfError(f"registers per thread {self.registers} must not be negative")
        if self.shared_memory_bytes < 0:
            raise GpuperfError(f"shared memory per block {self.shared_memory_bytes} bytes must not be negative")


@dataclass(slots=True)
class Geometry:
    """A launch: ``blocks`` blocks of ``threads`` threads; ``loop_class`` short, ideal or long."""

    threads: int
    blocks: int
    loop_class: str
    policy: str

    def as_dict(self) -> dict[str, object]:
        return {"threads": self.threads, "blocks": self.blocks, "class": self.loop_class, "policy": self.policy}


def device_descriptor(gpu: str | GpuSpec | DeviceDescriptor) -> DeviceDescriptor:
    """The descriptor of a GPU given by name, spec or descriptor (cached per name and spelling, read
    again when the user's GPU files change)."""
    if isinstance(gpu, DeviceDescriptor):
        return gpu
    if isinstance(gpu, GpuSpec):
        return DeviceDescriptor.from_spec(gpu)
    from gpuperf.hardware.specs import descriptors_state

    state = descriptors_state()  # once a call: it reads the user's GPU files' modification times
    if not isinstance(gpu, str):
        return _descriptor_by_name(get_gpu(gpu).name, state)
    return _descriptor_by_spelling(gpu, state)


@functools.lru_cache(maxsize=256)
def _descriptor_by_spelling(spelling: str, state: tuple) -> DeviceDescriptor:
    """The descriptor ``spelling`` names: the one :func:`_descriptor_by_name` keeps for its GPU."""
    return _descriptor_by_name(get_gpu(spelling).name, state)


@functools.cache
def _descriptor_by_name(name: str, state: tuple) -> DeviceDescriptor:
    """``name``'s descriptor; ``state`` (the user's GPU files as they are now) is part of the cache's key alone."""
    return DeviceDescriptor.from_spec(get_gpu(name))


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@functools.lru_cache(maxsize=4096)
def resident_blocks_per_sm(device: DeviceDescriptor, threads: int, registers: int, shared_memory_bytes: int) -> int:
    """Blocks of this shape one SM (AMD: CU or work-group processor) holds at once (the CUDA
    occupancy calculator, or LLVM's AMDGPU rules, where the GPU's descriptor allows them; otherwise
    the plain thread, block, register and shared-memory limits)."""
    if device.spec is not None and has_rules(device.spec):
        return occupancy(device.spec, threads, registers, shared_memory_bytes).active_blocks_per_sm
    if device.spec is not None:
        check_block_limits(device.spec, threads, registers, shared_memory_bytes)
    elif threads > device.max_threads_per_block:
        return 0
    warps = _ceil_div(threads, device.warp_size)
    limits = [device.max_threads_per_sm // (warps * device.warp_size), device.max_blocks_per_sm]
    if registers:
        limits.append(device.registers_per_sm // (registers * warps * device.warp_size))
    if shared_memory_bytes:
        limits.append(device.shared_memory_per_sm_bytes // shared_memory_bytes)
    return max(0, min(limits))


def fits(device: DeviceDescriptor, kernel: KernelDescriptor, threads: int) -> bool:
    """Whether one block of ``threads`` threads with the kernel's registers and shared memory can
    run on an SM of ``device`` at all."""
    try:
        return resident_blocks_per_sm(device, threads, kernel.registers, kernel.shared_memory_bytes) > 0
    except GpuperfError:
        return False


def loop_class(device: DeviceDescriptor, kernel: KernelDescriptor, threads: int | None = None) -> str:
    """``short`` (trip <= SMs), ``ideal`` (one thread per iteration fits the resident blocks) or ``long``."""
    if kernel.trip <= device.sms:
        return "short"
    threads = threads or device.preferred_threads_per_block
    resident = device.sms * resident_blocks_per_sm(device, threads, kernel.registers, kernel.shared_memory_bytes)
    return "ideal" if _ceil_div(kernel.trip, threads) <= resident else "long"


def heuristic(device: DeviceDescriptor, kernel: KernelDescriptor) -> Geometry:
    """Lloyd et al.'s three-class rule (see the module docstring)."""
    if kernel.trip <= device.sms:
        return Geometry(1, kernel.trip, "short", "heuristic")
    threads = device.preferred_threads_per_block
    resident = device.sms * resident_blocks_per_sm(device, threads, kernel.registers, kernel.shared_memory_bytes)
    if resident == 0:
        raise GpuperfError(f"a block of {threads} threads does not fit on an SM of {device.name}")
    needed = _ceil_div(kernel.trip, threads)
    if needed <= resident:
        return Geometry(threads, needed, "ideal", "heuristic")
    return Geometry(threads, resident, "long", "heuristic")


def llvm_threads(device: DeviceDescriptor) -> int:
    """LLVM's default work-group size on ``device``: 256 threads on an AMD GPU, else 128 (NVIDIA's)."""
    return LLVM_AMD_THREADS if device.spec is not None and device.spec.vendor == "AMD" else LLVM_THREADS


def llvm_default(device: DeviceDescriptor, kernel: KernelDescriptor) -> Geometry:
    """LLVM's default: its vendor's default block (:func:`llvm_threads`), one thread per iteration."""
    threads = llvm_threads(device)
    return Geometry(threads, _ceil_div(kernel.trip, threads), loop_class(device, kernel, threads), "llvm")


def libomptarget(device: DeviceDescriptor, kernel: KernelDescriptor, reuse_blocks: bool = True) -> Geometry:
    """libomptarget's NVIDIA rule for a combined construct in SPMD mode (see the module docstring)."""
    if device.spec is not None and device.spec.vendor != "NVIDIA":
        raise GpuperfError(f"the libomptarget rule gpuperf follows is the NVIDIA plugin's; {device.name} is "
                           f"{device.spec.vendor} (use heuristic, llvm, occupancy or model)")
    trip, threads = kernel.trip, OMP_DEFAULT_THREADS
    if trip >= OMP_DEFAULT_BLOCKS * threads:
        pass
    elif trip >= OMP_DEFAULT_BLOCKS * OMP_MIN_THREADS_LOW_TRIP:
        threads = min(threads, 1 << (_ceil_div(trip, OMP_DEFAULT_BLOCKS) - 1).bit_length())
    else:
        threads = min(threads, OMP_MIN_THREADS_LOW_TRIP)
    blocks = _ceil_div(trip, threads)
    if reuse_blocks:
        blocks = min(blocks, OMP_DEFAULT_BLOCKS)
    blocks = min(blocks, OMP_MAX_BLOCKS)
    return Geometry(threads, blocks, loop_class(device, kernel, threads), "libomptarget")


def max_occupancy_threads(device: DeviceDescriptor, registers: int, shared_memory_bytes: int) -> int:
    """``cudaOccupancyMaxPotentialBlockSize``'s block size: the highest occupancy, the largest on ties."""
    return _max_occupancy_threads(device, registers, shared_memory_bytes)


@functools.lru_cache(maxsize=1024)
def _max_occupancy_threads(device: DeviceDescriptor, registers: int, shared_memory_bytes: int) -> int:
    # registers or shared memory outside the GPU's limits: that error, not "no block size fits"
    resident_blocks_per_sm(device, min(device.warp_size, device.max_threads_per_block), registers,
                           shared_memory_bytes)
    best_threads, best_warps = 0, 0
    for threads in range(device.max_threads_per_block, 0, -device.warp_size):
        try:
            blocks = resident_blocks_per_sm(device, threads, registers, shared_memory_bytes)
        except GpuperfError:
            continue  # too many registers for a block this large
        warps = blocks * _ceil_div(threads, device.warp_size)
        if warps > best_warps:
            best_threads, best_warps = threads, warps
    if best_threads == 0:
        raise GpuperfError(
            f"no block size fits on {device.name} with {registers} registers and {shared_memory_bytes} bytes of shared memory"
        )
    return best_threads


def occupancy_policy(device: DeviceDescriptor, kernel: KernelDescriptor) -> Geometry:
    threads = max_occupancy_threads(device, kernel.registers, kernel.shared_memory_bytes)
    return Geometry(threads, _ceil_div(kernel.trip, threads), loop_class(device, kernel, threads), "occupancy")


def clear_caches() -> None:
    """Forget cached occupancy results (to time a policy on resources it has not seen)."""
    resident_blocks_per_sm.cache_clear()
    _max_occupancy_threads.cache_clear()


RULES = {"heuristic": heuristic, "llvm": llvm_default, "libomptarget": libomptarget, "occupancy": occupancy_policy}


def rules_for(device: DeviceDescriptor) -> dict:
    """The rule-based policies that apply to ``device`` (libomptarget's is NVIDIA's plugin's)."""
    if device.spec is not None and device.spec.vendor != "NVIDIA":
        return {name: rule for name, rule in RULES.items() if name != "libomptarget"}
    return dict(RULES)


CUDA_MAX_GRID_X = 2**31 - 1  # blocks along x (compute capability 3.0 and later)
HIP_MAX_GRID_WORK_ITEMS = 2**32 - 1  # work-items along x (blocks x threads)


def max_grid_blocks(device: DeviceDescriptor, threads: int) -> int:
    """The most blocks of ``threads`` one launch can have along x: CUDA's grid limit, or on AMD
    HIP's limit on the work-items of a grid."""
    if device.spec is not None and device.spec.vendor == "AMD":
        return HIP_MAX_GRID_WORK_ITEMS // threads
    return CUDA_MAX_GRID_X


def grid_capped(device: DeviceDescriptor, geometry: Geometry) -> Geometry:
    """``geometry`` with its blocks capped at :func:`max_grid_blocks` (a grid-stride loop runs the rest): the
    launch a policy's pick becomes on ``device``, as :func:`choose_geometry` prints it and a sweep judges it."""
    return replace(geometry, blocks=min(geometry.blocks, max_grid_blocks(device, geometry.threads)))


def choose_geometry(
    gpu: str | GpuSpec | DeviceDescriptor,
    trip: int,
    registers: int = DEFAULT_REGISTERS,
    shared_memory_bytes: int = 0,
    policy: str = "heuristic",
) -> Geometry:
    """Threads and blocks for a loop of ``trip`` iterations on ``gpu`` under ``policy``."""
    device = device_descriptor(gpu)
    kernel = KernelDescriptor(trip, registers, shared_memory_bytes)
    if policy == "model":
        from gpuperf.decisions.geometry_model import default_geometry_model

        model = default_geometry_model()
        threads = model.choose_threads(device, kernel)
        geometry = Geometry(threads, _ceil_div(kernel.trip, threads), loop_class(device, kernel, threads), "model")
    elif policy in RULES:
        geometry = RULES[policy](device, kernel)
    else:
        raise unknown_name_error("launch-geometry policy", policy, POLICIES)
    capped = grid_capped(device, geometry)
    if capped != geometry:  # the grid-stride loop runs the iterations beyond the largest grid
        per_thread = _ceil_div(kernel.trip, capped.blocks * geometry.threads)
        warnings.warn(GpuperfNote(f"{policy}: {geometry.blocks} blocks of {geometry.threads} threads exceed the "
                                  f"largest grid of {device.name} ({capped.blocks} blocks); capped there, each thread "
                                  f"runs up to {per_thread} iterations of the grid-stride loop"), stacklevel=2)
        geometry = capped
    # Raises its own error for resources no block may have; 0: such a block never fits on an SM.
    if resident_blocks_per_sm(device, geometry.threads, kernel.registers, kernel.shared_memory_bytes) == 0:
        raise GpuperfError(
            f"a block of {geometry.threads} threads x {kernel.registers} registers with "
            f"{kernel.shared_memory_bytes} bytes of shared memory does not fit on an SM of {device.name}"
        )
    return geometry

