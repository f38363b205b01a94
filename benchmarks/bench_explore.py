"""Exploring the bundled tuning spaces, each GPU left out in turn: evaluations to reach 90 % of the best.

Per (kernel, GPU): gpuperf's transfer-guided search (other GPUs' data, refitted as it measures),
plain transfer (mean normalised performance on the other GPUs, no model), gpuperf's online
search (no prior data), random order (exact expectation (N+1)/(m+1) from the hypergeometric
order statistics, its 10th-90th percentiles, and a 100-seed simulation) and Kernel Tuner's
strategies in simulation mode on the same space and budget. Spaces hold the configurations that
ran (Kernel Tuner's simulation mode never tries a cached failure); the other GPUs' failures
count as 0. A search that does not reach 90 % within the budget counts as budget + 1 (shown
as ">B"); so does random order where it stands beside the searches ("random", E[min(T, B+1)],
exact), its expectation with no budget shown apart ("uncapped", not comparable with the searches). Where the data has compile and benchmark times, the tuning time to 90 % is summed: a search's
stops at its budget, and random order's beside it is its exact expected cost of its first min(T, B) evaluations
(random_seconds_within_budget), the mean of 100 seeded orders with no budget shown apart (random_seconds, "uncapped").
"hindsight" follows the one other GPU whose ranking does best on the left-out GPU, chosen knowing
the answer: no method that only decides which other GPUs to trust can beat it on a space, so its
geometric mean (and that of the better of it and the guided search, space by space) bounds what
trusting the right GPU could bring.

    python benchmarks/bench_explore.py            # every family (about an hour on 2 cores)
    python benchmarks/bench_explore.py --quick    # Schoonhoven pnpoly and convolution, 1 seed
    python benchmarks/bench_explore.py --skip-kt --skip-online   # transfer-guided vs plain transfer only
    python benchmarks/bench_explore.py --skip-kt --skip-online --stop-at 0.9   # the same 90 % figures, faster

The transfer-guided defaults (a first pick covering the most other GPUs, two other GPUs' own best
configurations, the best of an untried combination of flag values, then hit picks, the likeliest
within 5 % of the new GPU's best if it is one of the other GPUs, then a portfolio covering the
other GPUs within 5 % of their best still uncovered,
the GPUs weighted by descriptor similarity (scale 0.5) times agreement with the measurements,
then extra-trees expected improvement on the residual of a line in the weighted mean of the
other GPUs' log performance, no transfer steps after the portfolio) were chosen by comparing
the variants below on these same leave-one-GPU-out spaces: one fixed setting for every space,
but not an out-of-sample figure. Variants tried (37 headline spaces, 3 seeds, evaluations to
90 %: geometric mean / ratio to plain transfer's 2.71 / max):

    portfolio + extra-trees EI on the measured values (the earlier default)   1.91 / 0.70 / 96
    + every other step EI among one-parameter neighbours of the best found    2.29 / 0.85 / 144
      (every step: GEMM on K20 and pnpoly on K20 exceed the 200 budget)
    + descriptor prior, scale 0.5                                             1.82 / 0.67 / 134
    + descriptor prior, scale 0.25                                            2.01 / 0.74 / 79
    + residual on the weighted mean (shift only), no prior                    1.93 / 0.71 / 113
    + residual on the weighted mean (shift only), prior 0.5                   1.87 / 0.69 / 68
    + residual, extra trees over the parameters only, no prior / prior 0.5    1.98 / 0.73 / 87,  1.87 / 0.69 / 83
    + equal mixture of the direct and residual extra trees, prior 0.5         2.06 / 0.76 / 128
    + residual on a fitted line (slope in [0, 1]), no prior                   1.91 / 0.70 / 122
    + residual on a fitted line, prior 1.0                                    1.84 / 0.68 / 92
    + residual on a fitted line, prior 0.5 (the default)                      1.82 / 0.67 / 51
    then a second portfolio covering each other GPU's exact best (cover 1.0)  1.83 / 0.68 / 78
    every 2nd / 3rd step after the portfolio the best configuration of one
      other GPU drawn from the weights (Thompson sampling)                    2.05 / 0.76 / 115,  1.93 / 0.71 / 72
    Gaussian-process residual over the parameters (1 seed, 4 hard spaces: GEMM K20 9,
      convolution_milo A100 71, W7800 20, hub GEMM RTX 3090 7; pnpoly V100 18): slow per step
      on 18,000-configuration spaces, not pursued; extra trees over the parameters alone after
      the portfolio: GEMM K20 53.
    every 3rd / 2nd step after the portfolio, expected improvement only among configurations
      with a parameter value not measured yet (aimed at convolution_milo on the A100, which
      keeps tile_size_y = 4, the others' favourite, for 40 picks while its best has 3)        1.94 / 0.72 / 83,  1.93 / 0.71 / 111
    every 3rd / 2nd step after the portfolio, one random tree's prediction (Thompson sampling)
      instead of expected improvement                                                         1.88 / 0.69 / 72,  1.90 / 0.70 / 80
    the fitted line plus a ridge regression (alpha 0.1 / 1 / 10) of its residual on the other
      GPUs' log performance, so the new GPU may be any mix of the others                      1.85 / 0.68 / 81,  1.88 / 0.69 / 90,  1.82 / 0.67 / 65
    a configuration covers another GPU within 10 % / 8 % of its best instead of 5 %            2.04 / 0.75 / 58,  1.95 / 0.72 / 58
    the first 3 / 5 steps after the portfolio only among configurations differing from every
      measured one in at least 2 parameters (3 parameters, 3 steps: 2.00 / 0.74 / 74)          1.99 / 0.73 / 78,  2.04 / 0.75 / 68

The hard spaces are noisy across seeds. On seeds 3-5 (not used to choose) the earlier default
gives 1.97 / 0.73 / 166 and the current one 1.87 / 0.69 / 73; on seeds 3-7, GEMM K20 /
convolution_milo A100 / W7800 / hub GEMM RTX 3090 take 14 / 102 / 8.6 / 19.8 evaluations with
the earlier default and 22.4 / 62.8 / 13.6 / 21.6 with the current one. On the older
convolution_milo (~v1, not a headline family) the Instinct MI50 takes 91 (earlier) and 117
(current) evaluations.

The figures above were taken with the parameter columns in the order each table lists them. The
surrogates now see them in the order of their names, so a search does not depend on how --params
lists them; the default then gives 1.84 / 0.68 / 62 (convolution_milo on the A100: 62.3, its
seed-to-seed spread as above; no other space above 16). The models now see -log(time) relative to the
fastest time measured so far, rounded to 12 decimals, so that times in any unit give the same picks
(before, seconds and microseconds could differ in the last bits and so in a near-tied pick); the same
search then gives 1.91 / 0.70 / 70 (2026-12-01; GEMM on K20 28 where it took 16, hub GEMM on the RTX
3090 16 where 11, the MI50's ~v1 space 120 where 137): figures that move by a few per cent when only
the floating-point rounding of the values changes, as the seed-to-seed spread above shows. With the
other GPUs' normalised performance and the surrogate's targets rounded to 12 decimals too (so that a
shuffled space, or --train times in seconds, give the same picks): 1.87 / 0.69 / 81 (2026-12-01; the
A100's convolution_milo 81, the MI50's ~v1 space 114).

Portfolio variants on that search (seeds 0-2 / seeds 3-5 with --first-seed 3; hard spaces in the
order GEMM K20, P100; convolution K20, P100; pnpoly K20, V100; convolution_milo A100, A6000, W6600,
W7800; hub GEMM RTX 3090). --variant '{"best_picks": 0}' gives the earlier default; the other
variants were sketches, not kept in the code:

    covering portfolio (the earlier default)            1.87 / 0.69 / 81,  1.82 / 0.67 / 63
        19.3 4.7 6.3 2 4 10 81.3 4 6 12.3 11;           16.7 4 4.7 2 4 9.3 63.3 4 6 12 10
    after the first pick, each other GPU's own best (its argmax, not any configuration within 5 %),
      heaviest first by prior times agreement, then the model                   1.73 / 0.64 / 56,  1.76 / 0.65 / 66
        24.3 3 11 2 2 2 55.7 2 8.7 8.3 13.7;            20.7 3 11.3 2 2 2 66 2 8.7 11 15.7
      the same with a slope-below-0.3 hedge to a parameters-only surrogate     1.75 / 0.64 / 56
      the same, at most 3 own bests                                             1.72 / 0.63 / 59
    first pick, 2 own bests, then the covering portfolio (the default)         1.71 / 0.63 / 68,  1.73 / 0.64 / 49
        15 3 4 2 2 2 68 2 12 13.7 13.7;                 25.7 3 4 2 2 2 49 2 12 13 15.7
      the same with 1 own best                                                  1.71 / 0.63 / 68

Model-phase variants on that default (the same hard spaces; sketches, not kept in the code):

    the default, rerun (seeds 0-2)                                              1.71 / 0.63 / 68
        15 3 4 2 2 2 68 2 12 13.7 13.7
    the line plus a ridge regression (alpha 1 / 10) of its residual on one-hot parameter values
      (an additive shift per parameter value), extra trees on what is left      1.70 / 0.63 / 74,  1.77 / 0.65 / 80
        34 3 4 2 2 2 73.7 2 6 11.3 11.3;   51 3 4 2 2 2 80 2 8.7 13.3 16.7
      alpha 1 on seeds 3-5                                                      1.76 / 0.65 / 90
        75.7 3 4 2 2 2 90 2 6 11 15
    every 3rd model step, expected improvement only among configurations within 2 parameters of
      the 3 best measured                                                       1.73 / 0.64 / 63,  1.76 / 0.65 / 55
        25.3 3 4 2 2 2 63 2 12 13.7 13.7;  45.7 3 4 2 2 2 55 2 12 13 17.3

The additive shift helps the AMD spaces (W6600 12 -> 6) and the MI50's ~v1 space (114 -> 51) but
costs GEMM on the K20 (so does the local step), whose 162 configurations within 90 % the others rank
148th and lower. The A100's convolution_milo has 2 configurations within 90 % of its best among 4,201 (the others rank them
657th and 894th; both tile_size_x 1, tile_size_y 3, read_only 1, use_padding 0, use_shmem 1); the
search stays near 0.68 among tile_size_y 4 for some 40 picks, and the best's neighbour with read_only 0
reaches 0.61 there: an interaction that neither a shift per value nor a local step around the best
finds sooner.

Other method families on that default (2026-12-01; seeds 0-2 / seeds 3-5, the same hard spaces;
the other 26 spaces keep their first pick, so 1 evaluation, in each; the per-space lines list GEMM K20,
GEMM P100, convolution K20, convolution P100, pnpoly K20, pnpoly V100, convolution_milo A100, A6000,
W6600, W7800 and hub GEMM RTX 3090):

    the default then, rerun                                                     1.71 / 0.63 / 68,  1.73 / 0.64 / 49
        15 3 4 2 2 2 68 2 12 13.7 13.7;                 25.7 3 4 2 2 2 49 2 12 13 15.7
    RGPE weights (Feurer et al. 2018): each other GPU's prior times the bootstrap probability (64
      resamples) that its ranking of the measured points has the fewest misordered pairs, in
      place of the Gaussian agreement                                           1.77 / 0.65 / 60
        45.7 3 8.3 2 2 2 60.3 2 6 14 16.3
    after the two own bests, one slice pick: the best configuration, by the others' weighted mean,
      of the best combination of the binary parameters that no measured configuration has
      (now the default; --variant '{"slice_picks": 0}' for the rule before)     1.65 / 0.61 / 61,  1.65 / 0.61 / 61
        15 3 4 2 2 2 61.3 2 4 30.7 5.7;                 25.7 3 4 2 2 2 61 2 4 17.3 5.7
      on seeds 6-8 (run after the choice): 1.71 / 0.63 / 59 against the default's 1.75 / 0.65 / 69
        50.7 3 4 2 2 2 59.3 2 4 27.7 6.7 against 50.7 3 4 2 2 2 69.3 2 9.7 13.3 11.7
      2 / 4 slice picks                                                         1.66 / 0.61 / 63,  1.71 / 0.63 / 61
        13.7 3 4 2 2 2 63 2 4 31 7.3;   13.3 3 4 2 2 2 61.3 2 4 50.7 12
      parameters with up to 3 values as flags (slice_values 3)                  1.75 / 0.65 / 61,  1.66 / 0.61 / 61
      1 own best, then the slice pick                                           1.70 / 0.63 / 63
      the slice pick after the covering portfolio instead (a sketch)            1.69 / 0.62 / 70
      the slice pick only among the best measured configuration with other flags (a sketch)
                                                                                1.69 / 0.62 / 79

The slice pick finds the flags the new GPU favours against the others where one slice's top is
within 90 % (hub GEMM on the RTX 3090, SA 1 where the others take SA 0: 13.7 -> 5.7; the W6600's
convolution_milo, read_only 1: 12 -> 4), and the A100 over seeds 0-11 (62 against 67 on average)
but not on seeds 3-5 (61 against 49); it costs the W7800 on every seed set (13.5 on seeds 6-11 for
the default, every seed 13-14; 34.7 with the slice pick, 15-64): there the 90 % configurations
differ from the others' plateau (0.8-0.86, block_size_y 1) in block_size_y 2 with tile_size_y 4,
and the extra measurement from another slice sends the model to block_size_y 2 with tile_size_y
2. The benchmark itself with the slice pick (seeds 0-2) gives the same 1.65 / 0.61 / 61 and, over every
family, 1.78 / max 87 against the default's 1.85 / 114 (the MI50's ~v1 space 86.7 against 114.3).
Made the default (lower geometric means on all three seed sets, a lower max on two). On GEMM on the K20 the search stays on the others' MWG = NWG =
128 for some 10 picks while its 162 configurations within 90 % spread over MWG 32-128, NWG 64-128
with MDIMC 8, NDIMC 16 and SA = SB = 0 (the others: SB 1 always): no slice top is within 90 %
(0.33, 0.72, 0.83, 0.52), the first within 90 % ranks 29th in its slice.

The other 26 spaces take 1 evaluation in every variant. A ranking by a per-configuration ridge line of
the other GPUs' log performance in the first principal component of their scaled log descriptors,
extrapolated to the new GPU (ridge 0 / 1 / 4), ranks worse than the plain mean (geometric means 2.97 /
2.90 / 2.81 against 2.74; GEMM on K20 780-1288 against 147): not pursued.

Occupancy-aware transfer (2026-12-01, sketches, not kept in the code): each configuration's threads
per block, registers (estimated from its tile sizes) and shared memory per block (from its block,
tile and filter sizes) through gpuperf's occupancy rules on every GPU, from the parameters and the
descriptors only. Seeds 0-2, the same 37 spaces and hard spaces as above:

    the default, rerun                                                          1.65 / 0.61 / 61
    each other GPU's performance times (occupancy here / there)^alpha, the ratio in [1/4, 4],
      alpha 0.25 / 0.5 / 1                                  1.84 / 0.68 / 82,  2.02 / 0.74 / 85,  2.51 / 0.93 / 159
    the same in the portfolio only, one-sided, alpha 1                          1.98 / 0.73 / 82
    the occupancy here (and its log ratio to each other GPU's) as surrogate features
                                                                                1.63 / 0.60 / 62  (1.70 / 0.63 / 105)
      over seeds 0-8: 1.65 / 0.61 / 70 against the default's 1.68 / 0.62 / 61
    an occupancy term in the transfer line (ridge 1 / 0.1)                      1.70 / 0.63 / 65,  1.68 / 0.62 / 72
    threads, registers and shared memory as surrogate features                  1.67 / 0.62 / 49 (seeds 3-5 / 6-8: 1.74 / 66, 1.69 / 71)

Not pursued: the A100's two configurations within 90 % on convolution_milo have a lower estimated
occupancy there (register-limited at 2,048 threads per SM) than on the A4000 and A6000, and among the
others' top 10 % the occupancy ratio is anticorrelated with how performance transfers (Spearman -0.3);
over the 146 (target, other GPU) pairs the link is weak (median Spearman 0.12) and changes sign
between GPUs (GEMM on the K20 +0.5, on the P100 -0.4).

Hit picks and other variants on that default (2026-12-02; 37 headline spaces, geometric mean /
ratio / max on seeds 0-2, 3-5 with --first-seed 3 (not used to choose) and 6-8; per-space lines as above:
GEMM K20, GEMM P100, convolution K20, convolution P100, pnpoly K20, pnpoly V100, convolution_milo
A100, A6000, W6600, W7800 and hub GEMM RTX 3090; sketches unless said):

    the default then (--variant '{"hit_spread": 0}')          1.65 / 0.61 / 61,  1.65 / 0.61 / 61,  1.71 / 0.63 / 59
        15 3 4 2 2 2 61.3 2 4 30.7 5.7;  25.7 3 4 2 2 2 61 2 4 17.3 5.7;  50.7 3 4 2 2 2 59.3 2 4 27.7 6.7
    after the slice pick, hit picks: each the configuration with the largest chance of being within
      5 % of the new GPU's best, the new GPU one of the other GPUs (prior times agreement), a
      configuration's log ratio to that GPU's best carrying over with a normal spread of 0.05, each
      GPU's weight times the chance that no measured configuration hit it; while some configuration's
      chance exceeds 2 %; then the covering portfolio for GPUs still uncovered (now the default)
                                                              1.60 / 0.59 / 61,  1.63 / 0.60 / 61,  1.66 / 0.61 / 59
        15 3 4 2 2 2 61.3 2 4 8.7 5.7;   25.7 3 4 2 2 2 61 2 4 9.3 5.7;   50.7 3 4 2 2 2 59.3 2 4 9.3 6.7
      (every family: 1.73 / 87 and 1.75 / 88 against 1.78 / 87 and 1.78 / 88; the W7800 over seeds
      0-11: 9.1 against 29.3: a configuration at 95 % of a GPU's best covers it but hits it at even
      odds only, and the W7800's hit comes from the GPUs the first picks covered just so)
      (chosen with the end "until the GPUs left weigh 5 % or less": the same figures on all three seed
      sets, but that end need not come where one GPU leaves weight no configuration is a likely hit for)
      while some configuration's chance exceeds 1 % / 3 % / 5 %      1.64 / 0.60 / 70,  1.60 / 0.59 / 61,  1.62 / 0.60 / 61
        (1 %: GEMM K20 30.3, A100 69.7; 5 %: W7800 14.3: the gain rests on a narrow setting)
      spread 0.02 (the covering portfolio's figures) / 0.03 / 0.07   1.65 / 0.61 / 61,  1.62 / 0.60 / 61,  1.63 / 0.60 / 61
        (0.03: W7800 14.3, seeds 3-5 1.64; 0.07: GEMM K20 30.3)
      threshold 97 % instead of 95 %, spread 0.03                     1.60 / 0.59 / 61 (GEMM K20 15.7)
      at most 8 picks before the model: the same figures on all three seed sets
      no covering portfolio after them                                1.61 / 0.59 / 74 (A100 74)
        and until the GPUs left weigh 10 % / 2 %                      1.63 / 0.60 / 74,  1.64 / 0.60 / 69
      with the covering portfolio's end (every other GPU covered)     1.63 / 0.60 / 80 (A100 79.7, W7800 14.3)
        the same with a GPU left only while uncovered                 1.67 / 0.62 / 81
      the others' prior alone, not times agreement                    1.63 / 0.60 / 81
      agreement sigma 0.1 / 0.15 / 0.3 (in the model too)             1.69 / 0.62 / 64,  1.63 / 0.60 / 67,  1.67 / 0.62 / 66
      plus each pair of other GPUs as a scenario (their mean log performance, weight 0.5 sqrt(wi wj))
                                                                      1.60 / 0.59 / 61 (W7800 8.3)
      the first pick by hit chance too (spread 0.05 / 0.1 / 0.03)     1.59 / 0.59 / 61,  1.60 / 0.59 / 61,  1.62 / 0.60 / 61
        (seeds 3-5: 1.62 / 0.60 / 61; GEMM P100 3 -> 1 and A6000 2 -> 1, the MI250X's convolution_milo 1 -> 5:
        one space the other way at each spread; threshold 90 %: 1.67)
      hit picks in place of the own bests and the slice pick (the first pick, then at most 7 hit picks;
        95 % / threshold 100 % / 100 % with spread 0.1)                    1.79 / 0.66 / 68,  1.87 / 0.69 / 71,  1.93 / 0.71 / 71
        (hard at 95 %, the covering portfolio with the 5 % end: 1.76 / 0.65 / 68; spread 0.03: 1.82; threshold
        90 %, spread 0.05: 1.91; hard at 95 % with pairs of GPUs too: 1.87)
    the first pick alone (of 37 spaces, how many it puts within 90 %): covering 95 % (the default) 26,
      covering 90 % 22, hit chance (95 %, spread 0.05) 27, (100 %, 0.05) 25, mean normalised performance
      26, mean log performance 24, lower quartile over the GPUs 24; the rule whose first pick reaches
      90 % on the most training GPUs, each left out in turn and the rule run on the rest (prior-weighted):
      25: not pursued
    the order of the first picks chosen per space in the same way (first, own bests, slice pick: FOOS,
      FSOO, FOSO or FOS, the training GPUs' log evaluations to 90 % within 8 picks)
                                                                      1.68 / 0.62 / 61 (convolution K20 7.3, W6600 8.3)
      FOSO / FSOO fixed                                               1.67 / 0.62 / 61,  1.67 / 0.61 / 74
    the model phase, on the hit-pick default: expected improvement over the best measured plus 0.02 /
      0.05 / 0.1 (seeds 0-2 and 6-8)              1.62 and 1.64,  1.63 and 1.64 (A100 71 and 81),  1.63 and 1.64
      probability of improvement over the best measured plus 0 / 0.1; mean plus one spread (these three
      with the first pick by hit chance too, itself 1.59 / 0.59 / 61)
                                                                      1.66 / 0.61 / 61 (GEMM K20 48),  1.60 / 0.59 / 57,  1.62 / 0.60 / 82
      over seeds 0-11 on GEMM K20, the A100 and hub GEMM RTX 3090 (mean; the default 29.1, 62.2, 6.1):
      improvement over the best plus 0.1: 22.7, 65.1, 7.6; 100 trees: 26.4, 61.5, 6.6; over the best
      minus 0.05: 49.7, 62.8, 5.0
    Not pursued: the A100's convolution_milo reaches 90 % near pick 62 on every seed (geometric mean over
    seeds 0-11 61.9): for some 38 picks every configuration measured has tile_size_y 4, the others'
    favourite, and its two within 90 % have 3.

The online search (no prior data; --online-variant takes OnlineSearch's keyword arguments, and
"initial"). Variants run by a script on the bundled spaces of schoonhoven pnpoly and convolution
and hub pnpoly and convolution_milo (22 spaces, the GPUs alone, 2026-12-01), budget 100 (a search
not at 90 % by then counts 101, Kernel Tuner's runs likewise), each space's mean over 3 seeds:
geometric mean of the evaluations to 90 % / spaces where it beats the best of Kernel Tuner's six
strategies on that space (5 seeds, bayes_opt 2) / spaces where it beats bayes_opt (the strategy
with the best geometric mean there, 43.0; genetic_algorithm 45.1, random_sample 48.2). Only
length_bounds is kept in the code; the other variants were sketches (tune_every: the Gaussian process's
hyperparameters re-optimised at every n-th fit only, each from the last):

                                                   seeds 0-2          seeds 3-5          seeds 6-8
    10 random picks, length scales in [0.01, 100]  29.0 / 13 / 16     22.6 / 15 / 19     24.3 / 15 / 18
      (the earlier default)
    5 random picks, length scales in [0.05, 20]    25.1 / 16 / 18     19.4 / 19 / 20     22.0 / 13 / 17
      (the default)
    the earlier default, hyperparameters tuned at
      every 5th fit from the last (tune_every 5)   30.9 / 10 / 15     27.7 / 11 / 16
    tune_every 5 and: 5 picks                      28.8 / 12 / 17
      3 picks                                      25.8 / 14 / 16     27.7 / 13 / 16
      5 / 3 picks of a maximin design              27.3 / 9 / 15,  28.0 / 9 / 15
      5 picks, length scales in [0.05, 20]         24.6 / 12 / 16     20.8 / 14 / 19     28.1 / 12 / 16
      3 picks, length scales in [0.05, 20]         30.9 / 9 / 13      26.6 / 14 / 18
      5 picks, EI over the best + 0.05             32.2 / 12 / 15
      5 picks, upper confidence bound (2 spreads)  33.9 / 8 / 14
      10 picks, every 3rd step EI among the one-
        parameter neighbours of the best found     34.1 / 8 / 15
    extra trees, 5 picks (schoonhoven convolution, GTX 1080 Ti: 201 and 119 evaluations where
      the Gaussian process took 31 and 30): dropped

Over seeds 0-8 per space: 23.3 / 15 / 18 (default) against 26.6 / 12 / 16 (earlier); on seeds 6-8
(run after the choice) fewer evaluations but 2 fewer spaces won. The seed sets differ by more
than the variants do; the default's gain is in the spread as much as the middle
(max over spaces of the 9-seed mean 76 against 94). At the benchmark's budget of 200 (seeds 0-2; the best
single strategy there genetic_algorithm, 56.6): 27.8 / 15 / 20 against 32.6 / 13 / 17. Extra trees keep 10 random picks (on 5, one
of 4 seeds never found the best of an 11 x 5 grid in 60). A step takes 0.43 s on the
17,956 GEMM configurations with 100 measured, with one BLAS thread: with several threads on
2 busy cores the Gaussian process's fit took 20 s and more.

The other 15 spaces with the default (schoonhoven GEMM, hub GEMM and hub convolution; this benchmark with
--families schoonhoven/GEMM,hub/gemm,hub/convolution --budget 100 --seeds 1 --stop-at 0.9 --online-seeds 9
--kt-seeds 3 --slow-kt-seeds 1, about 15 minutes; 2026-12-01): online 29.7 (geometric mean over 9 seeds),
Kernel Tuner's simulated_annealing 48.7 (the best single strategy there), bayes_opt 56.6, genetic_algorithm
62.3; the online search beats the best strategy of each space on 9 of 15 (schoonhoven GEMM 4 of 7, hub GEMM 2
of 4, hub convolution 3 of 4) and simulated_annealing on 12 of 15. With the 22 spaces above: 24 of 37.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np
from scipy.stats import gmean

from gpuperf.decisions.bundled_spaces import leave_one_gpu_out, tuning_families
from gpuperf.decisions.exploration import make_explorer, plain_transfer_order
from gpuperf.decisions.explorers import run_search
from gpuperf.decisions.kernel_tuner_baseline import STRATEGIES, strategy_orders
from gpuperf.decisions.space import transfer_matrix
from gpuperf.decisions.search_metrics import (
    best_found_curve,
    cost_to,
    evals_to,
    random_cost_to,
    random_expected_cost_within,
    random_evals_quantile,
    random_expected_curve,
    random_expected_evals,
    random_expected_evals_within,
    simulate_random,
)

CURVE_POINTS = (1, 2, 5, 10, 20, 50, 100, 200)


def curve_points(budget: int) -> list[int]:
    """The points of the best-found curve that a search of this budget reaches."""
    return [k for k in CURVE_POINTS if k <= budget]
SLOW_STRATEGIES = ("bayes_opt",)  # a Gaussian process over the whole space per step: fewer seeds


def censored(value: int | None, budget: int) -> int:
    return value if value is not None else budget + 1


def tuning_seconds(space, order: list[int], fraction: float) -> float | None:
    """Compile + benchmark seconds spent until ``fraction`` is reached (None without timings)."""
    cost = space.tuning_cost()
    return None if cost is None else cost_to(space.performance, cost, order, fraction)


def random_tuning_seconds(space, fraction: float, seeds: int = 100) -> float | None:
    """The mean of ``seeds`` seeded random orders' seconds to ``fraction``, with no budget (None without timings)."""
    cost = space.tuning_cost()
    return None if cost is None else random_cost_to(space.performance, cost, fraction, seeds)


def random_tuning_seconds_within(space, fraction: float, budget: int) -> float | None:
    """Random order's exact expected seconds to ``fraction``, stopping at ``budget`` as the searches do."""
    cost = space.tuning_cost()
    return None if cost is None else random_expected_cost_within(space.performance, cost, fraction, budget)


def best_single_gpu_evals(space, others) -> int:
    """Evaluations to 90 % following the one other GPU whose ranking, known in hindsight, does best:
    a bound on what any choice of which GPU to trust could reach without learning from the new one."""
    performance, transfer = space.performance, transfer_matrix(space, others)
    counts = []
    for column in transfer.T:
        order = np.argsort(-np.nan_to_num(column, nan=-1.0), kind="stable")
        counts.append(evals_to(performance[order], 0.9) or len(order))
    return min(counts)


def run_case(family, gpu, space, others, args) -> dict:
    performance = space.performance
    row: dict = {"family": family.name, "gpu": gpu, "configurations": len(space)}
    runs, curves, timings = [], [], []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        explorer = make_explorer(space, others, args.model, True, seed, options=args.variant)
        order = run_search(explorer, space.times, args.budget, args.stop_at)
        runs.append(censored(evals_to(performance[order], 0.9), args.budget))
        row.setdefault("guided_95", censored(evals_to(performance[order], 0.95), args.budget))
        row.setdefault("guided_99", censored(evals_to(performance[order], 0.99), args.budget))
        curves.append(best_found_curve(performance[order], args.budget))
        timings.append(tuning_seconds(space, order, 0.9))
    row["guided"] = float(np.mean(runs))
    row["guided_seconds"] = timings[0] if timings[0] is None else float(np.mean(timings))
    transfer = plain_transfer_order(space, others)
    row["transfer"] = evals_to(performance[transfer], 0.9)
    row["transfer_seconds"] = tuning_seconds(space, transfer, 0.9)
    row["hindsight_gpu"] = best_single_gpu_evals(space, others)
    row["random_expected"] = random_expected_evals(performance, 0.9)  # no budget: not comparable with the searches
    row["random_within_budget"] = random_expected_evals_within(performance, 0.9, args.budget)  # scored as they are
    row["random_p10"] = random_evals_quantile(performance, 0.9, 0.1)
    row["random_p90"] = random_evals_quantile(performance, 0.9, 0.9)
    row["random_simulated"] = float(np.mean(simulate_random(performance, 0.9, 100)))
    row["random_seconds"] = random_tuning_seconds(space, 0.9)  # no budget: not comparable with the searches
    row["random_seconds_within_budget"] = random_tuning_seconds_within(space, 0.9, args.budget)  # scored as they are
    points = curve_points(args.budget)
    row["curve_guided"] = np.mean(curves, axis=0)[np.array(points) - 1].tolist()
    row["curve_random"] = random_expected_curve(performance, points).tolist()
    if not args.skip_online:
        online = []
        for seed in range(args.online_seeds):
            online_options = dict(args.online_variant or {})
            initial = online_options.pop("initial", None)
            explorer = make_explorer(space, (), args.model, True, seed, initial, options=online_options)
            order = run_search(explorer, space.times, args.budget, 0.9)  # evaluations to 90 % are all it reports
            online.append(censored(evals_to(performance[order], 0.9), args.budget))
        row["online"] = float(np.mean(online))
    if not args.skip_kt:
        slow = tuple(s for s in args.strategies if s in SLOW_STRATEGIES)
        fast = tuple(s for s in args.strategies if s not in SLOW_STRATEGIES)
        orders = strategy_orders(space, fast, args.budget, args.kt_seeds)
        orders |= strategy_orders(space, slow, args.budget, min(args.kt_seeds, args.slow_kt_seeds))
        for strategy, seeded in orders.items():
            row[f"kt_{strategy}"] = float(np.mean([censored(evals_to(performance[o], 0.9), args.budget) for o in seeded]))
    return row


def _fmt(value, budget: int) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value >= budget + 1:
        return f">{budget}"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def print_row(row: dict, args) -> None:
    kt = {k[3:]: v for k, v in row.items() if k.startswith("kt_")}
    best_kt = min(kt, key=kt.get) if kt else None
    text = (
        f"{row['family']:24s} {row['gpu']:22s} guided={_fmt(row['guided'], args.budget):>6s} "
        f"transfer={_fmt(row['transfer'], args.budget):>5s} hindsight={row['hindsight_gpu']:>4d} "
        f"random={row['random_within_budget']:6.1f} (uncapped {row['random_expected']:.1f} "
        f"[{row['random_p10']}-{row['random_p90']}]) online={_fmt(row.get('online'), args.budget):>6s}"
    )
    if best_kt:
        text += f" KT best={best_kt}:{_fmt(kt[best_kt], args.budget)} " + " ".join(
            f"{k}={_fmt(v, args.budget)}" for k, v in kt.items()
        )
    if row["guided_seconds"] is not None:
        text += (
            f" | seconds to 90%: guided={row['guided_seconds']:.1f} transfer={row['transfer_seconds']:.1f}"
            f" random={row['random_seconds_within_budget']:.1f} (uncapped {row['random_seconds']:.1f})"
        )
    print(text, flush=True)


def summarise(rows: list[dict], args) -> None:
    headline = [r for r in rows if "~" not in r["family"]]
    print("\n== summary: evaluations to reach 90 % of the best (geometric means) ==")
    for label, chosen in (("families as in the plain-transfer baseline", headline), ("every family", rows)):
        if not chosen:
            continue
        guided = np.array([r["guided"] for r in chosen])
        transfer = np.array([r["transfer"] for r in chosen], dtype=float)
        random = np.array([r["random_within_budget"] for r in chosen])
        uncapped = np.array([r["random_expected"] for r in chosen])
        print(f"{label} ({len(chosen)} spaces):")
        print(f"  transfer-guided ({args.model or 'et'}, {args.seeds} seeds): {gmean(guided):.2f}  max {guided.max():.0f}  above 50: {int((guided > 50).sum())}")
        print(f"  plain transfer: {gmean(transfer):.2f}  max {transfer.max():.0f}  above 50: {int((transfer > 50).sum())}")
        print(f"  ratio guided / plain transfer: {gmean(guided) / gmean(transfer):.2f} (target <= 0.5)")
        hindsight = np.array([r["hindsight_gpu"] for r in chosen], dtype=float)
        either = np.minimum(hindsight, guided)
        print(f"  the best single other GPU's ranking, chosen in hindsight: {gmean(hindsight):.2f} "
              f"(ratio {gmean(hindsight) / gmean(transfer):.2f}); the better of it and guided per space: "
              f"{gmean(either):.2f} (ratio {gmean(either) / gmean(transfer):.2f})")
        print(f"  random order (exact expectation, a miss within the budget counting {args.budget + 1} as for the "
              f"searches): {gmean(random):.2f}; with no budget (not comparable): {gmean(uncapped):.2f}")
        if "online" in chosen[0]:
            online = np.array([r["online"] for r in chosen])
            print(f"  online, no prior data ({args.online_seeds} seeds): {gmean(online):.2f}")
        kt_keys = [k for k in chosen[0] if k.startswith("kt_")]
        for key in kt_keys:
            seeds = min(args.kt_seeds, args.slow_kt_seeds) if key[3:] in SLOW_STRATEGIES else args.kt_seeds
            print(f"  Kernel Tuner {key[3:]} ({seeds} seeds): {gmean([r[key] for r in chosen]):.2f}")
        if kt_keys and "online" in chosen[0]:
            wins = sum(r["online"] < min(r[k] for k in kt_keys) for r in chosen)
            ties = sum(r["online"] == min(r[k] for k in kt_keys) for r in chosen)
            print(f"  online beats the best Kernel Tuner strategy on {wins} of {len(chosen)} spaces ({ties} ties)")
    timed = [r for r in rows if r["guided_seconds"] is not None]
    if timed:
        print("\n== tuning time to 90 % where the data has compile + benchmark times ==")
        for key, label in (("guided_seconds", "guided"), ("transfer_seconds", "transfer"),
                           ("random_seconds_within_budget", "random"),
                           ("random_seconds", "random with no budget (not comparable)")):
            print(f"  {label:9s}: total {sum(r[key] for r in timed):8.1f} s over {len(timed)} spaces")
    print("\n== best found (normalised) after k evaluations, mean over spaces ==")
    print("  k:              " + " ".join(f"{k:6d}" for k in curve_points(args.budget)))
    for key in ("curve_guided", "curve_random"):
        mean = np.mean([r[key] for r in rows], axis=0)
        print(f"  {key[6:]:15s} " + " ".join(f"{v:6.3f}" for v in mean))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="Schoonhoven pnpoly and convolution, 1 seed each")
    parser.add_argument("--families", help="comma-separated family names (default: all)")
    parser.add_argument("--model", help="surrogate (default: et transfer-guided, gp online)")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=3, help="seeds of the transfer-guided search")
    parser.add_argument("--online-seeds", type=int, default=3)
    parser.add_argument("--kt-seeds", type=int, default=5)
    parser.add_argument("--slow-kt-seeds", type=int, default=2, help="seeds of bayes_opt")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--skip-kt", action="store_true")
    parser.add_argument("--skip-online", action="store_true")
    parser.add_argument(
        "--stop-at", type=float, default=1.0,
        help="stop each guided search at this fraction of the best (0.9: faster; 95, 99 %% and curves stop there too)",
    )
    parser.add_argument("--out", help="write every row as JSON here")
    parser.add_argument("--first-seed", type=int, default=0, help="the guided search's seeds start here")
    parser.add_argument("--variant", type=json.loads, default=None,
                        help="JSON keyword arguments of the transfer-guided explorer (to compare variants)")
    parser.add_argument("--online-variant", type=json.loads, default=None,
                        help='JSON keyword arguments of the online search, e.g. \'{"initial": 5, "length_bounds": '
                             '[0.05, 20]}\' (to compare variants)')
    args = parser.parse_args()
    args.strategies = [s for s in args.strategies.split(",") if s]
    if args.quick:
        args.families = args.families or "schoonhoven/pnpoly,schoonhoven/convolution"
        args.seeds = args.online_seeds = args.kt_seeds = 1
    warnings.filterwarnings("ignore")
    wanted = set(args.families.split(",")) if args.families else None
    started = time.time()
    rows = []
    for family in tuning_families():
        if wanted and family.name not in wanted:
            continue
        for gpu, space, others in leave_one_gpu_out(family):
            rows.append(run_case(family, gpu, space.without_failures(), others, args))
            print_row(rows[-1], args)
    summarise(rows, args)
    print(f"\n({time.time() - started:.0f} s)")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
