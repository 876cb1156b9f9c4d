"""Batches fed to a device ahead of use (issue 27: the loader feeds GPUs).

cohort.data.DataLoader(..., device="cuda") hands its batches to a DeviceFeed:
each batch's arrays are copied into pinned host memory as soon as the
loader's decode threads deliver it, then to the device with non-blocking
copies on a stream of the feed's own, one batch ahead. While the training
step works on batch k, the copy of batch k+1 runs and the loader's threads
decode batch k+2. Handing a batch over makes torch's current stream wait
for its copy (an event, no host synchronization), and the tensors are
marked as used on that stream so the caching allocator does not reuse
their memory early. Any other device ("cpu") gets plain torch tensors,
one batch ahead as well, so the bookkeeping is the same everywhere."""
import torch


class DeviceFeed:
    def __init__(self, device):
        self.device = torch.device(device)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self._cuda = self.device.type == "cuda"
        self._stream = torch.cuda.Stream(self.device) if self._cuda else None
        self._pending = None  # (tensors, meta, event, pinned) of the next batch
        # The loader said "end of epoch" while this feed looked ahead: the
        # next call ends the iteration (the one after starts the next epoch).
        self._ended = False

    @property
    def pending(self):
        return self._pending is not None

    def drop(self):
        """Forgets the batch copied ahead (the loader was repositioned)."""
        self._pending = None
        self._ended = False

    def _start(self, arrays, meta):
        if not self._cuda:
            tensors = {k: torch.from_numpy(a).to(self.device) for k, a in arrays.items()}
            return tensors, meta, None, None
        # Pinned copies now: the loader may reuse its buffers for later batches.
        pinned = {k: torch.from_numpy(a).pin_memory() for k, a in arrays.items()}
        with torch.cuda.stream(self._stream):
            tensors = {k: t.to(self.device, non_blocking=True) for k, t in pinned.items()}
            event = torch.cuda.Event()
            event.record(self._stream)
        return tensors, meta, event, pinned

    def next(self, take):
        """The next batch as device tensors, with its metadata; `take()` gives
        the loader's next (arrays, meta), or None at the end. None at the end."""
        if self._ended:
            self._ended = False
            return None
        if self._pending is None:
            first = take()
            if first is None:
                return None
            self._pending = self._start(*first)
        tensors, meta, event, _ = self._pending
        upcoming = take()  # decoded meanwhile by the loader's threads
        self._pending = self._start(*upcoming) if upcoming is not None else None
        self._ended = upcoming is None
        if self._cuda:
            current = torch.cuda.current_stream(self.device)
            current.wait_event(event)
            for t in tensors.values():
                t.record_stream(current)
        return tensors, meta
