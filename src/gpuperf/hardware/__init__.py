"""gpuperf.hardware: GPU descriptors (gpus.toml) and their lookup."""

from gpuperf.hardware.specs import GpuSpec, canonical_gpu_name, get_gpu, gpus, normalize_name

__all__ = ["GpuSpec", "canonical_gpu_name", "get_gpu", "gpus", "normalize_name"]
