"""Lexer and parser: a ``where`` string to an unbound predicate tree.

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
predicates are refused with a one-line error. The tree holds column names as
written and :class:`~lakesieve.expressions.nodes.Literal` values;
:func:`~lakesieve.expressions.bind` resolves and types them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lakesieve.errors import PredicateError

from .nodes import (
    And,
    Between,
    Compare,
    InList,
    IsNull,
    Literal,
    Not,
    Or,
    Predicate,
)

MAX_DEPTH = 100
"""Deepest nesting of parentheses and NOTs a predicate may have."""

_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}

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
