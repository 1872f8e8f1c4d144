"""The one exception of the value codec (``values.py``, ``scalar_values.py``).

It carries a short reason only; the caller turns it into a SpannerError that names the
column and table, or the parameter, the value was meant for.
"""

from __future__ import annotations


class ValueError_(Exception):
    """A value that does not fit its type; callers turn it into a SpannerError naming the column."""
