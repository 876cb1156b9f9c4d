"""tools/check_layers.py, the check that src/'s folders include only the
folders below them in the layer order of docs/architecture-notes.md: the
tree passes, and made-up trees with a back arrow, a cycle or a folder the
order lacks fail with messages naming the file, line and folders."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check_layers.py")

NOTES = """# Notes

## The layers of src/

```text
top
middle   # a comment
low other
base
```
"""


def check(root):
    out = subprocess.run([sys.executable, CHECK, str(root)], capture_output=True, text=True,
                         timeout=60)
    return out.returncode, out.stdout.splitlines()


@pytest.fixture
def tree(tmp_path):
    """src/ with the four layers' folders, each file including what it may."""
    os.makedirs(tmp_path / "docs")
    (tmp_path / "docs" / "architecture-notes.md").write_text(NOTES)
    files = {
        "base/b.h": "// Base.\n#include <string>\n",
        "low/l.h": '// Low.\n#include "base/b.h"\n#include "cohort/status.h"\n',
        "other/o.cc": '// Other.\n#include "base/b.h"\n',
        "middle/m.h": '// Middle.\n#include "low/l.h"\n#include "other/o.h"\n',
        "top/sub/t.cc": '// Top.\n#include "middle/m.h"\n#include "base/b.h"\n',
    }
    for rel, text in files.items():
        os.makedirs(tmp_path / "src" / os.path.dirname(rel), exist_ok=True)
        (tmp_path / "src" / rel).write_text(text)
    return tmp_path


def test_the_tree_keeps_the_layer_order():
    status, lines = check(ROOT)
    assert status == 0, "\n".join(lines)


def test_a_tree_that_keeps_the_order_passes(tree):
    assert check(tree) == (0, ["5 folders, 6 arrows, 0 findings"])


def test_a_back_arrow_fails_naming_the_file_and_line(tree):
    (tree / "src" / "low" / "l.cc").write_text('// Low.\n\n#include "middle/m.h"\n')
    status, lines = check(tree)
    assert status == 1
    assert lines == [
        "src/low/l.cc:3: low -> middle: middle is not below low in the layer order "
        "(docs/architecture-notes.md)",
        "cycle: low -> middle -> low",
        "5 folders, 7 arrows, 2 findings",
    ]


def test_an_arrow_within_a_layer_fails(tree):
    (tree / "src" / "low" / "x.h").write_text('#include "other/o.h"\n')
    status, lines = check(tree)
    assert status == 1
    assert lines[0] == ("src/low/x.h:1: low -> other: other is not below low in the layer order "
                        "(docs/architecture-notes.md)")


def test_a_cycle_through_three_folders_is_named(tree):
    (tree / "src" / "base" / "c.cc").write_text('#include "top/t.h"\n')
    status, lines = check(tree)
    assert status == 1
    assert "cycle: base -> top -> middle -> low -> base" in lines


def test_folders_missing_from_the_order_or_from_src_fail(tree):
    os.makedirs(tree / "src" / "newcomer")
    (tree / "src" / "newcomer" / "n.cc").write_text('#include "base/b.h"\n')
    os.rename(tree / "src" / "other", tree / "src" / "gone")
    status, lines = check(tree)
    assert status == 1
    assert lines[:3] == [
        "src/gone is not in the layer order (docs/architecture-notes.md)",
        "src/newcomer is not in the layer order (docs/architecture-notes.md)",
        "docs/architecture-notes.md: the layer order names other, which src/ does not have",
    ]
