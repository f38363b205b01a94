"""``python -m gpuperf``: the same command line as ``gpuperf``."""

try:
    from gpuperf.cli import main
except KeyboardInterrupt:  # Ctrl-C while Python loads the command line: gpuperf's line, not a traceback
    import sys

    print("gpuperf: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
