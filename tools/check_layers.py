#!/usr/bin/env python3
"""Checks the house: the include graph of the folders of src/ against the
layer order written in docs/architecture-notes.md ("The layers of src/").

The order is a fenced block under that heading, one line per layer, the
highest first; a line may hold several folders. A file in src/F may include
a header of src/G only when G's line is below F's (or G is F). Fails, one
line per finding, on:

1. an include of a folder that is not below the includer's ("back arrow"),
   naming the file and line;
2. a cycle among folders (then there are back arrows too; the cycle says
   which way round they go);
3. a folder of src/ missing from the order, or a folder in the order that
   src/ does not have.

Headers of include/ ("cohort/...") and system headers are not folders of
src/ and are ignored. Usage: check_layers.py [ROOT]; exit status 1 on a
finding, and a summary line either way.
"""
import os
import re
import sys

NOTES = "docs/architecture-notes.md"
HEADING = "## The layers of src/"
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([A-Za-z0-9_]+)/[^"]+"', re.M)


def layer_order(root):
    """[[folder, ...], ...], the highest layer first."""
    text = open(os.path.join(root, NOTES)).read()
    if HEADING not in text:
        raise SystemExit(f"{NOTES} has no '{HEADING}' section")
    section = text[text.index(HEADING):]
    block = re.search(r"```[a-z]*\n(.*?)```", section, re.S)
    if block is None:
        raise SystemExit(f"{NOTES}: '{HEADING}' has no fenced block of layers")
    layers = []
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            layers.append(line.split())
    return layers


def arrows(root):
    """{(from, to): [(file, line), ...]} for every include across folders."""
    src = os.path.join(root, "src")
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    found = {}
    for folder in folders:
        for dirpath, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                text = open(path, errors="replace").read()
                for m in INCLUDE.finditer(text):
                    target = m.group(1)
                    if target == folder or target not in folders:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    found.setdefault((folder, target), []).append(
                        (os.path.relpath(path, root), line))
    return folders, found


def cycles(edges):
    """Each cycle once, as [a, b, ..., a], from a depth-first search."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    out, seen = [], set()

    def visit(node, stack, on_stack):
        for nxt in sorted(graph.get(node, ())):
            if nxt in on_stack:
                cycle = stack[stack.index(nxt):] + [nxt]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    out.append(cycle)
            elif nxt not in done:
                on_stack.add(nxt)
                visit(nxt, stack + [nxt], on_stack)
                on_stack.discard(nxt)
        done.add(node)

    done = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start], {start})
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    layers = layer_order(root)
    level = {}
    findings = []
    for i, line in enumerate(layers):
        for folder in line:
            if folder in level:
                findings.append(f"{NOTES}: {folder} is in the layer order twice")
            level[folder] = len(layers) - i  # higher number = higher layer
    folders, found = arrows(root)
    for folder in folders:
        if folder not in level:
            findings.append(f"src/{folder} is not in the layer order ({NOTES})")
    for folder in sorted(level):
        if folder not in folders:
            findings.append(f"{NOTES}: the layer order names {folder}, which src/ does not have")
    for (a, b), places in sorted(found.items()):
        if a in level and b in level and level[b] >= level[a]:
            for path, line in places:
                findings.append(f"{path}:{line}: {a} -> {b}: {b} is not below {a} in the layer "
                                f"order ({NOTES})")
    for cycle in cycles(found):
        findings.append("cycle: " + " -> ".join(cycle))
    for finding in findings:
        print(finding)
    print(f"{len(folders)} folders, {len(found)} arrows, {len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
