"""Build hook: a wheel must carry the bundled tables, which src/gpuperf/bundled_data links to from data/."""

from __future__ import annotations

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent


def bundled_data_problem(root: Path) -> str | None:
    """Why a wheel built in ``root`` would carry no bundled tables, or None when it carries them."""
    packaged = root / "src" / "gpuperf" / "bundled_data"
    if packaged.is_dir() and any(packaged.glob("*.csv.gz")):
        return None
    state = "a file, not a folder" if packaged.is_file() else "missing" if not packaged.is_dir() else "empty"
    return (f"{packaged} is {state}: it is a symbolic link to data/ in gpuperf's repository, which a checkout "
            "without symbolic links (git's core.symlinks=false, Windows' default) makes a text file; a wheel "
            "built from it would carry none of the bundled tables. Clone with git -c core.symlinks=true, or "
            "replace src/gpuperf/bundled_data with a copy of data/")


def refuse_without_bundled_data() -> None:
    """Stop the build, naming the cause, where the package would carry no bundled tables."""
    problem = bundled_data_problem(HERE)
    if problem:
        raise SystemExit(f"error: {problem}")


class BuildPy(build_py):
    """build_py that refuses to build a wheel without the bundled tables (an editable install reads data/)."""

    def run(self) -> None:
        if not self.editable_mode:
            refuse_without_bundled_data()
        super().run()


class Sdist(sdist):
    """sdist that refuses to build a source distribution without the bundled tables."""

    def run(self) -> None:
        refuse_without_bundled_data()
        super().run()


if __name__ == "__main__":
    setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
