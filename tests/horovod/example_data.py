"""Small local stand-ins for the data sets Horovod's examples download or
read (there is no network here): MNIST in torchvision's raw layout, so
datasets.MNIST(..., download=True) finds it and downloads nothing, and an
ImageFolder of PNG images for the ImageNet examples."""
import os


def write_idx(path, magic, dims, payload):
    """One file of MNIST's idx format: magic, big-endian dimensions, bytes."""
    with open(path, "wb") as f:
        f.write(magic.to_bytes(4, "big"))
        for d in dims:
            f.write(d.to_bytes(4, "big"))
        f.write(payload)


def make_mnist(root, train, test):
    """root/MNIST/raw/*-ubyte, the files torchvision's MNIST reads instead of
    downloading: digits drawn as a bright bar whose row is the label, plus noise."""
    import numpy as np
    raw = os.path.join(root, "MNIST", "raw")
    os.makedirs(raw)
    rng = np.random.default_rng(0)
    for prefix, count in (("train", train), ("t10k", test)):
        labels = rng.integers(0, 10, count).astype(np.uint8)
        images = rng.integers(0, 60, (count, 28, 28)).astype(np.uint8)
        for i, label in enumerate(labels):
            images[i, 2 + 2 * label:4 + 2 * label, 4:24] = 255
        write_idx(os.path.join(raw, prefix + "-images-idx3-ubyte"), 2051, (count, 28, 28),
                  images.tobytes())
        write_idx(os.path.join(raw, prefix + "-labels-idx1-ubyte"), 2049, (count,),
                  labels.tobytes())


def make_image_folder(root, classes, per_class, seed):
    """CLASS/IMAGE.png, 48x48 RGB: a colour per class with noise."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(seed)
    for c in range(classes):
        os.makedirs(os.path.join(root, "class%d" % c))
        base = np.array([255 * (c % 2), 128, 255 * (1 - c % 2)], dtype=np.float64)
        for i in range(per_class):
            pixels = np.clip(base + rng.normal(0, 40, (48, 48, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(os.path.join(root, "class%d" % c, "%03d.png" % i))
