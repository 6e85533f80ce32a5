"""The plugin manager: loads format and index plugins and hands out their objects.

Built-in and third-party plugins are found the same way, through the
``lakesieve`` entry-point group. Set ``LAKESIEVE_DISABLE_PLUGIN_AUTOLOAD=1``
to skip entry points (then register plugins by hand with
:func:`get_plugin_manager().register`).

The framework asks :func:`open_format` for a table's
:class:`~lakesieve.contract.protocols.TableFormat` and :func:`index_type` for an
:class:`~lakesieve.contract.protocols.IndexType`, then calls their methods.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

import pluggy
from lakesieve.contract import hookspecs
from lakesieve.contract.plugin_base import FORMAT_OPTION
from lakesieve.contract.protocols import IndexType, TableFormat
from lakesieve.errors import (
    AmbiguousFormatError,
    PluginError,
    TableNotFoundError,
    UnknownPluginError,
)
from lakesieve.model import TableRef

_lock = threading.Lock()
_manager: pluggy.PluginManager | None = None


def _new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    if os.environ.get("LAKESIEVE_DISABLE_PLUGIN_AUTOLOAD", "") not in ("1", "true", "yes"):
        try:
            pm.load_setuptools_entrypoints(hookspecs.PROJECT)
        except pluggy.PluginValidationError as exc:  # signature mismatch names the plugin
            raise PluginError(f"plugin {getattr(exc, 'plugin', '?')!r} is invalid: {exc}") from exc
        except Exception as exc:
            raise PluginError(f"loading lakesieve plugins failed: {exc}") from exc
    return pm


def get_plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager, loading plugins on first use."""
    global _manager
    with _lock:
        if _manager is None:
            _manager = _new_manager()
        return _manager


def reset_plugin_manager() -> None:
    """Forget the loaded plugins (tests use this after registering extras)."""
    global _manager
    with _lock:
        _manager = None


def _call(impl: pluggy.HookImpl, **kwargs: Any) -> Any:
    """Call one plugin's hook with the arguments it declares, naming the plugin when it raises."""
    try:
        return impl.function(*[kwargs[name] for name in impl.argnames])
    except Exception as exc:
        raise PluginError(
            f"plugin {impl.plugin_name!r} failed in {impl.function.__name__}: {exc}"
        ) from exc


def _owners(names_by_plugin: list[tuple[str, list[str]]]) -> dict[str, str]:
    owners: dict[str, str] = {}
    for plugin_name, names in names_by_plugin:
        for name in names or []:
            if name in owners and owners[name] != plugin_name:
                raise PluginError(
                    f"plugins {owners[name]!r} and {plugin_name!r} both provide {name!r}"
                )
            owners[name] = plugin_name
    return owners


def format_names() -> dict[str, str]:
    """Map every installed format name to the plugin that provides it."""
    found: list[tuple[str, list[str]]] = []
    for impl in get_plugin_manager().hook.lakesieve_format_names.get_hookimpls():
        answer = _call(impl)
        if answer is None:
            continue
        if not isinstance(answer, list | tuple) or not all(isinstance(a, str) for a in answer):
            raise PluginError(
                f"plugin {impl.plugin_name!r}: lakesieve_format_names must return a list of names"
            )
        found.append((impl.plugin_name, list(answer)))
    return _owners(found)


#: The index types of the plugins registered when they were last collected (index type
#: objects are stateless, so one collection serves until a plugin is added or removed).
_index_type_cache: tuple[tuple[object, ...], dict[str, tuple[str, IndexType]]] | None = None


def _index_types() -> dict[str, tuple[str, IndexType]]:
    """Every installed index type by name, with the plugin providing it."""
    global _index_type_cache
    impls = get_plugin_manager().hook.lakesieve_index_types.get_hookimpls()
    plugins = tuple(impl.plugin for impl in impls)  # held, so no id is reused while cached
    cached = _index_type_cache
    if (
        cached is not None
        and len(cached[0]) == len(plugins)
        and all(a is b for a, b in zip(cached[0], plugins, strict=True))
    ):
        return cached[1]
    found = _collect_index_types(impls)
    _index_type_cache = (plugins, found)
    return found


def _collect_index_types(impls: list[pluggy.HookImpl]) -> dict[str, tuple[str, IndexType]]:
    """Ask every index plugin for its index types; refuse wrong answers and name clashes."""
    found: dict[str, tuple[str, IndexType]] = {}
    for impl in impls:
        answer = _call(impl)
        if answer is None:
            continue
        if not isinstance(answer, list | tuple) or not all(
            isinstance(t, IndexType) and isinstance(t.name, str) for t in answer
        ):
            raise PluginError(
                f"plugin {impl.plugin_name!r}: lakesieve_index_types must return a list of "
                "index type objects, each with a name"
            )
        for t in answer:
            if t.name in found and found[t.name][0] != impl.plugin_name:
                raise PluginError(
                    f"plugins {found[t.name][0]!r} and {impl.plugin_name!r} both provide {t.name!r}"
                )
            found[t.name] = (impl.plugin_name, t)
    return found


def index_type_names() -> dict[str, str]:
    """Map every installed index type name to the plugin that provides it."""
    return {name: plugin for name, (plugin, _) in _index_types().items()}


def require_format(name: str) -> None:
    """Raise :class:`UnknownPluginError` unless a plugin provides format ``name``."""
    known = format_names()
    if name not in known:
        raise UnknownPluginError(
            f"unknown table format {name!r}; installed: {', '.join(sorted(known)) or 'none'}"
        )


def require_index_type(name: str) -> None:
    """Raise :class:`UnknownPluginError` unless a plugin provides index type ``name``."""
    index_type(name)


def index_type(name: str) -> IndexType:
    """The installed index type called ``name``.

    Raises:
        UnknownPluginError: no plugin provides it (the message lists those installed).
        PluginError: a plugin answered wrongly or two provide one name.
    """
    known = _index_types()
    if name not in known:
        raise UnknownPluginError(
            f"unknown index type {name!r}; installed: {', '.join(sorted(known)) or 'none'}"
        )
    return known[name][1]


def open_format(path: str, options: Mapping[str, str] | None = None) -> TableFormat:
    """The :class:`TableFormat` of the table at ``path``; cheap (reads no log or metadata).

    With ``options["format"]`` only that format's plugin answers, even when no
    table exists at ``path`` yet; otherwise the plugins recognise the table.

    Raises:
        UnknownPluginError: ``options["format"]`` names no installed format.
        TableNotFoundError: no plugin recognises a table at ``path``.
        AmbiguousFormatError: several plugins claim it.
        PluginError: a plugin raised or answered wrongly.
    """
    opts = dict(options or {})
    forced = opts.get(FORMAT_OPTION)
    if forced is not None:
        require_format(forced)
    claims: list[tuple[str, TableFormat]] = []
    for impl in get_plugin_manager().hook.lakesieve_format_open.get_hookimpls():
        try:
            answer = impl.function(*[{"path": path, "options": opts}[a] for a in impl.argnames])
        except Exception as exc:  # a plugin must not break detection for others
            raise PluginError(
                f"plugin {impl.plugin_name!r} failed to inspect table {path!r}: {exc}"
            ) from exc
        if answer is None:
            continue
        if not isinstance(answer, TableFormat) or not isinstance(answer.name, str):
            raise PluginError(
                f"plugin {impl.plugin_name!r}: lakesieve_format_open must return a table "
                f"format object or None, not {type(answer).__name__}"
            )
        if forced is not None and answer.name != forced:
            raise PluginError(
                f"plugin {impl.plugin_name!r} opened {path!r} as {answer.name!r} "
                f"when asked for {forced!r}"
            )
        claims.append((impl.plugin_name, answer))
    if not claims:
        if forced is not None:
            raise PluginError(f"the plugin providing format {forced!r} did not open {path!r}")
        raise TableNotFoundError(f"no table format plugin recognises a table at {path!r}")
    if len({fmt.name for _, fmt in claims}) > 1:
        who = ", ".join(f"{plugin} ({fmt.name})" for plugin, fmt in claims)
        raise AmbiguousFormatError(f"table {path!r} is claimed by several plugins: {who}")
    return claims[0][1]


def identify_format(path: str) -> str:
    """Return the format name of the table at ``path``; refuse none or several claimants."""
    return open_format(path).name


def table_format(ref: TableRef) -> TableFormat:
    """The :class:`TableFormat` for a table whose format is already known."""
    return open_format(ref.path, {**ref.options, FORMAT_OPTION: ref.format})
