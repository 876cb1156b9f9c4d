"""Runs Horovod's own test/parallel/test_torch.py against cohort.torch as one
job: `cohort run -np N` starts N ranks, each runs the whole file under pytest
with horovodrun's HOROVOD_RANK/HOROVOD_SIZE set.

Horovod's file is not part of this repository: --suite (or
COHORT_HOROVOD_SUITE) names a copy, or a Horovod checkout holding it at
test/parallel/test_torch.py. It is staged unchanged but for its import
(`import horovod.torch as hvd` becomes `import cohort.torch as hvd`), next to
../utils/common.py (utils/common.py here) and a conftest.py marking the
deliberate differences (deliberate_differences.py). Exit status: 0 when
pytest passed on every rank and at least --min-passed tests passed on every
rank, 77 when no copy of the suite was given (ctest reports a skip)."""
import argparse
import ast
import glob
import os
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

from horovod_copy import copy_with_cohort_import, suite_file

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="", help="Horovod's test/parallel/test_torch.py or a "
                   "Horovod checkout (default: $COHORT_HOROVOD_SUITE)")
    p.add_argument("--cohort", required=True, help="the cohort executable")
    p.add_argument("--stage", required=True, help="a scratch directory (emptied)")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--timeout", type=int, default=240, help="cohort run --timeout")
    p.add_argument("--min-passed", type=int, default=0,
                   help="fail when fewer tests passed on every rank")
    p.add_argument("--each", action="store_true", help="every test in its own job")
    p.add_argument("--raw", action="store_true",
                   help="without the conftest marking the deliberate differences")
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p.parse_args()


def stage(suite, where, with_conftest):
    """Copies the suite with its import changed; returns the staged file."""
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(os.path.join(where, "parallel"))
    shutil.copytree(os.path.join(HERE, "utils"), os.path.join(where, "utils"))
    if with_conftest:
        shutil.copy(os.path.join(HERE, "deliberate_differences.py"),
                    os.path.join(where, "parallel", "conftest.py"))
    staged = os.path.join(where, "parallel", "test_torch.py")
    copy_with_cohort_import(suite, staged)
    return staged


def test_names(staged):
    """The suite's test methods, in file order."""
    with open(staged) as f:
        tree = ast.parse(f.read())
    return [f.name for c in tree.body if isinstance(c, ast.ClassDef)
            for f in c.body if isinstance(f, ast.FunctionDef) and f.name.startswith("test")]


def run_job(args, staged, xml_dir, xml_name, pytest_args):
    """One `cohort run` job of pytest on every rank; its exit status."""
    pytest = "exec %s -m pytest -q -p no:cacheprovider --junitxml=%s/%s %s" % (
        sys.executable, xml_dir, xml_name, " ".join(shlex.quote(a) for a in pytest_args))
    cmd = [args.cohort, "run", "-np", str(args.np), "--timeout", str(args.timeout),
           "--stall-shutdown-time", "20", "--", "bash", "-c",
           "HOROVOD_RANK=$COHORT_RANK HOROVOD_SIZE=$COHORT_SIZE " + pytest]
    return subprocess.call(cmd, cwd=os.path.dirname(staged))


def tally(xml_dir, np):
    """test name -> outcomes on each rank, from the ranks' junit files."""
    outcomes = {}
    for path in sorted(glob.glob(os.path.join(xml_dir, "rank*.xml"))):
        for case in ET.parse(path).getroot().iter("testcase"):
            kind = "passed"
            for child in case:
                if child.tag in ("failure", "error"):
                    kind = "failed"
                elif child.tag == "skipped":
                    kind = "xfailed" if "xfail" in (child.get("type") or "") + (
                        child.get("message") or "") else "skipped"
            outcomes.setdefault(case.get("name"), []).append(kind)
    summary = {"passed": [], "failed": [], "skipped": [], "xfailed": []}
    for name, kinds in outcomes.items():
        if len(kinds) < np or "failed" in kinds:
            summary["failed"].append(name)
        elif all(k == kinds[0] for k in kinds):
            summary[kinds[0]].append(name)
        else:  # passed on some ranks, skipped on others
            summary["passed"].append(name)
    return summary


def main():
    args = parse_args()
    args.cohort = os.path.abspath(args.cohort)
    suite = suite_file(args.suite)
    if not suite:
        print("skipped: no copy of Horovod's test/parallel/test_torch.py (give --suite or "
              "COHORT_HOROVOD_SUITE, the file or a checkout; got '%s')" %
              (args.suite or os.environ.get("COHORT_HOROVOD_SUITE", "")))
        return SKIP
    args.suite = suite
    staged = stage(args.suite, args.stage, with_conftest=not args.raw)
    xml_dir = os.path.join(args.stage, "results")
    os.makedirs(xml_dir)
    if args.each:
        rc = 0  # each test's own outcome is in the tally
        for name in test_names(staged):
            run_job(args, staged, xml_dir, "rank$COHORT_RANK.%s.xml" % name,
                    args.pytest_args + ["%s::TorchTests::%s" % (os.path.basename(staged), name)])
    else:
        rc = run_job(args, staged, xml_dir, "rank$COHORT_RANK.xml",
                     args.pytest_args + [os.path.basename(staged)])
    summary = tally(xml_dir, args.np)
    silent = [r for r in range(args.np)
              if not glob.glob(os.path.join(xml_dir, "rank%d.*xml" % r))]
    for r in silent:  # every rank must finish the suite and report
        print("rank %d: no results (its pytest did not finish the suite)" % r)
    if silent and rc == 0:
        rc = 1
    for kind in ("failed", "xfailed"):
        if summary[kind]:
            print("%s: %s" % (kind, " ".join(sorted(summary[kind]))))
    passed = len(summary["passed"])
    print("horovod suite, %d ranks: %d passed, %d failed, %d skipped, %d xfailed" % (
        args.np, passed, len(summary["failed"]), len(summary["skipped"]),
        len(summary["xfailed"])))
    if rc != 0:
        return rc
    if passed < args.min_passed:
        print("run_suite.py: %d tests passed on every rank, fewer than the %d expected" %
              (passed, args.min_passed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
