"""A pipeline step program for tests/pipeline/test_pipeline.py.

  step.py square   per-datum: each input label v -> label v*v + $COHORT_PARAM_ADD
  step.py sum      whole input: one sample, the sum of its labels
  step.py meet     whole input: the sum, once every step of $PIPELINE_MEET runs too
  step.py track    whole input: a tracked run in $PIPELINE_TRACK_URI, no output

Every datum processed appends "STEP ID" to $PIPELINE_COUNT, so tests count
re-runs. Failures on demand: a datum whose label is $PIPELINE_FAIL_LABEL always
fails; one whose label is $PIPELINE_KILL_LABEL SIGKILLs its job the first time
(marker file $PIPELINE_COUNT.killed); with $PIPELINE_GATE set, a datum (or a sum)
waits for that file before finishing (the test kills the controller meanwhile).
"""
import os
import signal
import sys
import time

from cohort.data import Dataset, Writer

STEP = os.environ["COHORT_PIPELINE_STEP"]
INPUT = next(k[len("COHORT_INPUT_"):] for k in os.environ
             if k.startswith("COHORT_INPUT_") and not k.endswith("_COMMIT"))
LOCATION = os.environ["COHORT_INPUT_" + INPUT]
COMMIT = os.environ["COHORT_INPUT_" + INPUT + "_COMMIT"]
COUNT = os.environ.get("PIPELINE_COUNT")


def count(ident):
    if COUNT:
        with open(COUNT, "a") as f:
            f.write(f"{STEP} {ident}\n")


def gate():
    path = os.environ.get("PIPELINE_GATE")
    deadline = time.monotonic() + 60
    while path and not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)


def square():
    ds = Dataset.open(LOCATION, COMMIT)
    add = int(os.environ.get("COHORT_PARAM_ADD", "0"))
    out = Writer.create(os.environ["COHORT_PIPELINE_OUTPUT"], [("label", "label")])
    with open(os.environ["COHORT_PIPELINE_DATUMS"]) as f:
        datums = [tuple(int(x) for x in line.split()) for line in f]
    for index, ident in datums:
        v = int(ds[index]["label"])
        if str(v) == os.environ.get("PIPELINE_FAIL_LABEL"):
            sys.exit(f"label {v} always fails")
        marker = f"{COUNT}.killed"
        if str(v) == os.environ.get("PIPELINE_KILL_LABEL") and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        gate()
        out.append({"label": v * v + add})
        count(ident)
    out.commit("results")


def whole_sum():
    gate()
    ds = Dataset.open(LOCATION, COMMIT)
    out = Writer.create(os.environ["COHORT_PIPELINE_OUTPUT"], [("label", "label")])
    out.append({"label": sum(int(s["label"]) for s in ds)})
    out.commit("sum")
    count("whole")


def meet():
    """Marks this step's job as started in $PIPELINE_MEET_DIR and waits (20 s
    at most) until the job of every step of $PIPELINE_MEET has too: it
    succeeds only when those steps' jobs run at the same time."""
    folder = os.environ["PIPELINE_MEET_DIR"]
    open(os.path.join(folder, STEP), "w").close()
    others = [s for s in os.environ["PIPELINE_MEET"].split(",") if s != STEP]
    deadline = time.monotonic() + 20
    while not all(os.path.exists(os.path.join(folder, s)) for s in others):
        if time.monotonic() > deadline:
            sys.exit(f"step {STEP}: steps {others} never started while it ran")
        time.sleep(0.02)
    whole_sum()


def track():
    import cohort.track
    run = cohort.track.init(project="pipeline", uri=os.environ["PIPELINE_TRACK_URI"])
    run.log({"samples": len(Dataset.open(LOCATION, COMMIT))})
    run.finish()
    count("whole")


{"square": square, "sum": whole_sum, "meet": meet, "track": track}[sys.argv[1]]()
