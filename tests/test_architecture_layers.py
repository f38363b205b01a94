"""The README's architecture: each folder of src/gpuperf imports only from folders earlier in its list."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "gpuperf"
LAYERS = ["hardware", "kernels", "features", "measure", "datasets", "models", "evaluation", "decisions"]


def gpuperf_folders_imported(path: Path) -> set[str]:
    """The gpuperf folders a module imports, at its top or inside its functions."""
    folders = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        folders.update(name.split(".")[1] for name in names if name.startswith("gpuperf.") and name.count(".") >= 1)
    return folders


def test_the_layer_list_names_every_folder_but_the_command_line():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - {"cli"} == set(LAYERS)
    readme = (PACKAGE.parents[1] / "README.md").read_text(encoding="utf-8")
    assert [readme.index(f"- `{name}/`") for name in LAYERS] == sorted(readme.index(f"- `{name}/`") for name in LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_folder_imports_no_later_folder(layer):
    later = set(LAYERS[LAYERS.index(layer) + 1:]) | {"cli"}
    wrong = {str(path.relative_to(PACKAGE)): sorted(gpuperf_folders_imported(path) & later)
             for path in sorted((PACKAGE / layer).rglob("*.py"))}
    assert {path: folders for path, folders in wrong.items() if folders} == {}
