#!/usr/bin/env bash
# The README's first command: set up, then run the main job: the digits
# classifier (examples/pytorch_digits.py, a small CNN on scikit-learn's
# bundled digits) trained with cohort.torch on 2 workers on this machine. It
# prints loss and test accuracy per epoch and fails below 95% accuracy.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec build/cohort run -np 2 -- /usr/bin/python3 examples/pytorch_digits.py "$@"
