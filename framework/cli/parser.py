"""The argument parser class of the ``lakesieve`` command: a mistyped flag gets a suggestion.

``lakesieve write t --recrd-key id`` fails with the ``write`` subcommand's
usage and ``unrecognized arguments: --recrd-key id (did you mean
--record-key?)``, exit status 2, before a table is opened or Spark starts.
Flags must be spelled out: an abbreviation (``--colum`` for ``--column``)
is such a mistake too, since one that works today would stop working, or
change meaning, the day a second flag starts with the same letters.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

#: How alike a mistyped flag and a real one must be to be suggested (difflib's ratio).
CUTOFF = 0.6

_REQUIRED = "the following arguments are required"


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every flag ``parser`` takes (``--record-key``, ``-h``, ...)."""
    return [s for action in parser._actions for s in action.option_strings]


def unknown_options(parser: argparse.ArgumentParser, args: Sequence[str]) -> list[str]:
    """The words of ``args`` that look like flags (``-x``, ``--x=1``) ``parser`` does not take."""
    known = set(option_strings(parser))
    out = []
    for arg in args:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0]
        if flag.startswith("-") and len(flag) > 1 and not _is_number(flag) and flag not in known:
            out.append(flag)
    return out


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def suggestions(parser: argparse.ArgumentParser, unknown: Sequence[str]) -> dict[str, str]:
    """Each unknown flag with the flag of ``parser`` closest to it, where one is close."""
    flags = option_strings(parser)
    out: dict[str, str] = {}
    for flag in unknown:
        close = difflib.get_close_matches(flag, flags, n=1, cutoff=CUTOFF)
        if close:
            out[flag] = close[0]
    return out


def unrecognized_message(parser: argparse.ArgumentParser, rest: Sequence[str]) -> str:
    """argparse's ``unrecognized arguments: ...``, with a "did you mean" for mistyped flags."""
    message = f"unrecognized arguments: {' '.join(rest)}"
    found = suggestions(parser, unknown_options(parser, rest))
    if len(found) == 1:
        (meant,) = found.values()
        message += f" (did you mean {meant}?)"
    elif found:
        message += " (did you mean " + ", ".join(f"{m} for {f}" for f, m in found.items()) + "?)"
    return message


class LakesieveParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose errors name the flag a mistyped one meant.

    Flags cannot be abbreviated (``allow_abbrev`` is off unless given). When
    required arguments are missing and the command line holds a flag this parser
    does not know (``--frm`` for ``--from``), the error is about that flag,
    with a suggestion, instead of the missing ones. Sub-commands made with
    :meth:`add_subparsers` are of this class too.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._parsing: list[str] = []

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse's, remembering ``args`` for :meth:`error`."""
        self._parsing = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        """Print the usage and ``message``, a mistyped flag's suggestion first; exit 2."""
        if message.startswith(_REQUIRED):
            unknown = unknown_options(self, self._parsing)
            if unknown and suggestions(self, unknown):
                message = unrecognized_message(self, unknown) + f"; {message}"
        super().error(message)


def chosen_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The (sub-)sub-command parser that parsed ``args``: ``index build``'s for ``index build``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], args)
    return parser
