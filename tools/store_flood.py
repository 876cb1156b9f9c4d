#!/usr/bin/python3
"""Floods the rendezvous store of a running `cohort run` the way a stranger
could (issue 11, item 3): connect-and-close connections, then silent ones held
open; then reports whether the launcher survived and how many threads it has.

    /usr/bin/python3 tools/store_flood.py build/cohort --close 33000 --silent 1000

Loopback only: the job runs on this host and its store listens on 127.0.0.1.
"""
import argparse
import os
import re
import socket
import subprocess
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cohort", help="path of the cohort binary")
    parser.add_argument("--close", type=int, default=33000, help="connect-and-close connections")
    parser.add_argument("--silent", type=int, default=1000, help="silent connections held open")
    args = parser.parse_args()
    job = subprocess.Popen(
        [args.cohort, "run", "-np", "2", "--", "sh", "-c", "echo addr $COHORT_STORE_ADDR; sleep 60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        host, port = re.search(r"addr (\S+):(\d+)", job.stdout.readline()).groups()
        start = time.monotonic()
        for _ in range(args.close):
            with socket.create_connection((host, int(port)), timeout=10):
                pass
        took = time.monotonic() - start
        silent = [socket.create_connection((host, int(port)), timeout=10)
                  for _ in range(args.silent)]
        time.sleep(1)  # let the store accept them all
        alive = job.poll() is None
        threads = len(os.listdir(f"/proc/{job.pid}/task")) if alive else 0
        print(f"{args.close} connect-and-close in {took:.1f} s, {len(silent)} silent held: "
              f"launcher {'alive' if alive else f'exited {job.returncode}'}, {threads} threads")
    finally:
        job.terminate()
        job.communicate(timeout=30)


if __name__ == "__main__":
    main()
