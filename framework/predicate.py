"""Predicates: parse SQL-like ``where`` strings, bind them to a schema, render them back.

The grammar is a subset of Spark SQL, so every predicate we accept means the
same thing to Spark::

    expr      := or
    or        := and ("OR" and)*
    and       := not ("AND" not)*
    not       := "NOT" not | "(" expr ")" | test
    test      := column op literal | literal op column
               | column ["NOT"] "IN" "(" literal ("," literal)* ")"
               | column ["NOT"] "BETWEEN" literal "AND" literal
               | column "IS" ["NOT"] "NULL"
    op        := "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
    literal   := number | 'string' | "string" | X'hex' | DATE 'yyyy-mm-dd'
               | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff][+hh:mm]'
               | TIMESTAMP_NTZ '...' | TRUE | FALSE | NULL
               | CAST "(" literal AS type ")"
    column    := name | `quoted name`

Nesting (parentheses and NOT) is limited to :data:`MAX_DEPTH` levels; deeper
predicates are refused with a one-line error.

Parsing gives an unbound tree of column names and raw literals;
:func:`bind` resolves names against an Arrow schema and types literals by
Spark SQL's rules (:mod:`lakesieve.literals`), raising
:class:`~lakesieve.errors.PredicateError` naming the column and literal when
Spark would reject them or answer in a way that depends on the data. Bound
trees keep SQL's three-valued logic (a comparison with NULL stays NULL) and
render to Spark SQL (:func:`to_sql`) and to Arrow (:func:`to_arrow`) with the
same meaning, so every read path keeps exactly the rows Spark SQL keeps.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from lakesieve.errors import ColumnNotFoundError, PredicateError
from lakesieve.literals import (
    INT_RANGE,
    Bound,
    Typed,
    cast_literal,
    comparison_domain,
    is_float_type,
    keyword_literal,
    normalize_double,
    number_literal,
    tighten,
    type_literal,
)

# --------------------------------------------------------------------------
# tree
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A literal as written.

    ``kind`` is ``number``, ``string``, ``date``, ``timestamp``, ``timestamp_ntz``,
    ``bool`` or ``null``; ``cast`` is the target of ``CAST(literal AS type)``:
    the type name and its parameters (``("DECIMAL", (10, 2))``).
    """

    kind: str
    text: str
    cast: tuple[str, tuple[int, ...]] | None = None


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``op`` is one of ``= != < <= > >=``."""

    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class InList:
    """``column [NOT] IN (values)``; ``has_null``: the list also held a NULL literal.

    With a NULL in the list, ``x IN (...)`` is NULL (not FALSE) where no value
    matches, and ``x NOT IN (...)`` is never TRUE.
    """

    column: str
    values: tuple[Any, ...]
    negated: bool = False
    has_null: bool = False


@dataclass(frozen=True)
class Between:
    """``column [NOT] BETWEEN low AND high`` (both inclusive)."""

    column: str
    low: Any
    high: Any
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    """``column IS [NOT] NULL``."""

    column: str
    negated: bool = False


@dataclass(frozen=True)
class And:
    """Conjunction of two or more predicates."""

    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    """Disjunction of two or more predicates."""

    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    """Negation."""

    child: Predicate


@dataclass(frozen=True)
class Const:
    """A predicate with one value for every row: TRUE, FALSE or NULL (``value=None``).

    ``x = NULL`` is NULL: it keeps no row, and neither does its negation.
    """

    value: bool | None


@dataclass(frozen=True)
class ColumnTruth:
    """``value`` for every row where ``column`` is not NULL, NULL where it is.

    What a comparison becomes when its answer does not depend on the value:
    ``int_col = 1.5`` is FALSE for every non-NULL ``int_col`` and NULL for the
    others, so ``NOT (int_col = 1.5)`` keeps the non-NULL rows only.
    """

    column: str
    value: bool


Predicate = Compare | InList | Between | IsNull | And | Or | Not | Const | ColumnTruth

MAX_DEPTH = 100
"""Deepest nesting of parentheses and NOTs a predicate may have."""

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NEGATE = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}

# --------------------------------------------------------------------------
# lexer and parser
# --------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<num>[+-]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)
    | (?P<str>'(?:[^'\\]|\\.)*')
    | (?P<dstr>"(?:[^"\\]|\\.)*")
    | (?P<hex>[xX]'[0-9A-Fa-f]*')
    | (?P<bq>`(?:[^`]|``)+`)
    | (?P<op><=|>=|<>|!=|==|=|<|>)
    | (?P<punct>[(),])
    | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)

_KEYWORDS = {
    "AND",
    "OR",
    "NOT",
    "IN",
    "BETWEEN",
    "IS",
    "NULL",
    "TRUE",
    "FALSE",
    "DATE",
    "TIMESTAMP",
    "TIMESTAMP_NTZ",
    "CAST",
    "AS",
}


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    pos: int


def _lex(text: str) -> list[_Tok]:
    tokens: list[_Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise PredicateError(
                f"cannot parse predicate {text!r} at position {pos}: {text[pos : pos + 20]!r}"
            )
        group = m.lastgroup or ""
        kind, value, start = group, m.group(group), m.start(group)
        if kind == "word" and value.upper() in _KEYWORDS:
            kind = "kw"
            value = value.upper()
        tokens.append(_Tok(kind, value, start))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _lex(text)
        self.i = 0
        self.depth = 0

    def fail(self, what: str) -> PredicateError:
        tok = self.peek()
        where = f"at {tok.text!r} (position {tok.pos})" if tok else "at the end"
        return PredicateError(f"malformed predicate {self.text!r}: expected {what} {where}")

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> _Tok:
        tok = self.peek()
        if tok is None:
            raise self.fail("more input")
        self.i += 1
        return tok

    def accept_kw(self, word: str) -> bool:
        tok = self.peek()
        if tok is not None and tok.kind == "kw" and tok.text == word:
            self.i += 1
            return True
        return False

    def expect_punct(self, p: str) -> None:
        tok = self.peek()
        if tok is None or tok.kind != "punct" or tok.text != p:
            raise self.fail(f"{p!r}")
        self.i += 1

    def parse(self) -> Predicate:
        if not self.toks:
            raise PredicateError("empty predicate")
        node = self.parse_or()
        if self.peek() is not None:
            raise self.fail("AND, OR or the end")
        return node

    def parse_or(self) -> Predicate:
        parts = [self.parse_and()]
        while self.accept_kw("OR"):
            parts.append(self.parse_and())
        if len(parts) == 1:
            return parts[0]
        return Or(tuple(k for p in parts for k in (p.children if isinstance(p, Or) else (p,))))

    def parse_and(self) -> Predicate:
        parts = [self.parse_not()]
        while self.accept_kw("AND"):
            parts.append(self.parse_not())
        if len(parts) == 1:
            return parts[0]
        return And(tuple(k for p in parts for k in (p.children if isinstance(p, And) else (p,))))

    def parse_not(self) -> Predicate:
        # NOT NOT ... and ( ( ... ) ) are read in a loop; only real nesting recurses
        nots = 0
        while self.accept_kw("NOT"):
            nots += 1
            if nots > MAX_DEPTH:
                raise self.too_deep()
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text == "(":
            self.i += 1
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise self.too_deep()
            node = self.parse_or()
            self.expect_punct(")")
            self.depth -= 1
        else:
            node = self.parse_test()
        for _ in range(nots):
            node = node.child if isinstance(node, Not) else Not(node)
        return node

    def too_deep(self) -> PredicateError:
        return PredicateError(
            f"predicate nests deeper than {MAX_DEPTH} levels of parentheses or NOT; simplify it"
        )

    def is_column_next(self) -> bool:
        tok = self.peek()
        return tok is not None and (tok.kind == "bq" or tok.kind == "word")

    def cast_literal(self) -> Literal:
        """``CAST(literal AS type)``: the literal with its target type."""
        self.expect_punct("(")
        inner = self.literal()
        if inner.cast is not None:
            raise self.fail("a plain literal inside CAST")
        if not self.accept_kw("AS"):
            raise self.fail("AS in CAST")
        tok = self.take()
        if tok.kind not in ("word", "kw"):
            self.i -= 1
            raise self.fail("a type name in CAST")
        params: list[int] = []
        nxt = self.peek()
        if nxt is not None and nxt.kind == "punct" and nxt.text == "(":  # decimal(p, s)
            self.i += 1
            while True:
                t = self.take()
                if t.kind == "punct" and t.text == ")":
                    break
                if t.kind == "punct" and t.text == ",":
                    continue
                if t.kind != "num" or not t.text.isdigit():
                    self.i -= 1
                    raise self.fail("a type parameter")
                params.append(int(t.text))
        self.expect_punct(")")
        return Literal(inner.kind, inner.text, (tok.text.upper(), tuple(params)))

    def column(self) -> str:
        tok = self.take()
        if tok.kind == "bq":
            return tok.text[1:-1].replace("``", "`")
        if tok.kind == "word":
            return tok.text
        self.i -= 1
        raise self.fail("a column name")

    def literal(self) -> Literal:
        tok = self.take()
        if tok.kind == "num":
            return Literal("number", tok.text)
        if tok.kind in ("str", "dstr"):
            # like Spark: backslash escapes, and adjacent literals concatenate
            text = _unescape(tok.text[1:-1])
            while (nxt := self.peek()) is not None and nxt.kind in ("str", "dstr"):
                self.i += 1
                text += _unescape(nxt.text[1:-1])
            return Literal("string", text)
        if tok.kind == "hex":
            body = tok.text[2:-1]
            if len(body) % 2:
                body = "0" + body
            return Literal("binary", body)
        if tok.kind == "kw" and tok.text in ("TRUE", "FALSE"):
            return Literal("bool", tok.text)
        if tok.kind == "kw" and tok.text == "NULL":
            return Literal("null", "NULL")
        if tok.kind == "kw" and tok.text in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ"):
            nxt = self.take()
            if nxt.kind != "str":
                self.i -= 1
                raise self.fail(f"a quoted {tok.text.lower()} after {tok.text}")
            kind = {"DATE": "date", "TIMESTAMP": "timestamp", "TIMESTAMP_NTZ": "timestamp_ntz"}[
                tok.text
            ]
            return Literal(kind, _unescape(nxt.text[1:-1]))
        if tok.kind == "kw" and tok.text == "CAST":
            return self.cast_literal()
        self.i -= 1
        raise self.fail("a literal")

    def parse_test(self) -> Predicate:
        if not self.is_column_next():
            # literal op column
            lit = self.literal()
            op_tok = self.take()
            if op_tok.kind != "op":
                self.i -= 1
                raise self.fail("a comparison operator")
            col = self.column()
            return Compare(col, _FLIP[_norm_op(op_tok.text)], lit)
        col = self.column()
        tok = self.peek()
        if tok is None:
            raise self.fail("an operator after column " + repr(col))
        if tok.kind == "op":
            self.i += 1
            if self.is_column_next():
                raise self.fail("a literal (comparing two columns is not supported)")
            return Compare(col, _norm_op(tok.text), self.literal())
        negated = self.accept_kw("NOT")
        if self.accept_kw("IN"):
            self.expect_punct("(")
            values = [self.literal()]
            while True:
                nxt = self.peek()
                if nxt is not None and nxt.kind == "punct" and nxt.text == ",":
                    self.i += 1
                    values.append(self.literal())
                    continue
                break
            self.expect_punct(")")
            return InList(col, tuple(values), negated)
        if self.accept_kw("BETWEEN"):
            low = self.literal()
            if not self.accept_kw("AND"):
                raise self.fail("AND in BETWEEN")
            high = self.literal()
            return Between(col, low, high, negated)
        if not negated and self.accept_kw("IS"):
            neg = self.accept_kw("NOT")
            if not self.accept_kw("NULL"):
                raise self.fail("NULL after IS")
            return IsNull(col, neg)
        raise self.fail("an operator, IN, BETWEEN or IS after column " + repr(col))


_ESCAPES = {
    "0": "\0",
    "b": "\b",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "Z": "\x1a",
    "%": "\\%",
    "_": "\\_",
}


def _unescape(body: str) -> str:
    """Spark's string-literal escapes: ``\\'`` is a quote, ``\\\\`` a backslash, ``\\n`` a newline..."""
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _norm_op(op: str) -> str:
    return {"==": "=", "<>": "!="}.get(op, op)


def parse(text: str) -> Predicate:
    """Parse a ``where`` string into an unbound predicate tree.

    Raises:
        PredicateError: the text is not a predicate of the supported grammar.
    """
    if not isinstance(text, str):
        raise PredicateError(f"predicate must be a string, got {type(text).__name__}")
    return _Parser(text).parse()


# --------------------------------------------------------------------------
# binding
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundColumn:
    """A column resolved against the schema: its exact name, Arrow type and Spark type."""

    name: str
    arrow_type: pa.DataType
    spark_type: str


def spark_type_of(t: pa.DataType) -> str:
    """The Spark simple type string of an Arrow type (``bigint``, ``decimal(12,2)``...)."""
    if pa.types.is_int8(t):
        return "tinyint"
    if pa.types.is_int16(t):
        return "smallint"
    if pa.types.is_int32(t) or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "bigint"
    if pa.types.is_uint64(t):
        return "decimal(20,0)"
    if pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "binary"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    if pa.types.is_decimal(t):
        return f"decimal({t.precision},{t.scale})"
    if pa.types.is_dictionary(t):
        return spark_type_of(t.value_type)
    return str(t)


def resolve_column(schema: pa.Schema, name: str, table: str = "") -> BoundColumn:
    """Find ``name`` in ``schema`` (exact match first, then case-insensitive, like Spark)."""
    names = schema.names
    if name in names:
        field = schema.field(name)
    else:
        matches = [n for n in names if n.lower() == name.lower()]
        if len(matches) != 1:
            where = f" of table {table}" if table else ""
            raise ColumnNotFoundError(
                f"unknown column {name!r}{where}; columns: {', '.join(n for n in names if not n.startswith('_hoodie'))}"
            )
        field = schema.field(matches[0])
    return BoundColumn(field.name, field.type, spark_type_of(field.type))


def typed_literal(lit: Literal) -> Typed:
    """The literal with the type Spark's parser gives it (CAST applied)."""
    if lit.kind == "null":
        typed = Typed("null", None, "NULL")
    elif lit.kind == "number":
        typed = number_literal(lit.text)
    elif lit.kind == "string":
        typed = Typed("string", lit.text, "'" + lit.text + "'")
    elif lit.kind == "binary":
        typed = Typed("binary", bytes.fromhex(lit.text), f"X'{lit.text}'")
    elif lit.kind == "bool":
        typed = Typed("bool", lit.text == "TRUE", lit.text)
    elif lit.kind in ("date", "timestamp", "timestamp_ntz"):
        typed = keyword_literal(lit.kind, lit.text)
    else:
        raise PredicateError(f"unsupported literal {lit.text!r}")
    if lit.cast is not None:
        typed = cast_literal(typed, lit.cast[0], lit.cast[1])
    return typed


def _as_literal(value: Any) -> Literal:
    """Accept an already typed value where a :class:`Literal` is expected (trees built by code)."""
    if isinstance(value, Literal):
        return value
    raise PredicateError(f"predicate value {value!r} is not a literal")


@dataclass(frozen=True)
class BoundPredicate:
    """A bound tree: the same node classes, with columns resolved and literals typed.

    Attributes:
        node: the tree; leaves hold exact column names and values in the
            column's comparison domain (see :mod:`lakesieve.literals`).
        columns: the resolved columns by name.
    """

    node: Predicate
    columns: dict[str, BoundColumn]


def _leaf(col: BoundColumn, bound: Bound) -> Predicate:
    if bound.verdict is not None:
        return ColumnTruth(col.name, bound.verdict)
    return Compare(col.name, bound.op, bound.value)


def _bind_compare(col: BoundColumn, op: str, lit: Literal) -> Predicate:
    typed = typed_literal(_as_literal(lit))
    domain = comparison_domain(col.name, col.spark_type, [typed])
    value = type_literal(col.name, col.spark_type, typed, domain)
    if value is None:
        return Const(None)  # a comparison with NULL is NULL
    if (
        col.spark_type == "bigint"
        and op not in ("=", "!=")
        and isinstance(value, int | decimal.Decimal)
        and not INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]
    ):
        # Spark folds these to a constant that ignores NULLs; refuse rather than guess
        raise PredicateError(
            f"column {col.name!r} (bigint): literal {typed.text} is outside the range of bigint"
        )
    return _leaf(col, tighten(col.spark_type, op, value))


def _dedupe_key(value: Any) -> Any:
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else normalize_double(value)
    return value


def _bind_in(col: BoundColumn, node: InList) -> Predicate:
    typed = [typed_literal(_as_literal(v)) for v in node.values]
    domain = comparison_domain(col.name, col.spark_type, typed, in_list=True)
    has_null = node.has_null or any(t.value is None for t in typed)
    values: list[Any] = []
    seen: set[Any] = set()
    for t in typed:
        value = type_literal(col.name, col.spark_type, t, domain)
        if value is None:
            continue
        fitted = tighten(col.spark_type, "=", value)
        if fitted.verdict is not None:
            continue  # can never be equal (off the column's grid or range)
        key = _dedupe_key(fitted.value)
        if key not in seen:
            seen.add(key)
            values.append(fitted.value)
    if not values:
        # nothing can match: FALSE for every value, or NULL with a NULL in the list
        return Const(None) if has_null else ColumnTruth(col.name, node.negated)
    return InList(col.name, tuple(values), node.negated, has_null)


def _bind_leaf(
    node: Predicate, schema: pa.Schema, cols: dict[str, BoundColumn], table: str
) -> Predicate:
    col = resolve_column(schema, node.column, table)  # type: ignore[union-attr]
    cols[col.name] = col
    if isinstance(node, Compare):
        return _bind_compare(col, node.op, node.value)
    if isinstance(node, InList):
        return _bind_in(col, node)
    if isinstance(node, Between):
        lo = _bind_compare(col, ">=", node.low)
        hi = _bind_compare(col, "<=", node.high)
        if isinstance(lo, Compare) and isinstance(hi, Compare):
            return Between(col.name, lo.value, hi.value, node.negated)
        inner: Predicate = And((lo, hi))
        return Not(inner) if node.negated else inner
    if isinstance(node, IsNull):
        return IsNull(col.name, node.negated)
    if isinstance(node, ColumnTruth):
        return ColumnTruth(col.name, node.value)
    raise PredicateError(f"unsupported predicate node {node!r}")


def _bind(
    node: Predicate, schema: pa.Schema, cols: dict[str, BoundColumn], table: str
) -> Predicate:
    if isinstance(node, And):
        return And(tuple(_bind(c, schema, cols, table) for c in node.children))
    if isinstance(node, Or):
        return Or(tuple(_bind(c, schema, cols, table) for c in node.children))
    if isinstance(node, Not):
        return Not(_bind(node.child, schema, cols, table))
    if isinstance(node, Const):
        return node
    return _bind_leaf(node, schema, cols, table)


def bind(predicate: Predicate | str, schema: pa.Schema, table: str = "") -> BoundPredicate:
    """Resolve columns against ``schema`` and type every literal by Spark's rules.

    Args:
        predicate: a parsed tree or a ``where`` string.
        schema: the table's Arrow schema.
        table: the table's path, for error messages.

    Raises:
        PredicateError: a literal does not fit its column, or Spark would
            reject it or answer in a way that depends on the data.
        ColumnNotFoundError: a column is not in the schema.
    """
    node = parse(predicate) if isinstance(predicate, str) else predicate
    cols: dict[str, BoundColumn] = {}
    try:
        bound = _bind(node, schema, cols, table)
    except RecursionError:
        raise PredicateError(
            f"predicate nests deeper than {MAX_DEPTH} levels; simplify it"
        ) from None
    return BoundPredicate(bound, cols)


# --------------------------------------------------------------------------
# normal form: push NOT down to the leaves
# --------------------------------------------------------------------------


def push_not(node: Predicate, negate: bool = False) -> Predicate:
    """Return an equivalent tree with no :class:`Not` nodes.

    Equivalent in SQL's three-valued logic, not only for the rows kept:
    ``NOT (x < 5)`` is ``x >= 5`` (both NULL where ``x`` is NULL), De Morgan's
    laws hold for Kleene's AND/OR, and NOT of NULL is NULL. A NaN is handled
    by the leaves' own meaning: NaN is the largest double, so ``NOT (f < 5)``
    and ``f >= 5`` both hold for NaN.
    """
    if isinstance(node, Not):
        return push_not(node.child, not negate)
    if isinstance(node, And):
        kids = tuple(push_not(c, negate) for c in node.children)
        return Or(kids) if negate else And(kids)
    if isinstance(node, Or):
        kids = tuple(push_not(c, negate) for c in node.children)
        return And(kids) if negate else Or(kids)
    if not negate:
        return node
    if isinstance(node, Const):
        return Const(None if node.value is None else not node.value)
    if isinstance(node, ColumnTruth):
        return ColumnTruth(node.column, not node.value)
    if isinstance(node, Compare):
        return Compare(node.column, _NEGATE[node.op], node.value)
    if isinstance(node, InList):
        return InList(node.column, node.values, not node.negated, node.has_null)
    if isinstance(node, Between):
        return Between(node.column, node.low, node.high, not node.negated)
    if isinstance(node, IsNull):
        return IsNull(node.column, not node.negated)
    raise PredicateError(f"unsupported predicate node {node!r}")


# --------------------------------------------------------------------------
# rendering to Spark SQL
# --------------------------------------------------------------------------


def _quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def sql_literal(value: Any, col: BoundColumn) -> str:
    """Render a value of the column's comparison domain as a Spark SQL literal.

    The text means the same value to Spark and to :func:`parse`. Floats are
    rendered as doubles (float columns compare in double); timestamps carry
    an explicit ``+00:00`` so Spark's session time zone does not matter.
    """
    t = col.spark_type
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        if t == "timestamp_ntz":
            return f"TIMESTAMP_NTZ '{value.isoformat(sep=' ')}'"
        return f"TIMESTAMP '{value.isoformat(sep=' ')}+00:00'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bytes):
        return "X'" + value.hex().upper() + "'"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        escaped = escaped.replace("\0", "\\0")
        return "'" + escaped + "'"
    if isinstance(value, float):
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(value):
            return "CAST('Infinity' AS DOUBLE)" if value > 0 else "CAST('-Infinity' AS DOUBLE)"
        return f"CAST({value!r} AS DOUBLE)"
    if isinstance(value, decimal.Decimal):
        text = format(value, "f")
        _, digits, exponent = value.as_tuple()
        scale = max(-int(exponent), 0)
        precision = max(len(digits), scale + 1, 1)
        return f"CAST({text} AS DECIMAL({min(precision, 38)},{scale}))"
    if isinstance(value, int):
        kind = t.upper() if t in INT_RANGE else "BIGINT"
        if kind == "BIGINT" and not INT_RANGE["bigint"][0] <= value <= INT_RANGE["bigint"][1]:
            return str(value)
        return f"CAST({value} AS {kind})"
    raise PredicateError(f"cannot render literal {value!r} for column {col.name!r}")


def sql_column(col: BoundColumn) -> str:
    """The column as Spark SQL compares it.

    Float and double columns are compared as ``(CAST(c AS DOUBLE) + 0.0)``:
    the same comparison in double that Spark makes for ``c op literal``, but an
    expression Spark cannot push into the Parquet reader, whose min/max
    statistics disagree with Spark on NaN and -0.0 and would skip files
    holding matching rows.
    """
    name = _quote_ident(col.name)
    if is_float_type(col.spark_type):
        return f"(CAST({name} AS DOUBLE) + CAST(0 AS DOUBLE))"
    return name


def to_sql(bound: BoundPredicate) -> str:
    """Render a bound predicate as Spark SQL with typed literals, NULLs kept as NULL."""

    def render(node: Predicate) -> str:
        if isinstance(node, Const):
            return (
                "CAST(NULL AS BOOLEAN)"
                if node.value is None
                else ("TRUE" if node.value else "FALSE")
            )
        if isinstance(node, And):
            return "(" + " AND ".join(render(c) for c in node.children) + ")"
        if isinstance(node, Or):
            return "(" + " OR ".join(render(c) for c in node.children) + ")"
        if isinstance(node, Not):
            return "(NOT " + render(node.child) + ")"
        col = bound.columns[node.column]
        name = sql_column(col)
        if isinstance(node, ColumnTruth):
            if node.value:
                return f"({_quote_ident(col.name)} IS NOT NULL OR CAST(NULL AS BOOLEAN))"
            return f"({_quote_ident(col.name)} IS NULL AND CAST(NULL AS BOOLEAN))"
        if isinstance(node, Compare):
            op = "<>" if node.op == "!=" else node.op
            return f"({name} {op} {sql_literal(node.value, col)})"
        if isinstance(node, InList):
            vals = [sql_literal(v, col) for v in node.values] + (["NULL"] if node.has_null else [])
            return f"({name} {'NOT ' if node.negated else ''}IN ({', '.join(vals)}))"
        if isinstance(node, Between):
            lo, hi = sql_literal(node.low, col), sql_literal(node.high, col)
            return f"({name} {'NOT ' if node.negated else ''}BETWEEN {lo} AND {hi})"
        if isinstance(node, IsNull):
            return f"({_quote_ident(col.name)} IS {'NOT ' if node.negated else ''}NULL)"
        raise PredicateError(f"unsupported predicate node {node!r}")

    return render(bound.node)


def to_arrow(bound: BoundPredicate) -> Any:
    """Render a bound predicate as a ``pyarrow.compute`` expression with Spark's meaning.

    See :mod:`lakesieve.arrow_filter`.
    """
    from lakesieve.arrow_filter import to_arrow as render

    return render(bound)
