"""pyproject's dependencies: every package the source imports is one, and each one is used."""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# dependencies gpuperf uses without importing them: an OpenCL device and pandas' parquet engine
UNIMPORTED = {"pocl-binary-distribution", "pyarrow"}
# modules whose declared distribution installs them through another one (cuda-python's cuda.bindings comes
# in cuda-bindings) or may be absent here (the cuda extra's CuPy)
DECLARED_AS = {"cuda": "cuda-python", "cupy": "cupy-cuda13x"}


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared(extra: str | None = None) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["optional-dependencies"][extra] if extra else project["dependencies"]
    return {_normalized(re.split(r"[<>=!~\[; ]", requirement)[0]) for requirement in requirements}


def _imported_modules() -> set[str]:
    modules = set()
    for path in (ROOT / "src" / "gpuperf").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"gpuperf", "__future__"}


@functools.cache
def _imported_distributions() -> dict[str, set[str]]:
    """The distributions each third-party module gpuperf imports comes from."""
    owners = packages_distributions()
    return {module: {DECLARED_AS[module]} if module in DECLARED_AS else {_normalized(name) for name in owners.get(module, [])}
            for module in _imported_modules()}


def test_every_package_the_source_imports_is_a_dependency() -> None:
    """Kernel Tuner was only in the test extra, so `gpuperf demo` and the exploration study failed on a
    plain install."""
    declared = _declared() | _declared("cuda")
    for module, owners in _imported_distributions().items():
        assert owners & declared, f"{module} ({', '.join(sorted(owners)) or 'not installed'}) is no dependency"
    assert "kernel-tuner" in _declared()


def test_every_dependency_is_used() -> None:
    """tomli-w was a dependency that nothing imported."""
    imported = set().union(*_imported_distributions().values())
    unused = _declared() - imported - UNIMPORTED
    assert not unused, f"dependencies nothing in src/ imports: {sorted(unused)}"
