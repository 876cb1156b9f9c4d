"""cohort: distributed training runtime. Framework-neutral API (numpy arrays
and any buffer); `cohort.torch` is the Horovod-compatible PyTorch front end.

The compiled extension modules live in the build tree (<build>/python/cohort);
COHORT_BUILD_DIR picks the build (default: the repository's build/)."""
import os as _os

_repo = _os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
_build = _os.environ.get("COHORT_BUILD_DIR", _os.path.join(_repo, "build"))
__path__.append(_os.path.join(_build, "python", "cohort"))
