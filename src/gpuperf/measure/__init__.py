"""Measuring kernels on real devices: OpenCL (PyOpenCL) and CUDA (CuPy), timing, campaigns, the store.

``measure(kernel, sizes, device="opencl:0")`` times one point; ``load_campaign`` / ``run_campaign``
sweep kernels x variants x sizes into an SQLite store; ``export_store`` writes it as a dataset table.
"""

from gpuperf.measure.campaign import Campaign, CampaignReport, campaign_status, load_campaign, run_campaign
from gpuperf.measure.devices import (
    CompileFailed,
    MeasureFailure,
    RunFailed,
    VerifyFailed,
    available_devices,
    open_device,
)
from gpuperf.measure.export import export_store, store_table
from gpuperf.measure.store import Store
from gpuperf.measure.timing import Measurement, TimingSettings, measure

__all__ = [
    "Campaign", "CampaignReport", "CompileFailed", "Measurement", "MeasureFailure", "RunFailed", "Store",
    "TimingSettings", "VerifyFailed", "available_devices", "campaign_status", "export_store", "load_campaign",
    "measure", "open_device", "run_campaign", "store_table",
]
