"""gpuperf's command line. Each area registers its commands from its own module."""

from __future__ import annotations

import sys

INTERRUPTED = 130  # the shell's status for a command stopped by Ctrl-C

try:  # a Ctrl-C while the command line loads, before main() can take it, ends as main() ends one
    import contextlib
    import functools
    import signal
    import sqlite3
    import threading
    import warnings
    from collections.abc import Iterator
    from contextlib import contextmanager
    from typing import TYPE_CHECKING

    import typer

    from gpuperf.errors import GpuperfError, GpuperfNote
except KeyboardInterrupt:
    print("gpuperf: interrupted", file=sys.stderr)
    raise SystemExit(INTERRUPTED) from None

if TYPE_CHECKING:
    from pathlib import Path

app = typer.Typer(
    name="gpuperf",
    help="Predict how fast a GPU kernel will run, and decide with the prediction.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},  # every command and subcommand
)


def _print_version(value: bool) -> None:
    if value:
        from gpuperf import __version__

        print(f"gpuperf {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 metavar="", help="print gpuperf's version and exit"),
) -> None:
    """Predict how fast a GPU kernel will run, and decide with the prediction."""


class _FlagHelp:
    """``--help`` shown like gpuperf's other flags, without a value placeholder (it takes none)."""

    def get_help_option(self, ctx):  # type: ignore[no-untyped-def] - typer's own signature
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None:
            option.metavar = ""
        return option


# What an option takes, as --help shows it beside the option, where the option's name alone says too little;
# the others show N (a whole number), NUMBER, FILE (a path) or their own name (--gpu GPU).
OPTION_METAVARS = {
    "--out": "PATH", "--param": "NAME=VALUE", "--property-set": "SET", "--add-property": "PROPERTY",
    "--device-class": "CLASS", "--features": "A,B,...", "--select": "spearman:K", "--svr-kernel": "KIND",
    "--bsp-columns": "ROLE=COLUMN,...", "--sizes": "A,B,...", "--report": "FOLDER", "--key": "A,B,...",
    "--scenarios": "A,B,...", "--optimizations": "FOLDER", "--only": "A,B,...", "--params": "A,B,...",
    "--target": "COLUMN", "--train": "TABLE", "--rank-train": "TABLE", "--trip": "N", "--loops": "A,B,...",
    "--trips": "N,N,...", "--campaign": "NAME", "--inner-aggregate": "AGGREGATE", "--min-time": "SECONDS",
}
TYPE_METAVARS = {int: "N", float: "NUMBER"}


def what_to_type(param: typer.core.TyperOption | typer.core.TyperArgument) -> str:
    """The placeholder --help shows for ``param``'s value: what to type, never a Python type's name."""
    if isinstance(param, typer.core.TyperArgument):
        return str(param.name).upper()  # the usage line adds ... to one taken several times
    long_name = next((opt for opt in param.opts if opt.startswith("--")), param.opts[0])
    descriptor = param.type_descriptor
    if long_name in OPTION_METAVARS:
        return OPTION_METAVARS[long_name]
    if descriptor.is_path:
        return "FILE"
    return TYPE_METAVARS.get(descriptor.annotation, long_name.lstrip("-").upper())


class _Argument(typer.core.TyperArgument):
    """An argument whose --help names it by what to type (KERNEL), with no type column beside it.

    typer shows an argument's type beside it even where a metavar names it, and takes no other class
    for one (typer.Argument has no ``cls=``; typer builds each as a TyperArgument), so :class:`_Command`
    gives each argument typer built this class, which changes nothing but its --help line."""

    def display_type_rich(self, ctx):  # type: ignore[no-untyped-def] - typer's own signature
        return None


class _Command(_FlagHelp, typer.core.TyperCommand):
    """A command whose --help shows each value as what to type (``--gpu GPU``, ``-p NAME=VALUE``, ``KERNEL``)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def] - typer's own signature
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.metavar is None:
                param.metavar = what_to_type(param)
            if isinstance(param, typer.core.TyperArgument):
                param.__class__ = _Argument  # the one way to drop its type column: see _Argument


class _Group(_FlagHelp, typer.core.TyperGroup):
    pass


def _with_flag_help(typer_app: typer.Typer) -> None:
    """Give ``typer_app``, its commands and its sub-apps the ``--help`` of :class:`_FlagHelp`."""
    if _typer_default(typer_app.info.cls, typer.core.TyperGroup):
        typer_app.info.cls = _Group
    for command in typer_app.registered_commands:
        if _typer_default(command.cls, typer.core.TyperCommand):
            command.cls = _Command
    for group in typer_app.registered_groups:
        _with_flag_help(group.typer_instance)


def _typer_default(cls: object, default: type) -> bool:
    """Whether a command's or group's class is typer's own (unset, a default placeholder, or ``default``)."""
    return cls is None or cls is default or isinstance(cls, typer.models.DefaultPlaceholder)


@functools.cache
def _register_all() -> None:
    """Add every command to ``app``, once per process (each call of :func:`main` asks: a second
    registration would list every command twice and slow each later call)."""
    from gpuperf.cli import (
        advise_cli, calibrate_cli, data_cli, decisions_cli, hardware_cli, kernels_cli, measure_cli, models_cli,
        predict_gpu_cli, reproduce_cli,
    )

    modules = (kernels_cli, hardware_cli, measure_cli, data_cli, calibrate_cli, models_cli, predict_gpu_cli,
               reproduce_cli, advise_cli, decisions_cli)
    for module in modules:
        module.register(app)
    _with_flag_help(app)


_show_warning = warnings.showwarning


def _show_note(message, category, filename, lineno, file=None, line=None) -> None:
    """gpuperf's own notes as one line (``note: ...``), other warnings as Python shows them."""
    if issubclass(category, GpuperfNote):
        from gpuperf.cli.output import LINE_KEEPS, visible

        print(f"note: {visible(str(message), keep=LINE_KEEPS)}", file=sys.stderr)
    else:
        _show_warning(message, category, filename, lineno, file, line)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM (or SIGHUP) ends a command as Ctrl-C does: files being written are removed, and it says so."""
    raise KeyboardInterrupt


@contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM, and SIGHUP (a closed terminal, a dropped ssh session), handled by :func:`_terminated`
    while a command runs (in the main thread, where Python takes signals), the previous handlers put
    back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hangup = getattr(signal, "SIGHUP", None)  # left alone where ignored: nohup asks to run on
    signals = [signal.SIGTERM, *([hangup] if hangup and signal.getsignal(hangup) is not signal.SIG_IGN else [])]
    previous = {number: signal.signal(number, _terminated) for number in signals}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


ESCAPED = "gpuperf-escape"  # the error handler of a stream whose encoding cannot show every character


def _own_bytes_or_escaped(error: UnicodeError) -> tuple[str | bytes, int]:
    """A character the stream's encoding cannot show: a file name's own byte (a lone surrogate U+DC80 to
    U+DCFF, as surrogateescape read it from the command line) written back as it was, so the printed
    path names the file; any other character backslash-escaped."""
    import codecs

    if not isinstance(error, UnicodeEncodeError):
        raise error
    code = ord(error.object[error.start])
    if 0xDC80 <= code <= 0xDCFF:
        return bytes([code - 0xDC00]), error.start + 1
    return codecs.backslashreplace_errors(UnicodeEncodeError(
        error.encoding, error.object, error.start, error.start + 1, error.reason))


def _escape_what_the_terminal_cannot_show() -> None:
    """Output a terminal's encoding cannot show (a kernel named 'größe' under an ASCII locale) is
    escaped, as Python escapes it on stderr, instead of failing the command part-way; a file name's
    own bytes are written as they are (see :func:`_own_bytes_or_escaped`)."""
    import codecs

    codecs.register_error(ESCAPED, _own_bytes_or_escaped)
    for stream in (sys.stdout, sys.stderr):  # strict, or surrogateescape (backslashreplace) under an ASCII locale
        if stream is None:  # closed when Python started (>&-): nothing to reconfigure
            continue
        utf8 = str(getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8"
        errors = getattr(stream, "errors", None)
        if (errors == "strict" or not utf8 and errors in ("surrogateescape", "backslashreplace")) \
                and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=ESCAPED)


def _writable_cache_home() -> None:
    """Loopy keeps a disk cache under ``$XDG_CACHE_HOME`` (or ``~/.cache``) from the moment it is
    imported, and fails every command where that folder cannot be written (a read-only home on a
    compute node): there, the caches go to a private folder in the temporary folder, with a note."""
    import os
    from pathlib import Path

    from gpuperf.files import cache_home, cache_root, home_folder, no_home_cache

    _absolute_cache_variables()
    if not os.environ.get("XDG_CACHE_HOME") and home_folder() is None:  # loopy's would be a folder named ~
        fallback = _private_folder(no_home_cache())
        os.environ["XDG_CACHE_HOME"] = str(fallback)
        print(f"note: there is no home folder (HOME is not set and user {os.getuid()} has no account entry); this "
              f"run keeps its caches in {fallback} (set XDG_CACHE_HOME to a writable folder to keep them)",
              file=sys.stderr)
    home = cache_home()
    _move_aside_if_unwritable("XDG_CACHE_HOME", home, "the cache folder", "its caches", "gpuperf-cache",
                              also=[home / "gpuperf"])
    # gpuperf's own caches (the advisor's models, NVRTC's results) would be refitted every run
    named = "GPUPERF_CACHE_DIR" if os.environ.get("GPUPERF_CACHE_DIR") else "gpuperf's cache folder"
    _move_aside_if_unwritable("GPUPERF_CACHE_DIR", cache_root(), named, "gpuperf's caches", "gpuperf-own-cache")
    if not os.environ.get("MPLCONFIGDIR"):  # matplotlib warns in two lines where its folder cannot be made
        import tempfile

        user = home_folder()
        configs = os.environ.get("XDG_CONFIG_HOME") or (user / ".config" if user else None)
        if configs is None or _unwritable(Path(configs) / "matplotlib"):
            os.environ["MPLCONFIGDIR"] = str(_private_folder(Path(tempfile.gettempdir()) / f"gpuperf-mpl-{os.getuid()}"))


def _absolute_cache_variables() -> None:
    """A relative ``XDG_CACHE_HOME`` (``~/.cache`` from a Dockerfile's ENV) is dropped with a note, as the
    XDG specification asks, instead of making a cache (a folder named ~) in each working folder; a ``~``
    in ``GPUPERF_CACHE_DIR`` is the home folder (an error where there is none), and a relative one is made
    absolute (loopy follows)."""
    import os
    from pathlib import Path

    from gpuperf.files import home_path

    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and not Path(xdg).is_absolute():
        del os.environ["XDG_CACHE_HOME"]
        print(f"note: XDG_CACHE_HOME={xdg} is not an absolute path: ignored, as the XDG Base Directory "
              "specification asks (set it to an absolute path, such as $HOME/.cache)", file=sys.stderr)
    own = os.environ.get("GPUPERF_CACHE_DIR")
    if own:
        os.environ["GPUPERF_CACHE_DIR"] = str(home_path(own, "GPUPERF_CACHE_DIR").absolute())


def _damaged_databases(folder: Path) -> list[Path]:
    """The SQLite files of ``folder`` (loopy's caches) that SQLite's quick check finds damaged, each
    opened read-only; one it cannot open for another reason (locked by a run) is not named."""
    import sqlite3

    damaged = []
    for path in sorted(folder.glob("*.sqlite")):
        try:
            with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
                found = db.execute("PRAGMA quick_check").fetchone()
        except sqlite3.OperationalError:  # locked, or unreadable: not told damaged
            continue
        except sqlite3.DatabaseError:  # "database disk image is malformed", "file is not a database"
            damaged.append(path)
            continue
        if found and found[0] != "ok":
            damaged.append(path)
    return damaged


def _move_aside_if_unwritable(variable: str, folder: Path, named: str, kept: str, prefix: str,
                              also: list[Path] | None = None) -> None:
    """Where no file can be made in ``folder``, or it (or a folder in ``also`` that exists) is another
    user's or open to others' writing (the caches hold pickles and models, read back as code would
    be: a file planted there would run), point ``variable`` at a private folder of the temporary
    folder (``prefix``-uid), with a note."""
    import os
    import tempfile
    from pathlib import Path

    reason = _unwritable(folder)
    opened = None if reason else next(filter(None, (_open_to_others(f) for f in [folder, *(also or [])])), None)
    if reason or opened:
        fallback = _private_folder(Path(tempfile.gettempdir()) / f"{prefix}-{os.getuid()}")
        os.environ[variable] = str(fallback)
        why = (f"cannot be written ({reason})" if reason else
               f"is not safe for caches ({opened}: a file planted there would be read back as code)")
        print(f"note: {named} {folder} {why}; this run keeps {kept} in {fallback} (set {variable} to a "
              f"{'writable folder' if reason else 'folder only you can write'} to keep them)", file=sys.stderr)


def _open_to_others(folder: Path) -> str | None:
    """Why another user could put a file in ``folder`` (another's folder, or one everyone may write to;
    a group-writable one is left alone, as a user's private group makes every folder); None where only
    this user can (or it does not exist, or the system has no users)."""
    import os

    if not hasattr(os, "getuid"):
        return None
    try:
        found = os.stat(folder)
    except OSError:
        return None
    if found.st_uid != os.getuid():
        return f"{folder} belongs to user {found.st_uid}"
    if found.st_mode & 0o002:
        return f"{folder} is writable by everyone"
    return None


def _unwritable(folder: Path) -> str | None:
    """Why a file cannot be made in ``folder`` (created where missing); None where one can."""
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            return None
    except FileExistsError:
        return "a file is there, not a folder"
    except OSError as error:
        return error.strerror or str(error)


def _private_folder(wanted: Path) -> Path:
    """``wanted``, made or found as a folder only this user can enter (caches hold pickles, read back
    as code would be); another folder of the temporary folder where ``wanted`` is not so."""
    import atexit
    import os
    import shutil
    import stat
    import tempfile
    from pathlib import Path

    try:
        wanted.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as error:
        raise GpuperfError(f"{wanted}: cannot make a cache folder ({error.strerror or error}); set XDG_CACHE_HOME "
                           "to a writable folder") from None
    found = os.lstat(wanted)
    if stat.S_ISDIR(found.st_mode) and found.st_uid == os.getuid() and not found.st_mode & 0o077:
        return wanted
    made = Path(tempfile.mkdtemp(prefix="gpuperf-cache-"))  # someone else's, or open to others: not ours
    atexit.register(shutil.rmtree, made, ignore_errors=True)  # kept for no later run: removed at exit
    return made


class _ClosedStdout:
    """Standard output closed when Python started (``>&-``), where Python's ``print`` drops the text
    without a word: the first thing a command prints is an error instead (as ``ls >&-`` gives), not its
    results lost under exit status 0."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        if not text:
            return 0
        raise GpuperfError("standard output is closed (>&-), so nothing this command prints can be read; "
                           "redirect it to a file, or to /dev/null where the output is not wanted")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


WIDEST_TERMINAL = 500  # columns: wider than a full screen at a readable font; the widest COLUMNS is taken as


def _columns_within_reason() -> None:
    """``COLUMNS=0`` (no width given) is dropped and a ``COLUMNS`` wider than ``WIDEST_TERMINAL`` taken as
    that, before any of rich's consoles reads it: rich lays out help pages, rules and progress lines that
    wide, so ``COLUMNS=0`` printed an empty help page and ``COLUMNS=99999999`` help lines of 200 million
    characters, for minutes. A value that is not a number is left to rich, which ignores it."""
    import os

    columns = os.environ.get("COLUMNS", "").strip()
    if not columns.isdigit():
        return
    if int(columns) == 0:
        del os.environ["COLUMNS"]
    elif int(columns) > WIDEST_TERMINAL:
        os.environ["COLUMNS"] = str(WIDEST_TERMINAL)


NARROWEST_HELP = 80  # columns: narrower, typer's help cuts option names and words short ("-…", "Comma-sepa…")


def _help_wide_enough() -> None:
    """A ``--help`` page at least ``NARROWEST_HELP`` columns wide where the terminal (or ``COLUMNS``) is
    narrower, so a narrow terminal wraps its lines, as it wraps a wide table, instead of typer cutting
    option names and words short (at ``COLUMNS=20`` every option name was an ellipsis); typer's own
    ``TERMINAL_WIDTH`` is left to rule where set."""
    from gpuperf.cli.output import console

    if console.width >= NARROWEST_HELP:  # the usual case: typer's help module is not even imported
        return
    from typer import rich_utils

    if rich_utils.MAX_WIDTH is None:
        rich_utils.MAX_WIDTH = NARROWEST_HELP


PIPE_CLOSED = 1  # Python's own status for output cut short by its reader (``gpuperf kernels | head -1``)


def main(argv: list[str] | None = None) -> int:
    """Entry point: bad input ends in one clear line on stderr and exit status 2; output whose reader
    stopped reading ends quietly with :data:`PIPE_CLOSED`, as Python's documentation of SIGPIPE advises."""
    try:
        status = _run_command(argv)
        sys.stdout.flush()  # here, not at Python's exit, where a closed pipe is an "Exception ignored" message
    except BrokenPipeError:
        _closed_pipes_to_null_device()
        return PIPE_CLOSED
    return status


def _closed_pipes_to_null_device() -> None:
    """Each of stdout and stderr that cannot be flushed, its reader gone (``2>&1 | head -1``), pointed at the
    null device, so what is left in its buffer is dropped without a word when Python flushes it on exit."""
    import os

    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            with contextlib.suppress(AttributeError, OSError, ValueError):  # no file descriptor: no pipe to close
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        except (AttributeError, OSError, ValueError):  # not a stream gpuperf can flush: left as it is
            pass


def _run_command(argv: list[str] | None) -> int:
    """The command ``argv`` names, run: its exit status, and its errors as one line on stderr."""
    if sys.stderr is None:  # closed when Python started (2>&-): notes would go to stdout, into --json
        import os

        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process's life
    if sys.stdout is None:  # closed when Python started (>&-): what the command prints is an error
        sys.stdout = _ClosedStdout()  # type: ignore[assignment] - print and rich need only write
    if sys.flags.optimize >= 2:  # -OO strips the docstrings loopy builds its classes from, and the help's
        print("gpuperf: error: gpuperf does not run under python -OO (PYTHONOPTIMIZE=2): loopy needs its "
              "docstrings; use -O at most", file=sys.stderr)
        return 2
    _escape_what_the_terminal_cannot_show()
    _columns_within_reason()
    try:
        from gpuperf.cli.output import command_locks  # a Ctrl-C while it loads ends as any other (below)

        _writable_cache_home()
        _help_wide_enough()
        with _sigterm_as_interrupt(), warnings.catch_warnings(), command_locks():
            _register_all()
            warnings.showwarning = _show_note
            warnings.simplefilter("always", GpuperfNote)
            # the libraries' own deprecations are theirs to mend: not errors under PYTHONWARNINGS=error
            warnings.filterwarnings("ignore", category=DeprecationWarning,
                                    module=r"(loopy|islpy|pytools|pymbolic|genpy|cgen|pyopencl)(\.|$)")
            status = app(args=argv, prog_name="gpuperf", standalone_mode=False)
    except GpuperfError as exc:
        from gpuperf.cli.output import LINE_KEEPS, visible

        print(f"gpuperf: error: {visible(str(exc), keep=LINE_KEEPS)}", file=sys.stderr)
        return 2
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("gpuperf: aborted", file=sys.stderr)
        return INTERRUPTED
    except KeyboardInterrupt:  # before the command began (typer handles it after), or a SIGTERM
        print("gpuperf: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:  # the reader of stdout stopped reading: main() ends quietly
        raise
    except OSError as exc:  # a place the system refused: a full disk, no permission, ...
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"gpuperf: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # gpuperf's stores name their file; this is a cache beneath loopy
        from gpuperf.files import cache_home

        caches = cache_home() / "pytools"
        damaged = _damaged_databases(caches)
        where = (f"remove {' and '.join(map(str, damaged))} (it is rebuilt)" if damaged else
                 f"loopy's caches are in {caches}; remove the damaged file there (it is rebuilt)")
        print(f"gpuperf: error: a cache database is damaged ({exc}): {where}", file=sys.stderr)
        return 2
    except typer.TyperException as exc:  # usage errors: an unknown option, a missing argument, ...
        if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
            context = getattr(exc, "ctx", None)
            command = context.command_path if context is not None else "gpuperf"
            message = " ".join(exc.format_message().split())
            if not message:  # a command group given no command: its help, just printed, is the answer
                return 0
            print(f"gpuperf: error: {message} (see {command} --help)", file=sys.stderr)
            return exc.exit_code
        raise
    if status == INTERRUPTED:  # typer returns Ctrl-C's status instead of raising it
        print("gpuperf: interrupted", file=sys.stderr)
        return INTERRUPTED
    return status if isinstance(status, int) and not isinstance(status, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
