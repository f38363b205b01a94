"""The optimization advisor's inputs, pinned where mutation testing found them unchecked: its
``applies_when`` verdicts (chained and ``<=`` comparisons, powers), the condition features a source
lacks, the derived ratios of a kernel without global accesses, ``change_*`` signs, a profile row's
counters (block-size bound, mixed load widths, Nsight Compute sectors, the GPU a row names), which
training spaces a search learns from, and the feature formulas' defaults."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from gpuperf.decisions.advice_features import add_derived, change_features, with_condition_features
from gpuperf.decisions.condition_logic import verdict
from gpuperf.decisions.profile import profile_features, profile_gpu
from gpuperf.errors import GpuperfError, GpuperfNote


# -- applies_when -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("condition", "values", "expected"), [
    ("a <= 2", {"a": 2.0}, True),  # the bound itself is within <=
    ("a < 2", {"a": 2.0}, False),
    ("1 < a < 3", {"a": 5.0}, False),  # a chain holds only where every link does: 1 < 5 but not 5 < 3
    ("1 < a < 3", {"a": 0.0}, False),  # 0 < 3 but not 1 < 0
    ("a ** 2 > 8", {"a": 3.0}, True),  # 3 ** 2 = 9 (3 * 2 = 6 would not be)
])
def test_comparisons_chains_and_powers_are_judged_as_python_reads_them(condition, values, expected):
    assert verdict(condition, values) is expected


# -- sign confidence ------------------------------------------------------------------------------
def test_the_calibrated_chance_does_not_depend_on_the_units_of_the_evidence():
    # the evidence is standardised before the (regularised) logistic regression: a margin given in
    # ten-thousandths gives the same chances as one in units.
    from gpuperf.decisions.sign_confidence import fit_sign_calibrator, p_sign_right

    rng = np.random.default_rng(0)
    evidence = np.column_stack([rng.normal(size=40), rng.uniform(size=40), rng.uniform(size=40), np.zeros(40)])
    evidence[:, 3] = (evidence[:, 0] + rng.normal(scale=0.5, size=40)) > 0
    rescaled = evidence * [1e-4, 1, 1, 1]
    chances = p_sign_right(fit_sign_calibrator(evidence), evidence)
    assert np.allclose(p_sign_right(fit_sign_calibrator(rescaled), rescaled), chances, atol=1e-6)
    assert chances.min() < 0.3 and chances.max() > 0.7  # the margin does tell


# -- condition features -----------------------------------------------------------------------------
def test_condition_features_a_source_lacks_are_filled_from_the_averages():
    # sectors known: 12 sectors an access over the 4 that 32 lanes of floats need = 3
    filled = with_condition_features({"cache_lines_per_warp_access": 2.0, "sectors_per_warp_access": 12.0})
    assert filled["max_cache_lines_per_warp_access"] == 2.0 and filled["max_sectors_over_fewest"] == 3.0
    # sectors unknown (NaN): the most lines stands for them, itself the average lines (5)
    filled = with_condition_features({"cache_lines_per_warp_access": 5.0, "sectors_per_warp_access": math.nan})
    assert filled["max_cache_lines_per_warp_access"] == 5.0 and filled["max_sectors_over_fewest"] == 5.0
    # known values are kept as they are
    filled = with_condition_features({"cache_lines_per_warp_access": 1.0, "sectors_per_warp_access": 4.0,
                                      "max_cache_lines_per_warp_access": 7.0, "max_sectors_over_fewest": 6.0})
    assert filled["max_cache_lines_per_warp_access"] == 7.0 and filled["max_sectors_over_fewest"] == 6.0


def test_a_kernel_without_global_accesses_has_unknown_ratios_not_infinite_ones():
    # 10 flops and 2 local accesses over 0 global ones: no ratio (NaN); with 1 load + 1 store,
    # 10 / (4 bytes * 2) = 1.25 flops a byte and 2 / 2 = 1 local access per global one.
    frame = pd.DataFrame({"global_loads_per_thread": [0.0, 1.0], "global_stores_per_thread": [0.0, 1.0],
                          "flops_per_thread": [10.0, 10.0], "local_loads_per_thread": [1.0, 1.0],
                          "local_stores_per_thread": [1.0, 1.0]})
    derived = add_derived(frame)
    assert derived["arithmetic_intensity"].isna().iloc[0] and derived["local_per_global_access"].isna().iloc[0]
    assert derived["arithmetic_intensity"].iloc[1] == 1.25 and derived["local_per_global_access"].iloc[1] == 1.0


def test_change_features_are_after_against_before_in_log2_of_one_plus():
    # threads 1 -> 3: log2(4) - log2(2) = +1; flops 7 -> 0: log2(1) - log2(8) = -3;
    # a negative value keeps its sign: -3 -> 0 is 0 - (-log2(4)) = +2.
    before = pd.DataFrame({"threads": [1.0], "flops_per_thread": [7.0], "barriers_per_thread": [-3.0],
                           "work_group_size": [64.0]})
    after = pd.DataFrame({"threads": [3.0], "flops_per_thread": [0.0], "barriers_per_thread": [0.0]})
    row = change_features(before, after).iloc[0]
    assert (row["change_threads"], row["change_flops_per_thread"], row["change_barriers_per_thread"]) == (1, -3, 2)
    assert math.isnan(row["change_work_groups"])  # neither table has it
    assert math.isnan(row["change_work_group_size"])  # only the before table has it


def test_a_gpu_gpuperf_does_not_describe_gets_unknown_descriptor_numbers_not_an_error():
    # pairs measured on pocl's CPU device name it in the gpu column: no descriptor, so NaN (a
    # "device:" target), beside a Tesla K40 row with its 15 SMs.
    from gpuperf.decisions.advice_features import GPU_FEATURES, with_gpu_features

    out = with_gpu_features(pd.DataFrame({"gpu": ["Tesla K40", "pthread-AMD EPYC 9999"]}))
    assert out.loc[0, "gpu_sms"] == 15
    assert out.loc[1, list(GPU_FEATURES)].isna().all()


def test_a_kernels_advice_features_carry_its_condition_features():
    # Amaris' uncoalesced matrix sum (MAU): 16 x 16 work-groups with the row index on the fast axis, so
    # a warp's 32 lanes are 16 rows x 2 adjacent columns: 16 lines and 16 sectors an access, over the
    # 4 sectors 32 floats need = 4.
    from gpuperf.decisions.advice_features import kernel_features
    from gpuperf.decisions.program_features import amaris_kernel

    features = kernel_features(amaris_kernel("MAU"), {"n": 256})
    assert features["max_cache_lines_per_warp_access"] == 16 and features["max_sectors_over_fewest"] == 4


# -- profile rows -----------------------------------------------------------------------------------
ROW = {"grid.x": 64, "grid.y": 1, "block.x": 256, "block.y": 1, "gld_inst_32bit": 64 * 256}


def test_a_block_of_1024_threads_is_accepted_and_one_of_2048_refused():
    assert profile_features({**ROW, "block.x": 1024})["work_group_size"] == 1024
    with pytest.raises(GpuperfError, match="a block of 2048 threads; no GPU runs blocks of more than 1024"):
        profile_features({**ROW, "block.x": 2048})


def test_loads_of_two_widths_are_summed_and_their_lane_width_averaged_by_count():
    # 64 x 256 = 16384 threads; 16384 32-bit loads and 16384 128-bit loads: 2 loads a thread, an
    # average lane of (4 * 16384 + 16 * 16384) / 32768 = 10 bytes; 20 sectors a request / 10 = 2.
    row = {**ROW, "gld_inst_128bit": 64 * 256, "gld_transactions_per_request": 20}
    features = profile_features(row)
    assert features["global_loads_per_thread"] == 2 and features["max_sectors_over_fewest"] == 2


def test_load_counters_of_zero_give_no_lane_width():
    # no load of any width counted: no lane width, so no max_sectors_over_fewest from it (not 0 / 0)
    features = profile_features({**ROW, "gld_inst_32bit": 0, "gld_inst_64bit": 0, "gld_transactions_per_request": 4})
    assert features["global_loads_per_thread"] == 0 and "max_sectors_over_fewest" not in features


def test_nsight_compute_sectors_are_loads_and_stores_over_their_requests():
    # loads 800 sectors in 100 requests, stores 200 in 100: (800 + 200) / (100 + 100) = 5
    row = {**ROW, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 800,
           "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 100,
           "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": 200,
           "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": 100}
    assert profile_features(row)["sectors_per_warp_access"] == 5
    none = {**row, **{k: 0 for k in row if k.startswith("l1tex")}}  # no global access: 0, as statically
    assert profile_features(none)["sectors_per_warp_access"] == 0


def test_a_row_naming_an_unknown_gpu_and_a_known_device_is_the_devices():
    assert profile_gpu({"gpu": "Nonesuch 9000", "device": "Tesla K40"}) == profile_gpu({"gpu": "Tesla K40"})
    assert profile_gpu({"gpu": "Tesla K40"}) is not None


def test_a_row_past_the_end_of_a_profile_is_refused(tmp_path):
    from gpuperf.decisions.profile import read_profile

    path = tmp_path / "rows.csv"
    pd.DataFrame([{**ROW, "kernel": "k", "gpu": "Tesla K40"}] * 2).to_csv(path, index=False)
    assert read_profile(path, 2)["grid.x"] == 64
    with pytest.raises(GpuperfError, match="row 3 does not exist"):
        read_profile(path, 3)


# -- which training spaces a search learns from ----------------------------------------------------
def _space(kernel: str, xs: list[int], gpu: str = "Tesla K20", where: str | None = None):
    from gpuperf.decisions.space import Space

    return Space(["x"], pd.DataFrame({"x": xs}), np.arange(1.0, len(xs) + 1), where or f"{kernel}@{gpu}",
                 pd.DataFrame({"kernel": [kernel] * len(xs)}), gpu)


def test_a_table_holding_the_space_itself_and_no_other_gpus_keeps_every_kernel():
    # the table's only space of kernel a is the searched space's own GPU: nothing measured
    # elsewhere to prefer, so every space stays, with no note.
    from gpuperf.decisions.training import same_kernel_where_held

    spaces = [_space("a", [1, 2]), _space("b", [1, 2])]
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        assert same_kernel_where_held(_space("a", [1, 2]), spaces, "t") == spaces


def test_a_space_whose_kernel_cells_are_empty_names_no_kernel():
    # empty kernel cells name no kernel (not one called "nan"): the table, measured on another GPU,
    # is kept whole, with no note, even beside a space whose kernel cells are empty too.
    from gpuperf.decisions.space import Space
    from gpuperf.decisions.training import same_kernel_where_held

    searched = Space(["x"], pd.DataFrame({"x": [1, 2]}), [1.0, 2.0], "searched",
                     pd.DataFrame({"kernel": [math.nan, math.nan]}), "Tesla K20")
    blank = Space(["x"], pd.DataFrame({"x": [1, 2]}), [1.0, 2.0], "blank",
                  pd.DataFrame({"kernel": [math.nan, math.nan]}), "Tesla K40")
    spaces = [blank, _space("a", [1, 2], "Tesla K40")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        assert same_kernel_where_held(searched, spaces, "t") == spaces


def test_tune_keeps_a_table_of_only_its_own_kernel_whole_without_a_note():
    from gpuperf.decisions.training import own_kernel_spaces

    spaces = [_space("a", [1, 2]), _space("a", [1, 2], "Tesla K40")]
    with warnings.catch_warnings():
        warnings.simplefilter("error", GpuperfNote)
        assert own_kernel_spaces("a", spaces, "t") == spaces
    with pytest.warns(GpuperfNote, match=r"only its rows of a, the tuned space's own kernel \(1 space"):
        assert own_kernel_spaces("a", [*spaces, _space("b", [1])], "t") == spaces


def test_spaces_sharing_one_configuration_stay_and_the_note_names_three_left_out():
    from gpuperf.decisions.training import sharing_configurations

    target = _space("t", [1, 2], where="target")
    partly = _space("p", [2, 9], where="partly")  # shares x=2 only: kept
    apart = [_space("o", [10 + i], where=f"o{i}") for i in range(3)]
    with pytest.warns(GpuperfNote) as noted:
        assert sharing_configurations(target, [partly, *apart]) == [partly]
    # three left out: all named, no ellipsis
    assert str(noted[0].message).endswith("(o0, o1, o2)")
    with pytest.warns(GpuperfNote) as noted:
        sharing_configurations(target, [partly, *apart, _space("o", [20], where="o3")])
    assert str(noted[0].message).endswith("(o0, o1, o2, ...)")


# -- feature formulas' defaults ---------------------------------------------------------------------
def test_clblast_gemm_work_groups_of_unequal_tiles():
    from gpuperf.decisions.program_features import FEATURE_SOURCES

    # 64 x 32 tiles of C per 16 x 8 threads (4 x 4 outputs each): 4096^2 / (64 * 32) = 8192 groups of
    # 128 threads, 4096^2 / 16 = 1048576 threads in all (8192 * 128).
    rows = pd.DataFrame({"MWG": [64], "NWG": [32], "KWG": [32], "MDIMC": [16], "NDIMC": [8], "SA": [0], "SB": [0]})
    row = FEATURE_SOURCES["clblast_gemm"](rows).iloc[0]
    assert (row["work_groups"], row["work_group_size"], row["threads"]) == (8192, 128, 1048576)


def test_pnpoly_without_a_tile_size_tests_one_point_a_thread():
    from gpuperf.decisions.program_features import FEATURE_SOURCES

    # no tile_size column, and an empty cell: 1 point a thread, 20e6 threads, 20e6 / 256 blocks
    rows = pd.DataFrame({"block_size_x": [256.0, 256.0], "tile_size": [math.nan, 2.0]})
    empty, two = (r for _, r in FEATURE_SOURCES["kt_pnpoly"](rows).iterrows())
    assert empty["threads"] == 20_000_000 and empty["work_groups"] == 20_000_000 / 256
    assert two["threads"] == 10_000_000
    absent = FEATURE_SOURCES["kt_pnpoly"](rows.drop(columns="tile_size")).iloc[0]
    assert absent["threads"] == 20_000_000 and absent["flops_per_thread"] == 8 * 600


# -- training pairs ---------------------------------------------------------------------------------
def test_a_configuration_column_left_empty_is_no_part_of_the_pairs_label(tmp_path):
    from test_advise_pairs import _flag_rows, entry

    from gpuperf.decisions.pairs import build_spec_pairs

    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    pd.read_csv(path).assign(m=math.nan).to_csv(path, index=False)
    spec = entry(tmp_path, f'''dataset = "{path}"
kernel = "k"
parameter = "flag"
before = 0
after = 1
features = "columns"
configuration = ["n", "m", "flag"]''').pairs[0]
    assert list(build_spec_pairs(spec, "trick")["configuration"]) == ["n=64"]


def test_whole_float_settings_are_written_as_integers():
    from gpuperf.decisions.pairs import number_text

    texts = (number_text(64.0), number_text(np.float32(2.0)), number_text(2.5), number_text(3))
    assert texts == ("64", "2", "2.5", "3")


def test_a_gpu_described_without_a_compute_capability_still_gives_gpu_pairs(tmp_path):
    # AMD GPUs have no CUDA compute capability: one NaN GPU number does not make them devices.
    from test_advise_pairs import _flag_rows, _flag_spec

    from gpuperf.decisions.pairs import GPU_TARGET, build_spec_pairs

    path = _flag_rows(tmp_path, [(0, 4.0, "ok", None), (1, 2.0, "ok", None)])
    pd.read_csv(path).assign(gpu="Instinct MI210", device="AMD Instinct MI210").to_csv(path, index=False)
    pairs = build_spec_pairs(_flag_spec(tmp_path, path), "trick")
    assert list(pairs["target"]) == [GPU_TARGET] and math.isnan(pairs["gpu_compute_capability"].iloc[0])


def test_cycle_groups_are_compared_without_surrounding_spaces():
    # "g1 " and "g1" are one group: the median per-cycle ratio of 2/1, 4/1, 8/1 is 4 (the fallback 9
    # would be taken for two groups); a blank group is no group, as an absent one.
    from gpuperf.decisions.pairs import paired_speedups

    before, after = pd.Series(["2;4;8", "2;4;8"]), pd.Series(["1;1;1", "1;1;1"])
    got = paired_speedups(before, after, pd.Series([9.0, 9.0]), before_groups=pd.Series(["g1 ", " "]),
                          after_groups=pd.Series(["g1", None]))
    assert list(got) == [4.0, 4.0]


def test_cycle_lists_of_different_lengths_fall_back_to_the_ratio_of_times():
    from gpuperf.decisions.pairs import paired_speedups

    got = paired_speedups(pd.Series(["2;4;8"]), pd.Series(["1;1"]), pd.Series([9.0]))
    assert list(got) == [9.0]


def test_an_entrys_family_names_its_pairs_program(tmp_path):
    from test_advise_pairs import FLAG_PAIRS, entry, synthetic

    from gpuperf.decisions.pairs import build_spec_pairs

    text = FLAG_PAIRS.format(path=synthetic(tmp_path), inputs='"n"') + '\nfamily = "stencils"'
    assert set(build_spec_pairs(entry(tmp_path, text).pairs[0], "trick")["family"]) == {"stencils"}


def test_max_pairs_per_gpu_caps_the_pairs_of_each_gpu(tmp_path):
    from test_advise_pairs import FLAG_PAIRS, entry, synthetic

    from gpuperf.decisions.pairs import build_spec_pairs

    # the synthetic table has 3 flag pairs on its one GPU (see test_flag_pairs_match_everything_but_the_flag)
    text = FLAG_PAIRS.format(path=synthetic(tmp_path), inputs='"n"') + "\nmax_pairs_per_gpu = 2"
    assert len(build_spec_pairs(entry(tmp_path, text).pairs[0], "trick")) == 2


# -- count-based ranking ----------------------------------------------------------------------------
def test_tied_predictions_are_explored_in_table_order():
    # 20 variants, the even rows predicted 0 s and the odd ones 1 s: the even rows come first, in
    # table order (0, 2, 4, ...), so row 4, the only fast one (1 s against 10 s), is the 3rd evaluation.
    # (numpy's unstable quicksort orders these ties 0, 2, 6, 4, ...: 4 evaluations.)
    from gpuperf.decisions.count_ranking import ranking_evaluations

    table = pd.DataFrame({"kernel": ["k"] * 20, "time_s": [10.0] * 4 + [1.0] + [10.0] * 15,
                          "predicted_s": [0.0, 1.0] * 10})
    assert ranking_evaluations(table).loc["k", "evals_to_90"] == 3


def test_advise_profile_takes_a_table_of_one_row_as_that_row_and_refuses_more(monkeypatch):
    from gpuperf.decisions import advisor

    seen = []
    monkeypatch.setattr(advisor, "advise", lambda features, *args: seen.append(features))
    row = {"gpu": "Tesla K20", "grid.x": 64, "grid.y": 1, "block.x": 256, "block.y": 1, "inst_executed": 1e6}
    advisor.advise_profile(pd.DataFrame([row]))
    advisor.advise_profile(row)
    assert len(seen) == 2 and seen[0].keys() == seen[1].keys()
    assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(seen[0].values(), seen[1].values()))
    with pytest.raises(GpuperfError, match=r"profile row: a table of 2 rows; advise_profile advises one launch: pass "
                                           r"one row \(frame.iloc\[i\]\) or a table of one"):
        advisor.advise_profile(pd.DataFrame([row, row]))
