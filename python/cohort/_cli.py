"""The `cohort` command of an installed package: runs the launcher binary the
wheel carries (cohort/bin/cohort) with the same arguments."""
import os
import sys


def main():
    from . import _launcher_path
    os.execv(_launcher_path, [_launcher_path] + sys.argv[1:])
