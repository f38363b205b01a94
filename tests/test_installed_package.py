"""gpuperf installed from a wheel or sdist, away from any checkout: what it tells its user and what it ships."""

from __future__ import annotations

import ast
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "src" / "gpuperf"


def _message_strings(text: str) -> list[str]:
    """A module's string constants that are not docstrings: the text it prints or writes."""
    tree = ast.parse(text)
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_no_message_sends_an_installed_user_to_a_benchmark_script():
    """calibrate's advice for an unreliable fit and the demo's report named benchmarks/*.py, which neither
    the wheel nor the sdist carries: they name gpuperf commands instead."""
    offenders = [f"{path.relative_to(PACKAGE)}: {text[:80]!r}" for path in sorted(PACKAGE.rglob("*.py"))
                 for text in _message_strings(path.read_text(encoding="utf-8"))
                 if "benchmarks/" in text or "bench_" in text]
    assert offenders == []


def test_calibrate_names_the_command_that_tests_the_model_on_unseen_kernels():
    import pandas as pd

    from gpuperf.cli.calibrate_cli import fit_summary

    text = fit_summary(pd.Series({"a": 0.1, "row_sum": 10.1}))
    assert "gpuperf reproduce linear --device DEVICE" in text


def test_the_sdist_carries_what_its_tests_docs_and_set_up_read():
    """The sdist had the test files but not tests/data, docs/, benchmarks/ or constraints.txt: its tests failed
    by the hundred. MANIFEST.in adds them (data/ travels as the package's bundled_data)."""
    lines = {line.strip() for line in (REPOSITORY / "MANIFEST.in").read_text(encoding="utf-8").splitlines()}
    for folder in ("tests/data", "docs", "benchmarks", "examples"):
        assert f"graft {folder}" in lines, folder
    included = {name for line in lines if line.startswith("include ") for name in line.split()[1:]}
    assert {"constraints.txt", "run"} <= included


def test_no_test_reads_the_data_folder_the_sdist_does_not_carry():
    """Tests read the repository's data/ folder, which the sdist does not carry (its tables travel as the
    package's bundled_data): an unpacked sdist's tests failed. They read gpuperf's data_dir()."""
    import re

    repository_data = re.compile(r"parents\[1\]\s*/\s*[\"']data[\"']|REPOSITORY\s*/\s*[\"']data[\"/']")
    readers = [f"{path.name}:{number}" for path in sorted((REPOSITORY / "tests").glob("*.py"))
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if repository_data.search(line)]
    assert readers == []


def test_the_licence_metadata_declares_the_bundled_tables_licences():
    """The wheel's metadata said only MIT while it carries CC BY 4.0 tables and one whose source states no
    licence: the expression names each, and data/LICENSES.md travels among the licence files."""
    import tomllib

    import pytest

    licenses = pytest.importorskip("packaging.licenses")
    project = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    expression = licenses.canonicalize_license_expression(project["license"])
    assert expression == project["license"]
    assert {"MIT", "CC-BY-4.0"} <= set(expression.split(" AND "))
    assert any(term.startswith("LicenseRef-schoonhoven") for term in expression.split(" AND "))
    assert project["license-files"] == ["LICENSE", "data/LICENSES.md"]
    assert all((REPOSITORY / name).is_file() for name in project["license-files"])


def test_messages_naming_a_docs_page_say_it_is_in_the_source_repository():
    """Messages and help sent an installed user to docs/*.md, which neither the wheel nor the sdist's package
    carries: each says where the page is."""
    import re

    offenders = [f"{path.relative_to(PACKAGE)}: {text[:80]!r}" for path in sorted(PACKAGE.rglob("*.py"))
                 for text in _message_strings(path.read_text(encoding="utf-8"))
                 if re.search(r"docs/\w+\.md", text) and "source repository" not in text]
    assert offenders == []


def test_the_features_page_prints_without_a_checkout_and_writes_where_told(tmp_path, monkeypatch, capsys):
    """python -m gpuperf.features.table outside a checkout failed with a traceback writing docs/features.md:
    with no argument it prints the page; a file in a missing folder is an error naming it."""
    from gpuperf.datasets.bundled import BUNDLED
    from gpuperf.features.table import FEATURES, main

    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    page = capsys.readouterr().out
    assert page.startswith("# Static features") and all(f"`{feature.name}`" in page for feature in FEATURES)
    assert not (tmp_path / "docs").exists()
    assert main(["absent/features.md"]) == 1
    assert "absent/features.md: No such file or directory" in capsys.readouterr().err
    assert main(["features.md"]) == 0 and (tmp_path / "features.md").read_text(encoding="utf-8") == page
    assert "python -m gpuperf.features.table" in BUNDLED["stencil_spaces_h100"].units


def test_the_features_page_command_answers_help_and_keeps_a_file_it_did_not_write(tmp_path, monkeypatch, capsys):
    """python -m gpuperf.features.table --help wrote the page to a file named --help, and any FILE given
    was replaced without asking: an existing file is replaced only when it is an earlier features page."""
    from gpuperf.features.table import features_markdown, main

    monkeypatch.chdir(tmp_path)
    assert main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: python -m gpuperf.features.table [-h] [FILE]")
    assert main(["--out"]) == 2 and "unrecognized arguments: --out" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n")
    assert main(["notes.md"]) == 1 and mine.read_text() == "my notes\n"
    assert "notes.md: exists and is not a features page" in capsys.readouterr().err
    stale = tmp_path / "features.md"
    stale.write_text("# Static features\n\nan older page\n", encoding="utf-8")
    assert main(["features.md"]) == 0 and stale.read_text(encoding="utf-8") == features_markdown()


def _setup_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpuperf_setup_hook", REPOSITORY / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # not as __main__: setup() is not called
    return module


def test_a_build_without_the_bundled_tables_is_refused_naming_the_link(tmp_path):
    """A checkout without symbolic links (bundled_data a 10-byte text file) built a wheel with no tables,
    silently: the build hook names the cause; this checkout and an unpacked sdist pass it."""
    setup = _setup_module()
    assert setup.bundled_data_problem(REPOSITORY) is None
    package = tmp_path / "src" / "gpuperf"
    package.mkdir(parents=True)
    (package / "bundled_data").write_text("../../data")
    problem = setup.bundled_data_problem(tmp_path)
    assert "bundled_data is a file, not a folder" in problem and "core.symlinks" in problem
    (package / "bundled_data").unlink()
    (package / "bundled_data").mkdir()
    (package / "bundled_data" / "t.csv.gz").write_bytes(b"")
    assert setup.bundled_data_problem(tmp_path) is None


def test_an_install_without_its_tables_names_the_checkout_without_links(tmp_path, monkeypatch):
    """Such a wheel, installed, said only 'set GPUPERF_DATA_DIR': the error names the cause."""
    import pytest

    from gpuperf.datasets import bundled
    from gpuperf.errors import GpuperfError

    packaged = tmp_path / "bundled_data"
    packaged.write_text("../../data")
    monkeypatch.delenv("GPUPERF_DATA_DIR", raising=False)
    monkeypatch.setattr(bundled, "_packaged_data", lambda: packaged)
    monkeypatch.setattr(bundled, "data_dir", lambda: packaged)
    monkeypatch.setattr(bundled, "_load_bundled", bundled._load_bundled.__wrapped__)
    with pytest.raises(GpuperfError, match=r"bundled dataset 'schoonhoven_spaces' is missing \(.*bundled_data is a "
                       r"file, not a folder: this gpuperf was likely built from a checkout without symbolic links"):
        bundled.load_dataset("schoonhoven_spaces")


def test_a_bundled_table_named_by_its_data_path_in_an_install_without_tables_names_the_cause(tmp_path, monkeypatch,
                                                                                             capsys):
    """calibrate --table data/linear_model_h100.csv.gz there said only "no such file"."""
    from gpuperf.cli import main
    from gpuperf.datasets import bundled

    packaged = tmp_path / "bundled_data"
    packaged.write_text("../../data")
    monkeypatch.delenv("GPUPERF_DATA_DIR", raising=False)
    monkeypatch.setattr(bundled, "_packaged_data", lambda: packaged)
    monkeypatch.setattr(bundled, "data_dir", lambda: packaged)
    monkeypatch.chdir(tmp_path)  # no data/ folder here
    cause = f"({packaged} is a file, not a folder: this gpuperf was likely built from a checkout without symbolic"
    for table, said in (("data/linear_model_h100.csv.gz", "data/linear_model_h100.csv.gz: no such file; gpuperf "
                         "reads data/NAME from its bundled tables, and they are missing "),
                        ("data/schoonhoven_spaces.csv.gz", f"{packaged / 'schoonhoven_spaces.csv.gz'}: bundled "
                         "dataset 'schoonhoven_spaces' is missing ")):
        assert main(["calibrate", "--table", table, "--out", str(tmp_path / "m.json")]) == 2
        assert f"gpuperf: error: {said}{cause}" in capsys.readouterr().err
    assert main(["calibrate", "--table", "y.csv.gz", "--out", str(tmp_path / "m.json")]) == 2
    assert "gpuperf: error: y.csv.gz: no such file" in capsys.readouterr().err  # not a table of the data folder


def test_the_package_is_marked_typed_for_type_checkers():
    """No py.typed in the wheel: type checkers ignored the library API's annotations (PEP 561)."""
    import fnmatch
    import tomllib

    assert (PACKAGE / "py.typed").is_file()
    patterns = tomllib.loads((REPOSITORY / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["gpuperf"]
    assert any(fnmatch.fnmatch("py.typed", pattern) for pattern in patterns)
