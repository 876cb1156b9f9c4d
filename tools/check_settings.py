#!/usr/bin/env python3
"""Checks that src/ and python/cohort read no COHORT_* variable outside the
settings table (src/common/settings.cc), the one list of the environment
variables cohort reads (docs/configuration.md):

1. every COHORT_*/MLFLOW_* name in a string in the code is a row of the table;
2. the COHORT_SWEEP_* names passed from `cohort sweep` to its trials are
   written only in the table's files (C++: settings.h's setting::k*,
   Python: cohort.settings' constants);
3. C++ calls getenv only in settings.cc, or with a literal name that is not
   COHORT_*/MLFLOW_* (HOME, USER, PATH, ...);
4. Python reads os.environ / os.getenv only in cohort/settings.py, or with a
   literal name that is not COHORT_*/MLFLOW_*; writing it (a child's
   environment) is fine;
5. python/cohort/settings.py's fallback list (used before the extension is
   importable) has the table's rows, defaults and scopes.

Usage: check_settings.py [ROOT]; exit status 1 and one line per finding.
"""
import ast
import io
import os
import re
import sys
import tokenize


TABLE_FILES = {"src/common/settings.h", "src/common/settings.cc", "python/src/runtime/settings.cc",
               "python/cohort/settings.py"}
NAME = re.compile(r"\b(?:COHORT|MLFLOW)_[A-Z0-9_]*")
CXX_STRING = re.compile(r'R"([^(\s]*)\((.*?)\)\1"|"((?:[^"\\\n]|\\.)*)"', re.S)


def table(root):
    """The rows of src/common/settings.cc: variable -> (default, scope)."""
    header = open(os.path.join(root, "src/common/settings.h")).read()
    constants = dict(re.findall(r'inline constexpr char (k\w+)\[\] = "([A-Z0-9_]+)";', header))
    source = open(os.path.join(root, "src/common/settings.cc")).read()
    body = source[source.index("kSettings = {"):source.index("// clang-format on")]
    rows = {}
    row = re.compile(r'\n  \{(?:"([A-Z0-9_]+)"|setting::(k\w+)),\s*(?:"[^"]*"|nullptr),'
                     r'\s*T::k\w+,\s*"([^"]*)".*?S::k(\w+)(?:, true)?\},', re.S)
    for m in row.finditer(body):
        variable = m.group(1) or constants[m.group(2)]
        rows[variable] = (m.group(3), m.group(4).lower())
    return rows, set(constants.values())


def strip_cxx_comments(text):
    # Comments go, strings stay: a "//" inside a string is not a comment.
    out, pos = [], 0
    pattern = re.compile(r'R"([^(\s]*)\(.*?\)\1"|"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
                         r"|//[^\n]*|/\*.*?\*/", re.S)
    for m in pattern.finditer(text):
        out.append(text[pos:m.start()])
        token = m.group(0)
        out.append(token if token[0] in "R\"'" else "\n" * token.count("\n"))
        pos = m.end()
    out.append(text[pos:])
    return "".join(out)


def names_ok(strings, rows, where, problems, macros=()):
    for line, text in strings:
        for name in NAME.findall(text):
            # "COHORT_" alone or "COHORT_*" names the family, not a variable;
            # a macro the string itself #defines (generated source) is no
            # variable either.
            if name in ("COHORT_", "MLFLOW_") or name in rows or name in macros:
                continue
            problems.append("%s:%d: %s is not in the settings table (src/common/settings.cc)"
                            % (where, line, name))


def check_cxx(root, path, rows, handed_on, problems):
    rel = os.path.relpath(path, root)
    text = strip_cxx_comments(open(path, errors="replace").read())
    strings = []
    for m in CXX_STRING.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        strings.append((line, m.group(2) if m.group(2) is not None else m.group(3)))
    if rel in TABLE_FILES:
        return
    # Preprocessor names (a macro a generated kernel source #defines, an
    # include guard's) are no variables.
    macros = set(re.findall(r"#\s*(?:define|ifn?def|undef)\s+((?:COHORT|MLFLOW)_\w+)", text))
    names_ok(strings, rows, rel, problems, macros)
    for line, s in strings:
        if s in handed_on:
            problems.append("%s:%d: \"%s\" is written out: use setting::k* (common/settings.h)"
                            % (rel, line, s))
    for m in re.finditer(r"\bgetenv\s*\(\s*([^)]*)\)", text):
        line = text.count("\n", 0, m.start()) + 1
        arg = m.group(1).strip()
        literal = re.fullmatch(r'"([A-Za-z0-9_]+)"', arg)
        if literal and not NAME.match(literal.group(1)):
            continue
        problems.append("%s:%d: getenv(%s) outside the settings table: read it with ReadSetting "
                        "(common/settings.h) or through an EnvLookup" % (rel, line, arg))


def is_environ(node):
    return (isinstance(node, ast.Attribute) and node.attr == "environ"
            and isinstance(node.value, ast.Name) and node.value.id in ("os", "_os"))


def literal_other(node):
    """True for a literal name that is not a COHORT_*/MLFLOW_* variable."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and not NAME.match(node.value))


def check_python(root, path, rows, handed_on, problems):
    rel = os.path.relpath(path, root)
    source = open(path).read()
    strings = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING:
            strings.append((tok.start[0], tok.string))
    if rel in TABLE_FILES:
        return
    names_ok(strings, rows, rel, problems)
    for line, s in strings:
        if s.strip("\"'") in handed_on:
            problems.append("%s:%d: %s is written out: use cohort.settings' constant"
                            % (rel, line, s))
    tree = ast.parse(source)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for node in ast.walk(tree):
        bad = None
        if isinstance(node, ast.Attribute) and node.attr == "getenv":
            call = parents.get(node)
            if not (isinstance(call, ast.Call) and call.args and literal_other(call.args[0])):
                bad = "os.getenv"
        elif is_environ(node):
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript):
                if not isinstance(parent.ctx, ast.Load):
                    continue  # os.environ[NAME] = value: setting, not reading
                key = parent.slice.value if isinstance(parent.slice, ast.Index) else parent.slice
                if not literal_other(key):
                    bad = "os.environ[...]"
            elif isinstance(parent, ast.Attribute):
                call = parents.get(parent)
                if parent.attr in ("setdefault", "update", "clear", "pop", "copy", "items"):
                    continue  # a child's environment, or handing all of it on
                if parent.attr == "get" and isinstance(call, ast.Call) and call.args \
                        and literal_other(call.args[0]):
                    continue
                bad = "os.environ.%s" % parent.attr
            elif isinstance(parent, ast.Compare):
                if not literal_other(parent.left):
                    bad = "... in os.environ"
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
                    and parent.func.id == "dict":
                continue  # dict(os.environ): a child's environment
            else:
                bad = "os.environ"
        if bad:
            problems.append("%s:%d: %s reads the environment outside the settings table: use "
                            "cohort.settings" % (rel, node.lineno, bad))


def check_fallback(root, rows, problems):
    sys.path.insert(0, os.path.join(root, "python", "cohort"))
    try:
        import importlib.util
        spec = importlib.util.spec_from_file_location(
            "_settings_check", os.path.join(root, "python/cohort/settings.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    fallback = {name: (default, scope) for name, default, scope in module.FALLBACK_ROWS}
    for name in sorted(set(rows) | set(fallback)):
        if rows.get(name) != fallback.get(name):
            problems.append("python/cohort/settings.py: FALLBACK_ROWS has %s as %r, the table as %r"
                            % (name, fallback.get(name), rows.get(name)))


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    rows, constants = table(root)
    handed_on = {name for name in constants if name.startswith("COHORT_SWEEP_")}
    problems = []
    if len(rows) < 40:
        problems.append("src/common/settings.cc: found only %d rows; is the table's layout new?"
                        % len(rows))
    for top, exts, check in (("src", (".cc", ".h"), check_cxx),
                             ("python/src", (".cc", ".h"), check_cxx),
                             ("python/cohort", (".py",), check_python)):
        for folder, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith(exts):
                    check(root, os.path.join(folder, name), rows, handed_on, problems)
    check_fallback(root, rows, problems)
    for p in problems:
        print(p)
    print("%d settings, %d problems" % (len(rows), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
