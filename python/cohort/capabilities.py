"""Horovod's *_built() / *_enabled() queries, answered truthfully for cohort:
its collectives run over its own shared-memory and TCP transports, so no MPI,
Gloo, DDL, oneCCL or ROCm is built in or used. CUDA support is in every
build (the GPU stack is found when the first CUDA tensor arrives,
docs/gpu.md), and NCCL is used where it can be loaded."""
from . import _cohort


def mpi_built():
    return False


def mpi_enabled():
    return False


def mpi_threads_supported():
    """Horovod answers this only when it runs over MPI and raises ValueError
    otherwise; cohort never uses MPI, so it always raises."""
    raise ValueError("mpi_threads_supported: MPI is not enabled (cohort runs its collectives over "
                     "its own shared-memory and TCP transports; Horovod raises the same way "
                     "when MPI is not in use)")


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    """NCCL's version code (22703 for 2.27.3) when NCCL can be loaded in
    this process, else 0: Horovod returns the version it was built with, and
    its tests compare it (``nccl_built() < 2700``)."""
    return int(_cohort.nccl_built())


def ddl_built():
    return False


def ccl_built():
    return False


def cuda_built():
    return _cohort.cuda_built()


def gpu_report():
    """cohort's own: where each GPU library (CUDA driver, NVRTC, NCCL) was
    found, or why not, one line each."""
    return _cohort.gpu_report()


def rocm_built():
    return False


def is_homogeneous():
    """True when every host runs the same number of ranks."""
    return _cohort.size() == _cohort.local_size() * _cohort.cross_size()
