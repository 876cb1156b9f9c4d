"""python -m cohort.torch.parallel.merge LOCATION --output FILE [--step N]:
merges a sharded pipeline/tensor-parallel checkpoint (save_checkpoint) into
one unsharded state_dict, written with torch.save, that loads into the
whole model on one process."""
import argparse
import sys

import torch

from .checkpoint import merge_checkpoint


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m cohort.torch.parallel.merge",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("location", help="the checkpoint's location (its pp<P>-tp<T> folders)")
    parser.add_argument("--output", "-o", required=True, help="file to torch.save the state_dict to")
    parser.add_argument("--step", type=int, default=None,
                        help="the step to merge (default: the newest every shard holds)")
    args = parser.parse_args(argv)
    try:
        state = merge_checkpoint(args.location, args.step)
    except ValueError as e:
        print("merge: %s" % e, file=sys.stderr)
        return 2
    torch.save(state, args.output)
    print("merged %d tensors into %s" % (len(state), args.output))
    return 0


if __name__ == "__main__":
    sys.exit(main())
