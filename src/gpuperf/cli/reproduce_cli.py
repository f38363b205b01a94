"""``gpuperf reproduce``: published studies rerun on the bundled data, each writing a report."""

from __future__ import annotations

from typing import Annotated

import typer

from gpuperf.cli.output import comma_separated, given_on_command_line, known_choice, print_json, report_folder

STUDIES = ("rodinia", "linear", "exploration", "advisor", "geometry")
STUDY_HELP = (
    "rodinia: Amaris et al. on the Rodinia nvprof table, with BSP on matvec; linear: Stevens & Klöckner's linear "
    "count model calibrated on the bundled H100 and H200 points (and --device) and tested on held-out kernels; "
    "exploration: a bundled tuning family explored with each GPU left out (--family); advisor: the optimization "
    "advisor's held-out evaluation (--split, --optimizations, --only); geometry: launch-geometry policies on the "
    "bundled block-shape choices"
)


DEFAULT_FAMILY = "schoonhoven/pnpoly"
OPTION_STUDY = {"--full": "rodinia", "--scenarios": "rodinia", "--inner-aggregate": "rodinia",
                "--family": "exploration", "--split": "advisor", "--optimizations": "advisor", "--only": "advisor",
                "--device": "linear"}


def _known_scenarios(text: str) -> list[str]:
    from gpuperf.errors import GpuperfError
    from gpuperf.evaluation.reproduce import OPT_IN_SCENARIOS, SCENARIOS

    names = comma_separated(text)
    if not names:
        raise GpuperfError(f"--scenarios '{text}' names no scenario")
    for name in names:
        known_choice("--scenarios", "scenario", name, SCENARIOS + OPT_IN_SCENARIOS)
    return names


DEFAULT_FOLDER = "gpuperf-reproduce"  # not gpuperf-report/, whose rodinia/, linear/, ... the demo's index links


def reproduce(
    ctx: typer.Context,
    study: Annotated[str, typer.Argument(help=STUDY_HELP)],
    out: Annotated[str | None, typer.Option("--out", "-o", help="report folder (default gpuperf-reproduce/STUDY; the demo's own reports under gpuperf-report/ stay as the demo wrote them)")] = None,
    full: Annotated[bool, typer.Option(metavar="", help="rodinia: every scenario and model (about 20 minutes); default: the quick set")] = False,
    scenarios: Annotated[str | None, typer.Option(
        help="rodinia: comma-separated scenarios instead of the default ones, e.g. bsp,transfer_near_bsp "
             "(opt-in: transfer, transfer_bsp, transfer_near, transfer_near_bsp, scaling, bottleneck)")] = None,
    inner_aggregate: Annotated[str, typer.Option(
        help="rodinia: how nested selection combines its inner folds' figures, mean or median (opt-in; "
             "docs/models.md in gpuperf's source repository)")] = "mean",
    family: Annotated[str, typer.Option(help="exploration: the tuning family")] = DEFAULT_FAMILY,
    split: Annotated[list[str] | None, typer.Option(help="advisor: inputs, configurations, programs or gpus (repeatable)")] = None,
    optimizations: Annotated[list[str] | None, typer.Option(
        "--optimizations", help="advisor: a folder of extra optimization entries (*.toml), as advise's; repeatable")] = None,
    only: Annotated[list[str] | None, typer.Option(
        "--only", help="advisor: evaluate only these optimizations (comma-separated; repeatable), as advise's")] = None,
    device: Annotated[str | None, typer.Option(
        "--device", "-d", help="linear: also measure and calibrate on this device, e.g. opencl:0 (minutes)")] = None,
    as_json: Annotated[bool, typer.Option("--json", metavar="", help="print the metrics as JSON")] = False,
) -> None:
    """Rerun a published study on the bundled data and write its report (Markdown, HTML, plots, JSON)."""
    import json

    from gpuperf.decisions import reports
    from gpuperf.decisions.advise_eval import SPLITS
    from gpuperf.errors import GpuperfError, unknown_name_error
    from gpuperf.evaluation.reproduce import INNER_AGGREGATES
    from gpuperf.evaluation.rodinia_report import QUICK_MODELS, QUICK_SCENARIOS, reproduce_rodinia

    if study not in STUDIES:
        raise unknown_name_error("study", study, STUDIES)
    given = {"--full": full, "--scenarios": scenarios is not None,
             "--inner-aggregate": given_on_command_line(ctx, "inner_aggregate"),
             "--family": given_on_command_line(ctx, "family"),
             "--split": split is not None, "--optimizations": optimizations is not None, "--only": only is not None,
             "--device": device is not None}  # an empty value is given too
    for option, owner in OPTION_STUDY.items():
        if given[option] and study != owner:
            raise GpuperfError(f"{option} goes with reproduce {owner}, not {study}")
    known_choice("--inner-aggregate", "inner aggregate", inner_aggregate, INNER_AGGREGATES)
    for name in split or ():
        known_choice("--split", "advisor split", name, SPLITS)
    chosen_scenarios = None if scenarios is None else tuple(_known_scenarios(scenarios))  # before --out is made
    within = list(reports.GEOMETRY_SWEEP_FOLDERS.values()) if study == "geometry" else []  # the sweeps' reports
    out = str(report_folder(f"{DEFAULT_FOLDER}/{study}" if out is None else out, "--out", within))
    echo = (lambda line: None) if as_json else print
    if study == "rodinia":
        options = {} if full else {"scenarios": QUICK_SCENARIOS, "models": QUICK_MODELS}
        if chosen_scenarios is not None:
            options["scenarios"] = chosen_scenarios
        if inner_aggregate != "mean":
            options["inner_aggregate"] = inner_aggregate
        paths = reproduce_rodinia(out, echo=echo, **options)
    elif study == "linear":
        from gpuperf.evaluation.linear_report import linear_study

        paths = linear_study(out, device=device, echo=echo)
    elif study == "exploration":
        _, paths = reports.exploration_study(out, family, echo=echo)
    elif study == "advisor":
        chosen = {"extra": tuple(optimizations or ()), "only": tuple(only or ())}
        _, paths = reports.advisor_study(out, tuple(split or ("inputs",)), echo,
                                         **{key: value for key, value in chosen.items() if value})
    else:
        _, paths = reports.geometry_study(out, echo)
    if as_json:
        print_json(json.loads(paths["json"].read_text(encoding="utf-8")) if "json" in paths else {k: str(v) for k, v in paths.items()})
    else:
        print(f"report: {paths['markdown']}")


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` command to ``app``."""
    app.command("reproduce")(reproduce)
