"""Which measured spaces a search learns from: of a training table holding several kernels, the
searched kernel's own spaces where it holds them, and of all, those that share a configuration with
the searched space. Each space left out is noted (a :class:`~gpuperf.errors.GpuperfNote`)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from gpuperf.decisions.space import Space, kernel_text, same_kernel_and_gpu, transfer_matrix
from gpuperf.errors import GpuperfNote


def kernels_of(space: Space) -> set[str]:
    """The kernel names in ``space``'s rows, trimmed and in one Unicode normal form (none where it has no
    ``kernel`` column)."""
    if "kernel" not in space.extra.columns:
        return set()
    return {kernel_text(name) for name in space.extra["kernel"].dropna()}


def same_kernel_where_held(space: Space, spaces: list[Space], where: str, size_columns: Sequence[str] = (),
                           label: str = "--train") -> list[Space]:
    """``spaces`` (one training table's) without those of other kernels, where the table holds
    ``space``'s kernel measured elsewhere (noted); otherwise all of them."""
    own = kernels_of(space)
    same = [other for other in spaces if own and kernels_of(other) == own]
    elsewhere = [other for other in same if not same_kernel_and_gpu(space, other, size_columns)]
    if not elsewhere or len(same) == len(spaces):
        return spaces
    return _only_own_kernel(spaces, same, where, "the space's", sorted(own), label)


def own_kernel_spaces(space_name: str, spaces: list[Space], where: str, label: str = "--train") -> list[Space]:
    """``spaces`` (one tune --train table's) without those of other kernels, where the table holds the
    tuned space's own kernel (noted); otherwise all of them. Unlike explore and ask
    (:func:`same_kernel_where_held`), its own GPU's rows count: no row of tune's is the run itself."""
    same = [other for other in spaces if kernels_of(other) == {space_name}]
    if not same or len(same) == len(spaces):
        return spaces
    return _only_own_kernel(spaces, same, where, "the tuned space's", [space_name], label)


def _only_own_kernel(spaces: list[Space], same: list[Space], where: str, whose: str, kernels: list[str],
                     label: str) -> list[Space]:
    warnings.warn(f"{label} {where}: only its rows of {', '.join(kernels)}, {whose} own kernel "
                  f"({len(spaces) - len(same)} space(s) of other kernels left out)", GpuperfNote, stacklevel=3)
    return same


def sharing_configurations(space: Space, others: list[Space], label: str = "--train") -> list[Space]:
    """``others`` without those that share no configuration with ``space`` (another kernel's space in
    a table of several, for a space that names no kernel), noted; all of them if none shares one
    (the search then names the first in its error)."""
    sharing = ~np.isnan(transfer_matrix(space, others)).all(axis=0)
    if not sharing.any() or sharing.all():
        return others
    left_out = [other.where for other, shares in zip(others, sharing) if not shares]
    warnings.warn(f"{label}: {len(left_out)} space(s) share no configuration with {space.where} and are left out "
                  f"({', '.join(left_out[:3])}{', ...' if len(left_out) > 3 else ''})", GpuperfNote, stacklevel=2)
    return [other for other, shares in zip(others, sharing) if shares]
