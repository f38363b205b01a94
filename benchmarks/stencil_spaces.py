"""Build every variant of every stencil space; print valid/skipped counts and build CPU times.

    python benchmarks/stencil_spaces.py [space ...]
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter

from gpuperf.kernels.space import get_space, space_names


def reason_kind(reason: str) -> str:
    for kind in ("work-items", "unroll", "local memory", "loopy"):
        if kind in reason:
            return kind
    return "other"


def main(names: list[str]) -> None:
    warnings.simplefilter("ignore")
    print(f"{'space':14} {'valid':>5} {'skip':>5} {'cpu s':>8} {'ms/variant':>10} "
          f"{'ms no-prefetch':>14} {'ms prefetch':>11}  skipped by reason")
    for name in names:
        space = get_space(name)
        times = {0: [], 1: []}
        start = time.process_time()
        for config in space.configurations():
            if space.check(config) is not None:
                continue
            t0 = time.process_time()
            try:
                space.build(config)
            except Exception:
                pass
            times[config["prefetch"]].append(time.process_time() - t0)
        total = time.process_time() - start
        valid, skipped = space.variants(), space.skipped()
        reasons = Counter(reason_kind(r) for _, r in skipped)
        mean = {k: 1000 * sum(v) / max(len(v), 1) for k, v in times.items()}
        print(f"{name:14} {len(valid):5d} {len(skipped):5d} {total:8.1f} {1000 * total / len(valid):10.1f} "
              f"{mean[0]:14.1f} {mean[1]:11.1f}  {dict(reasons)}")


if __name__ == "__main__":
    main(sys.argv[1:] or space_names())
