"""ElasticSampler: a DistributedSampler that re-splits the rest of its epoch
when the number of workers changes (horovod.torch.elastic.ElasticSampler)."""
import math
import random

import torch.utils.data

from ... import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Yields this rank's share of the dataset's indices for the epoch
    (shuffled with seed + epoch when shuffle=True), skipping those the job
    already processed this epoch.

    Put it in a TorchState, call record_batch(batch_idx, batch_size) (or
    record_indices) after each step, and set_epoch(epoch + 1) at the end of an
    epoch; after a reset the remaining indices are split over the new ranks."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.num_samples = 0
        self.total_size = 0
        self.reset()

    def set_epoch(self, epoch):
        """Starts `epoch` with nothing processed (call it at the end of the
        previous one, so a half-done epoch does not repeat samples)."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Every rank processed one more batch of batch_size samples."""
        self.processed_num += batch_size * self.num_replicas

    def record_indices(self, indices):
        """Every rank processed len(indices) more samples."""
        self.processed_num += len(indices) * self.num_replicas

    def get_indices(self, batch_idx, batch_size):
        start = batch_idx * batch_size
        return self.indices[start:start + batch_size]

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def reset(self):
        """Re-reads rank and size and splits the epoch's unprocessed indices."""
        self.num_replicas = size()
        self.rank = rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas
        self._split()

    def _split(self):
        padded = self.remaining_indices[:]
        padded += padded[:self.total_size - len(padded)]
        self.indices = padded[self.rank:self.total_size:self.num_replicas]

    def __iter__(self):
        self._split()
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
