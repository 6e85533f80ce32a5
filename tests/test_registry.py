"""The registry hands out format and index type objects and refuses plugins that answer wrongly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lakesieve.contract import registry
from lakesieve.contract.hookspecs import hookimpl
from lakesieve.contract.protocols import IndexType, TableFormat
from lakesieve.errors import PluginError, TableNotFoundError, UnknownPluginError
from lakesieve.indexes.sieve.plugin import SieveIndexType


@pytest.fixture
def extra_plugin() -> Iterator[Any]:
    """Register plugin objects for one test; unregister them after."""
    pm = registry.get_plugin_manager()
    added: list[object] = []

    def register(plugin: object, name: str) -> None:
        pm.register(plugin, name=name)
        added.append(plugin)

    yield register
    for plugin in added:
        pm.unregister(plugin)


def test_built_in_objects_keep_the_protocols(tmp_path: Path) -> None:
    assert set(registry.format_names()) >= {"hudi", "delta", "iceberg"}
    assert set(registry.index_type_names()) >= {"sieve", "zonemap", "bloom", "exact"}
    for name in ("hudi", "delta", "iceberg"):
        fmt = registry.open_format(str(tmp_path / "missing"), {"format": name, "k": "v"})
        assert isinstance(fmt, TableFormat)
        assert (fmt.name, fmt.path, dict(fmt.options)) == (
            name,
            str(tmp_path / "missing"),
            {"k": "v"},
        )
    assert not (tmp_path / "missing").exists(), "opening must not create anything"
    for name in ("sieve", "zonemap", "bloom", "exact"):
        index_type = registry.index_type(name)
        assert isinstance(index_type, IndexType) and index_type.name == name


def test_unknown_names_list_what_is_installed(tmp_path: Path) -> None:
    with pytest.raises(UnknownPluginError, match=r"'nope'.*delta.*hudi.*iceberg"):
        registry.open_format(str(tmp_path), {"format": "nope"})
    with pytest.raises(UnknownPluginError, match=r"'nope'.*bloom.*exact.*sieve.*zonemap"):
        registry.index_type("nope")
    with pytest.raises(TableNotFoundError):
        registry.open_format(str(tmp_path))


def test_a_plugin_that_raises_or_answers_wrongly_is_named(
    tmp_path: Path, extra_plugin: Any
) -> None:
    class Raises:
        @hookimpl
        def lakesieve_format_open(self, path: str, options: dict[str, str]) -> None:
            raise OSError("disk on fire")

    extra_plugin(Raises(), "raising-format")
    with pytest.raises(PluginError, match=r"'raising-format'.*disk on fire"):
        registry.open_format(str(tmp_path))


def test_a_wrong_answer_is_refused(tmp_path: Path, extra_plugin: Any) -> None:
    class Wrong:
        @hookimpl
        def lakesieve_format_open(self, path: str, options: dict[str, str]) -> object:
            return "delta"

    extra_plugin(Wrong(), "wrong-format")
    with pytest.raises(PluginError, match=r"'wrong-format'.*lakesieve_format_open"):
        registry.open_format(str(tmp_path))


def test_two_plugins_with_one_index_type_name_are_refused(extra_plugin: Any) -> None:
    class Twin:
        @hookimpl
        def lakesieve_index_types(self) -> list[IndexType]:
            return [SieveIndexType()]

    extra_plugin(Twin(), "twin-sieve")
    with pytest.raises(PluginError, match=r"'twin-sieve'.*'sieve'|'sieve'.*'twin-sieve'"):
        registry.index_type("sieve")


def test_index_types_must_be_objects(extra_plugin: Any) -> None:
    class Names:
        @hookimpl
        def lakesieve_index_types(self) -> list[str]:
            return ["named-only"]

    extra_plugin(Names(), "names-only")
    with pytest.raises(PluginError, match=r"'names-only'.*index type objects"):
        registry.index_type_names()


def test_optional_capabilities_are_declared_protocols(tmp_path: Path) -> None:
    """Hudi reads change images and Sieve reads its input twice; the others declare neither.

    Every built-in format checks a write before Spark starts.
    """
    from lakesieve.contract.protocols import ChecksWrites, MultiPassBuild, ReadsChangeImages

    for name, reads_images in (("hudi", True), ("delta", False), ("iceberg", False)):
        fmt = registry.open_format(str(tmp_path), {"format": name})
        assert isinstance(fmt, ReadsChangeImages) is reads_images, name
        assert isinstance(fmt, ChecksWrites), name
    for name, passes in (("sieve", 2), ("zonemap", 1), ("bloom", 1), ("exact", 1)):
        index_type = registry.index_type(name)
        declared = index_type.input_passes if isinstance(index_type, MultiPassBuild) else 1
        assert declared == passes, name
