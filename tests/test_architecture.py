"""Layering rules of the installed ``lakesieve`` package, read from its source with ``ast``.

The import graph counts every import statement: at module level, inside
functions (an import hidden in a function still makes one module depend on
the other), and under ``if TYPE_CHECKING:`` — except that the cycle rule
looks at runtime imports only. Relative imports are resolved;
``from package import name`` is an edge to the submodule ``package.name``
when there is one, else to the package.

Rules:

* no import cycle among the framework's modules (``lakesieve.*`` without
  ``lakesieve.plugins.*`` and ``lakesieve.indexes.*``);
* no ``from module import _private`` of another module's private name, and
  no ``obj._name`` where only other modules of the package define ``_name``
  (``self`` and ``cls`` attributes excepted);
* no import loop between packages (``lakesieve.<package>``, a format
  plugin, an index type), around a circle of any length and counting every
  import, the modules at the framework's top (its face) left out;
* no format or index plugin imports another plugin, and the framework
  imports no plugin (its test kits aside, which exercise the built-ins);
  no framework module, the test kits included, imports an index type: the
  framework reaches index types only through the contract;
* no framework module (the test kits aside) is longer than 500 lines.

Run ``python tests/test_architecture.py`` to print the graph's cycles.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import pkgutil
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT_PACKAGE = "lakesieve"
PLUGIN_PACKAGES = ("lakesieve.plugins", "lakesieve.indexes")

#: The most lines a framework module may have (the test kits aside): small modules, each
#: named for what it holds.
MAX_MODULE_LINES = 500


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``line`` (``names`` from a ``from`` import)."""

    source: str
    target: str
    line: int
    names: tuple[str, ...] = ()
    typing_only: bool = False


def _walk(package: str, found: dict[str, Path]) -> None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return
    found[package] = Path(spec.origin)
    for location in spec.submodule_search_locations or []:
        for info in pkgutil.iter_modules([location]):
            name = f"{package}.{info.name}"
            if info.ispkg:
                _walk(name, found)
            else:
                found[name] = Path(location) / f"{info.name}.py"


@cache
def modules() -> dict[str, Path]:
    """Every module of the installed package, with its source file.

    The framework is walked from ``lakesieve``; the built-in plugin packages
    live in other folders (see ``[tool.setuptools.package-dir]``) and are
    found through the package's registered plugin entry points.
    """
    found: dict[str, Path] = {}
    _walk(ROOT_PACKAGE, found)
    for ep in importlib.metadata.entry_points(group=ROOT_PACKAGE):
        parts = ep.module.split(".")
        if parts[0] == ROOT_PACKAGE and len(parts) > 2:
            package = ".".join(parts[:2])
            if package not in found:
                _walk(package, found)
            if ".".join(parts[:3]) not in found:
                _walk(".".join(parts[:3]), found)
    return found


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _resolve_from(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names."""
    if node.level == 0:
        return node.module or ""
    package = module if _is_package(path) else module.rsplit(".", 1)[0]
    parts = package.split(".")
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    base = ".".join(parts)
    return f"{base}.{node.module}" if node.module else base


def _known_prefix(name: str, known: dict[str, Path]) -> str | None:
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def _edges_of(module: str, path: Path, known: dict[str, Path]) -> Iterator[Edge]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    typing_only = {
        id(inner)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for stmt in block.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):  # every level: functions and TYPE_CHECKING blocks included
        hint = id(node) in typing_only
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known_prefix(alias.name, known)
                if target is not None and target != module:
                    yield Edge(module, target, node.lineno, typing_only=hint)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(module, path, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in known:
                    target: str | None = sub
                    names: tuple[str, ...] = ()
                else:
                    target = _known_prefix(base, known)
                    names = (alias.name,)
                if target is not None and target != module:
                    yield Edge(module, target, node.lineno, names, hint)


@cache
def edges() -> tuple[Edge, ...]:
    """Every import edge between modules of the package."""
    known = modules()
    return tuple(e for name, path in sorted(known.items()) for e in _edges_of(name, path, known))


def _is_plugin(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in PLUGIN_PACKAGES)


def _plugin_of(module: str) -> str | None:
    """``lakesieve.plugins.hudi`` for any module inside it; ``None`` outside the plugin packages."""
    parts = module.split(".")
    if not _is_plugin(module) or len(parts) < 3:
        return None
    return ".".join(parts[:3])


def framework_graph() -> dict[str, set[str]]:
    """Runtime import graph among the framework's modules (plugins and index types left out).

    Imports under ``if TYPE_CHECKING:`` are left out: a node class and the
    visitor that walks it name each other in annotations without either
    importing the other when the program runs.
    """
    graph: dict[str, set[str]] = {m: set() for m in modules() if not _is_plugin(m)}
    for e in edges():
        if e.source in graph and e.target in graph and not e.typing_only:
            graph[e.source].add(e.target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:
        nonlocal counter
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(out)


def _one_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & members):
            if child == start:
                return [*paths[node], start]
            if child not in paths:
                paths[child] = [*paths[node], child]
                queue.append(child)
    return component


def describe_cycles(skip: frozenset[str] = frozenset()) -> str:
    """Every framework import cycle, with the import lines that close it.

    A cycle whose modules all belong to ``skip`` is left out.
    """
    graph = framework_graph()
    lines: list[str] = []
    for component in strongly_connected(graph):
        members = set(component)
        if members <= skip:
            continue
        cycle = " -> ".join(_one_cycle(graph, component))
        lines.append(f"cycle among {len(component)} modules: {cycle}")
        seen: set[tuple[str, int, str]] = set()
        for e in edges():
            key = (e.source, e.line, e.target)
            if e.source in members and e.target in members and key not in seen:
                seen.add(key)
                lines.append(f"    {e.source}:{e.line} imports {e.target}")
    return "\n".join(lines)


def private_imports() -> list[Edge]:
    """``from other_module import _name`` between two modules of the package."""
    out = []
    for e in edges():
        private = tuple(n for n in e.names if n.startswith("_") and not n.startswith("__"))
        if private:
            out.append(Edge(e.source, e.target, e.line, private))
    return out


def _private_definitions(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, methods, variables and attributes."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


@cache
def private_attribute_uses() -> tuple[tuple[str, int, str, str], ...]:
    """``obj._name`` in a module where only other modules of the package define ``_name``.

    Each item is (module, line, name, a module defining it). Attributes of
    ``self`` and ``cls`` are the module's own business and not counted.
    """
    trees = {m: ast.parse(p.read_text(encoding="utf-8")) for m, p in modules().items()}
    defined = {m: _private_definitions(t) for m, t in trees.items()}
    owners: dict[str, str] = {}
    for m in sorted(defined):
        for name in sorted(defined[m]):
            owners.setdefault(name, m)
    out = []
    for m, tree in sorted(trees.items()):
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or node.attr not in owners:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr not in defined[m]:
                out.append((m, node.lineno, node.attr, owners[node.attr]))
    return tuple(sorted(out))


def _format(found: list[Edge]) -> str:
    return "\n".join(
        f"{e.source}:{e.line} imports {', '.join(e.names)} from {e.target}" for e in found
    )


def test_the_graph_sees_the_whole_package() -> None:
    names = modules()
    for expected in (
        "lakesieve.table",
        "lakesieve.store",
        "lakesieve.testing.format_contract",
        "lakesieve.plugins.hudi.plugin",
        "lakesieve.indexes.sieve.plugin",
    ):
        assert expected in names
    assert any(e.source == "lakesieve.table" and e.target == "lakesieve.store" for e in edges())
    # an import inside a function counts
    assert any(e.source == "lakesieve.cli.table" and e.target == "lakesieve.table" for e in edges())


def test_the_cycle_finder_finds_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert _one_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]


def test_the_session_layer_depends_on_nothing_above_it() -> None:
    """The data source reaches the session through a start hook, not an import.

    The session imports only its sibling that handles the JVM's output, which imports
    nothing of lakesieve either.
    """
    leaves = {"lakesieve.spark.jvm_output"}
    assert {e.target for e in edges() if e.source == "lakesieve.spark.session"} <= leaves
    assert [e.target for e in edges() if e.source in leaves] == []


def test_no_import_cycles_in_the_framework() -> None:
    report = describe_cycles()
    print(report or "no import cycles among the framework's modules")
    assert not report, "import cycles among the framework's modules:\n" + report


def test_no_private_names_imported_across_modules() -> None:
    found = private_imports()
    assert not found, "private names imported from another module:\n" + _format(found)


def test_no_private_attributes_used_across_modules() -> None:
    found = private_attribute_uses()
    assert not found, "private names of other modules used:\n" + "\n".join(
        f"{m}:{line} uses .{name} (private to {owner})" for m, line, name, owner in found
    )


def test_no_plugin_imports_another_plugin() -> None:
    found = [
        e
        for e in edges()
        if _plugin_of(e.source) is not None
        and _plugin_of(e.target) is not None
        and _plugin_of(e.source) != _plugin_of(e.target)
    ]
    assert not found, "plugins importing other plugins:\n" + "\n".join(
        f"{e.source}:{e.line} imports {e.target}" for e in found
    )


#: packages that use the built-in plugins by name, as a user does: the test kits (the
#: benchmarks, which do too, are a distribution of their own: bench/)
CONSUMER_PACKAGES = (f"{ROOT_PACKAGE}.testing",)


def test_the_framework_imports_no_plugin() -> None:
    found = [
        e
        for e in edges()
        if not _is_plugin(e.source)
        and not e.source.startswith(CONSUMER_PACKAGES)
        and _is_plugin(e.target)
    ]
    assert not found, "framework modules importing plugins:\n" + "\n".join(
        f"{e.source}:{e.line} imports {e.target}" for e in found
    )


def test_no_plugin_imports_the_demo_or_the_cli() -> None:
    """Plugins and index types stay below the tools built on them (demo, CLI)."""
    tools = (f"{ROOT_PACKAGE}.demo", f"{ROOT_PACKAGE}.cli")
    found = [e for e in edges() if _is_plugin(e.source) and e.target.startswith(tools)]
    assert not found, "plugins importing the bench or the CLI:\n" + "\n".join(
        f"{e.source}:{e.line} imports {e.target}" for e in found
    )


def package_of(module: str) -> str:
    """The package a module lives in: ``lakesieve.<package>``, or a plugin's
    ``lakesieve.plugins.<format>`` / ``lakesieve.indexes.<type>``; ``lakesieve`` for a
    module at the top of the framework (the package's face: the table API, errors, model)."""
    parts = module.split(".")
    if _is_plugin(module):
        return ".".join(parts[:3])
    if len(parts) > 2 or (len(parts) == 2 and _is_package(modules()[module])):
        return ".".join(parts[:2])
    return ROOT_PACKAGE


def package_graph() -> dict[str, set[str]]:
    """Imports between packages, from every import statement (functions and
    ``if TYPE_CHECKING:`` blocks included: a type-only import ties two packages
    as much as any), the modules at the top of the framework left out."""
    graph: dict[str, set[str]] = {}
    for e in edges():
        source, target = package_of(e.source), package_of(e.target)
        if ROOT_PACKAGE in (source, target):
            continue
        graph.setdefault(source, set())
        graph.setdefault(target, set())
        if source != target:
            graph[source].add(target)
    return graph


def test_no_loops_between_packages() -> None:
    """No package reaches back into a package that imports it, directly or around a circle.

    A loop between folders means neither can be read, changed or tested
    without the other; the shared piece belongs in a package below both.
    """
    graph = package_graph()
    loops = strongly_connected(graph)
    report = []
    for component in loops:
        members = set(component)
        report.append(" -> ".join(_one_cycle(graph, component)))
        for e in edges():
            source, target = package_of(e.source), package_of(e.target)
            if source in members and target in members and source != target:
                report.append(f"    {e.source}:{e.line} imports {e.target}")
    assert not loops, "import loops between packages:\n" + "\n".join(report)


def test_the_package_loop_finder_finds_loops() -> None:
    assert package_of("lakesieve.query.planner") == "lakesieve.query"
    assert package_of("lakesieve.maintenance.refresh.run") == "lakesieve.maintenance"
    assert package_of("lakesieve.indexes.sieve.build") == "lakesieve.indexes.sieve"
    assert package_of("lakesieve.table") == ROOT_PACKAGE
    assert "lakesieve.query" in package_graph()


def test_the_framework_reaches_index_types_only_through_the_contract() -> None:
    """No framework module (the test kits included) imports a built-in index type's modules:
    index types are found through the registry and used through the contract's protocols."""
    found = [
        e
        for e in edges()
        if not _is_plugin(e.source) and e.target.startswith(f"{ROOT_PACKAGE}.indexes.")
    ]
    assert not found, "framework modules importing index types:\n" + "\n".join(
        f"{e.source}:{e.line} imports {e.target}" for e in found
    )


def test_framework_modules_are_small() -> None:
    """Every framework module outside the test kits has at most MAX_MODULE_LINES lines."""
    big = {
        name: n
        for name, path in modules().items()
        if not _is_plugin(name)
        and not name.startswith(f"{ROOT_PACKAGE}.testing")
        and (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not big, f"framework modules over {MAX_MODULE_LINES} lines: {big}"


#: The most modules directly under ``lakesieve`` (``__init__`` aside): the rest live in
#: packages named for their concern, so that the folder names show where a change goes.
MAX_TOP_LEVEL_MODULES = 12


def test_few_modules_at_the_top_of_the_framework() -> None:
    """The framework's modules sit in packages by concern; at most a dozen at the top."""
    top = sorted(
        name
        for name, path in modules().items()
        if name.count(".") == 1 and path.name != "__init__.py" and not _is_plugin(name)
    )
    assert len(top) <= MAX_TOP_LEVEL_MODULES, f"{len(top)} modules at the top: {top}"


def test_the_example_plugins_import_only_the_sdk() -> None:
    """The two example plugins import lakesieve only through ``lakesieve.sdk``, the public API
    and (their test helpers) the test kits of ``lakesieve.testing``."""
    import lakesieve.sdk as sdk

    assert all(hasattr(sdk, name) for name in sdk.__all__)
    root = Path(__file__).resolve().parents[1] / "examples"
    sources = sorted(root.glob("*/lakesieve_*/*.py"))
    assert len(sources) >= 2
    wrong = []
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                public = name == f"{ROOT_PACKAGE}.sdk" or name.startswith(f"{ROOT_PACKAGE}.testing")
                if name.startswith(f"{ROOT_PACKAGE}.") and not public:
                    wrong.append(f"{source.relative_to(root)}: {name}")
    assert not wrong, wrong


if __name__ == "__main__":
    print(describe_cycles() or "no import cycles among the framework's modules")
    print(_format(private_imports()) or "no private names imported across modules")
    for m, line, name, owner in private_attribute_uses():
        print(f"{m}:{line} uses .{name} (private to {owner})")


def test_the_package_declares_its_types() -> None:
    """``py.typed`` ships, so a third-party plugin's mypy checks it against the typed Protocols."""
    root = Path(__file__).resolve().parents[1]
    assert (root / "framework" / "py.typed").is_file()
    package_data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]
    assert "py.typed" in package_data[ROOT_PACKAGE]


def test_every_package_folder_ships() -> None:
    """Each folder with an ``__init__.py`` is in pyproject's package list (else the wheel lacks it)."""
    root = Path(__file__).resolve().parents[1]
    setuptools = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    listed = set(setuptools["packages"])
    folders = {
        prefix: root / folder for prefix, folder in setuptools["package-dir"].items()
    }  # lakesieve -> framework, lakesieve.plugins -> plugins, ...
    found = set()
    for prefix, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            rel = init.parent.relative_to(folder).parts
            found.add(".".join((prefix, *rel)))
    assert found - listed == set(), (
        f"packages missing from pyproject.toml: {sorted(found - listed)}"
    )


#: What the built-in format plugins and index types import of the framework, as a
#: third-party plugin does: the plugin SDK (``lakesieve.sdk`` and its submodules), the
#: public API (``lakesieve`` itself) and, in their test helpers, the test kits.
PLUGIN_SURFACE = (f"{ROOT_PACKAGE}.sdk", f"{ROOT_PACKAGE}.testing")


def test_plugins_import_the_framework_only_through_the_sdk() -> None:
    """No module of ``plugins/`` or ``indexes/`` imports an internal framework module.

    What a built-in plugin needs of the framework is part of the SDK, so that the SDK is
    enough for a plugin written elsewhere, and the framework's internals can move without
    touching the plugins.
    """

    def allowed(target: str) -> bool:
        return target == ROOT_PACKAGE or any(
            target == p or target.startswith(p + ".") for p in PLUGIN_SURFACE
        )

    found = [
        e
        for e in edges()
        if _is_plugin(e.source) and not _is_plugin(e.target) and not allowed(e.target)
    ]
    assert not found, "plugins importing framework modules outside the SDK:\n" + "\n".join(
        f"{e.source}:{e.line} imports {e.target}" for e in found
    )
