"""Options that mean the same thing are spelled the same on every command."""

from __future__ import annotations

import os
from typing import Any

import pytest
import typer

from gpuperf.cli import _register_all, app, main


def _commands(group: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf command of the command line, by its full name (``campaign export``)."""
    found: dict[str, Any] = {}
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            found.update(_commands(command, f"{prefix}{name} "))
        else:
            found[f"{prefix}{name}"] = command
    return found


def test_every_out_option_has_the_short_form_and_every_json_flag_the_same_name() -> None:
    _register_all()
    commands = _commands(typer.main.get_command(app))
    assert {"fit", "predict-table", "import", "tune", "geometry-sweep", "campaign export", "reproduce"} <= set(commands)
    outs = {name: param.opts for name, command in commands.items() for param in command.params if "--out" in param.opts}
    assert len(outs) >= 9
    assert {name: opts for name, opts in outs.items() if "-o" not in opts} == {}
    json_flags = {tuple(param.opts) for command in commands.values() for param in command.params
                  if param.name in {"as_json", "json_out", "json"}}
    assert json_flags == {("--json",)}


def test_every_model_and_kernel_option_has_the_short_form(tmp_path, capsys) -> None:
    """fit, evaluate, predict, predict-table and rank took -m for --model; explore, ask and tune refused it
    ("No such option: -m")."""
    _register_all()
    commands = _commands(typer.main.get_command(app))
    models = {name: param.opts for name, command in commands.items() for param in command.params
              if "--model" in param.opts}
    assert {"explore", "ask", "tune", "fit", "rank"} <= set(models)
    assert {name: opts for name, opts in models.items() if "-m" not in opts} == {}
    kernels = {name: param.opts for name, command in commands.items() for param in command.params
               if "--kernel" in param.opts}  # calibrate took -k; explore and ask refused it
    assert {"calibrate", "explore", "ask"} <= set(kernels)
    assert {name: opts for name, opts in kernels.items() if "-k" not in opts} == {}
    assert main(["ask", str(tmp_path / "none.csv"), "-m", "gp"]) == 2
    assert "none.csv" in capsys.readouterr().err  # the table is what is missing, not an option


def test_no_help_page_shows_a_value_placeholder_for_a_flag(capsys) -> None:
    """`--json` and `--help` take no value: no help line may read `--json <bool>`."""
    _register_all()
    names = ["", "campaign", *_commands(typer.main.get_command(app))]
    for name in names:
        assert main([*name.split(), "--help"]) == 0, name
        page = capsys.readouterr().out
        assert "Show this message and exit." in page and "<bool>" not in page, name


def test_no_help_page_shows_a_python_type_name_as_what_to_type(capsys) -> None:
    """Options read `--param <list[str]>`, `--gpu <str>`, `--threads <int>` (typer's type names); every value
    is now shown as what to type (`NAME=VALUE`, `GPU`, `N`), and an argument by its name (`KERNEL`)."""
    import re

    _register_all()
    commands = _commands(typer.main.get_command(app))
    type_name = re.compile(r"<(?:str|int|float|bool|path|bytes|datetime|uuid|list\[[^>]*\]|tuple\[[^>]*\])>")
    for name in ["", "campaign", *commands]:
        assert main([*name.split(), "--help"]) == 0, name
        page = capsys.readouterr().out
        assert not type_name.findall(page), (name, type_name.findall(page))
    placeholders = {param.metavar for command in commands.values() for param in command.params}
    assert {"NAME=VALUE", "GPU", "N", "FILE", "KERNEL", "A,B,..."} <= placeholders
    assert main(["resources", "--help"]) == 0
    page = capsys.readouterr().out
    assert "{KERNEL}" in page and re.search(r"--param\s+-p\s+NAME=VALUE\s+size parameter", page)


@pytest.mark.parametrize(("argv", "message"), [
    (["kernels", "--category", "bogus"], "--category: unknown category 'bogus'"),
    (["demo", "--step", "bogus"], "--step: unknown demo step 'bogus'"),
    (["geometry", "--gpu", "H100", "--trip", "100", "--policy", "heurstic"],
     "--policy: unknown launch-geometry policy 'heurstic'; did you mean heuristic?"),
    (["explore", "schoonhoven_spaces", "--kernel", "pnpoly", "--gpu", "V100", "--model", "bogus"],
     "--model: unknown model 'bogus'; known: et, gbt, gp, knn, rf"),
    (["tune", "jacobi2d_5pt", "--start", "bogus"], "--start: unknown start 'bogus'"),
    (["fit", "matvec_bsp", "--model", "bogus", "--out", "{tmp}/m.json"], "--model: unknown model 'bogus'"),
    (["evaluate", "matvec_bsp", "--model", "lr", "--protocol", "bogus"], "--protocol: unknown protocol 'bogus'"),
    (["reproduce", "rodinia", "--scenarios", "bsp,bogus"], "--scenarios: unknown scenario 'bogus'"),
    (["reproduce", "rodinia", "--inner-aggregate", "bogus"], "--inner-aggregate: unknown inner aggregate 'bogus'"),
    (["reproduce", "advisor", "--split", "bogus"], "--split: unknown advisor split 'bogus'"),
    (["geometry-sweep", "--device", "opencl:0", "--loops", "bogus"], "--loops: unknown parallel loop 'bogus'"),
    (["fit", "matvec_bsp", "--model", "svr", "--svr-kernel", "poly", "--out", "{tmp}/m.json"],
     "--svr-kernel: unknown SVR kernel 'poly'"),
    (["evaluate", "matvec_bsp", "--model", "linear", "--property-set", "gpus", "--protocol", "leave-one-gpu-out"],
     "--property-set: unknown property set 'gpus'; did you mean gpu"),
    (["calibrate", "--table", "linear_model_h100", "--property-set", "bogus", "--out", "{tmp}/m.json"],
     "--property-set: unknown property set 'bogus'"),
])
def test_a_value_none_of_an_options_choices_is_an_error_naming_the_option(tmp_path, capsys, argv, message):
    """Such errors said "unknown launch-geometry policy 'heurstic'", naming no option, where --trip, --limit or
    --seed name theirs; each is said before any table is read or device opened."""
    assert main([arg.format(tmp=tmp_path) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1].startswith(f"gpuperf: error: {message}") and err.count("error") == 1, err
    assert list(tmp_path.iterdir()) == []


def test_version_prints_gpuperf_and_its_version(capsys):
    from gpuperf import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"gpuperf {__version__}\n"


def test_python_dash_m_gpuperf_is_the_command_line_with_its_exit_status():
    import subprocess
    import sys

    from gpuperf import __version__

    version = subprocess.run([sys.executable, "-m", "gpuperf", "--version"], capture_output=True, text=True)
    assert (version.returncode, version.stdout) == (0, f"gpuperf {__version__}\n")
    bad = subprocess.run([sys.executable, "-m", "gpuperf", "geometry", "--gpu", "nosuch", "--trip", "10"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("gpuperf: error: --gpu: unknown GPU 'nosuch'")


def test_sizes_left_out_are_named_with_the_defaults_they_take(capsys):
    assert main(["features", "stencil2d", "-p", "n=1024", "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "note: stencil2d: sizes not given take its defaults: m=4096\n"
    assert '"m": 4096' in captured.out
    assert main(["features", "stencil2d", "-p", "n=1024", "-p", "m=512", "--json"]) == 0
    assert capsys.readouterr().err == ""


def test_ctrl_c_and_a_refused_place_end_in_one_line_and_a_failing_status(monkeypatch, tmp_path, capsys) -> None:
    """Ctrl-C is 130 with a line saying so (a script must not go on with half the work); an
    operating-system refusal (no permission, a full disk) is one error naming the file."""
    import gpuperf.hardware

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(gpuperf.hardware, "gpus", interrupted)
    assert main(["gpus"]) == 130
    assert capsys.readouterr().err == "gpuperf: interrupted\n"

    def refused():
        raise PermissionError(13, "Permission denied", str(tmp_path / "x.csv"))

    monkeypatch.setattr(gpuperf.hardware, "gpus", refused)
    assert main(["gpus"]) == 2
    assert capsys.readouterr().err == f"gpuperf: error: {tmp_path / 'x.csv'}: Permission denied\n"


def test_an_output_under_a_file_is_refused_before_any_work(tmp_path, capsys) -> None:
    (tmp_path / "good.csv").write_text("a\n1\n")
    under = tmp_path / "good.csv" / "sub"
    assert main(["geometry-sweep", "--table", "no-such-table.csv", "--report", str(under)]) == 2
    assert capsys.readouterr().err == f"gpuperf: error: --report {under}: {tmp_path / 'good.csv'} is a file, not a folder\n"
    assert main(["import", "nvprof", "no-such.csv", "--out", str(tmp_path / "good.csv" / "t.csv")]) == 2
    assert f"{tmp_path / 'good.csv'} is a file, not a folder" in capsys.readouterr().err


def test_the_demos_help_names_every_step(capsys, monkeypatch):
    from gpuperf.cli import main
    from gpuperf.demo import STEPS

    monkeypatch.setenv("COLUMNS", "250")
    assert main(["demo", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert all(name in shown for name in STEPS), shown


@pytest.mark.parametrize(("argv", "message"), [
    (["explore", "schoonhoven_spaces", "--kernel", "pnpoly", "--gpu", "V100", "--budget", "-5"], "--budget -5: must be at least 1"),
    (["tune", "jacobi2d_5pt", "--budget", "0"], "--budget 0: must be at least 1"),
    (["geometry", "--gpu", "H100", "--trip", "0"], "--trip 0: must be at least 1"),
    (["geometry", "--gpu", "H100", "--trip", "100", "--registers", "-3"], "--registers -3: must be at least 0"),
    (["geometry-sweep", "--table", "data/geometry_sweep_h100.csv.gz", "--blocks-step", "4"],
     "--loops, --trips and --blocks-step choose what a new sweep measures"),
    (["geometry-sweep", "--device", "opencl:0", "--blocks-step", "1"], "--blocks-step 1: must be at least 2"),
    (["advise", "jacobi2d_5pt", "-p", "n=512", "-p", "m=512", "--row", "0"], "--row picks a row of the --profile table"),
    (["tune", "jacobi2d_5pt", "--start", "random", "--rank-train", "stencil_spaces_pocl"],
     "--rank-train trains the ranking of --start ranked"),
    (["calibrate", "--table", "data/linear_model_h100.csv.gz", "--out", "m.json", "--cycles", "0"],
     "--cycles 0: must be at least 1"),
    (["optimizations", "--optimizations", "pyproject.toml"], "optimization folder 'pyproject.toml' is a file"),
    (["rank", "jacobi2d_5pt", "--train", "stencil_spaces_h100", "--train", "stencil_spaces_pocl"],
     "--train takes one table here, not 2; join them into one first"),
])
def test_an_option_that_cannot_apply_or_is_out_of_range_is_named(argv, message, capsys, monkeypatch):
    from pathlib import Path

    from gpuperf.cli import main

    monkeypatch.chdir(Path(__file__).parent.parent)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""


def test_a_command_group_without_a_command_prints_its_help_and_succeeds(capsys):
    from gpuperf.cli import main

    for argv in ([], ["campaign"]):
        assert main(argv) == 0
        captured = capsys.readouterr()
        assert "Usage: gpuperf" in captured.out and captured.err == ""


def test_no_help_breaks_a_line_where_its_source_did(capsys) -> None:
    """typer keeps a docstring's single line breaks in --help: `resources` and `occupancy` were listed in
    `gpuperf --help` with a line cut short mid-sentence, and `calibrate --help` with its second paragraph
    broken at 'an H100'."""
    _register_all()
    commands = {"": typer.main.get_command(app), **_commands(typer.main.get_command(app))}
    broken = {name: paragraph for name, command in commands.items()
              for paragraph in (command.help or "").split("\n\n") if "\n" in paragraph.strip()}
    assert broken == {}
    assert main(["--help"]) == 0
    listing = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())  # the box's sides dropped
    assert "the global loads and stores its machine code" in listing
    assert "per CU or, on RDNA, per" in listing


def test_a_help_text_in_square_brackets_is_shown_not_taken_as_markup(capsys) -> None:
    """--help reads its texts as rich markup, where [word] is a style tag and vanishes: features --json
    was described as 'kernel, variant, sizes, then features', its '[gpu,]' gone."""
    import re

    _register_all()
    commands = {"": typer.main.get_command(app), **_commands(typer.main.get_command(app))}
    texts = {(name, param.name): getattr(param, "help", None) or "" for name, command in commands.items()
             for param in command.params}
    texts |= {(name, "help"): command.help or "" for name, command in commands.items()}
    assert {where: text for where, text in texts.items() if re.search(r"(?<!\\)\[[^\]]*\]", text)} == {}
    assert main(["features", "--help"]) == 0
    assert "kernel, variant, [gpu,] sizes" in " ".join(capsys.readouterr().out.replace("\u2502", " ").split())


def test_the_campaign_commands_describe_their_shared_flags_alike() -> None:
    """campaign export's --no-progress read 'No progress bar.' on a page of lowercase phrases, where
    campaign run's reads 'no progress bar'."""
    _register_all()
    commands = _commands(typer.main.get_command(app))
    helps = {name: {param.opts[0]: param.help for param in commands[name].params if param.opts[0] in
                    ("--no-progress", "--json")} for name in ("campaign run", "campaign status", "campaign export")}
    assert helps["campaign export"]["--no-progress"] == helps["campaign run"]["--no-progress"] == "no progress bar"
    assert helps["campaign status"]["--json"] == "print JSON"


def test_calibrates_passes_help_does_not_promise_the_fastest_run_under_the_median(capsys) -> None:
    """--passes said each point's fastest run counts; with --statistic median the passes' median does."""
    assert main(["calibrate", "--help"]) == 0
    page = " ".join(capsys.readouterr().out.replace("\u2502", " ").split())
    assert "fastest run over all counts (its median with --statistic median)" in page


def test_spaces_help_names_a_users_own_space_as_rank_and_tune_do(capsys) -> None:
    """spaces takes path/file.py:function (docs/kernels.md), but its --help named only 'a space'."""
    for command in ("spaces", "rank", "tune"):
        assert main([command, "--help"]) == 0
        assert "path/file.py:function" in capsys.readouterr().out, command


def test_dash_h_is_help_on_every_command(capsys) -> None:
    """-h was refused everywhere ("No such option: -h"); it is --help's short form now."""
    _register_all()
    for name in ["", "campaign", *_commands(typer.main.get_command(app))]:
        assert main([*name.split(), "-h"]) == 0, name
        assert "Show this message and exit." in capsys.readouterr().out, name


@pytest.mark.parametrize("columns", ["40", "0"])
def test_a_narrow_or_zero_width_terminal_keeps_every_value_whole(columns):
    """At 40 columns rich folded -0.1005 over two lines and dropped whole columns; COLUMNS=0 printed nothing."""
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": columns}
    done = subprocess.run([sys.executable, "-m", "gpuperf", "gpus"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "GPU" in line and "SMs" in line)
    assert "f32 GFLOP/s" in header and "f64 GFLOP/s" in header
    assert any("GTX 680" in line and "135.4" in line for line in done.stdout.splitlines())


@pytest.mark.parametrize("columns", ["1", "20", "60"])
def test_help_in_a_narrow_terminal_keeps_option_names_and_words_whole(columns):
    """At COLUMNS=20 typer's help showed every option name as an ellipsis ("-…"), at 1 column nothing
    at all, and at 60 it cut words short ("Comma-sepa…"): the page is now 80 columns at least."""
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": columns}
    for command in ("features", "explore"):
        done = subprocess.run([sys.executable, "-m", "gpuperf", command, "--help"], capture_output=True, text=True,
                              env=env)
        assert done.returncode == 0, done.stderr
        assert "…" not in done.stdout and "--json" in done.stdout and "--param" in done.stdout, done.stdout
    assert "comma-separated parameter" in done.stdout


@pytest.mark.parametrize("columns", ["0", "99999999", "abc"])
def test_help_at_no_width_an_absurd_width_or_a_garbled_one_is_a_page_of_bounded_lines(columns):
    """COLUMNS=0 printed an empty help page (one blank line), and COLUMNS=99999999 help lines of 200 million
    characters, taking minutes and gigabytes: no width is the terminal's (80 off a terminal), a width past
    WIDEST_TERMINAL is taken as that, and a width that is no number is ignored."""
    import subprocess
    import sys
    from pathlib import Path

    from gpuperf.cli import NARROWEST_HELP, WIDEST_TERMINAL

    env = {**os.environ, "COLUMNS": columns}
    for command in ([], ["features"]):
        done = subprocess.run([str(Path(sys.executable).with_name("gpuperf")), *command, "--help"],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert "Usage: gpuperf" in done.stdout and "--help" in done.stdout, done.stdout
        assert NARROWEST_HELP <= max(map(len, lines)) <= WIDEST_TERMINAL


def test_a_variant_name_prints_whole_in_a_terminal_narrower_than_rich_measures_at():
    """rich measured a table's natural width no wider than the terminal: below about 80 columns a variant's
    name folded mid-word (unr / oll=1), and users copy these names into measure and features."""
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "60"}
    done = subprocess.run([sys.executable, "-m", "gpuperf", "spaces", "stencil2d", "--limit", "2"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert "stencil2d[local_x=4,local_y=1,outputs_y=1,prefetch=0,unroll=1]" in done.stdout


def test_closed_stderr_keeps_notes_out_of_json_and_python_settings_gpuperf_cannot_run_under_are_named():
    """With stderr closed (2>&-) print(file=None) wrote the notes to stdout, before the JSON; under
    PYTHONWARNINGS=error islpy's deprecation (which loopy calls) was a traceback; under -OO loopy failed to
    import on its stripped docstrings, with a traceback."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import sys; sys.stderr = None; from gpuperf.cli import main; "
                           "sys.exit(main(['geometry', '--gpu', 'A100', '--trip', '1000', '--json']))"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and json.loads(done.stdout)["threads"] > 0, done.stdout
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    done = subprocess.run([sys.executable, "-m", "gpuperf", "features", "vector_copy", "-p", "n=4096", "--json"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    done = subprocess.run([sys.executable, "-OO", "-m", "gpuperf", "gpus"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("gpuperf: error: gpuperf does not run under python -OO")


def test_a_closed_stdout_is_an_error_not_a_crash_nor_a_silent_success():
    """With stdout closed (>&-) Python's sys.stdout is None: reading its errors crashed every command; then
    print dropped the results without a word and the command ended with status 0, so a script read
    success from a --json it never got."""
    import subprocess
    import sys

    for args in (["geometry", "--gpu", "H100 SXM", "--trip", "1000"], ["kernels", "--json"], ["kernels"]):
        done = subprocess.run([sys.executable, "-c", "import sys; sys.stdout = None; from gpuperf.cli import main; "
                               f"sys.exit(main({args!r}))"], capture_output=True, text=True)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.splitlines() == ["gpuperf: error: standard output is closed (>&-), so nothing this command "
                                            "prints can be read; redirect it to a file, or to /dev/null where the "
                                            "output is not wanted"], done.stderr


@pytest.mark.parametrize("args", [["--version"], ["gpus"], ["kernels", "--json"], ["spaces", "stencil2d", "--limit", "1000"]])
def test_output_whose_reader_stopped_reading_ends_quietly_with_pythons_status(args):
    """``gpuperf kernels --json | head -1``: what the command printed in one piece (--version, --json) met
    the closed pipe only when Python flushed it on exit, which printed "Exception ignored ... BrokenPipeError"
    and ended with status 120, where a table printed row by row ended quietly with 1. Every command now
    ends as Python's documentation of SIGPIPE advises: nothing said, status 1."""
    import subprocess
    import sys
    from pathlib import Path

    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}  # as a shell runs it
    reader, writer = os.pipe()
    os.close(reader)  # the reader stopped before the first line came
    try:
        done = subprocess.run([str(Path(sys.executable).with_name("gpuperf")), *args], stdout=writer,
                              stderr=subprocess.PIPE, text=True, env=env)
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (1, ""), done.stderr


@pytest.mark.parametrize("args", [["nosuchcommand"], ["fit", "nosuchtable.csv", "--model", "lr", "--out", "m.json"]])
def test_an_error_whose_reader_stopped_reading_ends_with_the_same_status(args, tmp_path):
    """``gpuperf ... 2>&1 | true``: an error line stderr could no longer take ended with Python's status 120
    (its flush on exit failed), not the status of output cut short."""
    import subprocess
    import sys
    from pathlib import Path

    env = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run([str(Path(sys.executable).with_name("gpuperf")), *args], stdout=writer, stderr=writer,
                              env=env, cwd=tmp_path)
    finally:
        os.close(writer)
    assert done.returncode == 1


STDIN_COMMANDS = [  # a command of each reader: a table (read_table), a space's table, a profile, a campaign file
    ["fit", "-", "--model", "lr", "--out", "m.json"],
    ["explore", "-"],
    ["import", "nvprof", "-", "--out", "t.csv"],
    ["campaign", "run", "-", "--store", "s.db"],
]


@pytest.mark.parametrize("args", STDIN_COMMANDS, ids=lambda args: " ".join(args[:2]))
def test_a_table_given_as_standard_input_is_one_error_saying_gpuperf_reads_files(args, tmp_path):
    """`gpuperf fit - ... < t.csv` said "unknown table file or bundled dataset '-'" and `explore -` "-: no such
    file", though the table was there, on standard input: each names stdin and the way out, and writes nothing."""
    import subprocess
    import sys
    from pathlib import Path

    table = tmp_path / "given.csv"
    table.write_text("kernel,gpu,x1,time_s\nk,GTX 680,1,0.001\nk,GTX 680,2,0.002\n")
    with table.open() as given:
        done = subprocess.run([str(Path(sys.executable).with_name("gpuperf")), *args], stdin=given,
                              capture_output=True, text=True, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == ("gpuperf: error: -: gpuperf reads its inputs from files, not from standard input; save "
                           "the data to a file and give the file's name\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["given.csv"]


def test_a_file_named_dash_is_read_as_the_file_it_is(tmp_path, monkeypatch, capsys):
    """Only a '-' naming no file is taken for standard input: a table saved as ./- is read."""
    monkeypatch.chdir(tmp_path)
    rows = [f"k,GTX 680,{x},{x / 1000}" for x in range(1, 9)]
    (tmp_path / "-").write_text("\n".join(["kernel,gpu,x1,time_s", *rows]) + "\n")
    assert main(["fit", "-", "--model", "lr", "--out", "m.json"]) == 0, capsys.readouterr().err
    assert (tmp_path / "m.json").is_file()


def test_each_command_is_registered_once_however_often_main_runs(capsys) -> None:
    """Every call of main() added every command to the app again: after 30 calls each help page listed
    each command 30 times and took seconds (a long-lived process, this test suite, slowed call by call)."""
    for _ in range(3):
        assert main(["--help"]) == 0
    page = capsys.readouterr().out
    names = [command.name for command in app.registered_commands]
    assert len(names) == len(set(names)) and "geometry" in names
    assert len([group for group in app.registered_groups if group.name == "campaign"]) == 1
    assert page.count("Show this message and exit.") == 3


IMPORT_FREE = {  # a command, and the modules it must not import: a listing or --help answers at once
    "help": (["--help"], ["numpy"]),
    "kernels": (["kernels"], ["loopy"]),  # listing needs no loopy program (CatalogEntry)
    "spaces": (["spaces"], ["loopy"]),
    "optimizations": (["optimizations"], ["loopy"]),
    "devices": (["devices"], ["loopy", "pandas"]),  # nor the campaigns and their tables
    "fit": (["fit", "rodinia_nvprof", "--model", "lr", "--out", "{tmp}/lr.json"], ["loopy"]),  # a table's columns
}


@pytest.mark.parametrize("case", sorted(IMPORT_FREE))
def test_a_command_does_not_import_what_it_does_not_use(case, tmp_path):
    """Importing NumPy takes a tenth of a second, loopy over half a second: --help prints text only, and
    listing the catalog, the spaces, the optimizations or the devices builds no loopy program, and fitting a
    learned model on a table's columns counts none."""
    import subprocess
    import sys

    argv, modules = IMPORT_FREE[case]
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    code = (f"import sys; from gpuperf.cli import main\ntry: main({argv!r})\nexcept SystemExit: pass\n"
            f"print(sorted(m for m in {modules!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout + done.stderr


def test_numpy_values_print_as_python_values():
    """The NumPy types are checked only once NumPy is loaded; its scalars still print as numbers."""
    import numpy as np

    from gpuperf.cli.output import _format, _plain

    assert _plain({"a": np.float32(1.5), "b": np.float64("nan"), "c": [np.int64(3)]}) == {"a": 1.5, "b": None, "c": [3]}
    assert [_format(np.float32(2.0)), _format(np.float32("nan")), _format(np.float32(0.123456))] == ["2", "-", "0.1235"]


def test_a_whole_number_among_fractions_prints_as_its_column_does(capsys):
    """A MAPE that happens to be whole (times of 1e-12 s beside 1e3 s) printed as 250000000000000 beside
    2.333e+14 in its column; a column of counts still prints them in full."""
    from gpuperf.cli.output import print_table

    print_table([{"kernel": "a", "mape": 2.5e14, "rows": 123456.0}, {"kernel": "b", "mape": 2.3e15, "rows": 7.0}])
    out = capsys.readouterr().out
    assert "2.5e+14" in out and "250000000000000" not in out and "2.3e+15" in out
    assert "123456" in out


def test_ctrl_c_while_a_command_loads_its_modules_ends_in_gpuperfs_line(monkeypatch, capsys) -> None:
    """A Ctrl-C in the first second, while main() loads the command line's modules, is 130 and one line,
    not Python's traceback."""
    import sys
    import types

    class Loading(types.ModuleType):
        def __getattr__(self, name: str):
            if name == "command_locks":  # the first name main() takes from it
                raise KeyboardInterrupt
            raise AttributeError(name)

    monkeypatch.setitem(sys.modules, "gpuperf.cli.output", Loading("gpuperf.cli.output"))
    try:
        status = main(["gpus"])
    except KeyboardInterrupt:  # not let through to pytest, which a Ctrl-C would stop
        pytest.fail("main() let the Ctrl-C through")
    assert status == 130
    assert capsys.readouterr().err == "gpuperf: interrupted\n"


INTERRUPTED_IMPORT = """
import importlib.abc, runpy, sys
class Interrupted(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            raise KeyboardInterrupt
sys.meta_path.insert(0, Interrupted())
{run}
"""


def test_ctrl_c_while_python_loads_the_command_line_ends_in_gpuperfs_line() -> None:
    """``python -m gpuperf`` and the ``gpuperf`` script (which imports gpuperf.cli first) stopped by a Ctrl-C
    while the command line's libraries load: exit status 130 and gpuperf's line, no traceback."""
    import subprocess
    import sys

    for run in ('runpy.run_module("gpuperf", run_name="__main__", alter_sys=True)',
                "from gpuperf.cli import main; sys.exit(main())"):
        done = subprocess.run([sys.executable, "-c", INTERRUPTED_IMPORT.format(run=run), "kernels"],
                              capture_output=True, text=True)
        assert (done.returncode, done.stderr) == (130, "gpuperf: interrupted\n"), run


def test_importing_gpuperf_reads_no_package_metadata_until_its_version_is_asked_for() -> None:
    """The installed metadata (a third of a second to read, in which a Ctrl-C could only show Python's
    traceback) is read when ``gpuperf.__version__`` is first asked for, and gives the same version."""
    import subprocess
    import sys

    from gpuperf import __version__

    script = ("import sys, gpuperf; loaded = 'importlib.metadata' in sys.modules; "
              "print(loaded, gpuperf.__version__)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", __version__]


@pytest.mark.parametrize("argv", [
    ["explore", "tests/data/kernel_tuner_vector_add.json", "--report", ""],
    ["evaluate", "matvec_bsp", "--model", "lr", "--protocol", "leave-one-gpu-out", "--report", ""],
    ["geometry-sweep", "--table", "data/geometry_sweep_h100.csv.gz", "--report", " "],
    ["tune", "jacobi2d_5pt", "-p", "n=64", "-p", "m=64", "--start", "random", "--report", ""],
    ["reproduce", "geometry", "--out", ""],
])
def test_an_empty_report_folder_is_refused_not_skipped_or_the_current_folder(argv, capsys, tmp_path, monkeypatch):
    """--report "$DIR" with the variable unset: explore, geometry-sweep and tune wrote no report and said
    nothing, evaluate wrote its files into the current folder; now each refuses it before any work."""
    root = os.getcwd()
    argv = [os.path.join(root, a) if a.startswith(("tests/", "data/")) else a for a in argv]
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{argv[-2]} is empty; name the folder the report goes to" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("argv", "message"), [
    (["predict", "stencil2d", "--model", "rf"], "--model rf: predict takes a model file (one 'gpuperf calibrate'"),
    (["predict-table", "{tmp}/t.csv", "--model", "lr", "--out", "{tmp}/p.csv"],
     "--model lr: predict-table takes a model file"),
    (["rank", "jacobi2d_5pt", "--model", "et"], "explore, ask and tune take it as their search's surrogate"),
    (["tune", "jacobi2d_5pt", "--model", "{tmp}/m.json"], "--start counts --count-model {tmp}/m.json"),
    (["explore", "{tmp}/t.csv", "--model", "{tmp}/m.json"], "explore takes a surrogate it fits as it searches"),
    (["ask", "{tmp}/t.csv", "--model", "{tmp}/m.skops"], "ask takes a surrogate it fits as it searches"),
])
def test_a_model_name_where_a_file_goes_and_a_file_where_a_name_goes_say_which_the_command_takes(
        argv, message, tmp_path, capsys) -> None:
    """--model is a file in predict, predict-table and rank but a name in fit, evaluate, explore, ask and
    tune: crossing them says which the command takes, not 'rf: no such model file' or 'unknown model'."""
    (tmp_path / "t.csv").write_text("a,time_s\n1,0.5\n2,\n", encoding="utf-8")
    (tmp_path / "m.json").write_text("{}", encoding="utf-8")
    assert main([arg.format(tmp=tmp_path) for arg in argv]) == 2
    err = capsys.readouterr().err
    assert message.format(tmp=tmp_path) in err and err.count("\n") == 1


def _help_style(text: str) -> str | None:
    """'sentence' for a help opening with a capitalised word ("Print JSON.", "A space"), 'phrase' for one
    opening lowercase ("print JSON"); None where it opens with an acronym or name (GPU, CSV, SQLite)."""
    first = text.split()[0].lstrip("(")
    if first[:1].islower():
        return "phrase"
    return "sentence" if first[:1].isupper() and (len(first) == 1 or first[1].islower()) else None


def test_every_options_help_is_written_in_the_style_most_of_them_use() -> None:
    """decisions_cli and hardware_cli wrote each help as a sentence ("Print JSON."), the other commands as
    a lowercase phrase ("print JSON"): --json, --no-progress and -p read differently from command to command.
    Every command's (and the root's) option and argument helps now open and end as most of them do."""
    _register_all()
    root = typer.main.get_command(app)
    helps = [(f"gpuperf {name}".rstrip(), "/".join(param.opts), param.help)
             for name, command in {"": root, **_commands(root)}.items()
             for param in command.params if getattr(param, "help", None)]
    styles = [_help_style(text) for _, _, text in helps]
    assert len(helps) > 150 and styles.count("phrase") != styles.count("sentence")
    majority = max(("phrase", "sentence"), key=styles.count)
    stop = majority == "sentence"  # a sentence ends with a full stop, a phrase without one
    odd = [f"{command} {option}: {text!r}" for (command, option, text), style in zip(helps, styles)
           if style not in (None, majority) or text.rstrip().endswith(".") != stop]
    assert odd == [], f"most option helps are {majority}s"


@pytest.mark.parametrize("argv", [["rodinia", "--scenarios", "bsp,bogus"], ["rodinia", "--inner-aggregate", "bogus"],
                                  ["advisor", "--split", "bogus"]])
def test_reproduce_refusing_an_option_leaves_no_report_folder_behind(argv, tmp_path, monkeypatch, capsys):
    """An unknown scenario was checked after the default --out folder was made: the refusal left an empty
    gpuperf-reproduce/ where it ran."""
    from gpuperf.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", *argv]) == 2
    assert "unknown" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
