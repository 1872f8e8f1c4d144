"""The local server's import graph: acyclic, layered by rooms, self-contained, gRPC only at the edge.

Built from the source (``ast``), so an import hidden inside a function counts too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import watcher.localspanner

PACKAGE = "watcher.localspanner"
ROOT = Path(watcher.localspanner.__file__).parent
#: Modules that may speak gRPC / protobuf: the front end and the server that assembles it.
EDGE = ("watcher.localspanner.frontend", "watcher.localspanner.server")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _imports(name: str, path: Path) -> list[tuple[str, bool]]:
    """(imported module, whether the import is at module top) for each import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    top = set(map(id, tree.body))
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((a.name, id(node) in top) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((sub if sub in MODULES else base, id(node) in top))
    return found


def _graph() -> dict[str, set[str]]:
    return {name: {m for m, _ in _imports(name, path) if m in MODULES} for name, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_module_graph_has_no_cycle() -> None:
    assert _cycle(_graph()) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_every_import_is_at_module_top() -> None:
    hidden = [f"{name}: {m}" for name, path in MODULES.items() for m, at_top in _imports(name, path) if not at_top]
    assert hidden == []


def test_nothing_else_of_watcher_is_imported() -> None:
    outside = [f"{name}: {m}" for name, path in MODULES.items() for m, _ in _imports(name, path)
               if (m == "watcher" or m.startswith("watcher.")) and not (m == PACKAGE or m.startswith(PACKAGE + "."))]
    assert outside == []


#: Below the edge, the one module that parses the users' own protobuf messages (PROTO columns and
#: their descriptors are data of a database, not the wire protocol); it never touches gRPC.
USER_PROTOBUF = "watcher.localspanner.schema.proto_bundle"


def test_grpc_and_protobuf_stay_at_the_edge() -> None:
    below = [f"{name}: {m}" for name, path in MODULES.items() if not name.startswith(EDGE)
             for m, _ in _imports(name, path) if m.split(".")[0] in ("grpc", "google")
             and not (name == USER_PROTOBUF and m.startswith("google.protobuf"))]
    assert below == []


#: The package's rooms from the bottom up: a module may import its own layer and the layers below.
#: The rooms of one layer lean on each other: the catalog checks change-stream options with the DDL's
#: specs while the DDL's nodes hold catalog objects (and PostgreSQL's DDL is translated by dialects);
#: SQL runs on SQLite's names, constraints and sequence counters while storage registers SQL's
#: functions on each connection.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors",),
    ("datamodel", "common"),
    ("dialects", "schema", "ddl"),
    ("information",),
    ("sql", "storage"),
    ("change_streams",),
    ("transactions",),
    ("database",),
    ("instances",),
    ("access_checks",),
    ("service",),
    ("frontend",),
    ("server",),
)
#: The modules that sit at the top of the package, beside the rooms.
TOP_MODULES = ("__init__", "access_checks", "server", "service")
#: (module, room it imports from a higher layer): why the import goes up.
UPWARD: dict[tuple[str, str], str] = {
    ("schema.view_rules", "sql"): "a view's query is checked by translating it, as Spanner analyses it at CREATE VIEW",
    ("information.information_schema", "change_streams"): "the change streams' read functions, listed in ROUTINES "
                                                         "and PARAMETERS, are described where they are defined",
}


def _room(module: str) -> str:
    rest = module[len(PACKAGE) + 1:]
    return rest.split(".")[0] if rest else "__init__"


def _short(module: str) -> str:
    return module[len(PACKAGE) + 1:]


def _upward(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[tuple[str, str]]:
    """(module, imported module) for each import of a room in a higher layer, names below the package."""
    level = {room: i for i, layer in enumerate(layers) for room in layer}
    return [(_short(name), _short(m)) for name, imported in sorted(graph.items()) for m in sorted(imported)
            if _room(name) != "__init__" and level[_room(m)] > level[_room(name)]]


def test_every_room_sits_in_one_layer() -> None:
    listed = [room for layer in LAYERS for room in layer]
    assert len(listed) == len(set(listed))
    assert set(listed) | {"__init__"} == {_room(name) for name in MODULES}


def test_no_module_imports_a_higher_layer() -> None:
    found = [f"{module} -> {m}" for module, m in _upward(_graph(), LAYERS) if (module, m.split(".")[0]) not in UPWARD]
    assert found == []


def test_each_upward_exception_is_still_needed() -> None:
    assert set(UPWARD) <= {(module, m.split(".")[0]) for module, m in _upward(_graph(), LAYERS)}


def test_the_layer_check_finds_an_import_of_a_higher_layer() -> None:
    graph = {f"{PACKAGE}.schema.catalog": {f"{PACKAGE}.storage.store", f"{PACKAGE}.datamodel.types"},
             f"{PACKAGE}.storage.store": {f"{PACKAGE}.schema.catalog"}}
    assert _upward(graph, LAYERS) == [("schema.catalog", "storage.store")]


def test_only_the_top_modules_sit_at_the_top() -> None:
    assert sorted(p.stem for p in ROOT.glob("*.py")) == sorted(TOP_MODULES)
    rooms = [room for layer in LAYERS for room in layer if room not in TOP_MODULES]
    assert sorted(p.parent.name for p in ROOT.glob("*/__init__.py")) == sorted(rooms)
