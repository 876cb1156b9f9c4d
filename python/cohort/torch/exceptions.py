"""The exception types horovod.torch exports, under their Horovod names."""
from .._cohort import CohortError

# Raised by a collective that failed (Horovod's HorovodInternalError).
HorovodInternalError = CohortError


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's signal that the set of hosts changed during elastic training.
    `skip_sync` says whether the state must not be synchronized before the
    job resumes. (The elastic driver that raises it is not part of cohort yet;
    the class exists so that code catching it runs unchanged.)"""

    def __init__(self, skip_sync=False):
        super().__init__("the job's hosts were updated")
        self.skip_sync = skip_sync
