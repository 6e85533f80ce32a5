"""``lakesieve ... --help`` explains every flag, and a mistyped flag gets a suggestion.

The suggestion cases run the CLI in a fresh interpreter and then ask pyspark
there whether a SparkContext or its JVM gateway was ever created: a mistyped
flag fails before Spark starts.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest
from lakesieve.cli import build_parser
from lakesieve.cli.parser import chosen_parser, unknown_options, unrecognized_message

from tests.cli_probe import run_one  # a CLI run in a child that reports whether Spark started


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the command, with the words that select it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def _arguments() -> list[tuple[str, argparse.Action]]:
    out = []
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            name = "/".join(action.option_strings) or action.dest
            out.append((" ".join(("lakesieve", *path, name)), action))
    return out


def test_the_walk_sees_every_sub_command() -> None:
    paths = {" ".join(path) for path, _ in _parsers(build_parser())}
    assert {"write", "index build", "index refresh", "query", "compare", "advise"} <= paths
    names = {name for name, _ in _arguments()}
    assert "lakesieve write --record-key" in names and "lakesieve index build table" in names


#: words by which a flag's help says what happens without the flag
WITHOUT_IT = ("default", "required unless", "without it")


@pytest.mark.parametrize(("name", "action"), _arguments(), ids=[n for n, _ in _arguments()])
def test_every_argument_has_a_help_that_says_its_default(
    name: str, action: argparse.Action
) -> None:
    assert action.help and action.help.strip(), f"{name} has no help"
    has_default = action.default is not None and action.default is not False
    if has_default and action.option_strings and action.default != argparse.SUPPRESS:
        assert "default" in action.help, f"{name}: the help does not say its default"
    if (
        action.option_strings
        and not action.required
        and not isinstance(action, argparse._VersionAction)
    ):
        # an optional flag says what happens without it
        assert any(words in action.help for words in WITHOUT_IT), name


def test_every_help_page_renders_with_its_defaults_filled_in() -> None:
    for path, parser in _parsers(build_parser()):
        text = parser.format_help()
        assert "%(" not in text, path
    (query,) = [p for path, p in _parsers(build_parser()) if path == ("query",)]
    assert "(default 256)" in " ".join(query.format_help().split())


def test_write_help_names_the_defaults_in_words() -> None:
    (sub,) = [p for path, p in _parsers(build_parser()) if path == ("write",)]
    text = " ".join(sub.format_help().split())  # argparse wraps lines anywhere
    assert "(default upsert)" in text and "(default cow)" in text
    assert "%(default)" not in text


@pytest.mark.parametrize(
    ("argv", "usage", "meant"),
    [
        (["write", "{t}", "--recrd-key", "id", "--from", "x.parquet"], "write", "--record-key"),
        (["index", "build", "{t}", "--colum", "k"], "index build", "--column"),
        (["write", "{t}", "--frm", "x.parquet"], "write", "--from"),
    ],
)
def test_a_mistyped_flag_gets_the_sub_commands_usage_and_a_suggestion(
    tmp_path: Path, argv: list[str], usage: str, meant: str
) -> None:
    args = [a.format(t=tmp_path / "t") for a in argv]
    probed = run_one(*args)
    result, err = probed.result, probed.err
    assert result == {"code": 2, "spark_started": False}, err
    assert err.startswith(f"usage: lakesieve {usage} "), err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"lakesieve {usage}: error: unrecognized arguments: "), last
    assert f"(did you mean {meant}?)" in last, last
    assert "Traceback" not in err
    assert not (tmp_path / "t").exists()


def test_unrecognized_arguments_without_a_close_flag_get_no_suggestion() -> None:
    parser = build_parser()
    args, rest = parser.parse_known_args(["index", "build", "t", "--zzzzzz", "1"])
    chosen = chosen_parser(parser, args)
    assert chosen.prog == "lakesieve index build"
    assert unknown_options(chosen, rest) == ["--zzzzzz"]
    assert unrecognized_message(chosen, rest) == "unrecognized arguments: --zzzzzz 1"


def test_values_that_start_with_a_dash_are_not_taken_for_flags() -> None:
    parser = build_parser()
    (sub,) = [p for path, p in _parsers(parser) if path == ("query",)]
    assert unknown_options(sub, ["-5", "--limit=3", "--", "--wher"]) == []
    assert unknown_options(sub, ["--wher=k = 1"]) == ["--wher"]
    assert "(did you mean --where?)" in unrecognized_message(sub, ["--wher=k = 1"])


def test_flags_are_not_abbreviated() -> None:
    """``--colum`` is a mistake, not ``--column``: abbreviations break when flags are added."""
    parser = build_parser()
    args, rest = parser.parse_known_args(["index", "build", "t", "--colum", "k"])
    assert args.column is None and rest == ["--colum", "k"]
