"""cohort.torch.parallel: model parallelism over a Mesh of process sets.

- Mesh(dp=, pp=, tp=): the job's ranks as a grid, a process set per line;
- tensor parallelism (Megatron-LM's layers): ColumnParallelLinear,
  RowParallelLinear, VocabParallelEmbedding, vocab_parallel_cross_entropy,
  the mappings between them (copy_to, reduce_from, ...), optional sequence
  parallelism;
- pipeline parallelism: Pipeline splits layers into stages and trains them
  under the GPipe, 1F1B or interleaved 1F1B schedule, activations moving
  as point-to-point messages;
- composition: data_parallel_optimizer (gradients averaged over the dp set,
  optionally ZeRO-1/2), sharded checkpoints (save_checkpoint /
  load_checkpoint) and merge_checkpoint, which rebuilds the whole model's
  state_dict (also `python -m cohort.torch.parallel.merge`).

See docs/model-parallel.md."""
from .mesh import Mesh, Group
from .mappings import (copy_to, reduce_from, gather_from, scatter_to,
                       gather_from_sequence, reduce_scatter_to_sequence, scatter_to_sequence)
from .layers import (ColumnParallelLinear, RowParallelLinear, VocabParallelEmbedding,
                     vocab_parallel_cross_entropy, mark_sequence_parallel,
                     sync_sequence_parallel_grads)
from .pipeline import Pipeline, PipelineError, balanced_partition, uniform_partition
from .schedules import SCHEDULES
from .optim import data_parallel_optimizer
from .checkpoint import save_checkpoint, load_checkpoint, merge_checkpoint

__all__ = ["Mesh", "Group", "copy_to", "reduce_from", "gather_from", "scatter_to",
           "gather_from_sequence", "reduce_scatter_to_sequence", "scatter_to_sequence",
           "ColumnParallelLinear", "RowParallelLinear", "VocabParallelEmbedding",
           "vocab_parallel_cross_entropy", "mark_sequence_parallel",
           "sync_sequence_parallel_grads", "Pipeline", "PipelineError", "balanced_partition",
           "uniform_partition", "SCHEDULES",
           "data_parallel_optimizer", "save_checkpoint", "load_checkpoint", "merge_checkpoint"]
