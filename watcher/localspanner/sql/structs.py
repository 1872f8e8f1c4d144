"""STRUCT values in GoogleSQL expressions: constructors, field access, and ``SELECT AS STRUCT``.

A STRUCT value in SQLite is JSON text of its fields' JSON items in field order
(``composite_values.py``), so ``STRUCT(1 AS a, 'x' AS b)`` becomes ``json_array(1, 'x')``
of type ``STRUCT<a INT64, b STRING>``; an ARRAY of structs nests those arrays. Field
access (``s.f``, ``@p.f``, ``@p.nested.g``, ``a.f`` over ``UNNEST(@structs) AS a``) reads
the field's item with ``json_extract`` and turns it back into the stored form.

Forms handled: ``STRUCT(x AS a, y)`` (a field named after a column reference keeps
that name, others are anonymous), ``STRUCT<a INT64, b STRING>(x, y)`` (values coerced to
the declared types), and :meth:`StructTranslator.struct_of` for ``SELECT AS STRUCT``.

Example:
    >>> from watcher.localspanner.sql.translator import translate_query
    >>> from watcher.localspanner.schema.catalog import Catalog
    >>> q = translate_query("SELECT STRUCT(1 AS a, 'x' AS b) AS s", Catalog())
    >>> q.sql, str(q.columns[0].type)
    ('SELECT json_array(1, \\'x\\') AS "s"', 'STRUCT<a INT64, b STRING(MAX)>')
"""

from __future__ import annotations

from sqlglot import exp

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode
from .context import Typed
from .function_handlers import FunctionTranslator
from .function_table import function_name
from .literals import clip, element_sql, json_element_sql, spanner_type_of, sql_string
from .scope import ResolveError, Scope


def struct_type(fields: list[tuple[str, SpannerType | None]]) -> SpannerType:
    """A STRUCT type; a field of unknown type (a NULL) is INT64, as Spanner reports it."""
    return SpannerType(TypeCode.STRUCT, fields=tuple((name, t or T.INT64) for name, t in fields))


class StructTranslator(FunctionTranslator):
    """Adds STRUCT constructors and field access to the expression translators."""

    def struct_of(self, items: list[tuple[Typed, str]]) -> Typed:
        """One STRUCT value from (value, field name) pairs: what ``SELECT AS STRUCT`` returns per row."""
        t = struct_type([(name, typed.type) for typed, name in items])
        return Typed(f"json_array({', '.join(json_element_sql(typed) for typed, _ in items)})", t)

    def _struct(self, node: exp.Struct, scope: Scope) -> Typed:
        items: list[tuple[Typed, str]] = []
        for e in node.expressions:
            if isinstance(e, (exp.PropertyEQ, exp.Alias)):
                value = e.expression if isinstance(e, exp.PropertyEQ) else e.this
                name = e.this.name if isinstance(e, exp.PropertyEQ) else e.alias
                items.append((self.expr(value, scope), name))
            else:
                items.append((self.expr(e, scope), e.name if isinstance(e, exp.Column) else ""))
        return self.struct_of(items)

    def _cast_struct(self, node: exp.Cast, scope: Scope) -> Typed:
        to = node.args["to"]
        if not (isinstance(to, exp.DataType) and to.this == exp.DataType.Type.STRUCT):
            return self._cast(node, scope)
        target = self._struct_type_of(to)
        if not isinstance(node.this, exp.Struct):
            inner = self.expr(node.this, scope)
            if inner.type is not None and not inner.type.same_kind(target):
                raise self.ctx.invalid(errors.invalid_cast(inner.type, target))
            return Typed(inner.sql, target)
        values = node.this.expressions
        if len(values) != len(target.fields):
            raise self.ctx.invalid(errors.struct_field_count(target, len(target.fields), len(values)))
        items = []
        for (name, ftype), value in zip(target.fields, values, strict=True):
            typed = self.coerce(self.expr(value, scope), ftype, value)
            if typed.type is not None and not typed.type.same_kind(ftype):
                raise self.ctx.invalid(errors.struct_field_type(name, target, ftype, typed.type))
            items.append(Typed(typed.sql, ftype))
        return Typed(f"json_array({', '.join(json_element_sql(i) for i in items)})", target)

    def _struct_type_of(self, dtype: exp.DataType) -> SpannerType:
        if dtype.this == exp.DataType.Type.STRUCT:
            fields = []
            for f in dtype.expressions:
                if isinstance(f, exp.ColumnDef):
                    fields.append((f.name, self._struct_type_of(f.args["kind"])))
                elif isinstance(f, exp.DataType):
                    fields.append(("", self._struct_type_of(f)))
                else:
                    raise self.ctx.unsupported(errors.feature_type(dtype.sql("bigquery")))
            return SpannerType(TypeCode.STRUCT, fields=tuple(fields))
        if dtype.this == exp.DataType.Type.ARRAY and dtype.expressions:
            return T.array_of(self._struct_type_of(dtype.expressions[0]))
        return spanner_type_of(dtype, self.ctx)

    def field(self, subject: Typed, name: str, node: exp.Expression) -> Typed:
        """Field ``name`` of a STRUCT value."""
        t = subject.type
        if t is not None and t.code == TypeCode.JSON:  # JSON member access: json.name
            return self.json_member(subject, Typed(sql_string(name), T.STRING))
        if t is None or t.code != TypeCode.STRUCT:
            raise self.ctx.invalid(errors.field_access_on_non_struct(name, t, clip(node)))
        matches = [i for i, (fname, _) in enumerate(t.fields) if fname and fname.lower() == name.lower()]
        if not matches:
            raise self.ctx.invalid(errors.field_not_found(name, t))
        if len(matches) > 1:
            raise self.ctx.invalid(errors.field_ambiguous(name, t))
        return self.field_at(subject, matches[0])

    def field_at(self, subject: Typed, index: int) -> Typed:
        """The field at ``index`` of a STRUCT value."""
        assert subject.type is not None
        ftype = subject.type.fields[index][1]
        return Typed(element_sql(f"json_extract({subject.sql}, {sql_string(f'$[{index}]')})", ftype), ftype)

    def struct_star(self, node: exp.Dot, scope: Scope) -> list[tuple[Typed, str]]:
        """``expr.*`` in a SELECT list: one column per field of the STRUCT value ``expr``."""
        subject = self.expr(node.this, scope)
        t = subject.type
        if t is None or t.code != TypeCode.STRUCT:
            raise self.ctx.invalid(errors.field_access_on_non_struct("*", t, clip(node)))
        return [(self.field_at(subject, i), name) for i, (name, _) in enumerate(t.fields)]

    def _dot(self, node: exp.Dot, scope: Scope) -> Typed:
        if isinstance(node.this, exp.Identifier) and isinstance(node.expression, exp.Func):  # AI.CLASSIFY(...)
            raise self.ctx.unsupported(errors.feature_function(function_name(node)))
        return self.field(self.expr(node.this, scope), node.expression.name, node)

    def _struct_column(self, node: exp.Column, scope: Scope) -> Typed:
        """``a.f`` where ``a`` is a STRUCT value (an UNNEST alias or a column), not a FROM alias."""
        parts = [p.name for p in node.parts]
        if len(parts) == 1:
            return self._column(node, scope)
        source = scope.source(parts[0])
        if source is not None and source.value_column is None:
            if len(parts) == 2 or node.args.get("catalog"):
                return self._column(node, scope)
            base = self._column(exp.column(parts[1], table=parts[0]), scope)
            rest = parts[2:]
        else:
            base = self._value_named(parts[0], scope, node)
            rest = parts[1:]
        for name in rest:
            base = self.field(base, name, node)
        return base

    def _value_named(self, name: str, scope: Scope, node: exp.Expression) -> Typed:
        try:
            col = scope.resolve(None, name)
        except ResolveError as exc:
            raise self.ctx.invalid(str(exc)) from None
        if col.type is None or col.type.code not in (TypeCode.STRUCT, TypeCode.JSON):
            raise self.ctx.invalid(errors.unrecognized_name(clip(node)))
        return Typed(col.sql, col.type)


StructTranslator.handlers = {
    **FunctionTranslator.handlers,
    exp.Struct: StructTranslator._struct,
    exp.Dot: StructTranslator._dot,
    exp.Column: StructTranslator._struct_column,
    exp.Cast: StructTranslator._cast_struct,
}
