"""The `trainguard` command: one subcommand per module in `trainguard.commands`.

Each command module defines `HELP`, `register(parser)` (arguments only, cheap imports) and
`main(args) -> int`. Subcommands are discovered, so adding one touches nothing here. A
`TrainGuardError` is printed as one line on stderr with exit status 2; tracebacks are kept for bugs.
A command that needs a package of an extra the install lacks says which extra to install. When the
reader of the output goes away (`trainguard rules list | head`), any command stops quietly with
status 141 (128 + SIGPIPE), as Unix tools do.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import select
import sys
from collections.abc import Sequence

from trainguard import commands
from trainguard._version import __version__
from trainguard.errors import TrainGuardError

EXTRA_OF_PACKAGE = {
    "boto3": "s3",
    "botocore": "s3",
    "prometheus_client": "local",
    "yaml": "local",
    "kubernetes": "sidecar",
    "kopf": "operator",
}
"""Import name -> the pip extra that brings it (pyproject.toml); the base install has none of them."""
EXTRA_OF_COMMAND = {"operator": "operator", "crd": "operator", "sidecar": "sidecar"}
"""Commands whose whole extra is wanted, whichever of its packages was found missing first."""


def missing_extra_message(command: str, err: ModuleNotFoundError) -> str | None:
    """One line naming the extra to install for `err`, or None when `err` is not an extra's package."""
    package = (err.name or "").split(".")[0]
    if package not in EXTRA_OF_PACKAGE:
        return None
    extra = EXTRA_OF_COMMAND.get(command, EXTRA_OF_PACKAGE[package])
    return (
        f"`trainguard {command}` needs the optional package {package!r}, which this install lacks; "
        f"install it with: pip install 'trainguard[{extra}]'"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainguard", description="Catch training runs that went wrong, and stop or report them."
    )
    parser.add_argument("--version", action="version", version=f"trainguard {__version__}")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log debug messages; with run: the whole table of rules at the end",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"trainguard.commands.{info.name}")
        name = getattr(module, "NAME", info.name)
        p = sub.add_parser(name, help=module.HELP, description=module.__doc__)
        module.register(p)
        p.set_defaults(_main=module.main, _command=name)
    return parser


EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a Unix tool whose reader went away."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one `trainguard` command and return its exit status."""
    try:
        code = _run(argv)
        sys.stdout.flush()  # here, not at interpreter exit, where a closed pipe is an unhandled error
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # some other pipe or socket: a bug or an outage to see, not our reader leaving
        # The rest of the output has nowhere to go: point stdout at /dev/null so the interpreter's final flush
        # of what is still buffered does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return EXIT_BROKEN_PIPE
    return code


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has gone (POLLERR on the write end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLERR)
        return bool(poller.poll(0))
    except (AttributeError, OSError, ValueError):  # no poll() on this platform, or no stdout descriptor
        return True


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Library chatter ("Found credentials in environment variables") is not ours to print at INFO.
    for noisy in ("botocore", "boto3", "urllib3", "s3transfer", "kubernetes", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    if not getattr(args, "_main", None):
        parser.print_help()
        return 2
    try:
        return int(args._main(args) or 0)
    except TrainGuardError as err:
        print(f"trainguard: error: {err}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as err:
        message = missing_extra_message(args._command, err)
        if message is None:
            raise
        print(f"trainguard: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
