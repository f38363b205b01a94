"""Shared test set-up: private caches so tests never touch the user's ~/.cache."""

from __future__ import annotations

import os
import tempfile

_CACHE = tempfile.mkdtemp(prefix="gpuperf-test-cache-")
os.environ.setdefault("POCL_CACHE_DIR", os.path.join(_CACHE, "pocl"))
os.environ.setdefault("XDG_CACHE_HOME", _CACHE)
os.environ.setdefault("GPUPERF_CACHE_DIR", os.path.join(_CACHE, "gpuperf"))
os.environ.setdefault("PYOPENCL_CTX", "0")
os.environ.setdefault("MPLBACKEND", "Agg")
