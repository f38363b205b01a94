"""``python -m gpuperf``: the same command line as ``gpuperf``."""

from gpuperf.cli import main

raise SystemExit(main())
