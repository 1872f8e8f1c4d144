"""Client-visible wording lives in ``watcher/localspanner/errors/``, not at call sites.

Built from the source (``ast``): outside the errors package, no call to an error
builder (a name containing ``invalid``, ``unsupported``, ``error``, ``ddl_`` or
``sql_``) may be handed an f-string or a string literal with a space in it, i.e. prose.
Call sites pass data (names, values); the errors package turns it into a message.
"""

from __future__ import annotations

import ast
from pathlib import Path

import watcher.localspanner

ROOT = Path(watcher.localspanner.__file__).parent
ERRORS = ROOT / "errors"
#: Substrings of a called name that mark an error builder.
BUILDER_MARKS = ("invalid", "unsupported", "error", "ddl_", "sql_")
#: (file relative to the package, called name): calls whose strings never reach a client.
ALLOWED: dict[tuple[str, str], str] = {
    ("ddl/printer.py", "TypeError"): "a programming error (a non-node handed to the printer), never a client's input",
    ("frontend/faults.py", "ValueError"): "the fault-injection API rejects a Python caller's arguments; no gRPC client reaches it",
    ("change_streams/load.py", "ValueError"): "the partition load policy rejects the embedding program's or the "
                                              "command line's settings at start; no gRPC client reaches it",
    ("server.py", "ValueError"): "LocalSpanner rejects the embedding program's settings at start; no gRPC client reaches it",
    ("frontend/status.py", "error"): "log.error: a log line for the operator, the client gets unexpected_server_error",
    ("frontend/status.py", "AssertionError"): "unreachable: context.abort always raises",
    ("frontend/wire.py", "TypeError"): "a programming error (a Python value with no wire form), not a client's input",
    ("server.py", "RuntimeError"): "the embedding Python program used the server before start()",
    ("service.py", "RuntimeError"): "a state file from a newer version, reported to whoever starts the server",
    ("sql/structs.py", "sql_string"): "builds a SQL string literal, not an error",
}


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _is_prose(node: ast.expr) -> bool:
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return " " in node.value
    if isinstance(node, ast.BinOp):  # "..." + name, "..." % name
        return _is_prose(node.left) or _is_prose(node.right)
    return False


def inline_messages(root: Path = ROOT) -> list[str]:
    """Each ``file:line name(...)`` where an error builder is handed prose."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        if ERRORS in path.parents:
            continue
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = _called_name(node)
            if not any(mark in name.lower() for mark in BUILDER_MARKS) or (rel, name) in ALLOWED:
                continue
            args = [*node.args, *(k.value for k in node.keywords)]
            if any(_is_prose(a) for a in args):
                found.append(f"{rel}:{node.lineno} {name}(...)")
    return found


def test_no_error_builder_is_handed_prose() -> None:
    found = inline_messages()
    assert not found, "wording belongs in watcher/localspanner/errors/:\n" + "\n".join(found)


def test_the_scan_finds_prose(tmp_path: Path) -> None:
    (tmp_path / "mod.py").write_text('ctx.invalid(f"bad {x}")\nerrors.ddl_invalid(s, "no good")\nok(f"x {y}")\n')
    assert inline_messages(tmp_path) == ["mod.py:1 invalid(...)", "mod.py:2 ddl_invalid(...)"]
