"""A short fuzz of `cohort server` for CI (fuzz_server.py): a fixed seed, then
a random one printed for reproduction, about 10 s each. The long run (a
million requests) is a separate command, in docs/tracking.md."""
import random
import tempfile

from fuzz_server import Server, fuzz


def run_round(server, seed, seconds):
    # Every route, the queue's agent endpoints included.
    sent, elapsed, statuses, findings = fuzz(server.port, seed, seconds=seconds,
                                             alive=lambda: server.proc.poll() is None)
    print(f"fuzz seed {seed}: {sent} requests in {elapsed:.1f} s; statuses {statuses}\n"
          f"  reproduce: python3 tests/server/fuzz_server.py --seed {seed} --requests {sent}")
    assert server.proc.poll() is None, server.stderr_tail()
    assert findings == [], f"seed {seed}: {findings[:5]}"
    assert sent > 500


def test_fuzz_every_route():
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(tmp)
        try:
            run_round(server, 1, seconds=10)
            run_round(server, random.randrange(1 << 32), seconds=10)
        finally:
            server.stop()
