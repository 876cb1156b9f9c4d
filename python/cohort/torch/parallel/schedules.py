"""Pipeline schedules: for each rank, the order in which it runs the forward
(F) and backward (B) passes of its micro-batches. Pure functions of the
pipeline's shape, so they are tested and simulated without a job.

With p ranks and v virtual stages per rank there are p*v stages; rank r
holds chunks 0..v-1, chunk c being stage c*p + r (Megatron's interleaving:
a micro-batch goes round the ranks v times). A forward of stage s needs the
forward of stage s-1 for the same micro-batch; a backward of stage s needs
its own forward and the backward of stage s+1.

- gpipe: every forward, then every backward (v = 1): m micro-batches'
  activations held at once;
- 1f1b: p-r-1 warm-up forwards, then one forward and one backward in turn,
  then the remaining backwards (v = 1): at most p-r micro-batches held;
- interleaved: Megatron's interleaved 1F1B over v chunks per rank (m a
  multiple of p); the bubble shrinks by v for v times the messages."""
import collections

Action = collections.namedtuple("Action", "kind chunk micro_batch")  # kind: "F" or "B"

SCHEDULES = ("gpipe", "1f1b", "interleaved")


def check_shape(schedule, stages, micro_batches, virtual_stages):
    """Raises ValueError, with the numbers, for a shape the schedule cannot run."""
    if schedule not in SCHEDULES:
        raise ValueError("pipeline schedule must be one of %s, got %r" % (", ".join(SCHEDULES),
                                                                        schedule))
    if micro_batches < 1:
        raise ValueError("pipeline: micro_batches must be at least 1, got %r" % (micro_batches,))
    if virtual_stages < 1:
        raise ValueError("pipeline: virtual_stages must be at least 1, got %r" % (virtual_stages,))
    if schedule != "interleaved" and virtual_stages != 1:
        raise ValueError("pipeline: the %s schedule runs one stage per rank; virtual_stages=%d "
                         "needs schedule='interleaved'" % (schedule, virtual_stages))
    if schedule == "interleaved" and micro_batches % stages != 0:
        raise ValueError("pipeline: the interleaved schedule needs micro_batches (%d) to be a "
                         "multiple of the pipeline's %d ranks" % (micro_batches, stages))


def gpipe(stages, micro_batches, rank):
    forward = [Action("F", 0, mb) for mb in range(micro_batches)]
    return forward + [Action("B", 0, mb) for mb in range(micro_batches)]


def one_f_one_b(stages, micro_batches, rank):
    warmup = min(stages - rank - 1, micro_batches)
    actions = [Action("F", 0, mb) for mb in range(warmup)]
    for i in range(micro_batches - warmup):
        actions.append(Action("F", 0, warmup + i))
        actions.append(Action("B", 0, i))
    actions += [Action("B", 0, mb) for mb in range(micro_batches - warmup, micro_batches)]
    return actions


def interleaved(stages, micro_batches, rank, virtual_stages):
    """Megatron-LM's interleaved schedule (forward_backward_pipelining_with_
    interleaving): the k-th forward runs chunk (k // p) % v of micro-batch
    (k // (p*v)) * p + k % p; backwards run the chunks in reverse."""
    p, v, m = stages, virtual_stages, micro_batches
    total = m * v

    def chunk(k, forward):
        c = (k % (p * v)) // p
        return c if forward else v - 1 - c

    def micro_batch(k):
        return (k // (p * v)) * p + k % p

    if m == p:
        warmup = total  # Megatron: every forward first when there are just p micro-batches
    else:
        warmup = min((p - rank - 1) * 2 + (v - 1) * p, total)
    actions = [Action("F", chunk(k, True), micro_batch(k)) for k in range(warmup)]
    for k in range(total - warmup):
        actions.append(Action("F", chunk(k + warmup, True), micro_batch(k + warmup)))
        actions.append(Action("B", chunk(k, False), micro_batch(k)))
    actions += [Action("B", chunk(k, False), micro_batch(k)) for k in range(total - warmup, total)]
    return actions


def actions(schedule, stages, micro_batches, rank, virtual_stages=1):
    """The ordered actions of `rank` of a pipeline of `stages` ranks."""
    check_shape(schedule, stages, micro_batches, virtual_stages)
    if schedule == "gpipe":
        return gpipe(stages, micro_batches, rank)
    if schedule == "1f1b":
        return one_f_one_b(stages, micro_batches, rank)
    return interleaved(stages, micro_batches, rank, virtual_stages)


def simulate(schedule, stages, micro_batches, virtual_stages=1, forward_time=1.0,
             backward_time=2.0, message_time=0.0, action_overhead=0.0, compute_times=None):
    """Runs every rank's actions against each other's with fixed costs and
    returns {"time": makespan, "busy": [per rank], "bubble": idle fraction
    averaged over ranks, "peak_in_flight": [per rank]}. Raises RuntimeError on
    a deadlock (a schedule whose ranks wait for each other). Sends never
    block (the runtime's are asynchronous); an action can start
    message_time after the action it needs from another rank ended, and
    action_overhead after its rank's previous action ended (neither counts
    as busy). compute_times[r][i], when given, is the cost of rank r's i-th
    action instead of forward_time/backward_time (a replay of measured
    durations)."""
    p, v = stages, virtual_stages
    lists = [actions(schedule, p, micro_batches, r, v) for r in range(p)]
    done = {}  # (kind, stage, mb) -> time its output is available at the next rank
    clock, busy, position = [0.0] * p, [0.0] * p, [0] * p
    in_flight, peak = [0] * p, [0] * p
    last = p * v - 1
    progress = True
    while progress:
        progress = False
        for r in range(p):
            while position[r] < len(lists[r]):
                a = lists[r][position[r]]
                stage = a.chunk * p + r
                if a.kind == "F":
                    need = None if stage == 0 else ("F", stage - 1, a.micro_batch)
                else:
                    need = None if stage == last else ("B", stage + 1, a.micro_batch)
                if need is not None and need not in done:
                    break
                start = max(clock[r] + (action_overhead if position[r] else 0.0),
                            done[need] if need is not None else 0.0)
                if compute_times is not None:
                    cost = compute_times[r][position[r]]
                else:
                    cost = forward_time if a.kind == "F" else backward_time
                clock[r] = start + cost
                busy[r] += cost
                done[(a.kind, stage, a.micro_batch)] = clock[r] + message_time
                in_flight[r] += 1 if a.kind == "F" else -1
                peak[r] = max(peak[r], in_flight[r])
                position[r] += 1
                progress = True
    if any(position[r] < len(lists[r]) for r in range(p)):
        stuck = {r: lists[r][position[r]] for r in range(p) if position[r] < len(lists[r])}
        raise RuntimeError("schedule %s deadlocks: ranks wait at %s" % (schedule, stuck))
    makespan = max(clock)
    bubble = sum(1 - b / makespan for b in busy) / p
    return {"time": makespan, "busy": busy, "bubble": bubble, "peak_in_flight": peak}


def textbook_bubble(stages, micro_batches, virtual_stages=1):
    """The idle fraction of a step by the textbook formula: (p-1)/(m+p-1),
    with the p-1 warm-up and cool-down slots shrunk v times for the
    interleaved schedule: ((p-1)/v) / (m + (p-1)/v)."""
    ramp = (stages - 1) / virtual_stages
    return ramp / (micro_batches + ramp)
