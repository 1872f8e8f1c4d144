"""A small self-contained HTML page: figures as tables, plots inline, nothing fetched when it opens.

The benchmark application and the demo each write one (``report.html``) beside their other
outputs, for a user to open in a browser or attach to a message. Everything is in the one
file: PNG plots as ``data:`` URIs, bar charts as inline SVG, styles in a ``<style>`` element;
no scripts, no fonts, no stylesheets from the network. Every text is escaped.

Example:
    >>> html = page("Run 1", [table([("changes", 1200), ("lag p99 (ms)", 41.5)]), bars({"INSERT": 3, "UPDATE": 5})])
    >>> html.startswith("<!DOCTYPE html>") and "1,200</td>" in html and "<svg" in html
    True
    >>> "http://" in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    False
"""

from __future__ import annotations

import base64
import html as _html
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

#: The page's looks, inline (a report opened offline looks the same).
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 64em; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.7em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
img, svg { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
"""
#: Bar chart geometry (pixels of the SVG's view box).
BAR_WIDTH, BAR_HEIGHT, LABEL_WIDTH, VALUE_WIDTH = 360, 22, 170, 90
BAR_COLOR = "#4878a8"


def escape(value: object) -> str:
    """Text for HTML; integers with thousands separators, floats to 1 decimal, others as ``str``.

    >>> escape(1234567), escape(12.345), escape("<b>"), escape(None), escape(True)
    ('1,234,567', '12.3', '&lt;b&gt;', '-', 'yes')
    """
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return _html.escape(str(value))


def _cell(value: object) -> str:
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    return f'<td class="n">{escape(value)}</td>' if numeric else f"<td>{escape(value)}</td>"


def table(rows: Iterable[Sequence[object]], header: Sequence[str] = ()) -> str:
    """A table of rows (a row's first cell is its label); ``header`` names the columns.

    >>> table([("mutations", 10)], header=("figure", "value"))
    '<table><tr><th>figure</th><th>value</th></tr><tr><th>mutations</th><td class="n">10</td></tr></table>'
    """
    head = "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>" if header else ""
    body = "".join(f"<tr><th>{escape(row[0])}</th>" + "".join(_cell(v) for v in row[1:]) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


def heading(text: str) -> str:
    """A section's heading.

    >>> heading("Lag & polls")
    '<h2>Lag &amp; polls</h2>'
    """
    return f"<h2>{escape(text)}</h2>"


def note(text: str) -> str:
    """A paragraph of small print.

    >>> note("a <note>")
    '<p class="note">a &lt;note&gt;</p>'
    """
    return f'<p class="note">{escape(text)}</p>'


def png(data: bytes, alt: str) -> str:
    """A PNG image, inline as a ``data:`` URI.

    >>> png(b"\\x89PNG", "plot")
    '<img alt="plot" src="data:image/png;base64,iVBORw==">'
    """
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{base64.b64encode(data).decode("ascii")}">'


def bars(values: Mapping[str, float | int | None], unit: str = "") -> str:
    """A horizontal bar chart as inline SVG, one bar per key, scaled to the largest value.

    >>> svg = bars({"INSERT": 2, "UPDATE": 4}, unit=" rows")
    >>> svg.count("<rect"), "4 rows" in svg, 'width="360.0"' in svg
    (2, True, True)
    """
    largest = max((float(v) for v in values.values() if v), default=0.0) or 1.0
    height = BAR_HEIGHT * max(len(values), 1) + 4
    width = LABEL_WIDTH + BAR_WIDTH + VALUE_WIDTH
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" font-family="sans-serif" font-size="13">']
    for i, (label, value) in enumerate(values.items()):
        y = i * BAR_HEIGHT + 2
        length = BAR_WIDTH * float(value or 0) / largest
        parts.append(f'<text x="{LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">{escape(label)}</text>'
                     f'<rect x="{LABEL_WIDTH}" y="{y + 2}" width="{length:.1f}" height="{BAR_HEIGHT - 6}" '
                     f'fill="{BAR_COLOR}"/>'
                     f'<text x="{LABEL_WIDTH + length + 6:.1f}" y="{y + 15}">{escape(value)}{escape(unit)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def page(title: str, sections: Iterable[str]) -> str:
    """The whole document: ``title`` as its title and first heading, then the sections' HTML in order."""
    body = "\n".join(sections)
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{escape(title)}</title>\n'
            f"<style>{STYLE}</style>\n</head>\n<body>\n<h1>{escape(title)}</h1>\n{body}\n</body>\n</html>\n")


def write(path: str | os.PathLike[str], document: str) -> Path:
    """Write ``document`` to ``path`` (through a temporary name, so a reader never sees half a page); the path."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(document, encoding="utf-8")
    os.replace(tmp, path)
    return path
