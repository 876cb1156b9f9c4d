"""Shared fixtures of the Python tests. Most files run under
`cohort run -np N -- python3 -m pytest FILE`: every rank runs the same tests
in the same order, so collectives in a test meet their peers. The job is
started once per process and shut down at the end."""
import os
import sys

import pytest

# The package in this checkout, whatever cohort.pth points at.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))


def under_launcher():
    return "COHORT_RANK" in os.environ


@pytest.fixture(scope="session")
def hvd(request):
    """cohort.torch, initialized for this job. Shut down only when every test
    passed: a rank that failed leaves without waiting for its peers (see
    pytest_unconfigure), so they fail fast instead of at the timeout."""
    if not under_launcher():
        pytest.skip("needs `cohort run -np N` (see tests/python/CMakeLists.txt)")
    import cohort.torch as hvd
    hvd.init()
    yield hvd
    if request.session.testsfailed == 0:
        hvd.shutdown()


def pytest_unconfigure(config):
    """After the report: a rank whose tests failed exits at once, without the
    collective shutdown its peers (still inside some test) would never join;
    `cohort run` then stops them."""
    cohort = sys.modules.get("cohort")
    if cohort is not None and cohort.is_initialized():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


def rank_inputs(size, shape, dtype, seed, low=-3, high=4):
    """Every rank's input of one test, computable on any rank: small integers
    (exactly representable in every dtype, so sums in any order are exact)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    if dtype == torch.uint8:
        low, high = 0, high
    return [torch.randint(low, high, shape, generator=gen).to(dtype) for _ in range(size)]
