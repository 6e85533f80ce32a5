"""The plugin manager: loads format and index plugins and dispatches to them.

Built-in and third-party plugins are found the same way, through the
``lakesieve`` entry-point group. Set ``LAKESIEVE_DISABLE_PLUGIN_AUTOLOAD=1``
to skip entry points (then register plugins by hand with
:func:`get_plugin_manager().register`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pluggy
from lakesieve import hookspecs
from lakesieve.errors import (
    AmbiguousFormatError,
    PluginError,
    TableNotFoundError,
    UnknownPluginError,
)

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


def _collect(hook_name: str) -> list[tuple[str, list[str]]]:
    pm = get_plugin_manager()
    hook = getattr(pm.hook, hook_name)
    out: list[tuple[str, list[str]]] = []
    for impl in hook.get_hookimpls():
        answer = impl.function()
        if answer is None:
            continue
        if not isinstance(answer, list | tuple) or not all(isinstance(a, str) for a in answer):
            raise PluginError(
                f"plugin {impl.plugin_name!r}: {hook_name} must return a list of names"
            )
        out.append((impl.plugin_name, list(answer)))
    return out


def format_names() -> dict[str, str]:
    """Map every known format name to the plugin that provides it."""
    return _owners(_collect("lakesieve_format_names"))


def index_types() -> dict[str, str]:
    """Map every known index type to the plugin that provides it."""
    return _owners(_collect("lakesieve_index_types"))


def require_format(name: str) -> None:
    """Raise :class:`UnknownPluginError` unless a plugin provides format ``name``."""
    known = format_names()
    if name not in known:
        raise UnknownPluginError(
            f"unknown table format {name!r}; installed: {', '.join(sorted(known)) or 'none'}"
        )


def require_index_type(name: str) -> None:
    """Raise :class:`UnknownPluginError` unless a plugin provides index type ``name``."""
    known = index_types()
    if name not in known:
        raise UnknownPluginError(
            f"unknown index type {name!r}; installed: {', '.join(sorted(known)) or 'none'}"
        )


def identify_format(path: str) -> str:
    """Return the format of the table at ``path``; refuse none or several claimants."""
    pm = get_plugin_manager()
    claims: list[tuple[str, str]] = []
    for impl in pm.hook.lakesieve_format_identify.get_hookimpls():
        try:
            answer = impl.function(path=path)
        except Exception as exc:  # a plugin must not break detection for others
            raise PluginError(
                f"plugin {impl.plugin_name!r} failed to inspect table {path!r}: {exc}"
            ) from exc
        if answer:
            claims.append((impl.plugin_name, str(answer)))
    if not claims:
        raise TableNotFoundError(f"no table format plugin recognises a table at {path!r}")
    formats = {fmt for _, fmt in claims}
    if len(formats) > 1:
        who = ", ".join(f"{plugin} ({fmt})" for plugin, fmt in claims)
        raise AmbiguousFormatError(f"table {path!r} is claimed by several plugins: {who}")
    return claims[0][1]


def call_first(hook_name: str, what: str, **kwargs: Any) -> Any:
    """Call a ``firstresult`` hook and insist that some plugin answers.

    Args:
        hook_name: the hook, e.g. ``"lakesieve_format_snapshot"``.
        what: a short description for the error, e.g. ``"format 'hudi'"``.
        **kwargs: the hook's arguments.

    Raises:
        UnknownPluginError: no plugin answered.
    """
    pm = get_plugin_manager()
    hook: Callable[..., Any] = getattr(pm.hook, hook_name)
    result = hook(**kwargs)
    if result is None:
        raise UnknownPluginError(f"no installed plugin implements {hook_name} for {what}")
    return result


def call_optional(hook_name: str, **kwargs: Any) -> Any:
    """Call a ``firstresult`` hook; ``None`` when no plugin answers."""
    pm = get_plugin_manager()
    return getattr(pm.hook, hook_name)(**kwargs)
