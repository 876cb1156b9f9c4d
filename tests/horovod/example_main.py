"""Per-rank entry of run_imagenet_example.py: runs one of Horovod's example
scripts as __main__ with its own arguments, after giving it a SummaryWriter.

TensorBoard is not packaged in Debian, so `from torch.utils.tensorboard import
SummaryWriter` cannot load here; the SummaryWriter below takes its place and
appends each scalar to LOG_DIR/scalars.jsonl, where the test reads them.

Usage: example_main.py SCRIPT [ARGS...]"""
import json
import os
import runpy
import sys
import types


class SummaryWriter:
    """The part of torch.utils.tensorboard.SummaryWriter the examples use."""

    def __init__(self, log_dir="runs", **_):
        os.makedirs(log_dir, exist_ok=True)
        self._path = os.path.join(log_dir, "scalars.jsonl")

    def add_scalar(self, tag, scalar_value, global_step=None, **_):
        value = float(scalar_value.item() if hasattr(scalar_value, "item") else scalar_value)
        with open(self._path, "a") as f:
            f.write(json.dumps({"tag": tag, "value": value, "step": global_step}) + "\n")

    def flush(self):
        pass

    def close(self):
        pass


def main():
    module = types.ModuleType("torch.utils.tensorboard")
    module.SummaryWriter = SummaryWriter
    sys.modules["torch.utils.tensorboard"] = module
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
