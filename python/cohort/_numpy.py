"""numpy arrays (and anything exposing the buffer protocol, viewed as numpy)
as an ArrayKind."""
import numpy as np

from . import _ops

_CODES = {
    np.dtype(np.uint8): _ops.UINT8, np.dtype(np.int8): _ops.INT8,
    np.dtype(np.int32): _ops.INT32, np.dtype(np.int64): _ops.INT64,
    np.dtype(np.float16): _ops.FLOAT16, np.dtype(np.float32): _ops.FLOAT32,
    np.dtype(np.float64): _ops.FLOAT64, np.dtype(np.int16): _ops.INT16,
    np.dtype(np.bool_): _ops.BOOL,
}
_DTYPES = {code: dtype for dtype, code in _CODES.items()}


def dtype_code(dtype):
    code = _CODES.get(np.dtype(dtype).newbyteorder("="))
    if code is None or not np.dtype(dtype).isnative:
        raise ValueError("cohort: dtype %s is not supported (supported: uint8, int8, int16, "
                         "int32, int64, float16, float32, float64, bool in native byte order)"
                         % np.dtype(dtype))
    return code


class NumpyKind(_ops.ArrayKind):
    def describe(self, array):
        return array.ctypes.data, tuple(array.shape), dtype_code(array.dtype)

    def empty(self, shape, dtype, like):
        return np.empty(shape, dtype=_DTYPES[dtype])


KIND = NumpyKind()


def as_array(x, what):
    """A C-contiguous numpy view (or copy) of an array or buffer."""
    try:
        array = np.asarray(x)
    except Exception as e:  # noqa: BLE001 -- any conversion failure is the caller's input
        raise TypeError("%s: expected a numpy array or a buffer, got %s (%s)" %
                        (what, type(x).__name__, e)) from None
    if array.dtype == object:
        raise TypeError("%s: expected a numpy array or a buffer, got %s" % (what, type(x).__name__))
    return np.ascontiguousarray(array)
