"""Tensors over cohort's point-to-point messages (src/p2p): asynchronous
sends and receives between two ranks, each a handle the caller waits for.
The progress thread moves the bytes, so a send overlaps the caller's compute
and never waits for its receiver to post.

A message is identified by a channel (one per pipeline) and a tag; between
two ranks, messages with one channel and tag arrive in send order."""
import torch

from ... import _cohort, _ops
from .._kind import KIND

# Header of a tensor whose shape the receiver does not know yet: dtype code,
# number of dimensions, then the dimensions.
HEADER_LENGTH = 10


def open_messages():
    """Builds the messages' mesh on first use; collective over every rank of
    the job (later calls return at once)."""
    _cohort.p2p_open()


class Message:
    """A send or receive in flight. wait() returns the tensor (a receive's
    buffer once filled); `tensor` stays referenced until then, since the
    progress thread reads or writes its memory."""

    __slots__ = ("_handle", "tensor", "what")

    def __init__(self, handle_id, tensor, what):
        self._handle = _ops.Handle((handle_id,), tensor, lambda ids: tensor, 0,
                                   local_errors=_cohort.CohortError)
        self.tensor = tensor
        self.what = what

    def done(self):
        return self._handle.poll()

    def wait(self):
        return self._handle.wait()


def send(tensor, dst, channel, tag):
    """Starts sending a contiguous CPU tensor to global rank `dst`."""
    addr, _, _ = KIND.describe(tensor)
    h = _cohort.send_async(int(dst), int(channel), int(tag), addr,
                           tensor.numel() * tensor.element_size())
    return Message(h, tensor, "send")


def recv(shape, dtype, src, channel, tag):
    """Starts receiving a tensor of `shape` and `dtype` from global rank `src`."""
    buf = torch.empty(shape, dtype=dtype)
    addr, _, _ = KIND.describe(buf)
    h = _cohort.recv_async(int(src), int(channel), int(tag), addr,
                           buf.numel() * buf.element_size())
    return Message(h, buf, "recv")


def header_of(tensor):
    """The header announcing `tensor`'s dtype and shape."""
    if tensor.dim() > HEADER_LENGTH - 2:
        raise ValueError("a pipeline sends tensors of at most %d dimensions, got shape %s" % (
            HEADER_LENGTH - 2, list(tensor.shape)))
    code = KIND.describe(tensor)[2]
    values = [code, tensor.dim()] + list(tensor.shape)
    return torch.tensor(values + [0] * (HEADER_LENGTH - len(values)), dtype=torch.int64)


def recv_header(src, channel, tag):
    return recv((HEADER_LENGTH,), torch.int64, src, channel, tag)


def shape_of(header):
    """(shape, dtype) from a received header."""
    from .._kind import _DTYPES
    values = header.tolist()
    return tuple(values[2:2 + values[1]]), _DTYPES[values[0]]
