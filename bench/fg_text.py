#!/usr/bin/env python3
"""The .fg text language read in Python: graphs of statements, as
bench/fg_torch.py translates them (the reader in C++ is fusion/ir/text.cpp;
this one trusts the file to be valid, as `fusegate` has checked it, and says
where it stops when it is not)."""
import re


class FgError(Exception):
    """A .fg this module cannot read: file:line:col: message."""


_TOKEN = re.compile(r"""
    (?P<space>\s+|\#[^\n]*)
  | (?P<float>-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)|-?inf\b|-?nan\b)
  | (?P<int>-?\d+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<ref>%(?:[A-Za-z_][A-Za-z0-9_.]*|\d+))
  | (?P<string>"(?:[^"\\\n]|\\["\\nt])*")
  | (?P<punct>[()\[\]{},:=])
""", re.VERBOSE)


def _tokens(text, path):
    pos, line, col = 0, 1, 1
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise FgError(f"{path}:{line}:{col}: unexpected character {text[pos]!r}")
        kind, raw = m.lastgroup, m.group()
        if kind != "space":
            out.append((kind, raw, line, col))
        nl = raw.count("\n")
        line, col = (line + nl, len(raw) - raw.rfind("\n")) if nl else (line, col + len(raw))
        pos = m.end()
    out.append(("end", "", line, col))
    return out


class Stmt:
    """`%ref = op(args) {attrs} : dtype[shape]`; an `if` holds its arms
    (statements and the yielded ref); `region` names the disabled region."""

    def __init__(self, ref, op, args, attrs, dtype, shape, line, region=None):
        self.ref, self.op, self.args, self.attrs = ref, op, args, attrs
        self.dtype, self.shape, self.line, self.region = dtype, shape, line, region
        self.arms = None  # for if: [(stmts, yield_ref) then, (stmts, yield_ref) else]


class Graph:
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.inputs = []  # (ref, dtype, shape, attrs)
        self.body = []    # Stmt, in order (a region's statements carry its name)
        self.outputs = []  # refs

    def ops(self):
        def walk(stmts):
            for s in stmts:
                yield s.op
                for arm, _ in s.arms or []:
                    yield from walk(arm)
        return set(walk(self.body))


class _Parser:
    def __init__(self, text, path):
        self.t, self.k, self.path = _tokens(text, path), 0, path

    def fail(self, msg, tok=None):
        kind, raw, line, col = tok or self.t[self.k]
        raise FgError(f"{self.path}:{line}:{col}: {msg} (found {raw or 'end of input'!r})")

    def peek(self, kind=None, raw=None):
        k, r = self.t[self.k][0], self.t[self.k][1]
        return (kind is None or k == kind) and (raw is None or r == raw)

    def take(self, kind=None, raw=None, what=None):
        if not self.peek(kind, raw):
            self.fail(f"expected {what or raw or kind}")
        tok = self.t[self.k]
        self.k += 1
        return tok

    def value(self):
        kind, raw = self.t[self.k][0], self.t[self.k][1]
        if kind == "int":
            self.k += 1
            return int(raw)
        if kind == "float":
            self.k += 1
            return float(raw)
        if kind == "string":
            self.k += 1
            return raw[1:-1].replace('\\"', '"').replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")
        if self.peek("punct", "["):
            self.k += 1
            items = []
            while not self.peek("punct", "]"):
                items.append(int(self.take("int", what="an integer")[1]))
                if not self.peek("punct", "]"):
                    self.take("punct", ",")
            self.k += 1
            return items
        self.fail("expected an attribute value")

    def attrs(self):
        a = {}
        if not self.peek("punct", "{"):
            return a
        self.k += 1
        while not self.peek("punct", "}"):
            key = self.take("ident", what="an attribute name")[1]
            self.take("punct", "=")
            a[key] = self.value()
            if not self.peek("punct", "}"):
                self.take("punct", ",")
        self.k += 1
        return a

    def type(self):
        dtype = self.take("ident", what="a dtype")[1]
        self.take("punct", "[")
        shape = []
        while not self.peek("punct", "]"):
            shape.append(int(self.take("int", what="a size")[1]))
            if not self.peek("punct", "]"):
                self.take("punct", ",")
        self.k += 1
        return dtype, shape

    def stmt(self, region=None):
        ref_tok = self.take("ref", what="a statement like '%x = op(...) : type'")
        self.take("punct", "=")
        op = self.take("ident", what="an op name")[1]
        s = Stmt(ref_tok[1][1:], op, [], {}, None, None, ref_tok[2], region)
        self.take("punct", "(")
        while self.peek("ref"):
            s.args.append(self.take("ref")[1][1:])
            if self.peek("punct", ","):
                self.k += 1
        self.take("punct", ")")
        if op == "if":
            self.take("punct", ":")
            s.dtype, s.shape = self.type()
            s.arms = [self.arm()]
            self.take("ident", "else")
            s.arms.append(self.arm())
            return s
        s.attrs = self.attrs()
        self.take("punct", ":")
        s.dtype, s.shape = self.type()
        return s

    def arm(self):
        self.take("punct", "{")
        body = []
        while not self.peek("ident", "yield"):
            body.append(self.stmt())
        self.k += 1
        y = self.take("ref", what="the yielded value")[1][1:]
        self.take("punct", "}")
        return body, y

    def graph(self):
        self.take("ident", "graph")
        g = Graph(self.take("ident", what="a graph name")[1], self.path)
        self.take("punct", "(")
        while self.peek("ref"):
            ref = self.take("ref")[1][1:]
            self.take("punct", ":")
            dtype, shape = self.type()
            g.inputs.append((ref, dtype, shape, self.attrs()))
            if self.peek("punct", ","):
                self.k += 1
        self.take("punct", ")")
        self.take("punct", "{")
        regions = 0
        while not self.peek("ident", "return"):
            if self.peek("ident", "expect"):
                self.k += 1
                self.take("ident", "break")
                self.take("string", what="the break's reason")
            elif self.peek("ident", "disabled"):
                self.k += 1
                self.take("string", what="the region's name")
                self.take("punct", "{")
                while not self.peek("punct", "}"):
                    g.body.append(self.stmt(region=regions))
                self.k += 1
                regions += 1
            else:
                g.body.append(self.stmt())
        self.k += 1
        while self.peek("ref"):
            g.outputs.append(self.take("ref")[1][1:])
            self.attrs()
            if self.peek("punct", ","):
                self.k += 1
        self.take("punct", "}")
        return g


def parse(text, path="<text>"):
    """Every graph of a .fg text."""
    p = _Parser(text, path)
    graphs = [p.graph()]
    while not p.peek("end"):
        graphs.append(p.graph())
    return graphs


def parse_file(path):
    with open(path, encoding="utf-8") as f:
        return parse(f.read(), path)
