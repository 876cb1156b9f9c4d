"""Pipeline: a sequence of layers split into stages over the pipeline ranks
of a Mesh, trained micro-batch by micro-batch under a schedule (GPipe,
1F1B, interleaved 1F1B; see schedules.py).

    pipe = Pipeline(layers, mesh, loss_fn, micro_batches=8, schedule="1f1b")
    optimizer = torch.optim.AdamW(pipe.parameters())
    loss = pipe.train_step(inputs, targets)   # the batch's mean loss on the last stage
    optimizer.step()

Activations go forward and their gradients backward as cohort
point-to-point messages, sent asynchronously (the progress thread moves
them while the next micro-batch computes) and received into buffers posted
ahead of need. Each stage accumulates its parameters' gradients over the
micro-batches itself (torch.autograd.grad, not .backward()), so a wrapping
DistributedOptimizer or ZeroRedundancyOptimizer over the data-parallel set
sees one complete gradient per step and reduces it when step() runs; the
gradients of tied parameters (an embedding shared by the first and last
stage) and of sequence-parallel ones are summed over their ranks first.

A layer is a Module, or a function returning one: functions are called only
on the rank that holds the layer, so no rank builds the whole model. Layer i
is registered under the name str(i), so a stage's state_dict() keys are
those of the whole torch.nn.Sequential."""
import itertools
import time
import zlib

import torch
from torch import nn

from ... import _cohort, _ops
from ...process_sets import set_id
from .._kind import KIND
from . import p2p, schedules
from .mappings import allreduce_
from .mesh import Mesh

# Message kinds, in the top bits of a tag: a tag is unique within a step per
# (kind, stage, micro-batch), and repeats in order from step to step.
_HEADER, _ACTIVATION, _GRADIENT = 1, 2, 3
# Receives posted ahead of the action that needs them.
_LOOKAHEAD = 2


class PipelineError(RuntimeError):
    """A stage failed (its code raised, or a message it waited for never
    came); the message names the stage, its rank and the micro-batch."""


def _tag(kind, stage, micro_batch):
    return (kind << 48) | (stage << 24) | micro_batch


def uniform_partition(layers, stages):
    """Layers per stage, as even as possible, the extra ones on the middle
    stages (the first holds the input embedding, the last the loss head),
    off-centre toward the first (the loss head is the heavier end)."""
    base, extra = divmod(layers, stages)
    counts = [base] * stages
    start = (stages - extra) // 2
    for i in range(extra):
        counts[start + i] += 1
    return counts


def balanced_partition(costs, stages):
    """Layers per stage for layers of the given costs (e.g. parameter
    counts), each stage a run of consecutive layers, minimizing the largest
    stage's total (ties: the earliest stages smaller). Dynamic programming
    over (layers, stages): fine for the tens to hundreds of layers of a
    model."""
    n = len(costs)
    if not 1 <= stages <= n:
        raise ValueError("balanced_partition: %d layers cannot fill %d stages" % (n, stages))
    prefix = list(itertools.accumulate(costs, initial=0))
    inf = float("inf")
    # best[k][i]: the smallest largest-stage total of the first i layers in k stages.
    best = [[inf] * (n + 1) for _ in range(stages + 1)]
    cut = [[0] * (n + 1) for _ in range(stages + 1)]
    best[0][0] = 0
    for k in range(1, stages + 1):
        for i in range(k, n - (stages - k) + 1):
            for j in range(k - 1, i):
                worst = max(best[k - 1][j], prefix[i] - prefix[j])
                if worst < best[k][i]:
                    best[k][i], cut[k][i] = worst, j
    counts, i = [], n
    for k in range(stages, 0, -1):
        counts.append(i - cut[k][i])
        i = cut[k][i]
    return counts[::-1]


class _Chunk:
    """One virtual stage on this rank: its global stage index and layers."""

    def __init__(self, stage, first_layer, layers):
        self.stage = stage
        self.first_layer = first_layer
        self.layers = layers  # modules, in order

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class _Slot:
    """What a micro-batch of one chunk keeps from its forward to its backward."""

    __slots__ = ("input", "output", "rng", "held")

    def __init__(self):
        self.input = self.output = self.rng = None
        self.held = []  # activation meter references, released with the slot


class Pipeline(nn.Module):
    """Layers split into pp x virtual_stages stages over mesh.pp.

    loss_fn(output, target) -> scalar mean over the micro-batch, run on the
    last stage. partition: layers per stage (a list of pp*virtual_stages
    counts; default: as many layers on each; "parameters": balanced by the
    layers' parameter counts, for layers given as modules; see
    balanced_partition for layers built on their rank); a list of stage
    modules is the partition [1, 1, ...]. tied: groups of parameter names ("<layer>.<path>", as in the
    whole model's state_dict) that are one parameter: kept equal across
    stages (the first name's value broadcast at construction, gradients
    summed after backward) and the same Parameter within a rank.
    recompute: keep only each stage's input between forward and backward
    and run the forward again in the backward (activation recomputation):
    True for every stage, or the indices of the stages that do it.
    measure_activations: record the peak bytes of activations held (tensors
    autograd saved, deduplicated by storage, plus the stage inputs kept) in
    `stats`, at some cost per operation. channel: the messages' channel
    (default: one derived from the pipeline's ranks and partition; pipelines
    over the same ranks that run at the same time need distinct ones).

    After each step, `stats` holds step_time, timeline (kind, chunk,
    micro_batch, start, end of each action's compute, perf_counter clock),
    recv_wait (seconds spent waiting for messages), peak_in_flight
    (micro-batches between forward and backward) and peak_activation_bytes
    (None unless measured)."""

    def __init__(self, layers, mesh, loss_fn, micro_batches, schedule="1f1b",
                 virtual_stages=1, partition=None, tied=(), recompute=False,
                 measure_activations=False, channel=None):
        super().__init__()
        if not isinstance(mesh, Mesh):
            raise TypeError("Pipeline: mesh must be a cohort.torch.parallel.Mesh, got %s" %
                            type(mesh).__name__)
        layers = list(layers)
        self.mesh = mesh
        self.stages = mesh.pp.size
        self.rank_in_pipeline = mesh.pp.rank
        self.virtual_stages = virtual_stages
        self.micro_batches = micro_batches
        self.schedule = schedule
        schedules.check_shape(schedule, self.stages, micro_batches, virtual_stages)
        if virtual_stages > 1 and self.stages == 1:
            raise ValueError("Pipeline: virtual_stages=%d needs 2 pipeline ranks or more (pp=1)" %
                             virtual_stages)
        total = self.stages * virtual_stages
        self.partition = self._check_partition(partition, layers, total)
        self.loss_fn = loss_fn
        if isinstance(recompute, bool):
            self.recompute = set(range(total)) if recompute else set()
        else:
            self.recompute = {int(s) for s in recompute}
            if any(not 0 <= s < total for s in self.recompute):
                raise ValueError("Pipeline: recompute names stages %s, but the stages are "
                                 "0..%d" % (sorted(self.recompute), total - 1))
        self.measure_activations = measure_activations
        bounds = [0]
        for n in self.partition:
            bounds.append(bounds[-1] + n)
        self._bounds = bounds
        self._chunks = []
        for c in range(virtual_stages):
            stage = c * self.stages + self.rank_in_pipeline
            built = []
            for i in range(bounds[stage], bounds[stage + 1]):
                layer = layers[i]
                if not isinstance(layer, nn.Module):
                    layer = layer()
                if not isinstance(layer, nn.Module):
                    raise TypeError("Pipeline: layer %d is not a torch.nn.Module (nor a function "
                                    "returning one): %s" % (i, type(layer).__name__))
                self.add_module(str(i), layer)
                built.append(layer)
            self._chunks.append(_Chunk(stage, bounds[stage], built))
        self._actions = schedules.actions(schedule, self.stages, micro_batches,
                                          self.rank_in_pipeline, virtual_stages)
        signature = repr((mesh.pp.ranks, self.partition, virtual_stages)).encode()
        self.channel = channel if channel is not None else (1 << 61) | zlib.crc32(signature)
        self._summed = self._summed_gradients(self._tie(tied))
        p2p.open_messages()
        self.stats = {}

    # ---- construction ----

    def _check_partition(self, partition, layers, total):
        pp, v, n_layers = self.stages, self.virtual_stages, len(layers)
        if partition is None or partition == "parameters":
            if n_layers < total:
                raise ValueError("Pipeline: %d layers cannot fill %d stages (pp=%d x "
                                 "virtual_stages=%d)" % (n_layers, total, pp, v))
            if partition is None:
                return uniform_partition(n_layers, total)
            built = [layer for layer in layers if isinstance(layer, nn.Module)]
            if len(built) != n_layers:
                raise ValueError("Pipeline: partition='parameters' needs every layer built (a "
                                 "Module); for layers built on their rank, pass the counts "
                                 "(balanced_partition of their sizes)")
            return balanced_partition([sum(p.numel() for p in layer.parameters())
                                       for layer in built], total)
        partition = [int(n) for n in partition]
        if len(partition) != total:
            raise ValueError("Pipeline: the partition has %d stages but the pipeline has %d "
                             "(pp=%d ranks x virtual_stages=%d)" % (len(partition), total, pp, v))
        if any(n < 1 for n in partition) or sum(partition) != n_layers:
            raise ValueError("Pipeline: partition %s must give each stage at least one layer and "
                             "add up to the %d layers" % (partition, n_layers))
        return partition

    @classmethod
    def from_stages(cls, stages, mesh, loss_fn, micro_batches, **kwargs):
        """One module (or function returning one) per stage: pp x
        virtual_stages of them."""
        stages = list(stages)
        total = mesh.pp.size * kwargs.get("virtual_stages", 1)
        if len(stages) != total:
            raise ValueError("Pipeline: %d stage modules for %d stages (pp=%d ranks x "
                             "virtual_stages=%d)" % (len(stages), total, mesh.pp.size,
                                                      kwargs.get("virtual_stages", 1)))
        return cls(stages, mesh, loss_fn, micro_batches, partition=[1] * total, **kwargs)

    def stage_of_layer(self, index):
        for s in range(len(self.partition)):
            if self._bounds[s] <= index < self._bounds[s + 1]:
                return s
        raise ValueError("Pipeline: no layer %d (the model has %d)" % (index, self._bounds[-1]))

    def _local_parameter(self, name):
        """(module, attribute) holding the parameter `name` on this rank."""
        module_path, _, attr = name.rpartition(".")
        module = self.get_submodule(module_path)
        if attr not in module._parameters:
            raise ValueError("Pipeline: tied name %r is not a parameter of layer %s" % (
                name, module_path.split(".")[0]))
        return module, attr

    def _tie(self, tied):
        """Shares each group's parameter within this rank and registers the
        groups that span ranks: [(parameter here, Group)]. A bad name is
        refused on every rank (only its owner can see it is bad, and the
        others must not go on into the collectives)."""
        tied = [list(names) for names in tied]
        if not tied:
            return []
        problem = None
        try:
            plans = [self._plan_tie(names) for names in tied]
        except ValueError as e:
            problem = "%s (on rank %d)" % (e, _cohort.rank())
        from ..functions import allgather_object
        problems = [p for p in allgather_object(problem, name="parallel.pipeline.tied") if p]
        if problems:
            raise ValueError(problems[0])
        spans = []
        for shared, owners in plans:
            positions = sorted(set(owners))
            if len(positions) == 1:
                continue
            group = self.mesh.group("pp", positions)  # collective: every rank registers it
            if shared is None:
                continue
            root = self.mesh.pp.ranks[owners[0]]  # holds the first name's layer
            _broadcast(shared.data, root, group)
            spans.append((shared, group))
        return spans

    def _plan_tie(self, names):
        """Makes the group's parameters on this rank one; (it or None, the
        pipeline position of each name's owner)."""
        if len(names) < 2:
            raise ValueError("Pipeline: a tied group needs two names or more, got %s" % names)
        owners = []
        for name in names:
            layer = name.split(".", 1)[0]
            if not layer.isdigit():
                raise ValueError("Pipeline: tied name %r does not start with a layer index" %
                                 name)
            owners.append(self.stage_of_layer(int(layer)) % self.stages)
        shared = None
        for name, owner in zip(names, owners):
            if owner != self.rank_in_pipeline:
                continue
            module, attr = self._local_parameter(name)
            if shared is None:
                shared = module._parameters[attr]
            else:
                module._parameters[attr] = shared
        return shared, owners

    # ---- training ----

    def _split(self, batch, what):
        if batch is None:
            return [None] * self.micro_batches
        n = batch.shape[0]
        if n % self.micro_batches:
            raise ValueError("Pipeline: the batch's %d %s do not split into %d equal "
                             "micro-batches" % (n, what, self.micro_batches))
        # Copies, not views: a micro-batch held until its backward then keeps
        # only its own rows alive (and is counted so by measure_activations).
        return [part.clone() for part in batch.chunk(self.micro_batches)]

    def train_step(self, inputs, targets):
        """Forward and backward of one batch: `inputs` are used by the first
        stage, `targets` by the last (other ranks may pass None); both split
        into micro_batches along dim 0. Gradients accumulate into the
        parameters' .grad as one backward of the whole batch would (the loss
        being the mean of the micro-batches' losses). Returns that loss on
        the last stage's ranks, None elsewhere."""
        return _Step(self, self._actions, inputs, targets, train=True).run()

    def evaluate(self, inputs, targets):
        """The batch's mean loss without gradients (forwards only, GPipe
        order); on the last stage's ranks, None elsewhere."""
        actions = [schedules.Action("F", c, mb) for c in range(self.virtual_stages)
                   for mb in range(self.micro_batches)]
        with torch.no_grad():
            return _Step(self, actions, inputs, targets, train=False).run()

    def _summed_gradients(self, tied_spans):
        """{parameter: [groups]}: parameters whose gradient of a step is summed
        over other ranks before it joins .grad: tied ones over the stages
        holding them, sequence-parallel ones over tp."""
        summed = {}
        for p, group in tied_spans:
            summed.setdefault(p, []).append(group)
        if self.mesh.tp.size > 1:
            for p in self.parameters():
                if getattr(p, "sequence_parallel", False):
                    summed.setdefault(p, []).append(self.mesh.tp)
        return summed

    @property
    def is_first_stage(self):
        return self.rank_in_pipeline == 0

    @property
    def is_last_stage(self):
        return self.rank_in_pipeline == self.stages - 1

    def forward(self, *args):
        raise RuntimeError("Pipeline: call train_step(inputs, targets) or evaluate(inputs, "
                           "targets); a stage alone cannot run the model's forward")


class _Step:
    """One batch through this rank's actions."""

    def __init__(self, pipe, actions, inputs, targets, train):
        self.pipe = pipe
        self.actions = actions
        self.train = train
        self.p = pipe.stages
        self.last_stage = pipe.stages * pipe.virtual_stages - 1
        self.inputs = pipe._split(inputs, "inputs") if pipe.is_first_stage else None
        self.targets = pipe._split(targets, "targets") if pipe.is_last_stage else None
        self.slots = {}  # (chunk, mb) -> _Slot
        self.shapes = {}  # chunk -> (shape, dtype) of its input this step
        self.out_shapes = {}  # chunk -> (shape, dtype) of its output this step
        self.posted = {}  # (kind, chunk, mb) -> Message in flight
        self.headers = {}  # chunk -> header Message in flight
        self.sends = []
        self.losses = []
        self.partial = {}  # parameter in pipe._summed -> its gradient of this step so far
        self.params = {c: [p for p in _unique_parameters(chunk.layers) if p.requires_grad]
                       for c, chunk in enumerate(pipe._chunks)}
        self.meter = _ActivationMeter(pipe) if pipe.measure_activations else None
        self.in_flight = self.peak_in_flight = 0
        self.timeline = []  # (kind, chunk, mb, start, end) of each action's compute
        self.waited = 0.0

    def rank_of_stage(self, stage):
        return self.pipe.mesh.pp.ranks[stage % self.p]

    def run(self):
        start = time.perf_counter()
        for i, action in enumerate(self.actions):
            try:
                self.prefetch(i)
                if action.kind == "F":
                    self.forward(action)
                else:
                    self.backward(action)
                self.reap()
            except Exception as e:
                self.fail(e, action)
        try:
            for m in self.sends:
                m.wait()
            if self.train:
                self.sum_gradients()
        except Exception as e:
            self.fail(e, None)
        self.pipe.stats = {
            "step_time": time.perf_counter() - start, "step_start": start,
            "timeline": self.timeline, "recv_wait": self.waited,
            "peak_in_flight": self.peak_in_flight,
            "peak_activation_bytes": self.meter.peak if self.meter else None}
        if not self.pipe.is_last_stage:
            return None
        return float(sum(self.losses) / self.pipe.micro_batches)

    def sum_gradients(self):
        """Adds the step's gradients of tied and sequence-parallel parameters,
        summed over their ranks, to .grad (this step's only, so gradients
        accumulated over several steps are not summed twice)."""
        for p, groups in self.pipe._summed.items():
            g = self.partial.pop(p, None)
            g = torch.zeros_like(p) if g is None else g.contiguous()
            for group in groups:
                allreduce_(g, group)
            if p.grad is None:
                p.grad = g
            else:
                p.grad.add_(g)

    def fail(self, error, action):
        stage = self.pipe._chunks[action.chunk].stage if action else self.pipe.rank_in_pipeline
        where = "%s of micro-batch %d" % ("forward" if action.kind == "F" else "backward",
                                         action.micro_batch) if action else "the step's end"
        message = "pipeline stage %d (rank %d) of %d stages failed in %s: %s: %s" % (
            stage, _cohort.rank(), self.last_stage + 1, where, type(error).__name__, error)
        if _cohort.is_initialized():
            _cohort.abort(message)  # every rank's waits fail now, with this message
        raise PipelineError(message) from error

    # ---- messages ----

    def need(self, action):
        """(kind, stage to receive from) of the message `action` waits for, or None."""
        stage = self.pipe._chunks[action.chunk].stage
        if action.kind == "F":
            return None if stage == 0 else (_ACTIVATION, stage - 1)
        if not self.train or stage == self.last_stage:
            return None
        return (_GRADIENT, stage + 1)

    def post(self, action):
        """Posts the receive `action` needs, when its shape is known."""
        key = (action.kind, action.chunk, action.micro_batch)
        need = self.need(action)
        if need is None or key in self.posted:
            return
        kind, source = need
        stage = self.pipe._chunks[action.chunk].stage
        src = self.rank_of_stage(source)
        if kind == _ACTIVATION:
            if action.chunk not in self.shapes:
                if action.micro_batch == 0 and action.chunk not in self.headers:
                    self.headers[action.chunk] = p2p.recv_header(
                        src, self.pipe.channel, _tag(_HEADER, stage, 0))
                return
            shape, dtype = self.shapes[action.chunk]
        else:
            if action.chunk not in self.out_shapes:
                return
            shape, dtype = self.out_shapes[action.chunk]
        self.posted[key] = p2p.recv(shape, dtype, src, self.pipe.channel,
                                    _tag(kind, stage, action.micro_batch))

    def prefetch(self, i):
        """Posts the receives of the next few actions that need one."""
        ahead = 0
        for action in itertools.islice(self.actions, i, None):
            if self.need(action) is None:
                continue
            self.post(action)
            ahead += 1
            if ahead > _LOOKAHEAD:
                break

    def receive(self, action):
        """Waits for the tensor `action` needs."""
        kind, source = self.need(action)
        started = time.perf_counter()
        try:
            if kind == _ACTIVATION and action.chunk not in self.shapes:
                self.shapes[action.chunk] = p2p.shape_of(self.headers.pop(action.chunk).wait())
            self.post(action)
            return self.posted.pop((action.kind, action.chunk, action.micro_batch)).wait()
        except _cohort.CohortError as e:
            what = "activation" if kind == _ACTIVATION else "gradient"
            raise PipelineError("waiting for micro-batch %d's %s from stage %d (rank %d): %s" % (
                action.micro_batch, what, source, self.rank_of_stage(source), e)) from None
        finally:
            self.waited += time.perf_counter() - started

    def send(self, tensor, kind, to_stage, micro_batch, chunk):
        tensor = tensor.detach().contiguous()
        dst = self.rank_of_stage(to_stage)
        if kind == _ACTIVATION:
            if not tensor.is_floating_point():
                raise TypeError("a stage's output goes to the next stage and its gradient comes "
                                "back: it must be a floating-point tensor, got %s" % tensor.dtype)
            announced = self.out_shapes.get(chunk)
            mine = (tuple(tensor.shape), tensor.dtype)
            if announced is None:
                self.out_shapes[chunk] = mine
                self.sends.append(p2p.send(p2p.header_of(tensor), dst, self.pipe.channel,
                                           _tag(_HEADER, to_stage, 0)))
            elif announced != mine:
                raise ValueError("micro-batch %d's output is %s %s but micro-batch 0's was %s %s; "
                                 "every micro-batch of a step must have the same shape" % (
                                     micro_batch, list(mine[0]), mine[1], list(announced[0]),
                                     announced[1]))
        self.sends.append(p2p.send(tensor, dst, self.pipe.channel,
                                   _tag(kind, to_stage, micro_batch)))

    def reap(self):
        """Forgets the sends that completed (their buffers can go)."""
        if self.sends and self.sends[0].done():
            keep = []
            for m in self.sends:
                if m.done():
                    m.wait()
                else:
                    keep.append(m)
            self.sends = keep

    # ---- compute ----

    def forward(self, action):
        chunk = self.pipe._chunks[action.chunk]
        slot = _Slot()
        if chunk.stage == 0:
            x = self.inputs[action.micro_batch]
        else:
            x = self.receive(action)
            if self.train and x.is_floating_point():
                x.requires_grad_()
        started = time.perf_counter()
        recompute = self.train and chunk.stage in self.pipe.recompute
        if recompute:
            slot.rng = torch.get_rng_state()
            with torch.no_grad():
                out = self.stage_output(chunk, x, action.micro_batch)
        else:
            with _saving(self.meter):
                out = self.stage_output(chunk, x, action.micro_batch)
        if self.train:
            slot.input = x
            if not recompute:  # recomputation rebuilds it in the backward
                slot.output = out
            if self.meter is not None:
                self.meter.hold(slot, x)
                if slot.output is not None:
                    self.meter.hold(slot, out)
            self.slots[(action.chunk, action.micro_batch)] = slot
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        self.timeline.append(("F", action.chunk, action.micro_batch, started, time.perf_counter()))
        if chunk.stage != self.last_stage:
            self.send(out, _ACTIVATION, chunk.stage + 1, action.micro_batch, action.chunk)

    def stage_output(self, chunk, x, micro_batch):
        """The chunk's output, or on the last stage its loss for the batch
        (the micro-batch's mean loss over the number of micro-batches)."""
        out = chunk(x)
        if chunk.stage != self.last_stage:
            return out
        loss = self.pipe.loss_fn(out, self.targets[micro_batch])
        if loss.dim() != 0:
            raise ValueError("loss_fn must return a scalar, got shape %s" % list(loss.shape))
        self.losses.append(loss.detach())
        return loss / self.pipe.micro_batches

    def backward(self, action):
        chunk = self.pipe._chunks[action.chunk]
        slot = self.slots.pop((action.chunk, action.micro_batch))
        grad = None if chunk.stage == self.last_stage else self.receive(action)
        started = time.perf_counter()
        x, out = slot.input, slot.output
        if chunk.stage in self.pipe.recompute:
            rng = torch.get_rng_state()
            torch.set_rng_state(slot.rng)
            with _saving(self.meter):
                with torch.enable_grad():
                    out = self.recomputed(chunk, x, action.micro_batch)
            torch.set_rng_state(rng)
        params = self.params[action.chunk]
        wrt = ([x] if x.requires_grad else []) + params
        grads = torch.autograd.grad(out, wrt, grad, allow_unused=True) if wrt else []
        x_grad = None
        if x.requires_grad:
            x_grad, grads = grads[0], grads[1:]
        for p, g in zip(params, grads):
            if g is None:
                continue
            if p in self.pipe._summed:  # summed over its ranks at the step's end
                self.partial[p] = g if p not in self.partial else self.partial[p] + g
            elif p.grad is None:
                p.grad = g
            else:
                p.grad.add_(g)
        del out, slot
        self.in_flight -= 1
        self.timeline.append(("B", action.chunk, action.micro_batch, started, time.perf_counter()))
        if chunk.stage != 0:
            if x_grad is None:  # the stage did not use its input
                x_grad = torch.zeros_like(x)
            self.send(x_grad, _GRADIENT, chunk.stage - 1, action.micro_batch, action.chunk)

    def recomputed(self, chunk, x, micro_batch):
        out = chunk(x)
        if chunk.stage != self.last_stage:
            return out
        return self.pipe.loss_fn(out, self.targets[micro_batch]) / self.pipe.micro_batches


def _unique_parameters(modules):
    seen, out = set(), []
    for module in modules:
        for p in module.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


def _broadcast(tensor, root, group):
    _ops.broadcast_async(KIND, tensor, root, None, set_id(group.process_set)).wait()


class _ActivationMeter:
    """Bytes of activations alive: tensors autograd saved for backward and the
    stage inputs a slot keeps, each storage counted once, parameters not."""

    def __init__(self, pipe):
        self.params = {p.data_ptr() for p in pipe.parameters()}
        self.refs = {}  # storage address -> [references, bytes]
        self.live = self.peak = 0

    def add(self, tensor):
        storage = tensor.storage()
        key = storage.data_ptr()
        if key in self.params or storage.nbytes() == 0:
            return None
        entry = self.refs.get(key)
        if entry is None:
            entry = self.refs[key] = [0, storage.nbytes()]
            self.live += entry[1]
            self.peak = max(self.peak, self.live)
        entry[0] += 1
        return _Reference(self, key)

    def release(self, key):
        entry = self.refs[key]
        entry[0] -= 1
        if entry[0] == 0:
            self.live -= entry[1]
            del self.refs[key]

    def hold(self, slot, tensor):
        ref = self.add(tensor)
        if ref is not None:
            slot.held.append(ref)


class _Reference:
    __slots__ = ("meter", "key")

    def __init__(self, meter, key):
        self.meter, self.key = meter, key

    def __del__(self):
        self.meter.release(self.key)


class _saving:
    """Counts what autograd saves inside the block (when a meter is on)."""

    def __init__(self, meter):
        self.meter = meter
        self.hooks = None

    def __enter__(self):
        if self.meter is None:
            return
        meter = self.meter

        def pack(tensor):
            ref = meter.add(tensor)
            return (tensor, ref)

        def unpack(packed):
            return packed[0]

        self.hooks = torch.autograd.graph.saved_tensors_hooks(pack, unpack)
        self.hooks.__enter__()

    def __exit__(self, *exc):
        if self.hooks is not None:
            self.hooks.__exit__(*exc)
