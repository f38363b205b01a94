"""``gpuperf reproduce``: published studies rerun on the bundled data, each writing a report."""

from __future__ import annotations

from typing import Annotated

import typer

from gpuperf.cli.output import print_json

STUDIES = ("rodinia",)


def reproduce(
    study: Annotated[str, typer.Argument(help="rodinia: Amaris et al. on the Rodinia nvprof table, with BSP on matvec")],
    out: Annotated[str, typer.Option(help="report folder")] = "gpuperf-report/rodinia",
    full: Annotated[bool, typer.Option(help="every scenario and model (about 10 minutes); default: the quick set")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the metrics as JSON")] = False,
) -> None:
    """Rerun a published study on the bundled data and write its report (Markdown, HTML, plots, JSON)."""
    import json

    from gpuperf.errors import unknown_name_error
    from gpuperf.evaluation.rodinia_report import QUICK_MODELS, QUICK_SCENARIOS, reproduce_rodinia

    if study not in STUDIES:
        raise unknown_name_error("study", study, STUDIES)
    options = {} if full else {"scenarios": QUICK_SCENARIOS, "models": QUICK_MODELS}
    paths = reproduce_rodinia(out, echo=(lambda line: None) if as_json else print, **options)
    if as_json:
        print_json(json.loads(paths["json"].read_text()) if "json" in paths else {k: str(v) for k, v in paths.items()})
    else:
        print(f"report: {paths['markdown']}")


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` command to ``app``."""
    app.command("reproduce")(reproduce)
