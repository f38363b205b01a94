"""Write a GPU session's measurements (benchmarks/gpu_session.sh) into ``data/`` with their provenance.

    python benchmarks/export_gpu_session.py SESSION_FOLDER [SESSION_FOLDER ...] --tag h100
        [--commit SHA] [--note "..."] [--date YYYY-MM-DD]

Reads, from the session folders (later folders win where two hold the same file):
``cuda_timer.csv``, ``tune*.csv``, ``linear_model.sqlite``, ``geometry_sweep*.csv``,
``stencil_spaces.sqlite`` and ``advise_pairs.csv.gz``, and writes ``data/cuda_timer_TAG.csv``,
``data/tune_TAG.csv``, ``data/linear_model_TAG.csv.gz``, ``data/geometry_sweep_TAG.csv.gz``,
``data/stencil_spaces_TAG.csv.gz`` and ``data/advise_pairs_TAG.csv.gz``, each with a
``.provenance.json`` beside it (with the device the session's stores name, ``measured_on``: the UTC
date of the session, ``--date`` or else the first ``measured_from`` its stores record, and the written
table's ``file``, ``rows`` and ``sha256``; without either, nothing is written). Measured values are copied unchanged; a data file that already
exists is never overwritten. The stencil table gets the static features of each variant (as ``campaign export`` adds them), computed here.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def newest(folders: list[Path], pattern: str) -> list[Path]:
    """Files matching ``pattern``, a later folder's replacing an earlier one's of the same name."""
    found: dict[str, Path] = {}
    for folder in folders:
        for path in sorted(folder.glob(pattern)):
            found[path.name] = path
    return list(found.values())


def write_new(path: Path, table: pd.DataFrame, provenance: dict[str, Any]) -> None:
    """``table`` as ``path`` and ``provenance`` beside it, with the written file's rows and sha256."""
    from gpuperf.datasets.provenance import write_provenance

    if path.exists():
        raise SystemExit(f"{path} exists; a measured table is never overwritten")
    table.to_csv(path, index=False)
    write_provenance(path, provenance)
    print(f"wrote {path.relative_to(ROOT)} ({len(table)} rows)")


def session_device(folders: list[Path]) -> dict[str, str]:
    """``{"device": name}`` where the session's stores name one device (as its driver reports it), else {}."""
    from gpuperf.measure.export import campaign_provenance
    from gpuperf.measure.store import Store

    names = set()
    for store in newest(folders, "*.sqlite"):
        with Store(store, create=False) as opened:
            names |= {campaign_provenance(store, name)["device"] for name in opened.campaigns()}
    names.discard(None)
    return {"device": names.pop()} if len(names) == 1 else {}


def session_date(folders: list[Path], given: str | None) -> str:
    """The session's UTC date (YYYY-MM-DD): ``given`` (``--date``), else the earliest ``measured_from`` the
    session's stores record; a session that gives neither is refused, as its tables would not say when."""
    import datetime

    from gpuperf.measure.export import campaign_provenance
    from gpuperf.measure.store import Store

    if given:
        try:
            return datetime.date.fromisoformat(given).isoformat()
        except ValueError:
            raise SystemExit(f"--date {given}: not a date as YYYY-MM-DD") from None
    dates = []
    for store in newest(folders, "*.sqlite"):
        with Store(store, create=False) as opened:
            dates += [campaign_provenance(store, name).get("measured_from") for name in opened.campaigns()]
    dates = sorted(str(date)[:10] for date in dates if date)
    if not dates:
        raise SystemExit("the session's stores record no date: give the day it measured with --date YYYY-MM-DD")
    return dates[0]


def store_export(store: Path, campaign: str | None, features: bool) -> tuple[pd.DataFrame, dict[str, Any]]:
    from gpuperf.measure.export import campaign_provenance, store_table
    from gpuperf.measure.store import Store

    with Store(store, create=False) as opened:
        names = [campaign] if campaign else opened.campaigns()
    table = store_table(store, campaign=campaign, features=features, cycle_times=True)
    provenance = {name: campaign_provenance(store, name) for name in names}
    return table, provenance


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    parser.add_argument("--tag", required=True, help="the GPU's short name in the file names, e.g. h100")
    parser.add_argument("--commit", help="the gpuperf commit the session ran")
    parser.add_argument("--note", default="", help="anything the provenance should say about the session")
    parser.add_argument("--date", help="the UTC date the session measured (YYYY-MM-DD; default: from its stores)")
    args = parser.parse_args(argv)
    common = {"session_command": "benchmarks/gpu_session.sh", "gpuperf_commit": args.commit, "note": args.note,
              "measured_on": session_date(args.folders, args.date), **session_device(args.folders)}

    timer = newest(args.folders, "cuda_timer.csv")
    if timer:
        write_new(DATA / f"cuda_timer_{args.tag}.csv", pd.read_csv(timer[-1]), {
            **common, "what": "benchmarks/bench_cuda_timer.py: each catalog kernel and size timed gated, ungated "
                              "(span) and back to back, interleaved round by round",
            "command": "python benchmarks/bench_cuda_timer.py --device cuda:0"})

    tunes = newest(args.folders, "tune*.csv")
    if tunes:
        parts = [pd.read_csv(path).assign(tune_file=path.name) for path in tunes]
        write_new(DATA / f"tune_{args.tag}.csv", pd.concat(parts, ignore_index=True), {
            **common, "what": "benchmarks/bench_tune.py: real tuning runs, the best time found after k trials "
                              "as a speedup over the space's default variant (columns START_K) for each start "
                              "(ranked: PCA + 5-NN trained on data/stencil_spaces_h100.csv.gz's other stencils; "
                              "counts: the linear count model fitted on data/linear_model_h100.csv.gz; random); "
                              "default_ms is the default variant's time; tune_file names the run",
            "command": "python benchmarks/bench_tune.py --device cuda:0 --size 4096 --table "
                       "stencil_spaces_h100.csv.gz --count-model H100_MODEL.json --out tune.csv",
            "parts": {path.name: str(path.parent.name) for path in tunes}})

    linear = newest(args.folders, "linear_model.sqlite")
    if linear:
        table, provenance = store_export(linear[-1], None, features=False)
        write_new(DATA / f"linear_model_{args.tag}.csv.gz", table, {
            **common, "what": "the linear count model's calibration and held-out points, timed together in "
                              "interleaved cycles (gpuperf.evaluation.linear_eval, device class gpu)",
            "command": "python benchmarks/bench_linear_model.py --device cuda:0 --cycles 10",
            "campaigns": provenance})

    sweeps = newest(args.folders, "geometry_sweep*.csv")
    if sweeps:
        parts = [pd.read_csv(path).assign(sweep_file=path.name) for path in sweeps]
        write_new(DATA / f"geometry_sweep_{args.tag}.csv.gz", pd.concat(parts, ignore_index=True), {
            **common, "what": "grid-stride saxpy and degree-32 polynomial loops over a (threads, blocks) grid "
                              "(gpuperf.decisions.geometry_sweep), every output verified against NumPy; "
                              "sweep_file names the run each row comes from",
            "command": "gpuperf geometry-sweep --device cuda:0 --trips ... --blocks-step 2 --cycles ...",
            "parts": {path.name: str(path.parent.name) for path in sweeps}})

    stencils = newest(args.folders, "stencil_spaces.sqlite")
    if stencils:
        table, provenance = store_export(stencils[-1], "stencil_spaces", features=True)
        write_new(DATA / f"stencil_spaces_{args.tag}.csv.gz", table, {
            **common, "what": "a seeded sample of every stencil variant space, each space's variants timed "
                              "interleaved, every output verified against NumPy",
            "command": "python benchmarks/stencil_space_campaign.py --device cuda:0 --per-space 24 --size 4096 "
                       "--cycles 10",
            **provenance["stencil_spaces"]})

    advise = newest(args.folders, "advise_pairs.csv.gz")
    if advise:  # written by advise_pairs_campaign.py with its static features and provenance
        recorded = json.loads(advise[-1].with_name("advise_pairs.provenance.json").read_text())
        write_new(DATA / f"advise_pairs_{args.tag}.csv.gz", pd.read_csv(advise[-1]), {
            **common, "what": "the advisor's stencil before/after variants (benchmarks/advise_pairs_campaign.py), "
                              "each stencil's variants at one size timed interleaved, every output verified "
                              "against NumPy",
            "command": "python benchmarks/advise_pairs_campaign.py --device cuda:0 --cycles 10 --sizes ...",
            **{key: value for key, value in recorded.items() if key != "campaign"}})


if __name__ == "__main__":
    main()
