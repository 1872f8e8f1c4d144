"""The documentation's generated blocks: rendered from the code's own tables, so they cannot drift.

A page marks a block with ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``;
:data:`BLOCKS` says which page holds it and how it is rendered (the command line's parser, the
staging contract's fields, the Delta tables' layouts, the example configuration).
``tests/test_docs_site.py`` checks every block against its rendering; after changing one of
those sources, rewrite the blocks with::

    .venv/bin/python -m tests.docs_reference

Example:
    >>> cell("a | b <c>")
    'a \\\\| b &lt;c&gt;'
    >>> replace_block("x\\n<!-- generated: n -->\\nold\\n<!-- end generated: n -->\\ny", "n", "new")
    'x\\n<!-- generated: n -->\\nnew\\n<!-- end generated: n -->\\ny'
"""

from __future__ import annotations

import argparse
import html
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Options every subcommand takes, documented once on the top-level command.
EVERYWHERE = frozenset({"-h", "--help", "-v", "--verbose", "-q", "--log-level", "--log-format"})


def cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: pipes escaped, HTML's special characters as entities."""
    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")


def _commands(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _commands(sub, f"{name} {sub_name}")


def _option(action: argparse.Action) -> str:
    names = ", ".join(action.option_strings) or action.dest.upper()
    if action.nargs == 0:
        return names
    value = action.metavar or ("{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper())
    value = value.replace("|", " or ")  # a pipe inside a code span would end a table cell on GitHub
    return names if not action.option_strings else f"{names} {value}"


def cli_options() -> str:
    """Every command's options, one table per command, from the parser ``spanner-watcher`` runs."""
    import watcher
    from watcher.cli.main import build_parser

    here = str(Path(watcher.__file__).resolve().parents[1]) + "/"  # help naming a file of the checkout: made relative
    out: list[str] = []
    for name, parser in _commands(build_parser(), "spanner-watcher"):
        top = name == "spanner-watcher"
        rows = []
        formatter = parser._get_formatter()
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            if not top and EVERYWHERE.intersection(action.option_strings):
                continue
            meaning = formatter._expand_help(action) if action.help and action.help != argparse.SUPPRESS else ""
            if action.choices and action.metavar and action.nargs != 0:  # a metavar hides the choices
                meaning = f"{meaning} (one of {', '.join(map(str, action.choices))})".strip()
            rows.append(f"| `{_option(action)}` | {cell(meaning.replace(here, ''))} |")
        description = cell((parser.description or "").replace(here, ""))
        out += [f"### {name}", ""]
        if description:
            out += [description, ""]
        if rows:
            out += ["| option | meaning |", "| --- | --- |", *rows, ""]
        else:
            out += ["No options of its own.", ""]
    return "\n".join(out).rstrip()


def _field_table(fields: Iterator[tuple[str, str, str, str]], *, required: bool) -> list[str]:
    head = ["| field | type | required | meaning |", "| --- | --- | --- | --- |"] if required \
        else ["| column | type | meaning |", "| --- | --- | --- |"]
    rows = [f"| `{n}` | {cell(k)} | {r} | {cell(m)} |" if required else f"| `{n}` | {cell(k)} | {cell(m)} |"
            for n, k, r, m in fields]
    return [*head, *rows]


def staging_fields() -> str:
    """The staging record's fields by format, from the staging contract."""
    from watcher.staging import contract

    groups = (
        (f"Every record (format {contract.STAGING_FORMAT})", contract.FIELDS),
        (f"Several versions of a key (format {contract.VERSIONS_FORMAT}, after the fields above)", contract.VERSION_FIELDS),
        (f"Change streams (format {contract.STREAM_FORMAT}, after the version fields)", contract.STREAM_FIELDS),
        (f"A change stream's watermark (format {contract.WATERMARK_FORMAT}, after the stream fields)",
         contract.WATERMARK_FIELDS),
    )
    out: list[str] = []
    for title, fields in groups:
        out += [f"**{title}**", "",
                *_field_table(((f.name, contract.KINDS[f.kind], "yes" if f.required else "", f.meaning) for f in fields),
                              required=True), ""]
    return "\n".join(out).rstrip()


def delta_tables() -> str:
    """The warehouse's Delta tables, column by column, from their layouts."""
    from watcher.changelog.tables import layout

    out: list[str] = []
    for spec in layout.COMMIT_ORDER:
        out += [f"### {spec.name}", ""]
        facts = []
        if spec.partition_by:
            facts.append("partitioned by " + ", ".join(f"`{p}`" for p in spec.partition_by))
        facts += [f"table property `{k} = {v}`" for k, v in spec.properties]
        if facts:
            out += ["; ".join(facts).capitalize() + ".", ""]
        out += [*_field_table(((n, k, "", m) for n, k, m in spec.fields), required=False), ""]
    return "\n".join(out).rstrip()


def metrics() -> str:
    """The watchers' Prometheus metrics (per table and shard, then per database watcher), from their tables."""
    from watcher.capture import metrics as capture_metrics

    rows = ["| metric | type | labels | meaning |", "| --- | --- | --- | --- |"]
    rows += [f"| `{name}` | {kind} | `table`, `shard` | {cell(meaning)} |" for name, _, kind, meaning in capture_metrics.METRICS]
    rows += [f"| `{name}` | {kind} | | {cell(meaning)} |" for name, _, kind, meaning in capture_metrics.DATABASE_METRICS]
    return "\n".join(rows)


def example_config() -> str:
    """``examples/watcher.toml`` as it is, every key with its default and meaning."""
    return "```toml\n" + (ROOT / "examples" / "watcher.toml").read_text().rstrip() + "\n```"


#: block name -> (page under docs/, renderer).
BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "cli-options": ("cli-options.md", cli_options),
    "example-config": ("configuration.md", example_config),
    "staging-fields": ("staging.md", staging_fields),
    "delta-tables": ("changelog.md", delta_tables),
    "metrics": ("operating.md", metrics),
}


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} -->", f"<!-- end generated: {name} -->"


def block_in(text: str, name: str) -> str | None:
    """The block ``name`` as ``text`` holds it (without its markers), or None when it has none."""
    start, end = _markers(name)
    found = re.search(re.escape(start) + r"\n(.*?)\n?" + re.escape(end), text, re.S)
    return None if found is None else found.group(1)


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with the block ``name`` holding ``body``."""
    start, end = _markers(name)
    pattern = re.compile(re.escape(start) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise ValueError(f"no block {name!r} ({start} ... {end})")
    return pattern.sub(lambda _: f"{start}\n{body}\n{end}", text, count=1)


def write_all() -> list[str]:
    """Rewrite every block in its page; the pages changed."""
    changed = []
    for name, (page, render) in BLOCKS.items():
        path = DOCS / page
        text = path.read_text()
        new = replace_block(text, name, render())
        if new != text:
            path.write_text(new)
            changed.append(page)
    return changed


if __name__ == "__main__":
    pages = write_all()
    print("rewrote " + ", ".join(f"docs/{p}" for p in pages) if pages else "every generated block is current")
    sys.exit(0)
