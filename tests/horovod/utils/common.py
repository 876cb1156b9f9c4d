"""Stand-in for the three helpers Horovod's test/parallel/test_torch.py imports
from its test/utils/common.py (written for cohort, not Horovod's code): the
suite appends ../utils to sys.path, so this file sits where Horovod's would."""
import contextlib
import inspect
import os
import tempfile

# Python 3.11 removed inspect.getargspec, which the suite calls; the
# fullargspec has the same .args.
if not hasattr(inspect, "getargspec"):
    inspect.getargspec = inspect.getfullargspec


def mpi_env_rank_and_size():
    """The rank and size MPI launchers export; (0, 1) outside MPI (cohort's
    case: the suite then reads horovodrun's HOROVOD_RANK/HOROVOD_SIZE)."""
    for rank_var, size_var in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("PMI_RANK", "PMI_SIZE")):
        if rank_var in os.environ:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def skip_or_fail_gpu_test(test, message):
    """GPU tests skip unless HOROVOD_TEST_GPU asks for them to fail."""
    if os.environ.get("HOROVOD_TEST_GPU"):
        test.fail(message)
    test.skipTest(message)


@contextlib.contextmanager
def temppath():
    """A temporary file's path, removed afterwards."""
    fd, path = tempfile.mkstemp()
    os.close(fd)
    try:
        yield path
    finally:
        if os.path.exists(path):
            os.remove(path)
