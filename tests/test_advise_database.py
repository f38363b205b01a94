"""The optimization database: discovery, user folders and one clear error per malformed entry."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuperf.decisions.optimizations import ENV_VAR, builtin_folder, load_entry, load_optimizations
from gpuperf.errors import GpuperfError

REQUIRED = {
    "local_memory_prefetch", "coalescing", "read_only_cache", "padding", "unrolling", "thread_coarsening",
    "larger_work_groups",
}

GOOD = '''
name = "{name}"
title = "A test optimization"
description = "Does something."
when_it_helps = "Always, in tests."

[example]
before = "x = a[i * n];"
after = "x = a[i];"

[apply]
kind = "source"
summary = "change the index"

[[pairs]]
dataset = "matvec_bsp"
kernel = "MAU"
after_kernel = "MAC"
features = "amaris_matvec"
'''


def write(folder: Path, name: str, text: str | None = None) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text if text is not None else GOOD.format(name=name))
    return path


def test_builtin_entries_are_complete():
    entries = load_optimizations()
    assert REQUIRED <= set(entries)
    for entry in entries.values():
        assert entry.path.parent == builtin_folder()
        assert entry.pairs, entry.name
        assert entry.example_before != entry.example_after
        assert entry.apply["kind"] in ("loopy", "source")


def test_space_parameters_name_real_stencil_parameters():
    from gpuperf.kernels.space import get_space

    space = get_space("stencil2d")
    for entry in load_optimizations().values():
        for flip in entry.space_parameters:
            assert flip["before"] in space.parameters[flip["name"]]
            assert flip["after"] in space.parameters[flip["name"]]


def test_user_folder_adds_and_replaces(tmp_path, monkeypatch):
    write(tmp_path, "my_trick")
    write(tmp_path, "coalescing", GOOD.format(name="coalescing").replace("A test optimization", "Mine"))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    entries = load_optimizations()
    assert "my_trick" in entries and entries["coalescing"].title == "Mine"
    monkeypatch.delenv(ENV_VAR)
    other = tmp_path / "other"
    other.mkdir()
    write(other, "second_trick")
    assert {"my_trick", "second_trick"} <= set(load_optimizations([tmp_path, other]))
    assert "my_trick" not in load_optimizations()


def test_missing_folder_is_an_error(tmp_path):
    with pytest.raises(GpuperfError, match="does not exist"):
        load_optimizations([tmp_path / "nowhere"])


BAD_CASES = [
    ("title", lambda t: t.replace('title = "A test optimization"\n', ""), "missing field 'title'"),
    ("example.after", lambda t: t.replace('after = "x = a[i];"\n', ""), "missing field 'example.after'"),
    ("colour", lambda t: t.replace('title =', 'colour = "red"\ntitle ='), "unknown field 'colour'"),
    ("apply.kind", lambda t: t.replace('kind = "source"', 'kind = "magic"'), "apply.kind"),
    ("features", lambda t: t.replace('"amaris_matvec"', '"amaris_matvek"'), "pairs[0].features"),
    ("pairs[0]", lambda t: t.replace('after_kernel = "MAC"\n', ""), "pairs[0]: give either after_kernel"),
    # each MAC point paired with itself: 128 pairs at a speedup of exactly 1, silently
    ("self_pairs", lambda t: t.replace('kernel = "MAU"', 'kernel = ["MAU", "MAC"]'),
     "pairs[0].after_kernel: 'MAC' is also a before kernel (kernel): its points would be paired with themselves"),
    ("applies_when", lambda t: t.replace('title =', 'applies_when = "cache_lines > 2"\ntitle ='), "applies_when"),
    ("applies_when_type", lambda t: t.replace('title =', 'applies_when = "threads > \'3\'"\ntitle ='),
     "applies_when: 'threads > '3'' may only compare features and numbers (with and, or, not and arithmetic); "
     "''3'' is not allowed"),
    ("applies_when_code", lambda t: t.replace(
        'title =', 'applies_when = "threads > threads.__class__.__init__.__globals__.get(\'sys\').exit(3)"\ntitle ='),
     "is not allowed"),
    ("applies_when_value", lambda t: t.replace('title =', 'applies_when = "threads + 1"\ntitle ='),
     "applies_when: 'threads + 1' cannot be evaluated"),
    ("no_pairs", lambda t: t[: t.index("[[pairs]]")], "pairs: no [[pairs]] table"),
    ("space_parameter", lambda t: t.replace('summary = "change the index"',
                                            'summary = "x"\nspace_parameter = {name = "prefetch", before = "0", after = 1}'),
     "apply.space_parameter: expected"),
    ("space_parameter_list", lambda t: t.replace(
        'summary = "change the index"',
        'summary = "x"\nspace_parameter = [{name = "local_x", before = 16, after = 32}, {name = "local_y", before = 4}]'),
     "apply.space_parameter[1]: expected"),
    ("space_parameter_no_direction", lambda t: t.replace(
        'summary = "change the index"', 'summary = "x"\nspace_parameter = {name = "local_x", before = 16, after = 16}'),
     "apply.space_parameter: before and after are both 16: a flip needs a direction"),
    ("space_parameter_nan", lambda t: t.replace(
        'summary = "change the index"', 'summary = "x"\nspace_parameter = {name = "local_x", before = nan, after = nan}'),
     "apply.space_parameter: expected"),
    ("space_parameter_unnamed", lambda t: t.replace(
        'summary = "change the index"', 'summary = "x"\nspace_parameter = [{name = " ", before = 1, after = 2}]'),
     'apply.space_parameter[0]: expected {name = "...", before = NUMBER, after = NUMBER}'),
    ("space_parameter_empty", lambda t: t.replace('summary = "change the index"', 'summary = "x"\nspace_parameter = []'),
     "apply.space_parameter: expected"),
    ("name", lambda t: t.replace('name = "bad"', 'name = "other"'), "name: 'other' must equal"),
    ("toml", lambda t: t + "\n[[[", "not valid TOML"),
    ("before", lambda t: t.replace('after_kernel = "MAC"', 'parameter = "n"\nafter = 2'), "missing field 'before'"),
    ("apply.transformation", lambda t: t.replace('summary = "change the index"', 'summary = "x"\ntransformation = 7'),
     "apply.transformation: expected a non-empty string, got 7"),
    ("apply.parameters", lambda t: t.replace('summary = "change the index"', 'summary = "x"\nparameters = 3'),
     "apply.parameters: expected a table, got 3"),
]


@pytest.mark.parametrize("field, edit, message", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_malformed_entry_names_file_and_field(tmp_path, field, edit, message):
    path = write(tmp_path, "bad", edit(GOOD.format(name="bad")))
    with pytest.raises(GpuperfError) as info:
        load_entry(path)
    text = str(info.value)
    assert str(path) in text and message in text
    assert "\n" not in text
    with pytest.raises(GpuperfError, match=re.escape(str(path))):
        load_optimizations([tmp_path])


def test_a_removal_file_drops_an_entry_even_a_builtin_one(tmp_path, monkeypatch):
    write(tmp_path, "unrolling", 'name = "unrolling"\nremove = true\n')
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    entries = load_optimizations()
    assert "unrolling" not in entries and REQUIRED - {"unrolling"} <= set(entries)
    monkeypatch.delenv(ENV_VAR)
    assert "unrolling" in load_optimizations()
    later = tmp_path / "later"
    later.mkdir()
    write(later, "unrolling", GOOD.format(name="unrolling"))  # a later folder may define it again
    assert load_optimizations([tmp_path, later])["unrolling"].title == "A test optimization"


@pytest.mark.parametrize("text, message", [
    ('name = "no_such_entry"\nremove = true\n', "removes 'no_such_entry', which no earlier folder defines"),
    ('name = "no_such_entry"\nremove = false\n', "remove: expected true"),
    ('name = "no_such_entry"\nremove = true\ntitle = "x"\n', "a removal file: unknown field 'title'"),
])
def test_bad_removal_files_are_refused(tmp_path, text, message):
    write(tmp_path, "no_such_entry", text)
    with pytest.raises(GpuperfError, match=message):
        load_optimizations([tmp_path])


def test_a_folder_of_no_entries_is_noted_and_an_emptied_database_is_said_to_assess_nothing(tmp_path, capsys):
    """A folder with no *.toml (a wrong --optimizations) passed silently, and a database whose every entry
    was removed said "no optimization is predicted at or above 1.05x", as if each had been assessed."""
    import pandas as pd

    from gpuperf.cli import main
    from gpuperf.decisions.optimizations import database_folders
    from gpuperf.errors import GpuperfNote
    from test_advise_cli import PROFILE

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.warns(GpuperfNote, match=re.escape(f"--optimizations: optimization folder '{empty}' holds no "
                                                   "entries (*.toml)")):
        assert database_folders([empty])[-1] == empty
    for path in builtin_folder().glob("*.toml"):
        write(tmp_path, path.stem, f'name = "{path.stem}"\nremove = true\n')
    pd.DataFrame([PROFILE]).to_csv(tmp_path / "row.csv", index=False)
    assert main(["advise", "--profile", str(tmp_path / "row.csv"), "--optimizations", str(tmp_path),
                 "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert "no optimization was assessed: the optimization database holds no entries" in out
    assert "predicted" not in out
    assert "note: the optimization database holds no entries: no optimization was assessed" in err


def test_a_name_and_file_name_in_two_unicode_normal_forms_are_one_name(tmp_path):
    """A file named déroulage.toml as macOS writes it (e + a combining accent) was refused for the name
    "déroulage" (one letter é): the two are compared NFC-normalised, and the entry is named in NFC."""
    import unicodedata

    composed = "d\u00e9roulage"
    decomposed = unicodedata.normalize("NFD", composed)
    write(tmp_path, decomposed, GOOD.format(name=composed))
    assert composed in load_optimizations([tmp_path])
    later = tmp_path / "later"
    later.mkdir()
    write(later, composed, f'name = "{decomposed}"\nremove = true\n')
    assert composed not in load_optimizations([tmp_path, later])


def test_a_folder_named_twice_is_read_once(tmp_path, monkeypatch):
    write(tmp_path, "unrolling", 'name = "unrolling"\nremove = true\n')
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    assert "unrolling" not in load_optimizations([tmp_path])


def test_a_pairs_dataset_beside_the_entry_is_read_from_any_working_folder(tmp_path, monkeypatch):
    """A relative dataset path was taken from the working folder: the same entry failed elsewhere."""
    import shutil

    from gpuperf.datasets.bundled import BUNDLED, data_dir
    from gpuperf.decisions.pairs import build_spec_pairs

    folder = tmp_path / "entries"
    folder.mkdir()
    shutil.copy(data_dir() / BUNDLED["matvec_bsp"].file, folder / "my_pairs.csv.gz")
    path = write(folder, "mine", GOOD.format(name="mine").replace('"matvec_bsp"', '"my_pairs.csv.gz"'))
    monkeypatch.chdir(tmp_path)  # not the entry's folder
    (spec,) = load_entry(path).pairs
    assert Path(spec.dataset) == folder / "my_pairs.csv.gz"
    assert len(build_spec_pairs(spec, "mine")) > 0


def test_a_pairs_dataset_or_after_kernel_error_names_the_entrys_field(tmp_path):
    from gpuperf.decisions.pairs import build_spec_pairs

    (tmp_path / "notds.csv").write_text("a,b\n1,2\n")
    path = write(tmp_path, "mine", GOOD.format(name="mine").replace('"matvec_bsp"', '"notds.csv"'))
    (spec,) = load_entry(path).pairs
    with pytest.raises(GpuperfError, match=rf"{re.escape(str(path))}: pairs\[0\].dataset: .*notds.csv"):
        build_spec_pairs(spec, "mine")
    path = write(tmp_path, "typo", GOOD.format(name="typo").replace('after_kernel = "MAC"', 'after_kernel = "MAX"'))
    (spec,) = load_entry(path).pairs
    with pytest.raises(GpuperfError, match=r"pairs\[0\].after_kernel: unknown kernel 'MAX'"):
        build_spec_pairs(spec, "typo")


@pytest.mark.parametrize("condition, message", [
    ("max_sectors_over_fewest > 9**9**9**9", "a power's exponent must be a number from -16 to 16"),
    ("threads > 2 ** threads", "in '2 ** threads' a power's exponent"),
    ("threads > (2 ** 3) ** 2", "with no power inside the power"),
    ("threads > 2 ** 17", "from -16 to 16"),
    ("threads ** -17 > 0", "in 'threads ** -17' a power's exponent must be a number from -16 to 16"),
    ("threads > 10000000000000000", "the number 10000000000000000 is above 1e+15"),
    ("threads > " + "threads + " * 20000 + "1", "nested too deeply"),
])
def test_conditions_too_costly_to_evaluate_are_refused_at_load(tmp_path, condition, message):
    """Pandas folds constant arithmetic in Python integers: a huge power would hang every command."""
    path = write(tmp_path, "bad", GOOD.format(name="bad").replace("title =", f'applies_when = "{condition}"\ntitle ='))
    with pytest.raises(GpuperfError, match=re.escape(f"{path}: applies_when: ") + ".*" + re.escape(message)):
        load_entry(path)


def test_small_powers_and_constants_still_load(tmp_path):
    condition = "threads ** 2 > 2 ** -3 and threads < 1000000000000000 and threads ** 0.5 > 1e30 ** 2"
    path = write(tmp_path, "ok", GOOD.format(name="ok").replace("title =", f'applies_when = "{condition}"\ntitle ='))
    assert load_entry(path).applies_when == condition


def test_a_tilde_in_gpuperf_optimizations_is_the_home_folder(tmp_path, monkeypatch):
    """GPUPERF_OPTIMIZATIONS=~/entries said "optimization folder '~/entries' does not exist", though
    GPUPERF_GPUS=~/gpus is read from the home folder."""
    from gpuperf.decisions.optimizations import database_folders

    (tmp_path / "entries").mkdir()
    write(tmp_path / "entries", "my_entry", GOOD.format(name="my_entry"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GPUPERF_OPTIMIZATIONS", "~/entries")
    assert database_folders()[-1] == tmp_path / "entries"


def test_hidden_files_such_as_an_editors_lock_are_no_entries(tmp_path):
    """Emacs' lock file .#entry.toml (a dangling link) beside an entry being edited stopped the whole
    database with "No such file or directory"; hidden files are not entries."""
    write(tmp_path, "mine")
    (tmp_path / ".#mine.toml").symlink_to("user@host.1234:1700000000")
    (tmp_path / "._mine.toml").write_bytes(b"\x00\x05\x16\x07\xff")  # macOS AppleDouble copy
    assert "mine" in load_optimizations([tmp_path])


def test_one_name_in_two_files_of_one_folder_is_an_error(tmp_path):
    """Two files of one folder naming one entry (é composed and decomposed) kept whichever sorted last."""
    import unicodedata

    composed = "d\u00e9roulage"
    decomposed = unicodedata.normalize("NFD", composed)
    write(tmp_path, composed, GOOD.format(name=composed))
    write(tmp_path, decomposed, GOOD.format(name=composed).replace("A test optimization", "Other"))
    with pytest.raises(GpuperfError, match="also the entry of .* in the same folder .*keep one of the two files"):
        load_optimizations([tmp_path])


def test_entries_in_a_subfolder_are_noted(tmp_path):
    """An entry moved into a subfolder of a named folder was silently not read."""
    from gpuperf.errors import GpuperfNote

    write(tmp_path, "mine")
    (tmp_path / "drafts").mkdir()
    write(tmp_path / "drafts", "draft")
    with pytest.warns(GpuperfNote, match=re.escape(f"'{tmp_path}': entries in its subfolders are not read "
                                                   "(drafts/draft.toml)")):
        entries = load_optimizations([tmp_path])
    assert "mine" in entries and "draft" not in entries
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)  # the subfolder named too: read, and no note
        assert "draft" in load_optimizations([tmp_path, tmp_path / "drafts"])


@pytest.mark.parametrize("argv", [["advise", "vector_copy"], ["reproduce", "advisor", "--out", "{tmp}/report"]])
def test_an_empty_optimizations_folder_is_refused_not_the_current_folder(argv, tmp_path, monkeypatch, capsys):
    """--optimizations "$DIR" with the variable unset read every *.toml of the current folder as an entry (a
    pyproject.toml: "unknown field 'build-system'"), where GPUPERF_OPTIMIZATIONS skips an empty entry."""
    from gpuperf.cli import main

    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n')
    monkeypatch.chdir(tmp_path)
    assert main([arg.format(tmp=tmp_path) for arg in argv] + ["--optimizations", ""]) == 2
    err = capsys.readouterr().err
    assert err == "gpuperf: error: --optimizations is empty; name a folder of optimization entries (*.toml)\n"
    assert not (tmp_path / "report").exists()
