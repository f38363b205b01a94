"""gpuperf gpus / resources / occupancy through the command line entry point."""

from __future__ import annotations

import json

import pytest

from gpuperf.cli import main
from gpuperf.hardware import gpus


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_gpus_json_lists_every_descriptor(capsys):
    listed = run_json(capsys, ["gpus", "--json"])
    assert [g["name"] for g in listed] == [g.name for g in gpus()]
    a100 = next(g for g in listed if g["name"] == "A100 PCIe 40GB")
    assert a100["sms"] == 108 and "NVIDIA A100-PCIE-40GB" in a100["aliases"]


def test_gpus_table(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    assert "GPU descriptors" in out and "H200" in out and "gfx90a" in out


def test_occupancy_json(capsys):
    result = run_json(capsys, ["occupancy", "--gpu", "a100", "--threads", "256", "--registers", "64", "--json"])
    assert result["gpu"] == "A100 PCIe 40GB"
    assert (result["occupancy"], result["active_blocks_per_sm"], result["active_warps_per_sm"]) == (0.5, 4, 32)
    assert result["limiter"] == "registers"


BOARDS = "'H100' is taken as the H100 SXM; gpuperf also describes the H100 PCIe: name the board if it ran on another"


def test_occupancy_and_geometry_note_the_board_a_model_name_is_taken_as(capsys):
    """H100 is taken as the H100 SXM without a word, though gpuperf describes the H100 PCIe too."""
    assert main(["occupancy", "--gpu", "H100", "--threads", "256", "--registers", "32", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["gpu"] == "H100 SXM" and captured.err.strip() == f"note: {BOARDS}"
    assert main(["occupancy", "--gpu", "H100", "--threads", "256", "--registers", "32"]) == 0
    assert capsys.readouterr().err.strip() == f"note: {BOARDS}"
    assert main(["geometry", "--gpu", "H100", "--trip", "1000", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["notes"] == [BOARDS] and captured.err.strip() == f"note: {BOARDS}"
    assert main(["geometry", "--gpu", "H100 SXM", "--trip", "1000", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["notes"] == [] and captured.err == ""


def test_features_note_the_board_a_model_name_is_taken_as(capsys):
    """features --gpu H100 wrote the H100 SXM's row (its gpu column) without the word occupancy gives."""
    assert main(["features", "vector_copy", "-p", "n=4096", "--gpu", "H100", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["gpu"] == "H100 SXM" and captured.err.strip() == f"note: {BOARDS}"
    assert main(["features", "vector_copy", "-p", "n=4096", "--gpu", "H100 PCIe", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["gpu"] == "H100 PCIe" and captured.err == ""


def test_occupancy_table(capsys):
    assert main(["occupancy", "--gpu", "V100", "--threads", "32", "--registers", "32", "--smem", "0"]) == 0
    out = capsys.readouterr().out
    assert "active_blocks_per_sm" in out and "32" in out and "blocks" in out


def test_unknown_gpu_is_one_line_with_nearest_names(capsys):
    assert main(["occupancy", "--gpu", "RTX 3099", "--threads", "256", "--registers", "32"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "unknown GPU 'RTX 3099'; did you mean RTX 3090" in err


def test_invalid_launch_exits_2(capsys):
    assert main(["occupancy", "--gpu", "V100", "--threads", "2048", "--registers", "32"]) == 2
    assert "threads per block 2048" in capsys.readouterr().err


def test_resources_json(capsys):
    result = run_json(capsys, ["resources", "vector_copy", "-p", "n=4096", "--arch", "sm_80", "--json"])
    assert result["arch"] == "sm_80" and result["threads_per_block"] == 256
    assert result["registers"] > 0 and result["shared_memory_bytes"] == 0 and result["spill_bytes"] == 0
    assert result["machine_code"] == {"load_instructions": 1, "store_instructions": 1, "loads_in_loops": 0,
                                      "stores_in_loops": 0, "loops": 0, "straight_line": True}


def test_resources_with_gpu_adds_occupancy_for_its_arch(capsys):
    result = run_json(capsys, ["resources", "vector_copy", "--gpu", "RTX_3090", "--json"])
    assert result["arch"] == "sm_86" and result["gpu"] == "RTX 3090"
    # 256-thread blocks with few registers: 1536 / 256 = 6 blocks fill a cc 8.6 SM.
    assert result["occupancy"]["active_blocks_per_sm"] == 6 and result["occupancy"]["occupancy"] == 1.0


def test_resources_bad_input_exits_2(capsys):
    assert main(["resources", "vector_copy", "-p", "m=3"]) == 2
    assert "has no size parameter m" in capsys.readouterr().err
    assert main(["resources", "vector_copy", "--arch", "sm_61"]) == 2
    assert "architecture 'sm_61'" in capsys.readouterr().err


def test_usage_errors_are_one_line_and_exit_2(capsys):
    assert main(["gpus", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: No such option: --bogus") and err.count("\n") == 1
    assert err.rstrip().endswith("(see gpuperf gpus --help)")
    assert main(["occupancy", "--threads", "many"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: Invalid value for '--threads'") and err.count("\n") == 1


@pytest.mark.parametrize(("value", "message"), [
    (["n=4096.5"], "value '4096.5' is not a whole number"),
    (["n=inf"], "value 'inf' is not a whole number"),
    (["n=1e20"], "value '1e20' is out of range (-(2**63 - 1) to 2**63 - 1)"),
    (["n=1e300"], "parameter 'n=1e300': value '1e300' is out of range (-(2**63 - 1) to 2**63 - 1)"),
    ([f"n={'9' * 300}"], f"parameter 'n={'9' * 55}...': value '{'9' * 57}...' is out of range"),
    (["n=256", "n=512"], "parameter 'n' is given twice"),
])
def test_sizes_on_the_command_line_are_whole_numbers_given_once(capsys, value, message):
    argv = ["features", "vector_copy"]
    for pair in value:
        argv += ["-p", pair]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_sizes_outside_the_assumptions_say_which_were_the_kernels_defaults(capsys):
    assert main(["features", "stencil2d", "-p", "n=1001"]) == 2
    err = capsys.readouterr().err
    assert "sizes n=1001, m=4096 violate its assumptions" in err
    assert err.strip().endswith("(m=4096: the kernel's default, as no -p gave it)")
    assert main(["features", "stencil2d", "-p", "n=1001", "-p", "m=1024"]) == 2
    assert "default" not in capsys.readouterr().err


def test_resources_refuse_an_amd_gpus_occupancy_from_nvidia_registers(capsys):
    from gpuperf.cli import main

    assert main(["resources", "vector_copy", "-p", "n=4096", "--gpu", "MI50", "--arch", "sm_80"]) == 2
    assert "NVRTC counts NVIDIA registers" in capsys.readouterr().err


def test_resources_refuse_an_empty_gpu_rather_than_leave_out_its_occupancy(capsys):
    """--gpu "$GPU" with the variable unset is an error naming --gpu, as in every command taking a GPU, not no --gpu."""
    assert main(["resources", "vector_copy", "-p", "n=4096", "--gpu", "", "--json"]) == 2
    err = capsys.readouterr().err
    assert "--gpu is empty; name a GPU (see gpuperf gpus), or leave --gpu out" in err
    optional = (["features", "vector_copy", "--gpu", " "], ["advise", "vector_copy", "--gpu", ""])
    required = (["occupancy", "--threads", "128", "--registers", "32", "--gpu", ""],
                ["geometry", "--trip", "1000", "--gpu", ""])
    for argv in (*optional, *required):
        assert main(argv) == 2  # not the list of every GPU gpuperf describes
        err = capsys.readouterr().err
        assert "--gpu is empty; name a GPU" in err and "known:" not in err
        assert ("leave --gpu out" in err) == (argv in optional)  # a required --gpu has no default


@pytest.mark.parametrize("argv", [
    ["resources", "vector_copy"], ["occupancy", "--threads", "128", "--registers", "32"], ["features", "vector_copy"],
    ["geometry", "--trip", "1000"], ["advise", "vector_copy"],
])
def test_an_unknown_gpu_is_an_error_naming_gpu_and_the_nearest_names(capsys, argv):
    """Said "unknown GPU 'H10'" without naming --gpu, as predict-table names it."""
    assert main([*argv, "--gpu", "H10"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpuperf: error: --gpu: unknown GPU 'H10'; did you mean H100 SXM") and err.count("\n") == 1


def test_features_json_names_the_kernel_variant_and_sizes_it_counted(capsys):
    assert main(["features", "stencil2d[local_x=32]", "-p", "n=1024", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["kernel"] == "stencil2d"
    assert "local_x=32" in row["variant"]
    assert row["n"] == 1024 and row["m"] == 4096  # the default size of m is said too
    assert row["local_size_0"] == 32.0


def test_features_json_gives_the_gpus_own_name_and_whole_counts_as_integers(capsys):
    assert main(["features", "stencil2d[local_x=32]", "-p", "n=1024", "--gpu", "h-200", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert row["gpu"] == "H200"
    whole = ("local_size_0", "global_size_0", "threads", "work_groups", "registers_per_thread", "active_blocks_per_sm")
    assert all(type(row[name]) is int for name in whole), {name: row[name] for name in whole}
    assert row["local_size_0"] == 32 and isinstance(row["cache_lines_per_warp_access"], float)


def test_features_on_an_amd_gpu_leave_registers_and_occupancy_empty_with_a_note(capsys):
    assert main(["features", "vector_copy", "-p", "n=4096", "--gpu", "MI210", "--json"]) == 0
    captured = capsys.readouterr()
    row = json.loads(captured.out)
    assert row["registers_per_thread"] is None and row["occupancy"] is None
    assert "registers and occupancy left empty" in captured.err
    assert "gpuperf occupancy --gpu MI210 --threads T --registers N" in captured.err
    assert main(["features", "vector_copy", "-p", "n=4096", "--json"]) == 0
    assert "left empty" not in capsys.readouterr().err


def test_features_on_an_amd_gpu_say_a_warp_is_32_lanes_not_its_wavefront(capsys):
    """MI300X's 64-lane wavefronts gave the same per-warp features as an H100's 32-lane warps, unsaid."""
    def run(gpu: str) -> tuple[dict, str]:
        assert main(["features", "stencil2d", "-p", "n=256", "-p", "m=256", "--gpu", gpu, "--json"]) == 0
        captured = capsys.readouterr()
        return json.loads(captured.out), captured.err

    (amd, said), (nvidia, quiet) = run("MI300X"), run("H100")
    assert amd["cache_lines_per_warp_access"] == nvidia["cache_lines_per_warp_access"]
    assert ("note: Instinct MI300X: the per-warp features (cache_lines_per_warp_access, sectors_per_warp_access, ...) "
            "count warps of 32 lanes on every GPU, not its 64-lane wavefronts") in said
    assert "per-warp" not in quiet


def _resources_from_a_fresh_cache(capsys, monkeypatch, tmp_path) -> dict:
    """``resources vector_copy --json`` with empty caches, so the disassembler as patched is run."""
    from gpuperf.features import compiled

    monkeypatch.setenv("GPUPERF_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compiled, "_memory_cache", {})
    compiled.nvdisasm_version.cache_clear()
    try:
        return run_json(capsys, ["resources", "vector_copy", "-p", "n=4096", "--json"])
    finally:
        compiled.nvdisasm_version.cache_clear()


def test_resources_without_the_disassembler_still_give_the_registers(capsys, monkeypatch, tmp_path):
    import nvidia

    from gpuperf.features import compiled

    monkeypatch.setattr(nvidia, "__path__", [])
    monkeypatch.setattr(compiled.shutil, "which", lambda name: None)
    result = _resources_from_a_fresh_cache(capsys, monkeypatch, tmp_path)
    assert result["registers"] > 0 and result["machine_code"] is None
    assert "nvdisasm is unavailable" in result["machine_code_error"]


def test_resources_note_an_arch_other_than_the_gpus(capsys):
    assert main(["resources", "vector_copy", "-p", "n=4096", "--arch", "sm_80", "--gpu", "H100", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["arch"] == "sm_80"
    assert json.loads(captured.out)["notes"] == [
        "the occupancy on H100 SXM (sm_90) uses the registers and shared memory compiled for sm_80", BOARDS]
    assert "note: the occupancy on H100 SXM (sm_90) uses the registers and shared memory compiled for sm_80" in (
        captured.err)
    assert f"note: {BOARDS}" in captured.err  # the model name's board, as other commands say
    assert main(["resources", "vector_copy", "-p", "n=4096", "--arch", "sm_90", "--gpu", "H100 SXM", "--json"]) == 0
    assert "note:" not in capsys.readouterr().err
    # a GPU older than NVRTC compiles for still gets its occupancy from registers compiled for another
    assert main(["resources", "vector_copy", "-p", "n=4096", "--arch", "sm_75", "--gpu", "GTX 1080 Ti", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["occupancy"]["occupancy"] > 0
    assert "(sm_61) uses the registers and shared memory compiled for sm_75" in captured.err


def test_resources_with_a_disassembler_that_cannot_be_run_still_give_the_registers(capsys, monkeypatch, tmp_path):
    """An nvdisasm without execute permission ended the command with 'Permission denied'."""
    from gpuperf.features import compiled

    unusable = tmp_path / "nvdisasm"
    unusable.write_text("#!/bin/sh\n")
    unusable.chmod(0o644)
    monkeypatch.setattr(compiled, "nvdisasm_path", lambda: str(unusable))
    result = _resources_from_a_fresh_cache(capsys, monkeypatch, tmp_path)
    assert result["registers"] > 0 and result["machine_code"] is None
    assert f"nvdisasm ({unusable}) cannot be run: Permission denied" in result["machine_code_error"]


TWO_KERNELS = '''
import loopy as lp
import numpy as np


def two_pass():
    program = lp.make_kernel(
        "{[i,j]: 0<=i<n and 0<=j<n}",
        """
        t[i] = 2*a[i] {id=w}
        ... gbarrier {id=gb, dep=w}
        c[j] = t[j] + 1 {dep=gb}
        """,
        [lp.GlobalArg("a,c", np.float32, shape="n"), lp.ValueArg("n", np.int32),
         lp.TemporaryVariable("t", np.float32, shape="n", address_space=lp.AddressSpace.GLOBAL)],
        assumptions="n>=128 and n mod 128 = 0", name="two_pass", lang_version=(2018, 2))
    program = lp.split_iname(program, "i", 128, outer_tag="g.0", inner_tag="l.0")
    return lp.split_iname(program, "j", 128, outer_tag="g.0", inner_tag="l.0")
'''


def test_registers_of_a_program_of_two_device_kernels_are_not_those_of_its_first(capsys, tmp_path):
    """resources and features --gpu described the first of two device kernels, with no word of the second."""
    path = tmp_path / "two.py"
    path.write_text(TWO_KERNELS)
    assert main(["resources", f"{path}:two_pass", "-p", "n=1024", "--arch", "sm_90"]) == 2
    assert ("is 2 device kernels (a global barrier splits it), and loopy's CUDA code holds only the first"
            in capsys.readouterr().err)
    assert main(["features", f"{path}:two_pass", "-p", "n=1024", "--gpu", "H100", "--json"]) == 0
    captured = capsys.readouterr()
    row = json.loads(captured.out)
    assert "registers and occupancy left empty (NaN)" in captured.err
    assert "NVRTC compiles for NVIDIA GPUs" not in captured.err  # the H100 is one: no AMD advice
    assert row["kernel_launches"] == 2 and row["registers_per_thread"] is None and row["occupancy"] is None
