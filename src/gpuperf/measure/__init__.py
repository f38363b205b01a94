"""Measuring kernels on real devices: OpenCL (PyOpenCL) and CUDA (CuPy), timing, campaigns, the store.

``measure(kernel, sizes, device="opencl:0")`` times one point; ``load_campaign`` / ``run_campaign``
sweep kernels x variants x sizes into an SQLite store; ``export_store`` writes it as a dataset table.
"""

from gpuperf._lazy import lazy_exports

# Names re-exported here, loaded on first use: listing the devices needs neither campaigns nor pandas.
_EXPORTS = {
    "Campaign": "campaign",
    "CampaignReport": "campaign",
    "campaign_status": "campaign",
    "load_campaign": "campaign",
    "run_campaign": "campaign",
    "CompileFailed": "devices",
    "MeasureFailure": "devices",
    "RunFailed": "devices",
    "VerifyFailed": "devices",
    "available_devices": "devices",
    "open_device": "devices",
    "export_store": "export",
    "store_table": "export",
    "Store": "store",
    "Measurement": "timing",
    "TimingSettings": "timing",
    "measure": "timing",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
