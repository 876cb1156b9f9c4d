"""`cohort pipeline` over datasets on the S3-compatible test server (s3rver
through tests/support/s3rver_strict.js, as the S3 storage tests start it):
the input and output datasets are s3:// locations, and after a sample is
added to the input only that datum is processed."""
import os
import re
import select
import shutil
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_pipeline import counts, pipeline, server  # noqa: E402,F401 (server: the queue fixture)

from cohort.data import Dataset, Writer  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
S3RVER = os.environ.get("COHORT_S3RVER") or os.path.join(
    ROOT, "build-tools", "s3rver", "node_modules", "s3rver", "bin", "s3rver.js")
BUCKET = "pipes"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "S3RVER", "AWS_SECRET_ACCESS_KEY": "S3RVER",
               "AWS_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """The endpoint of a fresh s3rver serving BUCKET; skipped where s3rver is absent."""
    if not shutil.which("node"):
        pytest.skip("node is not installed (tools/setup.sh installs it)")
    if not os.path.exists(S3RVER):
        pytest.skip(f"s3rver is not installed at {S3RVER} (run tools/setup.sh)")
    package = os.path.dirname(os.path.dirname(S3RVER))
    proc = subprocess.Popen(["node", os.path.join(ROOT, "tests", "support", "s3rver_strict.js"), package,
                             "-d", str(tmp_path_factory.mktemp("s3")), "-a", "127.0.0.1", "-p", "0",
                             "--silent", "--configure-bucket", BUCKET],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, deadline = b"", time.monotonic() + 30
    while not re.search(rb"S3rver listening on 127\.0\.0\.1:(\d+)\n", out):
        left = deadline - time.monotonic()
        if left <= 0 or proc.poll() is not None:
            proc.kill()
            raise AssertionError("s3rver did not start: " + proc.stderr.read().decode(errors="replace"))
        if select.select([proc.stdout], [], [], left)[0]:
            out += os.read(proc.stdout.fileno(), 4096)
    port = re.search(rb"S3rver listening on 127\.0\.0\.1:(\d+)\n", out).group(1).decode()
    yield f"http://127.0.0.1:{port}"
    proc.kill()
    proc.wait(timeout=30)


def test_an_s3_input_and_output_process_only_the_added_datum(server, s3, tmp_path, monkeypatch):  # noqa: F811
    aws = dict(CREDENTIALS, AWS_ENDPOINT_URL=s3)
    for k, v in aws.items():
        monkeypatch.setenv(k, v)
    raw, out = f"s3://{BUCKET}/{tmp_path.name}/raw", f"s3://{BUCKET}/{tmp_path.name}/squared"
    w = Writer.create(raw, [("label", "label")])
    for v in range(3):
        w.append({"label": v})
    w.commit("raw")
    (tmp_path / "p.yaml").write_text(
        "name: s3\nsteps:\n  - name: sq\n"
        f"    inputs: [{{dataset: '{raw}', glob: sample}}]\n"
        f"    command: [{sys.executable}, {os.path.join(os.path.dirname(__file__), 'step.py')}, square]\n"
        f"    resources: {{batch: 2}}\n    output: '{out}'\n")
    rc, stdout, err = pipeline(server, tmp_path, "run", "p.yaml", **aws)
    assert rc == 0, stdout + err
    assert "step sq: 3 datums to process (all)" in stdout
    assert counts(tmp_path) == {f"sq {i}": 1 for i in range(3)}
    w = Writer.open(raw)
    w.append({"label": 5})
    w.commit("one more")
    rc, stdout, err = pipeline(server, tmp_path, "run", "p.yaml", **aws)
    assert rc == 0, stdout + err
    assert "step sq: 1 datum to process (incremental), 0 results to remove" in stdout
    assert counts(tmp_path) == {"sq 3": 1}
    assert [int(s["label"]) for s in Dataset.open(out, "main")] == [0, 1, 4, 25]
