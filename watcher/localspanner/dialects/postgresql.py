"""PostgreSQL-dialect statements and expressions as the GoogleSQL text the server runs, and back.

A PostgreSQL database's queries and DML are parsed with sqlglot's postgres dialect,
rewritten by the rules below and generated as GoogleSQL, which then takes the server's
one query path (``translator.py``, ``dml.py``). The rules, as data:

* ``$1``, ``$2``, ... are the parameters ``p1``, ``p2``, ... (as the client sends them);
* unquoted names fold to lower case, double-quoted names keep their case (every name is
  then back-quoted in the GoogleSQL text); ``public.t`` is ``t``;
* ``spanner.<function>(...)`` calls map through :data:`SPANNER_FUNCTIONS`; ``nextval('s')`` is
  ``GET_NEXT_SEQUENCE_VALUE(SEQUENCE s)``;
* ``x = ANY($1)`` is ``x IN UNNEST(@p1)``; ``::jsonb`` casts are JSON casts;
* a name must match the schema's exactly once folded (``SELECT SingerId`` does not find a column
  created as ``"SingerId"``), although the catalog itself looks names up ignoring case
  (:func:`refuse_wrong_case`);
* NULLs sort as PostgreSQL (and Spanner's PostgreSQL interface) sort them: last ascending,
  first descending, which sqlglot writes out as explicit ``NULLS LAST`` / ``NULLS FIRST``;
* an unnamed result column is named as PostgreSQL names it: after its function, else ``?column?``;
* hints are comments: ``/*@ FORCE_INDEX=idx */`` right after a table name is GoogleSQL's
  ``@{FORCE_INDEX=idx}`` there, and at the start of the statement a statement hint;
* ``RETURNING ...`` is ``THEN RETURN ...``; ``INSERT ... ON CONFLICT DO NOTHING`` is ``INSERT OR IGNORE``
  and ``ON CONFLICT (key) DO UPDATE SET c = excluded.c`` is ``INSERT OR UPDATE`` (Spanner's
  PostgreSQL interface allows only that form, which sets every column the INSERT names).

GoogleSQL syntax (back-quoted names, ``@name`` parameters, ``@{hints}``) is refused in a
PostgreSQL database, and :func:`refuse_in_google_sql` refuses ``$1``, ``::`` and ``spanner.``
calls in a GoogleSQL one, both naming the statement. DDL expressions (DEFAULT, generated
columns, CHECK) use :func:`expression_to_google_sql` when parsed and
:func:`expression_to_pg` when GetDatabaseDdl prints them.

Example:
    >>> to_google_sql('SELECT "SingerId", FirstName FROM public.Singers WHERE x = $1 ORDER BY x LIMIT $2')
    'SELECT `SingerId`, `firstname` FROM `singers` WHERE `x` = @p1 ORDER BY `x` NULLS LAST LIMIT @p2'
    >>> expression_to_pg(expression_to_google_sql("mod(spanner.farm_fingerprint(Name), 19)", "CREATE ..."))
    'spanner.farm_fingerprint(name) % 19'
    >>> expression_to_pg("FARM_FINGERPRINT(`Name`)")
    'spanner.farm_fingerprint("Name")'
"""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from .. import errors
from ..schema.catalog import Catalog
from . import dialects

#: ``spanner.<name>(...)`` of PostgreSQL-dialect Spanner -> the GoogleSQL function it is.
SPANNER_FUNCTIONS: dict[str, str] = {
    "farm_fingerprint": "FARM_FINGERPRINT",
    "pending_commit_timestamp": "PENDING_COMMIT_TIMESTAMP",
    "bit_reverse": "BIT_REVERSE",
    "generate_uuid": "GENERATE_UUID",
    "get_internal_sequence_state": "GET_INTERNAL_SEQUENCE_STATE",
    "timestamp_from_unix_micros": "TIMESTAMP_MICROS",
}
_BACK = {google: name for name, google in SPANNER_FUNCTIONS.items()}
#: The sequence functions: PostgreSQL's name -> GoogleSQL's, whose argument is ``SEQUENCE name``.
SEQUENCE_FUNCTIONS = {"nextval": "GET_NEXT_SEQUENCE_VALUE"}
_SEQUENCE_CALL = re.compile(r"\b(GET_NEXT_SEQUENCE_VALUE)\s*\(\s*'((?:[^'\\]|\\.)*)'\s*\)")
_SEQUENCE_ARG = re.compile(r"\b(GET_NEXT_SEQUENCE_VALUE)\s*\(\s*SEQUENCE\s+(`[^`]+`|[A-Za-z_]\w*)\s*\)", re.IGNORECASE)
#: GoogleSQL function nodes sqlglot knows by class, printed back as their ``spanner.`` names.
_BACK_CLASSES: dict[type[exp.Expression], str] = {exp.FarmFingerprint: "farm_fingerprint"}
#: PostgreSQL cast types whose GoogleSQL name differs from what sqlglot writes.
_CAST_TYPES = {exp.DataType.Type.JSONB: exp.DataType.Type.JSON}

# Text outside strings, quoted names and comments, to look for the other dialect's syntax in.
_PG_SKIPPED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.DOTALL)
#: GoogleSQL-only syntax, by what the error calls it.
_GOOGLE_ONLY = (("back-quoted name", re.compile(r"`")), ("a hint @{...}", re.compile(r"@\s*\{")),
                ("an @name parameter", re.compile(r"@[A-Za-z_]")))
_GOOGLE_SKIPPED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`(?:[^`\\]|\\.)*`|--[^\n]*|#[^\n]*|/\*.*?\*/", re.DOTALL)
#: PostgreSQL-only syntax, by what the error calls it.
_PG_ONLY = (("a $1 parameter", re.compile(r"\$\d")), ("a :: cast", re.compile(r"::")),
            ("a spanner. function", re.compile(r"\bspanner\s*\.\s*[A-Za-z_]\w*\s*\(", re.IGNORECASE)))
#: ``/*@ key=value, ... */``: a hint, after a table name or at the start of a statement.
_TABLE_HINT = re.compile(r'("(?:[^"]|"")+"|[A-Za-z_][\w$]*)(\s*)/\*@\s*([^*]*?)\s*\*/')
_STATEMENT_HINT = re.compile(r"\A\s*/\*@\s*([^*]*?)\s*\*/")
#: The statements a query or DML request may be (anything else sqlglot reads is a syntax error here).
_STATEMENTS = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Insert, exp.Update, exp.Delete, exp.Subquery)
_PG_HINT = re.compile(r"\$\d|::|spanner\s*\.", re.IGNORECASE)


def refuse_in_google_sql(sql: str) -> None:
    """INVALID_ARGUMENT when ``sql``, sent to a GoogleSQL database, uses PostgreSQL-only syntax.

    >>> refuse_in_google_sql("SELECT '$1::x' FROM T")
    >>> refuse_in_google_sql("SELECT x::bigint FROM T")
    Traceback (most recent call last):
    ...
    watcher.localspanner.errors.base.SpannerError: Syntax error: a :: cast is PostgreSQL syntax; this is a GoogleSQL database [in statement: SELECT x::bigint FROM T]
    """
    if _PG_HINT.search(sql) is None:  # the common case costs one scan
        return
    bare = _GOOGLE_SKIPPED.sub(" ", sql)
    for what, pattern in _PG_ONLY:
        if pattern.search(bare):
            raise errors.pg_syntax_in_google_sql(sql, what)


def _refuse_google_sql(sql: str) -> None:
    bare = _PG_SKIPPED.sub(" ", sql)
    for what, pattern in _GOOGLE_ONLY:
        if pattern.search(bare):
            raise errors.google_sql_in_pg(sql, what)


def _parse(sql: str, original: str) -> exp.Expression:
    _refuse_google_sql(sql)  # (hint comments are skipped with the other comments)
    try:
        trees = [t for t in sqlglot.parse(sql, read="postgres") if isinstance(t, exp.Expression)]
    except (ParseError, TokenError) as exc:
        raise errors.pg_syntax_error(original, str(exc).split("\n")[0]) from None
    if len(trees) != 1:
        raise errors.pg_syntax_error(original, errors.SQL_ONE_STATEMENT)
    return trees[0]


def _names(node: exp.Expression) -> exp.Expression:
    """Names and parameters of a PostgreSQL tree as GoogleSQL writes them (a pass of their own:
    sqlglot does not visit the children of a node another rule replaced)."""
    if isinstance(node, exp.Identifier):
        name = node.this if node.quoted else node.this.lower()
        return exp.Identifier(this=name, quoted=True)
    if isinstance(node, exp.Parameter) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        return exp.Parameter(this=exp.Var(this=f"p{node.this.this}"))
    return node


def _to_google(node: exp.Expression, original: str) -> exp.Expression:
    """One node of a PostgreSQL tree rewritten for GoogleSQL (the rules of the module docstring)."""
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and node.this.this.lower() == "spanner" \
            and isinstance(node.expression, exp.Anonymous):
        name = node.expression.name.lower()
        if name not in SPANNER_FUNCTIONS:
            raise errors.pg_unknown_function(original, f"spanner.{name}")
        return exp.Anonymous(this=SPANNER_FUNCTIONS[name], expressions=node.expression.expressions)
    if isinstance(node, exp.Anonymous) and node.name.lower() in SEQUENCE_FUNCTIONS:
        return exp.Anonymous(this=SEQUENCE_FUNCTIONS[node.name.lower()], expressions=node.expressions)
    if isinstance(node, exp.Table) and node.args.get("db") is not None and node.db.lower() == dialects.PG_SCHEMA \
            and not node.args.get("catalog"):
        node.set("db", None)
        return node
    if isinstance(node, exp.DataType) and node.this in _CAST_TYPES:
        return exp.DataType(this=_CAST_TYPES[node.this], nested=node.args.get("nested"))
    if isinstance(node, exp.EQ) and isinstance(node.expression, exp.Any):
        inner = node.expression.this
        inner = inner.this if isinstance(inner, exp.Paren) else inner
        return exp.In(this=node.this, unnest=exp.Unnest(expressions=[inner]))
    return node


def _sequence_arguments(text: str) -> str:
    """GoogleSQL text with ``GET_NEXT_SEQUENCE_VALUE('s')`` (from ``nextval('s')``) as ``...(SEQUENCE s)``;
    the name in the string folds to lower case unless double-quoted there, as in PostgreSQL."""
    def one(m: re.Match[str]) -> str:
        name = m.group(2)
        name = name[1:-1] if len(name) > 1 and name[0] == name[-1] == '"' else name.lower()
        return f"{m.group(1)}(SEQUENCE `{name}`)"
    return _SEQUENCE_CALL.sub(one, text)


def _name_result_columns(tree: exp.Expression) -> None:
    """PostgreSQL's names for unnamed select items (``count``, ``?column?``), as aliases."""
    for select in tree.find_all(exp.Select):
        items: list[exp.Expression] = []
        for e in select.expressions:
            if isinstance(e, (exp.Alias, exp.Column, exp.Star)) or isinstance(e, exp.Dot) and not isinstance(e.expression, exp.Func):
                items.append(e)
                continue
            name = "?column?"
            if isinstance(e, exp.Dot):  # spanner.farm_fingerprint(...)
                name = e.expression.name.lower()
            elif isinstance(e, exp.Cast) and isinstance(e.this, exp.Column):
                name = e.this.name if e.this.this.quoted else e.this.name.lower()
            elif isinstance(e, exp.Func) and not isinstance(e, exp.Cast):
                name = (e.name if isinstance(e, exp.Anonymous) else e.sql("postgres").split("(", 1)[0]).lower()
            items.append(exp.Alias(this=e, alias=exp.Identifier(this=name, quoted=True)))
        select.set("expressions", items)


def _take_hints(sql: str) -> tuple[str, str, list[tuple[str, str]]]:
    """``sql`` without its hint comments, its statement hint, and its table hints as (folded table name, body)."""
    statement_hint = ""
    m = _STATEMENT_HINT.match(sql)
    if m is not None:
        statement_hint, sql = m.group(1), sql[m.end():]
    tables: list[tuple[str, str]] = []

    def table(m: re.Match[str]) -> str:
        name = m.group(1)
        tables.append((name[1:-1].replace('""', '"') if name.startswith('"') else name.lower(), m.group(3)))
        return name + m.group(2)

    return _TABLE_HINT.sub(table, sql), statement_hint, tables


def _put_hints(text: str, statement_hint: str, tables: list[tuple[str, str]]) -> str:
    """GoogleSQL ``text`` with the hints back in GoogleSQL's form (each after the first use of its table)."""
    for name, body in tables:
        quoted = "`" + name.replace("`", "\\`") + "`"
        hinted = quoted + "@{" + body + "}"
        text = re.sub(r"(\b(?:FROM|JOIN|UPDATE|INTO)\s+)" + re.escape(quoted), lambda m, h=hinted: m.group(1) + h,  # type: ignore[misc]
                      text, count=1)
    return ("@{" + statement_hint + "} " if statement_hint else "") + text


@functools.lru_cache(maxsize=4096)
def to_google_sql(sql: str) -> str:
    """A PostgreSQL-dialect query or DML statement as GoogleSQL text.

    >>> to_google_sql("UPDATE t SET ts = spanner.pending_commit_timestamp() WHERE k = ANY($1)")
    'UPDATE `t` SET `ts` = PENDING_COMMIT_TIMESTAMP() WHERE `k` IN UNNEST(@p1)'
    >>> to_google_sql("INSERT INTO t (k) VALUES (1) ON CONFLICT DO NOTHING RETURNING k")
    'INSERT OR IGNORE INTO `t` (`k`) VALUES (1) THEN RETURN `k`'
    >>> to_google_sql("SELECT k FROM t /*@ FORCE_INDEX=t_by_v */ WHERE v > $1")
    'SELECT `k` FROM `t`@{FORCE_INDEX=t_by_v} WHERE `v` > @p1'

    Raises:
        SpannerError: INVALID_ARGUMENT naming the statement for a syntax error, GoogleSQL
            syntax, or an unknown ``spanner.`` function.
    """
    bare, statement_hint, table_hints = _take_hints(sql)
    tree = _parse(bare, sql)
    if not isinstance(tree, _STATEMENTS):
        raise errors.pg_syntax_error(sql, errors.PG_EXPECTED_STATEMENT)
    if isinstance(tree, (exp.Select, exp.Union, exp.Intersect, exp.Except)):
        _name_result_columns(tree)
    tree = tree.transform(_to_google, sql).transform(_names)
    returning, insert_mode = tree.args.get("returning"), None
    if returning is not None:
        tree.set("returning", None)
    conflict = tree.args.get("conflict") if isinstance(tree, exp.Insert) else None
    if conflict is not None:
        insert_mode = "UPDATE" if conflict.args.get("action") is not None and "UPDATE" in conflict.sql().upper() else "IGNORE"
        tree.set("conflict", None)
    text = _sequence_arguments(tree.sql("bigquery"))
    if insert_mode is not None:
        text = f"INSERT OR {insert_mode}" + text[len("INSERT"):]
    if returning is not None:
        text += " THEN RETURN " + ", ".join(e.sql("bigquery") for e in returning.expressions)
    return _put_hints(text, statement_hint, table_hints)


@functools.lru_cache(maxsize=4096)
def _names_used(sql: str) -> tuple[frozenset[str], frozenset[str]]:
    """The table and column names a statement refers to (folded) and the names it defines itself (aliases, WITH)."""
    tree = _parse(sql, sql)
    used, defined = set(), set()
    for ident in tree.find_all(exp.Identifier):
        name = ident.this if ident.quoted else ident.this.lower()
        parent = ident.parent
        if isinstance(parent, (exp.Alias, exp.TableAlias)) or ident.arg_key == "alias":
            defined.add(name)
        elif isinstance(parent, (exp.Column, exp.Table)):
            used.add(name)
    return frozenset(used), frozenset(defined)


@functools.lru_cache(maxsize=16)
def _schema_names(catalog: Catalog) -> dict[str, frozenset[str]]:
    """The catalog's table, view and column names by their lower-case form."""
    found: dict[str, set[str]] = {}
    for table in catalog.tables:
        for name in (table.name, *(c.name for c in table.columns)):
            found.setdefault(name.lower(), set()).add(name)
    for view in catalog.views:
        for name in (view.name, *(c.name for c in view.columns)):
            found.setdefault(name.lower(), set()).add(name)
    return {low: frozenset(names) for low, names in found.items()}


def refuse_wrong_case(sql: str, catalog: Catalog) -> None:
    """INVALID_ARGUMENT when ``sql`` names a table or column only in another case than the schema's
    (the catalog ignores case; PostgreSQL, once unquoted names are folded, does not).

    >>> from watcher.localspanner.schema import catalog as C
    >>> from watcher.localspanner.datamodel import types as T
    >>> cat = C.Catalog(tables=(C.Table("t", (C.Column("Id", T.INT64),), (C.KeyPart("Id"),)),))
    >>> refuse_wrong_case('SELECT "Id" FROM t', cat)
    >>> refuse_wrong_case('SELECT id FROM t', cat)
    Traceback (most recent call last):
    ...
    watcher.localspanner.errors.base.SpannerError: column or table "id" does not exist; the schema has "Id" (names not in double quotes fold to lower case) [in statement: SELECT id FROM t]
    """
    used, defined = _names_used(sql)
    schema = _schema_names(catalog)
    for name in used - defined:
        exact = schema.get(name.lower())
        if exact is not None and name not in exact:
            raise errors.pg_name_in_other_case(sql, name, sorted(exact)[0])


def expression_to_google_sql(expression: str, statement: str) -> str:
    """A PostgreSQL scalar expression of DDL (DEFAULT, generated column, CHECK) as GoogleSQL text.

    >>> expression_to_google_sql('"Price" * 2', "CREATE TABLE ...")
    '`Price` * 2'
    >>> expression_to_google_sql("nextval('Seq')", "CREATE TABLE ...")
    'GET_NEXT_SEQUENCE_VALUE(SEQUENCE `seq`)'
    >>> expression_to_pg(expression_to_google_sql('nextval(\\'"Seq"\\')', "CREATE TABLE ..."))
    'nextval(\\'"Seq"\\')'
    """
    tree = _parse(f"SELECT {expression}", statement)
    if not isinstance(tree, exp.Select) or len(tree.expressions) != 1 or tree.args.get("from_"):
        raise errors.pg_syntax_error(statement, errors.SQL_ONE_SCALAR_EXPRESSION)
    return _sequence_arguments(tree.expressions[0].transform(_to_google, statement).transform(_names).sql("bigquery"))


def _pg_names(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Identifier):
        return exp.Identifier(this=node.this, quoted=dialects.pg_identifier(node.this) != node.this)
    return node


def _to_pg(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and node.name.upper() == SEQUENCE_FUNCTIONS["nextval"]:
        (arg,) = node.expressions
        name = arg.name if dialects.pg_identifier(arg.name) == arg.name else f'"{arg.name}"'
        return exp.Anonymous(this="nextval", expressions=[exp.Literal.string(name)])
    name = _BACK_CLASSES.get(type(node))
    if name is None and isinstance(node, exp.Anonymous):
        name = _BACK.get(node.name.upper())
    if name is not None:
        args = [a for a in node.iter_expressions()] if not isinstance(node, exp.Anonymous) else node.expressions
        return exp.Dot(this=exp.Identifier(this="spanner", quoted=False), expression=exp.Anonymous(this=name, expressions=args))
    if isinstance(node, exp.DataType) and node.this == exp.DataType.Type.JSON:
        return exp.DataType(this=exp.DataType.Type.JSONB)
    return node


def expression_to_pg(expression: str) -> str:
    """A GoogleSQL expression (as the catalog keeps it) in PostgreSQL spelling, for GetDatabaseDdl.

    >>> expression_to_pg("COALESCE(`First`, '') || last")
    'COALESCE("First", \\'\\') || last'
    """
    text = statement_to_pg(f"SELECT {expression}")
    return text[len("SELECT "):] if text.startswith("SELECT ") else expression


def statement_to_pg(sql: str) -> str:
    """A GoogleSQL query (a view's definition as the catalog keeps it) in PostgreSQL spelling.

    >>> statement_to_pg("SELECT `SingerId`, `name` FROM `singers` WHERE `name` IS NOT NULL")
    'SELECT "SingerId", name FROM singers WHERE NOT name IS NULL'
    """
    bare = _SEQUENCE_ARG.sub(lambda m: f"{m.group(1)}('{m.group(2).strip('`')}')", sql)
    try:
        tree = sqlglot.parse_one(bare, read="bigquery")
    except (ParseError, TokenError):
        return sql  # kept as the catalog has it rather than lost
    return tree.transform(_to_pg).transform(_pg_names).sql("postgres", normalize_functions=False)
