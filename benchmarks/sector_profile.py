"""Profile gpuperf's kernels with Nsight Compute on an NVIDIA GPU, to check the static features
(sectors and cache lines per warp access, registers, occupancy) against the hardware's counters.

Each catalog kernel at its default sizes and the 192 stencil variants of ``stencil_spaces_h200``
(24 per space, the same seeded sample, n = m = 4096) is launched once, under ``ncu``, which reads
the global load and store requests and sectors (L1TEX), DRAM bytes, registers per thread, static
shared memory and theoretical occupancy of each launch. Nothing is timed here: ``ncu`` replays
each launch once per counter pass with its caches flushed, so its durations are not gpuperf timings.

    python benchmarks/sector_profile.py device OUT      # on the GPU: ncu over every case, in chunks
    python benchmarks/sector_profile.py export OUT --out data/sector_profile_h200.csv.gz

``--held-out`` (on ``device``, ``cases`` and ``export``) profiles other variants instead: 24 of each
stencil space drawn with another seed from those the first sample left out, no catalog kernels; their
counters check static features that were worked out while looking at the first sample's.

``device`` writes ``OUT/ncu_K.csv`` (``ncu --csv --page raw --print-units base``) and
``OUT/manifest_K.jsonl`` (each case launched, in order, with its device functions) per chunk, and
``OUT/ncu_K.log``. A chunk that fails or runs out of time keeps what it wrote. ``export`` (any
machine) reads the ncu files with gpuperf's own importer, matches each launch to its case by
launch order and function name, adds the static features gpuperf computes for the case, and
writes the table and its provenance. Measured values are copied as ncu wrote them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

STENCIL_SIZE = 4096
PER_SPACE = 24
CHUNKS = 8
METRICS = (
    "gpu__time_duration.sum",
    "device__attribute_display_name",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum",
    "smsp__sass_inst_executed_op_global_ld.sum",
    "smsp__sass_inst_executed_op_global_st.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "sm__maximum_warps_per_active_cycle_pct",
)
CORE_METRICS = METRICS[:6]  # the fallback where ncu refuses a name of the full list
# Of the importer's columns, those the table keeps (ncu's raw page adds every device attribute: left in
# the raw files).
KEPT = ("kernel", "gpu", "device", "time_s", "status", "grid.x", "grid.y", "grid.z", "block.x", "block.y", "block.z",
        "ID", "CC")


def held_out_specs(per_space: int = PER_SPACE, seed: int = 1) -> list[str]:
    """``per_space`` variants of each stencil space that the first sample (``sampled_specs``) left out."""
    import numpy as np

    from gpuperf.kernels.space import get_space, space_names
    from stencil_space_campaign import sampled_specs

    first = set(sampled_specs(PER_SPACE))
    specs = []
    for position, name in enumerate(space_names()):
        space = get_space(name)
        left = [space.key(c) for c in space.configurations() if space.check(c) is None and space.key(c) not in first]
        rng = np.random.default_rng([seed, position])
        specs += [left[i] for i in sorted(rng.choice(len(left), min(per_space, len(left)), replace=False))]
    return specs


def cases(held_out: bool = False) -> list[dict]:
    """Every case in launch order: the catalog kernels at their default sizes, then the stencil sample
    (``held_out``: the held-out variants alone)."""
    from gpuperf.kernels.catalog import get_kernel, kernel_names
    from stencil_space_campaign import sampled_specs

    if held_out:
        return [{"spec": spec, "category": "stencil_variant", "sizes": {"n": STENCIL_SIZE, "m": STENCIL_SIZE}}
                for spec in held_out_specs()]
    found = []
    for category in ("measurement", "test", "stencil"):
        for name in kernel_names(category):
            found.append({"spec": name, "category": category, "sizes": get_kernel(name).resolve_sizes()})
    for spec in sampled_specs(PER_SPACE):
        found.append({"spec": spec, "category": "stencil_variant", "sizes": {"n": STENCIL_SIZE, "m": STENCIL_SIZE}})
    return found


def launch(first: int, last: int, manifest: Path, held_out: bool = False) -> None:
    """Launch cases ``first``..``last - 1`` once each on cuda:0, appending each to ``manifest``."""
    import cupy

    from gpuperf.kernels.catalog import get_kernel
    from gpuperf.measure.cuda import CudaDevice

    device = CudaDevice(0)
    inputs: dict[str, dict] = {}  # one set of seeded inputs per stencil and sizes: its variants share them
    with manifest.open("a") as out:
        for index, case in enumerate(cases(held_out)[first:last], start=first):
            record = {"index": index, **case}
            try:
                kernel = get_kernel(case["spec"])
                compiled = device.compile(kernel)
                key = case["spec"].split("[")[0] + json.dumps(case["sizes"], sort_keys=True)
                if key not in inputs:
                    inputs[key] = kernel.make_inputs(case["sizes"], 0)
                bound = compiled.bind(case["sizes"], inputs[key])
                with device.gpu:
                    for handle, grid, block, args in bound.calls:  # no launch gate: ncu serialises launches
                        handle(grid, block, args)
                    cupy.cuda.runtime.deviceSynchronize()
                record |= {"status": "ok", "functions": [f.name for f in compiled.functions]}
            except Exception as exc:  # noqa: BLE001  (recorded, and the next case goes on)
                record |= {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:500], "functions": []}
            out.write(json.dumps(record) + "\n")
            out.flush()


def _ncu() -> str:
    found = shutil.which("ncu") or next(iter(sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))), None)
    if found is None:
        raise SystemExit("ncu not found on PATH or under /opt/nvidia/nsight-compute")
    return str(found)


def device(out: Path, budget_s: float, held_out: bool = False) -> None:
    """Every case under ncu, in ``CHUNKS`` processes, within ``budget_s`` seconds in all."""
    out.mkdir(parents=True, exist_ok=True)
    total = len(cases(held_out))
    bounds = [round(total * k / CHUNKS) for k in range(CHUNKS + 1)]
    metrics = METRICS
    deadline = time.monotonic() + budget_s
    for chunk, (first, last) in enumerate(zip(bounds, bounds[1:])):
        for attempt in ("full", "core"):
            left = deadline - time.monotonic()  # the retry with fewer metrics gets what the first left
            if left < 20:
                print(f"chunk {chunk}: skipped, {left:.0f} s left", flush=True)
                break
            manifest = out / f"manifest_{chunk}.jsonl"
            manifest.unlink(missing_ok=True)
            command = [_ncu(), "--csv", "--page", "raw", "--print-units", "base", "--target-processes", "all",
                       "--metrics", ",".join(metrics), "--log-file", str(out / f"ncu_{chunk}.csv"),
                       sys.executable, __file__, "launch", str(first), str(last), str(manifest),
                       *(["--held-out"] if held_out else [])]
            start = time.monotonic()
            with (out / f"ncu_{chunk}.log").open("w") as log:
                try:
                    rc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, timeout=left - 5).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            text = (out / f"ncu_{chunk}.log").read_text(errors="replace")
            print(f"chunk {chunk} ({first}..{last - 1}, {attempt} metrics): exit {rc} after "
                  f"{time.monotonic() - start:.0f} s", flush=True)
            if rc != 0 and attempt == "full" and "metric" in text.lower() and metrics != CORE_METRICS:
                print(text[-1500:], flush=True)
                metrics = CORE_METRICS
                continue
            break


def static_features(spec: str, sizes: dict) -> dict:
    """gpuperf's static features of one case: per-direction sectors and lines per warp request,
    warp requests (warps with a lane making the access), the same requests scaled to the machine code's
    global load and store instructions where none sits in a loop (``*_requests_compiled``), and the NVRTC
    registers, static shared memory and theoretical occupancy on the H200."""
    from gpuperf.features.access import sectors_per_request, warp_access_summary
    from gpuperf.features.compiled import machine_per_source
    from gpuperf.features.counts import symbolic_counts
    from gpuperf.features.occupancy import occupancy
    from gpuperf.features.resources import arch_for_gpu, compile_resources
    from gpuperf.hardware.specs import get_gpu
    from gpuperf.kernels.catalog import get_kernel

    kernel = get_kernel(spec)
    evaluated = symbolic_counts(kernel).values(kernel.resolve_sizes(sizes))
    summary = warp_access_summary(evaluated)
    local = evaluated.local
    group = local[0] * local[1] * local[2]
    gpu = get_gpu("H200")
    resources = compile_resources(kernel, arch_for_gpu(gpu))
    row: dict = {"static_analysable_fraction": summary.analysable_fraction,
                 "static_registers": resources.registers, "static_shared_memory_bytes": resources.shared_memory_bytes,
                 "static_occupancy": occupancy(gpu, group, resources.registers, resources.shared_memory_bytes).occupancy}
    for direction, short in (("load", "ld"), ("store", "st")):
        accesses = [a for a in summary.accesses if a.direction == direction and a.analysable]
        requests = sum(a.requests for a in accesses)
        row[f"static_{short}_requests"] = requests
        row[f"static_{short}_sectors"] = sum(a.requests * a.sectors for a in accesses)
        row[f"static_{short}_sectors_per_request"] = sectors_per_request(summary, direction)
        row[f"static_{short}_lines_per_request"] = (
            sum(a.requests * a.lines for a in accesses) / requests if requests else float("nan"))
        row[f"static_{short}_unanalysable"] = sum(
            1 for a in summary.accesses if a.direction == direction and not a.analysable)
    scales = machine_per_source(kernel, evaluated, arch_for_gpu(gpu))
    for short, scale in zip(("ld", "st"), scales or (1.0, 1.0)):
        # the requests cover the analysable accesses, the scale every access: scaled only where they agree
        whole = not row[f"static_{short}_unanalysable"]
        row[f"static_{short}_requests_compiled"] = row[f"static_{short}_requests"] * (scale if whole else 1.0)
    row["static_straight_line"] = scales is not None
    return row


def logged_device(env_log: str) -> dict[str, str]:
    """``{"device": name}`` of the GPU that env.log's ``GPU 0: NAME (UUID: ...)`` line (nvidia-smi -L) names, else {}."""
    found = re.search(r"^GPU 0: (.+?) \(UUID", env_log, re.MULTILINE)
    return {"device": found.group(1)} if found else {}


LOGGED_DATE = re.compile(r"^\w{3} (\w{3}) +(\d{1,2}) [\d:]+(?: [AP]M)? \w+ (\d{4})$", re.MULTILINE)  # date's own form


def logged_date(env_log: str) -> dict[str, str]:
    """``{"measured_on": YYYY-MM-DD}`` of the day env.log's ``date`` line (its first) gives, else {}."""
    import datetime

    found = LOGGED_DATE.search(env_log)
    if not found:
        return {}
    month, day, year = found.groups()
    try:
        return {"measured_on": datetime.datetime.strptime(f"{year} {month} {day}", "%Y %b %d").date().isoformat()}
    except ValueError:
        return {}


def export(folder: Path, out: Path, held_out: bool = False) -> None:
    """The profiled launches with their cases and static features, as ``out`` and its provenance."""
    import pandas as pd

    from gpuperf.datasets.ncu import import_ncu
    from gpuperf.datasets.provenance import write_provenance
    from gpuperf.features.resources import nvrtc_version

    raw = out.with_name(out.name.removesuffix(".csv.gz") + "_ncu.tar.gz")
    if out.exists() or raw.exists():
        raise SystemExit(f"--out {out} or {raw.name} exists; name a new file")
    rows = []
    for manifest in sorted(folder.glob("manifest_*.jsonl")):
        chunk = manifest.stem.removeprefix("manifest_")
        launched = [json.loads(line) for line in manifest.read_text().splitlines() if line.strip()]
        csv = folder / f"ncu_{chunk}.csv"
        profiled = import_ncu(csv, gpu="H200") if csv.exists() and csv.stat().st_size else pd.DataFrame()
        queue = list(profiled.sort_values("ID").to_dict("records")) if len(profiled) else []
        for case in launched:
            for function in case["functions"]:
                while queue and queue[0]["kernel"] != function:
                    queue.pop(0)  # a launch that is not a case's (none expected), skipped
                if not queue:
                    break
                launch_row = queue.pop(0)
                rows.append({"spec": case["spec"], "category": case["category"],
                             "sizes": json.dumps(case["sizes"], sort_keys=True), "function": function,
                             **{k: v for k, v in launch_row.items() if k in KEPT or k in METRICS}})
    table = pd.DataFrame(rows)
    cases = table[["spec", "sizes"]].drop_duplicates()
    static = pd.DataFrame([{"spec": spec, "sizes": sizes, **static_features(spec, json.loads(sizes))}
                           for spec, sizes in zip(cases["spec"], cases["sizes"])])
    table = table.merge(static, on=["spec", "sizes"], how="left")
    table.to_csv(out, index=False)
    with tarfile.open(raw, "w:gz") as archive:  # ncu's own files, byte for byte
        for path in sorted(folder.iterdir()):
            if path.suffix in (".csv", ".jsonl", ".log"):
                archive.add(path, arcname=path.name)
    provenance = {
        "file": out.name, "launches": len(table), "cases": int(table["spec"].nunique()),
        "what": ("Nsight Compute counters of one launch per case (24 variants of each stencil space at n = m = "
                 "4096 that sector_profile_h200's sample left out, drawn with seed 1), with gpuperf's static "
                 "features of the case") if held_out else
                ("Nsight Compute counters of one launch per case (catalog kernels at default sizes, the "
                 "stencil_spaces_h200 sample at n = m = 4096), with gpuperf's static features of the case"),
        "command": "python benchmarks/sector_profile.py device OUT (on the GPU), then export OUT --out FILE"
                   + (", both with --held-out" if held_out else ""),
        "metrics": list(METRICS), "raw": raw.name, "raw_sha256": hashlib.sha256(raw.read_bytes()).hexdigest(),
    }
    for name in ("env", "session"):  # the GPU, driver, ncu and CuPy versions; each chunk's exit
        log = folder / f"{name}.log"
        if log.exists():
            provenance[f"{name}_log"] = log.read_text(errors="replace")[-4000:]
    provenance["static_registers_nvrtc"] = nvrtc_version()  # the NVRTC here, not the GPU machine's
    provenance |= logged_device(provenance.get("env_log", "")) | logged_date(provenance.get("env_log", ""))
    write_provenance(out, provenance)
    print(f"wrote {out}: {len(table)} launches of {table['spec'].nunique()} cases")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("device", help="on the GPU: every case under ncu")
    run.add_argument("out", type=Path)
    run.add_argument("--budget", type=float, default=float(os.environ.get("SECTOR_BUDGET_S", 420)))
    run.add_argument("--held-out", action="store_true", help="the held-out variants instead")
    one = sub.add_parser("launch", help="(under ncu) launch cases FIRST..LAST-1 once each")
    one.add_argument("first", type=int)
    one.add_argument("last", type=int)
    one.add_argument("manifest", type=Path)
    one.add_argument("--held-out", action="store_true")
    exp = sub.add_parser("export", help="the ncu files of OUT as a table with static features")
    exp.add_argument("folder", type=Path)
    exp.add_argument("--out", type=Path, required=True)
    exp.add_argument("--held-out", action="store_true", help="the files are of the held-out variants")
    listing = sub.add_parser("cases", help="print the cases")
    listing.add_argument("--held-out", action="store_true")
    args = parser.parse_args()
    if args.command == "device":
        device(args.out, args.budget, args.held_out)
    elif args.command == "launch":
        launch(args.first, args.last, args.manifest, args.held_out)
    elif args.command == "export":
        export(args.folder, args.out, args.held_out)
    else:
        for index, case in enumerate(cases(args.held_out)):
            print(index, case["spec"], case["sizes"])


if __name__ == "__main__":
    main()
