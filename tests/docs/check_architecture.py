#!/usr/bin/env python3
"""Checks docs/ARCHITECTURE.md against the code.

    check_architecture.py [MARKDOWN]      (default: docs/ARCHITECTURE.md)
    check_architecture.py --self-test

1. "Where is" rows: every table row that has a cell holding only a
   backticked repository path and another cell holding only backticked
   identifiers. The file must exist, and each identifier must occur in it as
   a whole word (for `Class::method`, the method name).
2. Paths: every backticked repository path anywhere in the document (outside
   fenced code blocks) must exist: a path with a '/' and a known extension,
   or ending in '/' (a folder). Paths outside the repository (`../x`, `/x`,
   `~/x`), with placeholders (`<repro>`) or with globs that match something
   are accepted; in a section whose heading says "not yet", a path may be
   absent (such a section lists what the design names and the code lacks).

Paths are relative to the repository root, found from this file's location
(tests/docs/ -> ../..). Exit 0 when everything holds; otherwise one line per
problem, `MARKDOWN:LINE: ...`, and exit 1. --self-test injects a made-up row
and a made-up path into a copy of the document and expects exit 1 naming
both.
"""
import glob
import os
import re
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_DOC = os.path.join(REPO, "docs", "ARCHITECTURE.md")

EXTENSIONS = (".cpp", ".cc", ".h", ".hpp", ".cu", ".py", ".sh", ".md", ".txt", ".json", ".fg", ".test",
              ".cmake", ".yml", ".yaml", ".toml", ".cfg")
IDENT = re.compile(r"^~?[A-Za-z_][A-Za-z0-9_]*(::~?[A-Za-z_][A-Za-z0-9_]*)*(\(\))?$")
CODE = re.compile(r"`([^`]+)`")


def split_row(line):
    """Cells of a Markdown table row; '|' inside backticks or escaped does not split."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    cells, cur, in_code, i = [], [], False, 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body) and body[i + 1] == "|":
            cur.append("|")
            i += 2
            continue
        if c == "`":
            in_code = not in_code
        if c == "|" and not in_code:
            cells.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1
    cells.append("".join(cur).strip())
    return cells


def code_only(cell):
    """The backticked spans of a cell that holds nothing else (separators aside), or None."""
    spans = CODE.findall(cell)
    if not spans:
        return None
    rest = CODE.sub("", cell)
    rest = re.sub(r"\b(and|or)\b", "", rest)
    if rest.strip(" ,;/+"):
        return None
    return spans


def strip_location(token):
    return re.sub(r"(:\d+)+$", "", token)


def looks_like_path(token):
    t = strip_location(token.strip())
    if "/" not in t or " " in t:
        return False
    return t.endswith("/") or t.lower().endswith(EXTENSIONS)


def path_status(token):
    """'ok', 'skip' (outside the repository or a placeholder) or 'missing'."""
    t = strip_location(token.strip())
    if t.startswith(("../", "/", "~", "$", "http:", "https:")) or any(c in t for c in "<>{}"):
        return "skip"
    full = os.path.join(REPO, t)
    if any(c in t for c in "*?["):
        return "ok" if glob.glob(full) else "missing"
    if t.endswith("/"):
        return "ok" if os.path.isdir(full) else "missing"
    return "ok" if os.path.isfile(full) else "missing"


_file_cache = {}


def file_text(rel):
    if rel not in _file_cache:
        with open(os.path.join(REPO, rel), encoding="utf-8", errors="replace") as f:
            _file_cache[rel] = f.read()
    return _file_cache[rel]


def identifier_in(ident, rel):
    name = ident[:-2] if ident.endswith("()") else ident
    name = name.split("::")[-1].lstrip("~")
    return re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", file_text(rel)) is not None


def display(path):
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def check(doc_path):
    """Returns (problems, number of where-is rows checked)."""
    with open(doc_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    shown = display(doc_path)
    problems, rows = [], 0
    in_fence, not_yet = False, False
    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if stripped.startswith("#"):
            not_yet = "not yet" in stripped.lower()
            continue
        where = "%s:%d" % (shown, no)

        # 1. where-is rows
        if stripped.startswith("|") and not re.match(r"^\|[\s:|-]+\|?$", stripped):
            cells = split_row(stripped)
            path_cells, ident_cells = [], []
            for cell in cells:
                spans = code_only(cell)
                if spans is None:
                    continue
                if all(looks_like_path(s) for s in spans):
                    path_cells.append([strip_location(s) for s in spans])
                elif all(IDENT.match(s) for s in spans):
                    ident_cells.append(spans)
            if path_cells and ident_cells:
                rows += 1
                files = [p for cell in path_cells for p in cell]
                existing = []
                for p in files:
                    if path_status(p) == "missing" or p.endswith("/"):
                        problems.append("%s: where-is row: file `%s` does not exist" % (where, p))
                    elif path_status(p) == "ok":
                        existing.append(p)
                for cell in ident_cells:
                    for ident in cell:
                        if existing and not any(identifier_in(ident, p) for p in existing):
                            problems.append("%s: where-is row: `%s` does not appear in %s" %
                                            (where, ident, ", ".join("`%s`" % p for p in existing)))

        # 2. every repository path quoted anywhere
        for span in CODE.findall(line):
            if looks_like_path(span) and path_status(span) == "missing" and not not_yet:
                problems.append("%s: path `%s` does not exist in the repository" % (where, strip_location(span)))

    if rows == 0:
        problems.append("%s: no where-is rows found (a table row with a `path` cell and an `identifier` cell)" %
                        shown)
    return problems, rows


def self_test():
    """A made-up row and a made-up path must both be reported."""
    with open(DEFAULT_DOC, encoding="utf-8") as f:
        text = f.read()
    anchor = "| the pass pipeline | `fusion/compile.cpp` | `compile` |"
    if anchor not in text:
        print("self-test: the anchor row is gone from %s; update the self-test" % DEFAULT_DOC)
        return 1
    bogus = (anchor + "\n| a made-up rule | `fusion/compile.cpp` | `frobnicate_kernels` |"
             "\n| a made-up file | `fusion/passes/nonexistent.cpp` | `compile` |")
    text = text.replace(anchor, bogus, 1) + "\nSee `harness/no_such_file.cpp`.\n"
    fd, path = tempfile.mkstemp(suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        problems, _ = check(path)
    finally:
        os.unlink(path)
    expected = ["frobnicate_kernels", "fusion/passes/nonexistent.cpp", "harness/no_such_file.cpp"]
    missed = [e for e in expected if not any(e in p for p in problems)]
    if missed:
        print("self-test: the checker did not report: " + ", ".join(missed))
        return 1
    print("self-test: made-up entries reported (%d problems), as expected" % len(problems))
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print(__doc__.strip().split("\n\n")[1])
        return 2
    doc = os.path.abspath(argv[1]) if len(argv) == 2 else DEFAULT_DOC
    if not os.path.isfile(doc):
        print("check_architecture: no such file: %s" % doc)
        return 2
    problems, rows = check(doc)
    for p in problems:
        print(p)
    if problems:
        print("check_architecture: %d problem(s) in %s" % (len(problems), display(doc)))
        return 1
    print("check_architecture: %s: %d where-is rows and every quoted path hold" % (display(doc), rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
