"""One worker of the launch tests in test_c10d_launch.py: joins a job on the
"cohort" backend by the init method named on the command line, checks one
all_reduce and one subgroup against known sums, and prints a result line.

    c10d_job.py env                      # torchrun / cohort run (env://)
    c10d_job.py env-fail-first           # torchrun: rank 1 fails in attempt 0
    c10d_job.py tcp://HOST:PORT RANK N   # or file:///PATH RANK N
    c10d_job.py peer-death               # under cohort run: rank 1 leaves early
    c10d_job.py p2p-peer-death           # the same while rank 0 waits in recv
    c10d_job.py env-port-taken           # cohort run, env://: the port after cohort's
                                         # store's is taken; torch's store is on rank 0
"""
import datetime
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "python"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import cohort.torch.distributed  # noqa: E402,F401


def take_port_after_store():
    """Holds the port after cohort's store's (what env:// once defaulted to),
    so a backend that still assumed it could not serve torch's store there."""
    host, port = os.environ["COHORT_STORE_ADDR"].rsplit(":", 1)
    s = socket.socket()
    try:
        s.bind((host.strip("[]"), int(port) + 1))
        s.listen()
    except OSError:  # taken already: as good
        pass
    return s


def main():
    mode = sys.argv[1]
    timeout = datetime.timedelta(seconds=30)
    if mode == "env-port-taken":
        assert "MASTER_ADDR" not in os.environ and "MASTER_PORT" not in os.environ
        held = take_port_after_store() if os.environ["COHORT_RANK"] == "0" else None
        dist.init_process_group("cohort", timeout=timeout)
        store = dist.distributed_c10d._get_default_store()
        while hasattr(store, "underlying_store"):  # PrefixStore around torch's TCPStore
            store = store.underlying_store
        assert store.host == cohort._cohort.peer_host(0), (store.host, cohort._cohort.peer_host(0))
        if held is not None:
            assert store.port != held.getsockname()[1]
    elif mode in ("env", "env-fail-first", "peer-death", "p2p-peer-death"):
        dist.init_process_group("cohort", timeout=timeout)
    else:
        dist.init_process_group("cohort", init_method=mode, rank=int(sys.argv[2]),
                                world_size=int(sys.argv[3]), timeout=timeout)
    rank, size = dist.get_rank(), dist.get_world_size()
    if mode == "p2p-peer-death":
        if rank == 1:
            os._exit(0)
        try:
            dist.recv(torch.zeros(4), 1)
        except RuntimeError as e:
            print("rank %d caught: %s" % (rank, str(e).splitlines()[0]), flush=True)
            os._exit(0)
        print("rank %d: no error" % rank, flush=True)
        os._exit(1)
    if mode == "peer-death":
        if rank == 1:
            os._exit(0)  # gone without a word; exit status 0 keeps `cohort run` waiting
        try:
            for _ in range(100):
                dist.all_reduce(torch.ones(4))
        except RuntimeError as e:
            print("rank %d caught: %s" % (rank, str(e).splitlines()[0]), flush=True)
            os._exit(0)
        print("rank %d: no error" % rank, flush=True)
        os._exit(1)
    t = torch.tensor([rank + 1], dtype=torch.int64)
    dist.all_reduce(t)
    if mode == "env-fail-first" and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0" and rank == 1:
        os._exit(3)  # a crash: the elastic agent restarts every worker
    group = dist.new_group([0, size - 1])
    g = torch.tensor([rank + 1], dtype=torch.int64)
    if rank in (0, size - 1):
        dist.all_reduce(g, group=group)
    dist.barrier()
    print("rank %d of %d: sum %d group %d" % (rank, size, t.item(), g.item()), flush=True)
    dist.destroy_process_group()
    cohort.shutdown()


if __name__ == "__main__":
    main()
