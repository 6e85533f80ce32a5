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
    literal   := number | 'string' | "string" | DATE 'yyyy-mm-dd'
               | TIMESTAMP 'yyyy-mm-dd hh:mm:ss[.ffffff]' | TRUE | FALSE | NULL
               | CAST "(" literal AS type ")"
    column    := name | `quoted name`

Parsing gives an unbound tree of column names and raw literals;
:func:`bind` resolves names against an Arrow schema and converts literals to
the column's type (a date column accepts ``'2024-01-31'``), raising
:class:`~lakesieve.errors.PredicateError` naming the column and literal when
they cannot match. Bound trees render to Spark SQL with typed literals
(:func:`to_sql`), so the rows Spark keeps are exactly those we planned for.
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

# --------------------------------------------------------------------------
# tree
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A literal as written: ``kind`` is number, string, date, timestamp, bool or null."""

    kind: str
    text: str


@dataclass(frozen=True)
class Compare:
    """``column op value``; ``op`` is one of ``= != < <= > >=``."""

    column: str
    op: str
    value: Any


@dataclass(frozen=True)
class InList:
    """``column [NOT] IN (values)``."""

    column: str
    values: tuple[Any, ...]
    negated: bool = False


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
    """A predicate known to be always true or always false (``x = NULL`` is false)."""

    value: bool


Predicate = Compare | InList | Between | IsNull | And | Or | Not | Const

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
    | (?P<bq>`(?:[^`]|``)+`)
    | (?P<op><=|>=|<>|!=|==|=|<|>)
    | (?P<punct>[(),])
    | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
    )""",
    re.VERBOSE,
)

_KEYWORDS = {
    "AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE",
    "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "CAST", "AS",
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
            raise PredicateError(f"cannot parse predicate {text!r} at position {pos}: {text[pos:pos + 20]!r}")
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
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def parse_and(self) -> Predicate:
        parts = [self.parse_not()]
        while self.accept_kw("AND"):
            parts.append(self.parse_not())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def parse_not(self) -> Predicate:
        if self.accept_kw("NOT"):
            return Not(self.parse_not())
        tok = self.peek()
        if tok is not None and tok.kind == "punct" and tok.text == "(":
            self.i += 1
            node = self.parse_or()
            self.expect_punct(")")
            return node
        return self.parse_test()

    def is_column_next(self) -> bool:
        tok = self.peek()
        return tok is not None and (tok.kind == "bq" or tok.kind == "word")

    def cast_literal(self) -> Literal:
        """``CAST(literal AS type)``: the literal; binding converts it to the column's type."""
        self.expect_punct("(")
        inner = self.literal()
        if not self.accept_kw("AS"):
            raise self.fail("AS in CAST")
        tok = self.take()
        if tok.kind not in ("word", "kw"):
            self.i -= 1
            raise self.fail("a type name in CAST")
        nxt = self.peek()
        if nxt is not None and nxt.kind == "punct" and nxt.text == "(":  # decimal(p, s)
            self.i += 1
            while True:
                t = self.take()
                if t.kind == "punct" and t.text == ")":
                    break
                if t.kind not in ("num", "punct"):
                    self.i -= 1
                    raise self.fail("a type parameter")
        self.expect_punct(")")
        return inner

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
        if tok.kind == "kw" and tok.text in ("TRUE", "FALSE"):
            return Literal("bool", tok.text)
        if tok.kind == "kw" and tok.text == "NULL":
            return Literal("null", "NULL")
        if tok.kind == "kw" and tok.text in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ"):
            nxt = self.take()
            if nxt.kind != "str":
                self.i -= 1
                raise self.fail(f"a quoted {tok.text.lower()} after {tok.text}")
            return Literal("date" if tok.text == "DATE" else "timestamp", nxt.text[1:-1])
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


_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}


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


_INT_TYPES = {"tinyint", "smallint", "int", "bigint"}
_INT_RANGE = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}


def _err(col: BoundColumn, lit: Literal, why: str) -> PredicateError:
    return PredicateError(f"column {col.name!r} ({col.spark_type}): literal {lit.text!r} {why}")


def convert_literal(col: BoundColumn, lit: Literal) -> Any:
    """Convert a literal to the Python value of the column's type.

    Numbers against an integer column may come back as :class:`decimal.Decimal`
    when they are not whole; :func:`bind` turns those into tightened bounds.
    """
    t = col.spark_type
    if lit.kind == "null":
        return None
    if t in _INT_TYPES or t.startswith("decimal") or t in ("float", "double"):
        if lit.kind not in ("number", "string"):
            raise _err(col, lit, "is not a number")
        try:
            num = decimal.Decimal(lit.text.strip())
        except decimal.InvalidOperation:
            raise _err(col, lit, "is not a number") from None
        if not num.is_finite():
            raise _err(col, lit, "is not a finite number")
        if t in ("float", "double"):
            return float(num)
        if t.startswith("decimal"):
            return num
        return int(num) if num == num.to_integral_value() else num
    if t == "string":
        if lit.kind in ("string", "number"):
            return lit.text
        raise _err(col, lit, "is not a string")
    if t == "binary":
        if lit.kind == "string":
            return lit.text.encode()
        raise _err(col, lit, "is not a string")
    if t == "boolean":
        if lit.kind == "bool":
            return lit.text == "TRUE"
        if lit.kind == "string" and lit.text.lower() in ("true", "false"):
            return lit.text.lower() == "true"
        raise _err(col, lit, "is not TRUE or FALSE")
    if t == "date":
        if lit.kind not in ("string", "date"):
            raise _err(col, lit, "is not a date ('yyyy-mm-dd')")
        try:
            return dt.date.fromisoformat(lit.text.strip())
        except ValueError:
            raise _err(col, lit, "is not a date ('yyyy-mm-dd')") from None
    if t in ("timestamp", "timestamp_ntz"):
        if lit.kind not in ("string", "timestamp", "date"):
            raise _err(col, lit, "is not a timestamp ('yyyy-mm-dd hh:mm:ss')")
        try:
            value = dt.datetime.fromisoformat(lit.text.strip())
        except ValueError:
            raise _err(col, lit, "is not a timestamp ('yyyy-mm-dd hh:mm:ss')") from None
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value
    raise PredicateError(f"column {col.name!r} has type {t}, which predicates cannot test")


@dataclass(frozen=True)
class BoundPredicate:
    """A bound tree: the same node classes, with columns resolved and literals typed.

    Attributes:
        node: the tree; leaves hold exact column names and typed values.
        columns: the resolved columns by name.
    """

    node: Predicate
    columns: dict[str, BoundColumn]


def _check_range(col: BoundColumn, value: Any, lit: Literal) -> None:
    if col.spark_type in _INT_RANGE and isinstance(value, int):
        lo, hi = _INT_RANGE[col.spark_type]
        if not lo <= value <= hi:
            raise _err(col, lit, f"is outside the range of {col.spark_type}")


def _bind_compare(col: BoundColumn, op: str, lit: Literal) -> Predicate:
    value = convert_literal(col, lit)
    if value is None:
        return Const(False)  # comparisons with NULL are never true
    if isinstance(value, decimal.Decimal) and col.spark_type in _INT_TYPES:
        # a fractional number against an integer column: tighten to whole bounds
        if op == "=":
            return Const(False)
        if op == "!=":
            return IsNull(col.name, negated=True)
        floor, ceil = math.floor(value), math.ceil(value)
        op, value = {"<": ("<=", floor), "<=": ("<=", floor), ">": (">=", ceil), ">=": (">=", ceil)}[op]
    if isinstance(value, float) and math.isnan(value):
        raise _err(col, lit, "is NaN")
    _check_range(col, value, lit)
    return Compare(col.name, op, value)


def _bind(node: Predicate, schema: pa.Schema, cols: dict[str, BoundColumn], table: str) -> Predicate:
    if isinstance(node, And):
        return And(tuple(_bind(c, schema, cols, table) for c in node.children))
    if isinstance(node, Or):
        return Or(tuple(_bind(c, schema, cols, table) for c in node.children))
    if isinstance(node, Not):
        return Not(_bind(node.child, schema, cols, table))
    if isinstance(node, Const):
        return node
    col = resolve_column(schema, node.column, table)
    cols[col.name] = col
    if isinstance(node, Compare):
        return _bind_compare(col, node.op, node.value)
    if isinstance(node, InList):
        parts = [_bind_compare(col, "=", v) for v in node.values]
        values = tuple(p.value for p in parts if isinstance(p, Compare))
        if not values:
            return Const(node.negated) if not any(v.kind == "null" for v in node.values) else Const(False)
        has_null = any(v.kind == "null" for v in node.values)
        if node.negated and has_null:
            return Const(False)  # x NOT IN (..., NULL) is never true
        return InList(col.name, values, node.negated)
    if isinstance(node, Between):
        lo = _bind_compare(col, ">=", node.low)
        hi = _bind_compare(col, "<=", node.high)
        if isinstance(lo, Const) or isinstance(hi, Const):
            inner: Predicate = And((lo, hi))
            return Not(inner) if node.negated else inner
        assert isinstance(lo, Compare) and isinstance(hi, Compare)
        return Between(col.name, lo.value, hi.value, node.negated)
    if isinstance(node, IsNull):
        return IsNull(col.name, node.negated)
    raise PredicateError(f"unsupported predicate node {node!r}")


def bind(predicate: Predicate | str, schema: pa.Schema, table: str = "") -> BoundPredicate:
    """Resolve columns against ``schema`` and type every literal.

    Args:
        predicate: a parsed tree or a ``where`` string.
        schema: the table's Arrow schema.
        table: the table's path, for error messages.

    Raises:
        PredicateError: a literal does not fit its column.
        ColumnNotFoundError: a column is not in the schema.
    """
    node = parse(predicate) if isinstance(predicate, str) else predicate
    cols: dict[str, BoundColumn] = {}
    bound = _bind(node, schema, cols, table)
    return BoundPredicate(bound, cols)


# --------------------------------------------------------------------------
# normal form: push NOT down to the leaves
# --------------------------------------------------------------------------


def push_not(node: Predicate, negate: bool = False) -> Predicate:
    """Return an equivalent tree with no :class:`Not` nodes.

    Row filtering treats NULL as false, so ``NOT (x < 5)`` keeps exactly the
    rows ``x >= 5`` keeps; negations become negated leaves.
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
        return Const(not node.value)
    if isinstance(node, Compare):
        return Compare(node.column, _NEGATE[node.op], node.value)
    if isinstance(node, InList):
        return InList(node.column, node.values, not node.negated)
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
    """Render a typed value as a Spark SQL literal of the column's type."""
    t = col.spark_type
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, dt.datetime):
        kw = "TIMESTAMP_NTZ" if t == "timestamp_ntz" else "TIMESTAMP"
        return f"{kw} '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, bytes):
        return "X'" + value.hex() + "'"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        escaped = escaped.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
        return "'" + escaped + "'"
    if isinstance(value, float):
        return f"CAST({value!r} AS {t.upper()})"
    if isinstance(value, decimal.Decimal):
        # exact: a CAST to the column's scale would round (1.505 -> 1.51 in decimal(10,2))
        return f"{format(value, 'f')}BD"
    if isinstance(value, int):
        return f"CAST({value} AS {t.upper()})"
    raise PredicateError(f"cannot render literal {value!r} for column {col.name!r}")


def to_sql(bound: BoundPredicate) -> str:
    """Render a bound predicate as Spark SQL with typed literals."""

    def render(node: Predicate) -> str:
        if isinstance(node, Const):
            return "TRUE" if node.value else "FALSE"
        if isinstance(node, And):
            return "(" + " AND ".join(render(c) for c in node.children) + ")"
        if isinstance(node, Or):
            return "(" + " OR ".join(render(c) for c in node.children) + ")"
        if isinstance(node, Not):
            return "(NOT " + render(node.child) + ")"
        col = bound.columns[node.column]
        name = _quote_ident(col.name)
        if isinstance(node, Compare):
            op = "<>" if node.op == "!=" else node.op
            return f"({name} {op} {sql_literal(node.value, col)})"
        if isinstance(node, InList):
            vals = ", ".join(sql_literal(v, col) for v in node.values)
            return f"({name} {'NOT ' if node.negated else ''}IN ({vals}))"
        if isinstance(node, Between):
            lo, hi = sql_literal(node.low, col), sql_literal(node.high, col)
            return f"({name} {'NOT ' if node.negated else ''}BETWEEN {lo} AND {hi})"
        if isinstance(node, IsNull):
            return f"({name} IS {'NOT ' if node.negated else ''}NULL)"
        raise PredicateError(f"unsupported predicate node {node!r}")

    return render(bound.node)


def to_arrow(bound: BoundPredicate) -> Any:
    """Render a bound predicate as a ``pyarrow.compute`` expression.

    Rows where the expression is null are dropped by ``Table.filter``, which
    matches SQL's WHERE. Used to evaluate predicates without Spark.
    """
    import pyarrow.compute as pc

    def scalar(value: Any, col: BoundColumn) -> Any:
        t = col.arrow_type
        if pa.types.is_dictionary(t):
            t = t.value_type
        if pa.types.is_string_view(t):
            t = pa.string()
        if pa.types.is_integer(t) and isinstance(value, int):
            return pa.scalar(value, type=pa.int64() if value >= -(2**63) else t)
        if pa.types.is_decimal(t) and isinstance(value, decimal.Decimal):
            return pa.scalar(value)
        return pa.scalar(value, type=t)

    def render(node: Predicate) -> Any:
        if isinstance(node, Const):
            return pc.scalar(node.value)
        if isinstance(node, And):
            out = render(node.children[0])
            for c in node.children[1:]:
                out = out & render(c)
            return out
        if isinstance(node, Or):
            out = render(node.children[0])
            for c in node.children[1:]:
                out = out | render(c)
            return out
        if isinstance(node, Not):
            return ~render(node.child)
        col = bound.columns[node.column]
        field = pc.field(col.name)
        if pa.types.is_string_view(col.arrow_type):
            field = field.cast(pa.string())
        if isinstance(node, Compare):
            v = scalar(node.value, col)
            return {
                "=": field == v,
                "!=": field != v,
                "<": field < v,
                "<=": field <= v,
                ">": field > v,
                ">=": field >= v,
            }[node.op]
        if isinstance(node, InList):
            first = scalar(node.values[0], col)
            inside = field.isin(pa.array([scalar(v, col).as_py() for v in node.values], type=first.type))
            return (~inside & field.is_valid()) if node.negated else inside
        if isinstance(node, Between):
            inside = (field >= scalar(node.low, col)) & (field <= scalar(node.high, col))
            return ~inside if node.negated else inside
        if isinstance(node, IsNull):
            return field.is_valid() if node.negated else field.is_null()
        raise PredicateError(f"unsupported predicate node {node!r}")

    return render(bound.node)
