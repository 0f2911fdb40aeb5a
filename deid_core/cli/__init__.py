"""The ``deid-workbench`` command.

Each module in this package that defines ``register(subparsers)`` adds its own
subcommands, so that engine, store, export and active-learning commands live
beside the code they drive. A subcommand sets ``func`` on its parser; ``func``
receives the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys
from collections.abc import Sequence

from deid_core import __version__
from deid_core.cli.errors import report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deid-workbench",
        description="De-identify clinical notes: train, predict, evaluate, review, export.",
    )
    parser.add_argument("--version", action="version", version=f"deid-workbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the one error boundary
        # Library errors name files, lines and offsets; anything else is shown by class and
        # location only, because its text may quote note text or SQL parameters.
        return report(exc, verbose=args.verbose, stream=sys.stderr).exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
