"""Horovod's *_built() / *_enabled() queries, answered truthfully for cohort:
its collectives run over its own shared-memory and TCP transports on CPUs,
so no MPI, Gloo, NCCL, DDL, oneCCL, CUDA or ROCm is built in or used."""
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
    return 0  # Horovod returns the NCCL version, 0 when not built


def ddl_built():
    return False


def ccl_built():
    return False


def cuda_built():
    return False


def rocm_built():
    return False


def is_homogeneous():
    """True when every host runs the same number of ranks."""
    return _cohort.size() == _cohort.local_size() * _cohort.cross_size()
