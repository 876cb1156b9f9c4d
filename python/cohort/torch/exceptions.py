"""The exception types horovod.torch exports, under their Horovod names."""
from .._cohort import CohortError
from ..elastic import HostsUpdatedInterrupt  # noqa: F401

# Raised by a collective that failed (Horovod's HorovodInternalError); in an
# elastic job it makes cohort.torch.elastic.run restore, reset and go on.
HorovodInternalError = CohortError
