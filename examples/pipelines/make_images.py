"""Writes small PNG images in torchvision's ImageFolder layout (DIR/CLASS/FILE)
for the worked example of docs/pipelines.md: class "dark" and class "light",
each image a noisy square whose brightness says its class.

  python3 make_images.py DIR COUNT [--first N]   (file names from N on)
"""
import argparse
import os

import numpy as np
from PIL import Image

parser = argparse.ArgumentParser()
parser.add_argument("dir")
parser.add_argument("count", type=int)
parser.add_argument("--first", type=int, default=0)
parser.add_argument("--size", type=int, default=32)
args = parser.parse_args()
rng = np.random.default_rng(args.first)
for i in range(args.first, args.first + args.count):
    light = i % 2
    pixels = rng.integers(0, 128, (args.size, args.size, 3)) + 127 * light
    os.makedirs(os.path.join(args.dir, ["dark", "light"][light]), exist_ok=True)
    Image.fromarray(pixels.astype(np.uint8)).save(
        os.path.join(args.dir, ["dark", "light"][light], f"{i:06d}.png"))
