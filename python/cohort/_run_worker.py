"""Worker side of cohort.run: `python -m cohort._run_worker DIR` loads
DIR/payload.pkl, calls the function and writes DIR/rank-<rank>.pkl holding
("ok", value, "") or ("error", exception, traceback text). Exits with status 1
after an exception so that `cohort run` stops the other ranks."""
import os
import sys
import traceback

import cloudpickle

from cohort import settings


def main(workdir):
    rank = int(settings.text(settings.RANK, "0"))
    try:
        with open(os.path.join(workdir, "payload.pkl"), "rb") as f:
            fn, args, kwargs = cloudpickle.load(f)
        outcome = ("ok", fn(*args, **kwargs), "")
    except BaseException as e:  # noqa: BLE001 -- every failure goes back to the caller
        outcome = ("error", e, traceback.format_exc())
    out_path = os.path.join(workdir, "rank-%d.pkl" % rank)
    try:
        data = cloudpickle.dumps(outcome)
    except Exception as e:  # noqa: BLE001 -- an unpicklable result or exception
        data = cloudpickle.dumps(("error", RuntimeError(
            "result of rank %d could not be pickled: %s" % (rank, e)), outcome[2]))
    tmp = out_path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, out_path)
    return 0 if outcome[0] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
