"""The settings table as Python reads it: the environment variables cohort
reads, the same rows as src/common/settings.cc (docs/configuration.md).

Python code reads a COHORT_* variable only through this module
(tools/check_settings.py fails otherwise): ``settings.text(settings.RANK)``.
The rows come from the C++ table through the extension (cohort._cohort's
``settings_table()``); FALLBACK_ROWS, which tools/check_settings.py checks row
by row against the table, serves only while the extension cannot be imported
(cohort/__init__.py reads COHORT_BUILD_DIR to find it). Each COHORT_X row is
also a constant here, ``X = "COHORT_X"`` (``SWEEP_TRIAL``, ``RANK``, ...).
"""
import os

# (variable, default, scope), in the table's order.
FALLBACK_ROWS = (
    ("COHORT_TIMEOUT", "300", "runtime"),
    ("COHORT_TRANSPORT", "auto", "runtime"),
    ("COHORT_ALLREDUCE_ALGORITHM", "auto", "runtime"),
    ("COHORT_SMALL_MESSAGE_BYTES", "64K", "runtime"),
    ("COHORT_CHUNK_BYTES", "256K", "runtime"),
    ("COHORT_TCP_STREAMS", "1", "runtime"),
    ("COHORT_SHM_SLOT_BYTES", "1M", "runtime"),
    ("COHORT_SHM_SINGLE_COPY", "auto", "runtime"),
    ("COHORT_SHM_SINGLE_COPY_BYTES", "1M", "runtime"),
    ("COHORT_FUSION_THRESHOLD", "64M", "runtime"),
    ("COHORT_FUSION_MAX_TENSOR", "64K", "runtime"),
    ("COHORT_CACHE_CAPACITY", "1024", "runtime"),
    ("COHORT_CYCLE_TIME", "1", "runtime"),
    ("COHORT_STALL_CHECK_TIME", "60", "runtime"),
    ("COHORT_STALL_SHUTDOWN_TIME", "0", "runtime"),
    ("COHORT_DEADLOCK_TIME", "10", "runtime"),
    ("COHORT_ELASTIC_TIMEOUT", "600", "launcher"),
    ("COHORT_GRACE", "2", "launcher"),
    ("COHORT_TIMELINE", "", "runtime"),
    ("COHORT_AUTOTUNE", "0", "runtime"),
    ("COHORT_AUTOTUNE_LOG", "", "runtime"),
    ("COHORT_AUTOTUNE_WARMUP_SAMPLES", "3", "runtime"),
    ("COHORT_AUTOTUNE_STEPS_PER_SAMPLE", "10", "runtime"),
    ("COHORT_AUTOTUNE_MAX_SAMPLES", "20", "runtime"),
    ("COHORT_AUTOTUNE_SEED", "0", "runtime"),
    ("COHORT_GPU_TRANSPORT", "auto", "runtime"),
    ("COHORT_GPU_BUFFER_BYTES", "64M", "runtime"),
    ("COHORT_CUDA_LIBRARY_PATH", "", "runtime"),
    ("COHORT_KERNEL_CACHE_DIR", "", "runtime"),
    ("COHORT_LOADER_THREADS", "2", "loader"),
    ("COHORT_LOADER_PREFETCH", "4", "loader"),
    ("COHORT_SHUFFLE_WINDOW", "8", "loader"),
    ("COHORT_LOG_LEVEL", "warning", "runtime"),
    ("COHORT_TEST_HOSTS", "", "testing"),
    ("COHORT_TESTING_PIPELINE_EXIT_AT", "", "testing"),
    ("COHORT_ALLOW_INSECURE", "0", "runtime"),
    ("COHORT_DATA_CACHE_DIR", "", "loader"),
    ("COHORT_DATA_CACHE_SIZE", "10G", "loader"),
    ("COHORT_DATA_RETRIES", "4", "loader"),
    ("COHORT_DATA_REQUEST_TIMEOUT", "120", "loader"),
    ("COHORT_DATA_IN_FLIGHT", "16", "loader"),
    ("COHORT_TRACKING_URI", "", "tracking"),
    ("COHORT_TRACKING_SPOOL", "", "tracking"),
    ("COHORT_TRACKING_SPOOL_BYTES", "4G", "tracking"),
    ("COHORT_TRACKING_HEARTBEAT", "10", "tracking"),
    ("MLFLOW_TRACKING_URI", "", "tracking"),
    ("MLFLOW_EXPERIMENT_NAME", "", "tracking"),
    ("MLFLOW_RUN_ID", "", "tracking"),
    ("COHORT_QUEUE_TOKEN", "", "queue"),
    ("COHORT_AGENT_CREDENTIAL", "", "queue"),
    ("COHORT_SERVER", "http://127.0.0.1:5000", "queue"),
    ("COHORT_TRACKING_TOKEN", "", "tracking"),
    ("MLFLOW_TRACKING_TOKEN", "", "tracking"),
    ("COHORT_RANK", "", "launcher"),
    ("COHORT_SIZE", "", "launcher"),
    ("COHORT_LOCAL_RANK", "", "launcher"),
    ("COHORT_LOCAL_SIZE", "", "launcher"),
    ("COHORT_CROSS_RANK", "", "launcher"),
    ("COHORT_CROSS_SIZE", "", "launcher"),
    ("COHORT_ELASTIC_WORKER", "", "launcher"),
    ("COHORT_STORE_ADDR", "", "launcher"),
    ("COHORT_STORE_PORT", "", "launcher"),
    ("COHORT_SECRET", "", "launcher"),
    ("COHORT_SECRET_FILE", "", "launcher"),
    ("COHORT_HOSTS", "", "launcher"),
    ("COHORT_HOSTFILE", "", "launcher"),
    ("COHORT_SSH_PORT", "", "launcher"),
    ("COHORT_SSH_IDENTITY_FILE", "", "launcher"),
    ("COHORT_SSH_COMMAND", "ssh", "launcher"),
    ("COHORT_SSH_CONNECT_TIMEOUT", "10", "launcher"),
    ("COHORT_NETWORK_INTERFACE", "", "launcher"),
    ("COHORT_BUILD_DIR", "", "runtime"),
    ("COHORT_CHECKPOINT_DIR", "", "runtime"),
    ("COHORT_CHECKPOINT_KEEP", "3", "runtime"),
    ("COHORT_JOB_ID", "", "queue"),
    ("COHORT_JOB_SLOTS", "", "queue"),
    ("COHORT_JOB_RESTARTS", "", "queue"),
    ("COHORT_PIPELINE", "", "queue"),
    ("COHORT_PIPELINE_STEP", "", "queue"),
    ("COHORT_PIPELINE_RUN", "", "queue"),
    ("COHORT_PIPELINE_DATUMS", "", "queue"),
    ("COHORT_PIPELINE_OUTPUT", "", "queue"),
    ("COHORT_INPUT_", "", "queue"),
    ("COHORT_PARAM_", "", "queue"),
    ("COHORT_SWEEP_TRIAL", "", "sweep"),
    ("COHORT_SWEEP_PARAMS", "", "sweep"),
    ("COHORT_SWEEP_RESOURCE", "", "sweep"),
    ("COHORT_SWEEP_CHECKPOINT_DIR", "", "sweep"),
    ("COHORT_SWEEP_RESUMED", "", "sweep"),
    ("COHORT_SWEEP_CLONE_FROM", "", "sweep"),
    ("COHORT_SWEEP_START_STEP", "", "sweep"),
    ("COHORT_SWEEP_SOCKET", "", "sweep"),
    ("COHORT_SWEEP_RECONNECT_S", "60", "sweep"),
    ("COHORT_SWEEP_JOURNAL_DEADLINE_S", "60", "sweep"),
)

_rows = None


def rows():
    """(variable, default, scope) of every setting, from the C++ table when
    the extension is importable, else FALLBACK_ROWS."""
    global _rows
    if _rows is None:
        try:
            from cohort import _cohort
        except ImportError:
            return FALLBACK_ROWS
        _rows = tuple((r["variable"], r["default"], r["scope"]) for r in _cohort.settings_table())
    return _rows


def _known(name):
    global _names
    if _names is None or _rows is None:
        _names = frozenset(row[0] for row in rows())
    if name not in _names:
        raise KeyError("%s is not in the settings table (src/common/settings.cc)" % name)
    return name


def text(name, default=None):
    """The variable's value as the environment has it (even empty), or
    `default` when unset."""
    return os.environ.get(_known(name), default)


def is_set(name):
    """Whether the environment has the variable (even empty)."""
    return _known(name) in os.environ


def value(name):
    """The variable's value, or the table's default when unset or empty."""
    for variable, default, _ in rows():
        if variable == name:
            return os.environ.get(name) or default
    raise KeyError("%s is not in the settings table (src/common/settings.cc)" % name)


def family(prefix):
    """{variable: value} of every variable of a family row (a table name
    ending in "_", such as COHORT_INPUT_ for COHORT_INPUT_<NAME>)."""
    if not _known(prefix).endswith("_"):
        raise KeyError("%s is not a family of variables (its name does not end in _)" % prefix)
    return {k: v for k, v in os.environ.items() if k.startswith(prefix)}


_names = None
globals().update({row[0][len("COHORT_"):]: row[0] for row in FALLBACK_ROWS
                  if row[0].startswith("COHORT_")})
