"""Finds Horovod's files (which this repository does not hold) and copies
one with its imports changed: `import horovod.torch as hvd` becomes
`import cohort.torch as hvd`, and a bare `import horovod` (the examples use
it for horovod.run) becomes `import cohort as horovod` (cohort.run takes
horovod.run's arguments).

One variable names a Horovod checkout: COHORT_HOROVOD_SUITE (or --horovod),
from which the test suite (test/parallel/test_torch.py) and the examples
(examples/pytorch, examples/elastic/pytorch) are found. The older variables
still work and win: COHORT_HOROVOD_SUITE may name test_torch.py itself, and
COHORT_HOROVOD_EXAMPLES / COHORT_HOROVOD_ELASTIC_EXAMPLES the examples'
folders."""
import os

HOROVOD_IMPORT = "import horovod.torch as hvd"
COHORT_IMPORT = "import cohort.torch as hvd"
BARE_IMPORTS = {"import horovod": "import cohort as horovod"}
SUITE_IN_CHECKOUT = os.path.join("test", "parallel", "test_torch.py")
EXAMPLES_IN_CHECKOUT = os.path.join("examples", "pytorch")
ELASTIC_EXAMPLES_IN_CHECKOUT = os.path.join("examples", "elastic", "pytorch")


def checkout(given=""):
    """The Horovod checkout named by `given` or $COHORT_HOROVOD_SUITE, or ""
    when they name none (nothing, or the suite's file itself)."""
    path = given or os.environ.get("COHORT_HOROVOD_SUITE", "")
    return path if path and os.path.isdir(path) else ""


def suite_file(given=""):
    """Horovod's test_torch.py: `given` or $COHORT_HOROVOD_SUITE, a file or a
    checkout holding it; "" when neither names one."""
    path = given or os.environ.get("COHORT_HOROVOD_SUITE", "")
    if path and os.path.isdir(path):
        path = os.path.join(path, SUITE_IN_CHECKOUT)
    return path if path and os.path.isfile(path) else ""


def examples_folder(given, variable, in_checkout, horovod=""):
    """A folder of Horovod's examples: `given` (the script's --examples),
    else $variable, else `in_checkout` inside the checkout (`horovod` or
    $COHORT_HOROVOD_SUITE); "" when none is named."""
    if given or os.environ.get(variable):
        return given or os.environ[variable]
    root = checkout(horovod)
    return os.path.join(root, in_checkout) if root else ""


def copy_with_cohort_import(src, dst):
    with open(src) as f:
        lines = f.read().split("\n")
    hits = [i for i, line in enumerate(lines) if line in (HOROVOD_IMPORT, COHORT_IMPORT)]
    if len(hits) != 1:
        raise SystemExit("%s: expected one line '%s', found %d" % (src, HOROVOD_IMPORT, len(hits)))
    lines[hits[0]] = COHORT_IMPORT
    lines = [BARE_IMPORTS.get(line, line) for line in lines]
    with open(dst, "w") as f:
        f.write("\n".join(lines))
