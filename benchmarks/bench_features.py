"""Static-feature extraction speed over a stencil variant space.

    python benchmarks/bench_features.py [--space stencil2d] [--variants 500] [--loopy 20]

Builds the first N valid variants of the space (timed separately: that is the space's cost, not
the features'), then extracts every static feature of each variant at the default sizes, cold (no
cached counts: what a new variant costs), and again at a second parameter set (cached counts).
With ``--loopy K`` it also times loopy's own statistics on K variants, for comparison.
Prints variants per second (wall clock and CPU time of this process: the machine may be shared)
and the projected time for 10,000 variants.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings


def timed(function, items):  # noqa: ANN001, ANN201
    wall, cpu = time.perf_counter(), time.process_time()
    results = [function(item) for item in items]
    return results, time.perf_counter() - wall, time.process_time() - cpu


def report(label: str, count: int, wall: float, cpu: float) -> None:
    print(
        f"{label:38s} {count:5d} variants  {count / wall:8.1f}/s wall  {count / cpu:8.1f}/s cpu  "
        f"10,000 in {10_000 * wall / count:7.1f} s wall"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", default="stencil2d")
    parser.add_argument("--variants", type=int, default=500)
    parser.add_argument("--loopy", type=int, default=0, help="also time loopy's statistics on this many")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    os.environ.setdefault("GPUPERF_CACHE_DIR", "/tmp/gpuperf-bench-cache")

    from gpuperf.features import extract_features
    from gpuperf.features.counts import loopy_counts
    from gpuperf.kernels.space import get_space

    space = get_space(args.space)
    kernels, wall, cpu = timed(lambda n: space.variants(limit=n), [args.variants])
    kernels = kernels[0]
    print(f"space {args.space}: {len(kernels)} variants on {os.cpu_count()} cores")
    report("building the variants (not features)", len(kernels), wall, cpu)

    sizes = kernels[0].resolve_sizes()
    _, wall, cpu = timed(lambda k: extract_features(k, sizes), kernels)
    report("all static features, cold", len(kernels), wall, cpu)
    larger = {name: 2 * value for name, value in sizes.items()}
    _, wall, cpu = timed(lambda k: extract_features(k, larger), kernels)
    report("all static features, cached counts", len(kernels), wall, cpu)
    if args.loopy:
        subset = kernels[: args.loopy]
        _, wall, cpu = timed(lambda k: loopy_counts(k.program).evaluate(sizes), subset)
        report("loopy's statistics only (no cache)", len(subset), wall, cpu)


if __name__ == "__main__":
    main()
