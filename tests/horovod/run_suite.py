"""Runs Horovod's own test/parallel/test_torch.py against cohort.torch as one
job: `cohort run -np N` starts N ranks, each runs the whole file under pytest
with horovodrun's HOROVOD_RANK/HOROVOD_SIZE set.

Horovod's file is not part of this repository: --suite (or
COHORT_HOROVOD_SUITE) names a copy. It is staged unchanged but for its import
(`import horovod.torch as hvd` becomes `import cohort.torch as hvd`), next to
../utils/common.py (utils/common.py here) and a conftest.py marking the
deliberate differences (deliberate_differences.py). Exit status: 0 when
pytest passed on every rank and at least --min-passed tests passed on every
rank, 77 when no copy of the suite was given (ctest reports a skip)."""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

from horovod_copy import copy_with_cohort_import

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", default="", help="Horovod's test/parallel/test_torch.py "
                   "(default: $COHORT_HOROVOD_SUITE)")
    p.add_argument("--cohort", required=True, help="the cohort executable")
    p.add_argument("--stage", required=True, help="a scratch directory (emptied)")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--timeout", type=int, default=240, help="cohort run --timeout")
    p.add_argument("--min-passed", type=int, default=0,
                   help="fail when fewer tests passed on every rank")
    p.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    return p.parse_args()


def stage(suite, where):
    """Copies the suite with its import changed; returns the staged file."""
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(os.path.join(where, "parallel"))
    shutil.copytree(os.path.join(HERE, "utils"), os.path.join(where, "utils"))
    shutil.copy(os.path.join(HERE, "deliberate_differences.py"),
                os.path.join(where, "parallel", "conftest.py"))
    staged = os.path.join(where, "parallel", "test_torch.py")
    copy_with_cohort_import(suite, staged)
    return staged


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
    args.suite = args.suite or os.environ.get("COHORT_HOROVOD_SUITE", "")
    if not args.suite or not os.path.isfile(args.suite):
        print("skipped: no copy of Horovod's test/parallel/test_torch.py (give --suite or "
              "COHORT_HOROVOD_SUITE; got '%s')" % args.suite)
        return SKIP
    staged = stage(args.suite, args.stage)
    xml_dir = os.path.join(args.stage, "results")
    os.makedirs(xml_dir)
    pytest = "exec %s -m pytest -q -p no:cacheprovider --junitxml=%s/rank$COHORT_RANK.xml %s %s" % (
        sys.executable, xml_dir, " ".join(args.pytest_args), os.path.basename(staged))
    cmd = [args.cohort, "run", "-np", str(args.np), "--timeout", str(args.timeout),
           "--stall-shutdown-time", "20", "--", "bash", "-c",
           "HOROVOD_RANK=$COHORT_RANK HOROVOD_SIZE=$COHORT_SIZE " + pytest]
    rc = subprocess.call(cmd, cwd=os.path.dirname(staged))
    summary = tally(xml_dir, args.np)
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
