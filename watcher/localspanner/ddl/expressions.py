"""A best-effort look inside GoogleSQL expression text kept by the DDL parser.

The DDL layer does not parse DEFAULT and generated-column expressions; to check that
they name real columns it only needs the identifiers that look like column references:
back-quoted names, and plain names that are not keywords, type names, date parts,
function names (followed by ``(``) or parts of a dotted path.

Example:
    >>> referenced_names("CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT(`First Name`), 19) END")
    ['Processed', 'First Name']
"""

from __future__ import annotations

from .. import errors
from .lexer import IDENT, QUOTED, RESERVED_WORDS, SYMBOL, Token, tokenize

# Plain words in expressions that are not column names although they are not reserved.
_NOT_COLUMNS = frozenset(
    """
    INT64 FLOAT64 FLOAT32 BOOL STRING BYTES DATE TIMESTAMP NUMERIC JSON TIME DATETIME
    NANOSECOND MICROSECOND MILLISECOND SECOND MINUTE HOUR DAY DAYOFWEEK DAYOFYEAR WEEK
    ISOWEEK MONTH QUARTER YEAR ISOYEAR SUNDAY MONDAY TUESDAY WEDNESDAY THURSDAY FRIDAY SATURDAY
    CURRENT_DATE CURRENT_TIMESTAMP SAFE NFC NFKC NFD NFKD
    """.split()
)


def referenced_names(expression: str) -> list[str]:
    """Names the expression appears to use as columns, in order of first use, without repeats.

    An expression the lexer cannot read yields no names: the SQL layer reports it later.
    """
    try:
        tokens = tokenize(expression)
    except errors.SpannerError:
        return []
    params = _lambda_parameters(tokens)
    out: list[str] = []
    for i, tok in enumerate(tokens):
        if tok.kind not in (IDENT, QUOTED) or tok.value.lower() in params:
            continue
        before = tokens[i - 1] if i else None
        after = tokens[i + 1]
        if before is not None and before.kind == SYMBOL and before.text == ".":
            continue
        if after.kind == SYMBOL and after.text in "(.":
            continue
        if after.kind == SYMBOL and after.text == "=" and tokens[i + 2].text == ">":
            continue  # an argument's name: f(x, name => value)
        if tok.kind == IDENT and (tok.text.upper() in RESERVED_WORDS or tok.text.upper() in _NOT_COLUMNS):
            continue
        if tok.kind == IDENT and tok.text.upper() == "SEQUENCE" or (
                before is not None and before.kind == IDENT and before.text.upper() == "SEQUENCE"):
            continue  # GET_NEXT_SEQUENCE_VALUE(SEQUENCE s) names a sequence, not a column
        if tok.value not in out:
            out.append(tok.value)
    return out


def _lambda_parameters(tokens: list[Token]) -> set[str]:
    """Lower-case names of the lambdas' parameters (``e -> ...``, ``(e, i) -> ...``): not columns.

    >>> sorted(referenced_names("ARRAY_FILTER(Tags, (t, i) -> t != Name AND i > 0)"))
    ['Name', 'Tags']
    """
    found: set[str] = set()
    for i in range(1, len(tokens) - 1):
        if not (tokens[i].text == "-" and tokens[i + 1].text == ">"):
            continue
        j = i - 1
        if tokens[j].text == ")":
            while j > 0 and tokens[j].text != "(":
                j -= 1
                if tokens[j].kind in (IDENT, QUOTED):
                    found.add(tokens[j].value.lower())
        elif tokens[j].kind in (IDENT, QUOTED):
            found.add(tokens[j].value.lower())
    return found
