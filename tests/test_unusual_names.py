"""Names that are no plain ASCII identifiers (numbers, ``nan``, other Unicode normal forms) kept and
matched as written from end to end."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pandas as pd
import pytest

from gpuperf.cli import main
from gpuperf.datasets import load_dataset

NUMBER_LIKE = ["01", "1", "007", "1e3", "nan", "NA", "True", "None"]


def table(path, kernels: list[str]):
    """Rows of ``kernels`` on two GPUs at four sizes, with two features and a time."""
    rows = [{"kernel": kernel, "gpu": gpu, "n": n, "flops": n * (k + 1), "bytes": n // 2 + k,
             "time_s": 1e-6 * n * (k + 1) * (1 + g)}
            for k, kernel in enumerate(kernels) for g, gpu in enumerate(["RTX 3090", "GTX 1080"])
            for n in (256, 512, 1024, 2048)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_kernel_names_like_numbers_or_missing_values_read_as_written(tmp_path):
    frame = load_dataset(table(tmp_path / "t.csv", NUMBER_LIKE))
    assert frame["kernel"].drop_duplicates().tolist() == NUMBER_LIKE


def test_name_columns_read_as_text_are_checked_without_a_call_per_cell(tmp_path, monkeypatch):
    """kernel and gpu columns pandas read as strings are names as written already: no Python call per cell
    checks them (a million-row table spent seconds there), and a number-like name is still read again."""
    from gpuperf.datasets.tables import read_csv

    mapped = []
    series_map = pd.Series.map
    monkeypatch.setattr(pd.Series, "map", lambda self, *args, **kw: mapped.append(self.name) or
                        series_map(self, *args, **kw))
    frame = read_csv(table(tmp_path / "t.csv", ["saxpy", "gemm"]))
    assert mapped == [] and frame["kernel"].drop_duplicates().tolist() == ["saxpy", "gemm"]
    frame = read_csv(table(tmp_path / "n.csv", ["saxpy", "007"]))
    assert frame["kernel"].drop_duplicates().tolist() == ["saxpy", "007"]


@pytest.mark.parametrize("kernels", [["01", "1"], ["007", "1e3"], ["nan", "x"]])
def test_predict_table_writes_each_kernel_name_back_unchanged(tmp_path, kernels):
    data = table(tmp_path / "t.csv", kernels)
    assert main(["fit", str(data), "--model", "lr", "--features", "flops,bytes", "--out",
                 str(tmp_path / "m.json")]) == 0
    assert main(["predict-table", "--model", str(tmp_path / "m.json"), str(data), "--out",
                 str(tmp_path / "p.csv")]) == 0
    written = pd.read_csv(tmp_path / "p.csv", dtype=str, keep_default_na=False)
    assert written["kernel"].drop_duplicates().tolist() == kernels


def test_kernels_01_and_1_are_two_folds_of_leave_one_kernel_out(tmp_path, capsys):
    data = table(tmp_path / "t.csv", ["01", "1", "2"])
    assert main(["evaluate", str(data), "--model", "lr", "--features", "flops,bytes",
                 "--protocol", "leave-one-kernel-out", "--json"]) == 0
    folds = json.loads(capsys.readouterr().out)["per_group"]
    assert sorted(folds) == ["01", "1", "2"] and all(fold["n"] == 8 for fold in folds.values())


def nfd(name: str) -> str:
    """``name`` with each accented letter as its letter and a combining accent."""
    return unicodedata.normalize("NFD", name)


OWN_GPU = """
[[gpu]]
name = "Mï Lab GPU"
vendor = "NVIDIA"
architecture = "Ada"
compute_capability = "8.9"
sms = 76
cores_per_sm = 128
base_clock_mhz = 1500
boost_clock_mhz = 2500
memory_bandwidth_gbs = 700
memory_gb = 16
l2_bytes = 50331648
peak_f32_gflops = 48640
peak_f64_gflops = 760
source = "test"
"""


def test_a_gpu_name_in_another_unicode_normal_form_names_the_same_gpu(tmp_path, monkeypatch, capsys):
    from gpuperf.hardware import get_gpu

    path = tmp_path / "own.toml"
    path.write_text(unicodedata.normalize("NFC", OWN_GPU), encoding="utf-8")
    monkeypatch.setenv("GPUPERF_GPUS", str(path))
    assert nfd("Mï Lab GPU") != "Mï Lab GPU" and get_gpu(nfd("Mï Lab GPU")).name == "Mï Lab GPU"
    assert main(["occupancy", "--gpu", nfd("Mï Lab GPU"), "--threads", "256", "--registers", "32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gpu"] == "Mï Lab GPU"


def test_explore_kernel_picks_a_kernel_named_in_another_unicode_normal_form():
    from gpuperf.decisions.space import select_rows

    frame = pd.DataFrame({"kernel": ["Ké", "Ké", "other"], "bx": [1, 2, 1], "time_s": [1.0, 2.0, 3.0]})
    picked, where = select_rows(frame, "t.csv", kernel=nfd("ké"))
    assert picked["kernel"].tolist() == ["Ké", "Ké"] and where == "t.csv (Ké)"


def test_a_plot_of_names_its_font_cannot_draw_says_so_in_one_note(tmp_path):
    import warnings

    from gpuperf.errors import GpuperfNote
    from gpuperf.evaluation.figures import Figure
    from gpuperf.evaluation.report import save_figure

    figure = Figure(figsize=(3, 2))
    axes = figure.add_subplot()
    axes.set_yticks([0, 1], ["中文 kernel", "核"])
    figure.tight_layout()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_figure(figure, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").is_file()
    assert not [w for w in caught if "Glyph" in str(w.message)]  # matplotlib's, one per character and drawing
    notes = [str(w.message) for w in caught if issubclass(w.category, GpuperfNote)]
    assert len(notes) == 1 and notes[0].startswith("plot.png: the plot's font") and "中文核" in notes[0]


def test_a_right_to_left_override_in_a_name_reaches_the_terminal_escaped(capsys):
    """An override left open in a kernel's name would show the figures after it reversed (0.25 as 52.0)."""
    from gpuperf.cli.output import print_table

    print_table([{"kernel": "\u202ek", "mape": 0.25}, {"kernel": "\u2067x\u2069", "mape": 0.5}])
    out = capsys.readouterr().out
    assert not set(out) & {"\u202e", "\u2067", "\u2069"}
    assert "\\u202ek" in out and "\\u2067x\\u2069" in out


def test_a_300_character_kernel_name_keeps_the_heat_map_readable(tmp_path, capsys):
    from PIL import Image

    long_name = "k" * 150 + "_" + "z" * 149
    data = table(tmp_path / "t.csv", ["short", long_name, "other"])
    assert main(["evaluate", str(data), "--model", "lr", "--features", "flops,bytes", "--protocol",
                 "leave-one-gpu-out", "--per-kernel", "--no-progress", "--report", str(tmp_path / "r")]) == 0
    assert "Tight layout not applied" not in capsys.readouterr().err
    width, _ = Image.open(tmp_path / "r" / "error_leave_one_gpu_out.png").size
    assert width < 1000  # the name's 300 characters would make it 2,600 pixels wide, the cells a sliver of it
    from gpuperf.evaluation.report import tick_labels

    assert "".join(tick_labels([long_name])[0].split("\n")) == long_name  # whole, over several lines


def test_a_variant_or_kernel_spec_written_as_r_writes_a_missing_value_is_none(tmp_path):
    """R's write.csv writes a missing value as NA: a plain kernel's variant or kernel_spec cell read 'NA' as a
    variant label ("variant 'empty[NA]': 'NA' is not param=value"), where it had read no variant."""
    from gpuperf.datasets.tables import read_csv

    path = tmp_path / "r.csv"
    path.write_text('"kernel","variant","kernel_spec","n","time_s"\n"NA",NA,NA,4096,2e-6\n"empty",NULL,"empty",8192,3e-6\n')
    frame = read_csv(path)
    assert frame["kernel"].tolist() == ["NA", "empty"]  # a kernel's name stays as written
    assert frame["variant"].isna().all() and frame["kernel_spec"].isna().tolist() == [True, False]


def test_a_gpu_written_as_r_writes_a_missing_value_is_no_gpu(tmp_path, capsys):
    """R's NA in a gpu cell was a GPU named 'NA': fit counted it as a GPU of its own and evaluate held it out."""
    from gpuperf.datasets.tables import read_csv

    data = table(tmp_path / "t.csv", ["a", "b"])
    text = data.read_text().replace(",GTX 1080,", ",NA,")
    data.write_text(text)
    assert read_csv(data)["gpu"].isna().sum() == 8
    assert main(["fit", str(data), "--model", "lr", "--features", "flops,bytes", "--out", str(tmp_path / "m.json"),
                 "--json"]) == 0
    captured = capsys.readouterr()
    fitted = json.loads(captured.out)
    assert fitted["gpus"] == ["RTX 3090"] and "8 of 16 measured rows have no gpu" in captured.err


def test_a_kernel_spelt_in_two_unicode_normal_forms_is_one_kernel_in_fit_and_evaluate(tmp_path, capsys):
    """'café' typed as one character and as 'e' and an accent were two kernels: two folds of
    leave-one-kernel-out, and fit counted three kernels for two."""
    data = tmp_path / "t.csv"
    rows = pd.read_csv(table(tmp_path / "raw.csv", ["café", "b", nfd("café")]), dtype=str, keep_default_na=False)
    rows.to_csv(data, index=False)
    assert main(["fit", str(data), "--model", "lr", "--features", "flops,bytes", "--out", str(tmp_path / "m.json"),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"] == ["b", "café"]
    assert main(["evaluate", str(data), "--model", "lr", "--features", "flops,bytes",
                 "--protocol", "leave-one-kernel-out", "--json"]) == 0
    folds = json.loads(capsys.readouterr().out)["per_group"]
    assert sorted(folds) == ["b", "café"] and folds["café"]["n"] == 16  # the first spelling, as written
    assert main(["evaluate", str(data), "--model", "lr", "--features", "flops,bytes", "--protocol",
                 "leave-one-gpu-out", "--per-kernel", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 24


def test_explores_training_table_takes_a_kernel_with_stray_spaces_or_accents_typed_apart_as_one_space(tmp_path):
    """explore --kernel saxpy picks 'saxpy ' and 'café' typed either way, as evaluate groups them; its --train
    table split such a kernel's configurations on one GPU into two spaces."""
    from gpuperf.decisions.space import read_training_spaces

    for names in (["saxpy", "saxpy "], ["café", nfd("café")]):
        rows = [{"kernel": names[tile == 4], "gpu": "Tesla K40", "block": block, "tile": tile,
                 "time_s": 1e-3 * (block * tile % 7 + 1)} for block in (32, 64, 128) for tile in (1, 2, 4)]
        path = tmp_path / "train.csv"
        pd.DataFrame(rows).to_csv(path, index=False)
        (space,) = read_training_spaces(path, ["block", "tile"])
        assert len(space) == 9 and space.gpu == "Tesla K40"


def test_predict_gpu_matches_a_kernel_timed_under_another_unicode_normal_form(tmp_path, capsys):
    """'café' timed on the GTX 680 as one character and on the Tesla K40 as 'e' and an accent (two tools' files)
    was two kernels: nothing to predict, for no launch on the Tesla K40 of kernel café."""
    rows = [{"kernel": name, "gpu": gpu, "n": n, "time_s": n * scale}
            for gpu, name, scale, sizes in (("GTX 680", "café", 1e-9, (1024, 2048, 4096, 8192)),
                                            ("Tesla K40", nfd("café"), 2e-9, (1024, 2048, 4096)))
            for n in sizes]
    data = tmp_path / "job.csv"
    pd.DataFrame(rows).to_csv(data, index=False)
    out = tmp_path / "pred.csv"
    assert main(["predict-gpu", str(data), "--gpu", "Tesla K40", "--key", "n", "--out", str(out), "--json"]) == 0, \
        capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out)
    assert (summary["predicted"], summary["measured"]) == (1, 3)
    written = pd.read_csv(out)
    assert written["kernel"].unique().tolist() == ["café"]  # the spelling the rows give first
    assert written.loc[written["n"] == 8192, "predicted_time_s"].item() == pytest.approx(8192 * 2e-9)


def test_explores_own_kernel_typed_in_another_normal_form_in_a_train_table_is_left_out_as_its_own(tmp_path):
    """explore SPACE (kernel 'café' typed as 'e' and an accent) --train a table naming it as one character
    trained on the space's own kernel and GPU, and on the table's other kernels, without a word."""
    from gpuperf.decisions.space import read_space, read_training_spaces, same_kernel_and_gpu
    from gpuperf.decisions.training import same_kernel_where_held
    from gpuperf.errors import GpuperfNote

    def table(name: str, kernels: list[str], gpu: str) -> Path:
        rows = [{"kernel": kernel, "gpu": gpu, "block": block, "tile": tile, "time_s": 1e-3 * (block * tile % 7 + 1)}
                for kernel in kernels for block in (32, 64, 128) for tile in (1, 2, 4)]
        pd.DataFrame(rows).to_csv(tmp_path / name, index=False)
        return tmp_path / name

    space = read_space(table("space.csv", [nfd("café")], "Tesla K40"), ["block", "tile"], "time_s")
    (own,) = read_training_spaces(table("own.csv", ["café"], "Tesla K40"), ["block", "tile"])
    assert same_kernel_and_gpu(space, own)
    others = read_training_spaces(table("train.csv", ["café", "other"], "Tesla V100"), ["block", "tile"])
    with pytest.warns(GpuperfNote, match="only its rows of café"):
        kept = same_kernel_where_held(space, others, "train.csv")
    assert [set(s.extra["kernel"]) for s in kept] == [{"café"}]


def test_kernel_picks_a_kernel_whose_rows_type_its_accents_two_ways_as_one_kernel(tmp_path):
    """explore's and ask's own table with 'café' typed as one character in some rows and as 'e' and an accent in
    others: --kernel café picks every row of it, as a --train table counts it, instead of refusing a name that
    'names 2 of its kernels (café, café)', two spellings no one can tell apart to name one."""
    from gpuperf.decisions.space import read_space

    rows = [{"kernel": "café" if block < 128 else nfd("café"), "gpu": "Tesla K40", "block": block,
             "time_s": 1e-3 * block} for block in (32, 64, 128, 256)]
    rows.append({"kernel": "saxpy", "gpu": "Tesla K40", "block": 32, "time_s": 1.0})
    path = tmp_path / "space.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    for name in ("café", nfd("café")):
        space = read_space(path, ["block"], kernel=name)
        assert len(space) == 4


@pytest.mark.parametrize("names", [("01", "1"), ("1e3", "1000"), ("True", "1")])
def test_a_train_table_of_a_kernel_named_like_the_spaces_as_a_number_is_another_kernel(tmp_path, capsys, names):
    """Kernels '01' and '1' on one GPU are two kernels, as fit and evaluate count them: explore --train takes the
    other's space, instead of leaving it out as 'the space's own kernel and GPU' (read as one number)."""
    own, other = names
    space, train = tmp_path / "space.csv", tmp_path / "train.csv"
    pd.DataFrame({"kernel": own, "gpu": "A100", "x": [1, 2, 3, 4], "time_s": [4.0, 3.0, 2.0, 1.0]}).to_csv(
        space, index=False)
    pd.DataFrame({"kernel": other, "gpu": "A100", "x": [1, 2, 3, 4], "time_s": [1.0, 5.0, 2.0, 3.0]}).to_csv(
        train, index=False)
    assert main(["explore", str(space), "--params", "x", "--train", str(train), "--json"]) == 0
    captured = capsys.readouterr()
    assert "own kernel" not in captured.err
    assert json.loads(captured.out)["method"].startswith("transfer")
