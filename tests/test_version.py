"""gpuperf's version: installed, or read from the source tree it runs from."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import gpuperf
from gpuperf.measure.timing import software_versions

ROOT = Path(__file__).resolve().parents[1]
PRINT_VERSION = "import sys; sys.path.insert(0, sys.argv[1]); import gpuperf; print(gpuperf.__version__)"


def _version_from_copy(tmp_path: Path, with_pyproject: bool) -> str:
    shutil.copytree(ROOT / "src" / "gpuperf", tmp_path / "src" / "gpuperf",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if with_pyproject:
        shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    # -S: no site-packages, so no installed gpuperf to find (as on a machine running it from PYTHONPATH)
    done = subprocess.run([sys.executable, "-S", "-c", PRINT_VERSION, str(tmp_path / "src")],
                          capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_source_tree_run_without_installing_names_its_pyproject_version(tmp_path) -> None:
    import tomllib

    expected = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _version_from_copy(tmp_path, with_pyproject=True) == f"{expected}+source"


def test_a_source_tree_without_its_pyproject_still_says_it_is_one(tmp_path) -> None:
    assert _version_from_copy(tmp_path, with_pyproject=False) == "0.0.0+source"


def test_measurement_provenance_records_the_version_gpuperf_reports(monkeypatch) -> None:
    monkeypatch.setattr(gpuperf, "__version__", "9.9.9+source")  # as when run from a source tree
    software_versions.cache_clear()
    try:
        assert software_versions()["gpuperf"] == "9.9.9+source"
    finally:
        software_versions.cache_clear()


def test_a_source_tree_beside_an_installed_gpuperf_names_its_own_version(tmp_path) -> None:
    """A clone of another version on PYTHONPATH took the installed gpuperf's version (models stamped wrong)."""
    shutil.copytree(ROOT / "src" / "gpuperf", tmp_path / "src" / "gpuperf", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    text = (ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(text.replace(f'version = "{gpuperf.__version__}"', 'version = "9.8.7"', 1))
    done = subprocess.run([sys.executable, "-c", PRINT_VERSION, str(tmp_path / "src")],  # site-packages kept
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "9.8.7+source"


def test_a_copy_of_the_same_version_beside_this_checkouts_editable_install_says_it_is_a_source_tree(tmp_path) -> None:
    """Another clone on PYTHONPATH, of the same version as the checkout installed in editable mode, took its
    version unmarked: its measurements' provenance claimed the installed code."""
    shutil.copytree(ROOT / "src" / "gpuperf", tmp_path / "src" / "gpuperf", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    done = subprocess.run([sys.executable, "-c", PRINT_VERSION, str(tmp_path / "src")],  # site-packages kept
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"{gpuperf.__version__}+source" and "+" not in gpuperf.__version__


def _tree(tmp_path: Path, folder: str, pyproject: bytes) -> Path:
    package = tmp_path / folder / "gpuperf"
    package.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_bytes(pyproject)
    return package


def test_a_source_trees_version_is_gpuperfs_own_pyproject_only(tmp_path) -> None:
    """A wheel installed with pip --target into a project's folder reported that project's version as its own
    (into saved models and cache keys), and a pyproject there that is not UTF-8 made import gpuperf fail."""
    ours = b'[project]\nname = "gpuperf"\nversion = "9.8.7"\n'
    assert gpuperf._source_tree_version(_tree(tmp_path / "a", "src", ours)) == "9.8.7"
    assert gpuperf._source_tree_version(_tree(tmp_path / "b", "vendor", ours)) is None  # no src/: not a checkout
    theirs = b'[project]\nname = "webshop"\nversion = "2.0.0"\n'
    assert gpuperf._source_tree_version(_tree(tmp_path / "c", "src", theirs)) is None
    assert gpuperf._source_tree_version(_tree(tmp_path / "d", "src", b"[project]\nname = '\xe9'\n")) is None


def test_a_wheel_installed_into_another_projects_folder_does_not_take_its_version(tmp_path) -> None:
    shutil.copytree(ROOT / "src" / "gpuperf", tmp_path / "vendor" / "gpuperf", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "pyproject.toml").write_bytes(b'[project]\nname = "webshop"\nversion = "2.0.0"  # caf\xe9\n')
    done = subprocess.run([sys.executable, "-S", "-c", PRINT_VERSION, str(tmp_path / "vendor")],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0.0.0+source"  # -S: no installed distribution to name one either
