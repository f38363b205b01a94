"""The docs' command synopses against the command line: every option a synopsis shows exists on the
command it names, and every option of every command is named somewhere in the README or docs/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import typer

from gpuperf.cli import _register_all, app

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")


@pytest.fixture(scope="module")
def root():
    _register_all()
    return typer.main.get_command(app)


def _command(root, words: list[str]):
    """The (sub)command the leading words name, or None where the first names none."""
    command = root
    for word in words:
        if word not in getattr(command, "commands", {}):
            break
        command = command.commands[word]
    return None if command is root else command


def synopses(root) -> Iterator[tuple[str, object, str]]:
    """(where, command, text) for each synopsis line: an indented ``gpuperf CMD ...`` line of a code
    block and the indented ``[...]`` lines continuing it; comments after ``#`` left out."""
    for doc in DOCS:
        command = None
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            started = re.match(r"^\s{4,}gpuperf\s+(.*)$", line)
            if started:
                text = started.group(1).split("#")[0]
                command = _command(root, text.split())
                yield f"{doc.name}:{number}", command, text
            elif command is not None and re.match(r"^\s{6,}\[", line):
                yield f"{doc.name}:{number}", command, line.split("#")[0]
            else:
                command = None


def test_every_option_a_synopsis_shows_exists_on_its_command(root):
    checked, wrong = 0, []
    for where, command, text in synopses(root):
        if command is None:
            wrong.append(f"{where}: no such command: gpuperf {text.split()[0]}")
            continue
        options = {option for parameter in command.params for option in (*parameter.opts, *parameter.secondary_opts)}
        for flag in FLAG.findall(text):
            checked += 1
            if flag not in options | {"--help"}:
                wrong.append(f"{where}: gpuperf {command.name} has no option {flag}")
    assert checked > 150 and wrong == []  # 177 flags in 60 synopsis lines when written


def test_every_option_of_every_command_is_named_in_the_docs(root):
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS)

    def leaves(command, path):
        for name, sub in getattr(command, "commands", {}).items():
            yield from leaves(sub, [*path, name]) if getattr(sub, "commands", None) else [([*path, name], sub)]

    missing = [f"gpuperf {' '.join(path)} {option}" for path, command in leaves(root, [])
               for parameter in command.params for option in parameter.opts
               if option.startswith("--") and option not in text]
    assert missing == []


def test_the_pricing_of_a_users_kernel_in_models_md_runs_as_written(tmp_path, monkeypatch):
    """The example read 'fit features_and_times.csv' and 'features my_kernels.py:saxpy', files no one had;
    a model fitted on a table's default features then refused the kernel's row. Its three commands run."""
    import shlex
    import shutil

    from gpuperf.cli import main

    section = (ROOT / "docs" / "models.md").read_text(encoding="utf-8").split("### Pricing a kernel of one's own")[1]
    section = section.split("\n#")[0]  # up to the next heading
    commands = [line.split("#")[0].split()[1:] for line in section.splitlines() if line.startswith("    gpuperf ")]
    assert [command[0] for command in commands] == ["fit", "features", "predict-table"]
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "user_kernel.py", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for command in commands:
        assert main(command) == 0, shlex.join(command)
    predicted = pd.read_csv(commands[-1][commands[-1].index("--out") + 1])
    assert len(predicted) == 1 and predicted["predicted_time_s"].iloc[0] > 0


def test_the_users_kernel_and_space_file_in_kernels_md_runs_with_the_commands_shown(tmp_path, monkeypatch):
    """kernels.md showed no user's space, whose VariantSpace fields users guessed at: its file (a space
    with no check) is written out as shown and each command after it runs."""
    import shlex

    from gpuperf.cli import main

    section = (ROOT / "docs" / "kernels.md").read_text(encoding="utf-8").split("### A kernel and a space of your own")[1]
    section = section.split("\n## ")[0]  # up to the next section
    blocks = re.findall(r"((?:^    .*\n|^\n)+)", section, re.MULTILINE)
    [code] = [block for block in blocks if "# my_kernels.py" in block]
    (tmp_path / "my_kernels.py").write_text("\n".join(line[4:] for line in code.splitlines()) + "\n")
    commands = [shlex.split(line.strip())[1:] for block in blocks for line in block.splitlines()
                if line.startswith("    gpuperf ")]
    assert [command[0] for command in commands] == ["features", "spaces", "rank", "features", "advise"]
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--table", str(ROOT / "data" / "linear_model_h100.csv.gz"), "--out", "h100.json"]) == 0
    for command in commands:
        assert main(command) == 0, shlex.join(command)


def test_the_predict_gpu_example_in_models_md_runs_as_written(tmp_path, monkeypatch):
    """jobs.csv was named and never made: a reader had to build it. The page's python line makes it (the
    bundled Rodinia launches of the other GPUs and one launch per kernel on a Tesla K20), and the command
    after it runs on it as written."""
    import shlex
    import subprocess
    import sys

    from gpuperf.cli import main

    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    [at] = [number for number, line in enumerate(lines) if line.startswith("    gpuperf predict-gpu jobs.csv")]
    assert lines[at - 1].startswith("    python -c ")
    monkeypatch.chdir(tmp_path)
    subprocess.run([sys.executable, *shlex.split(lines[at - 1].strip())[1:]], check=True, cwd=tmp_path)
    made = pd.read_csv(tmp_path / "jobs.csv")
    assert (made["gpu"] == "Tesla K20").sum() == made["kernel"].nunique() < (made["gpu"] != "Tesla K20").sum()
    assert main(shlex.split(lines[at].strip())[1:]) == 0
    predicted = pd.read_csv(tmp_path / "k20.csv")
    assert (predicted["source"] == "predicted").sum() > (predicted["source"] == "measured").sum() > 0
