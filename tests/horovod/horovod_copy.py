"""Copies a file of Horovod's (a test or an example, which this repository does
not hold) with its one change: `import horovod.torch as hvd` becomes
`import cohort.torch as hvd`."""
HOROVOD_IMPORT = "import horovod.torch as hvd"
COHORT_IMPORT = "import cohort.torch as hvd"


def copy_with_cohort_import(src, dst):
    with open(src) as f:
        lines = f.read().split("\n")
    hits = [i for i, line in enumerate(lines) if line in (HOROVOD_IMPORT, COHORT_IMPORT)]
    if len(hits) != 1:
        raise SystemExit("%s: expected one line '%s', found %d" % (src, HOROVOD_IMPORT, len(hits)))
    lines[hits[0]] = COHORT_IMPORT
    with open(dst, "w") as f:
        f.write("\n".join(lines))
