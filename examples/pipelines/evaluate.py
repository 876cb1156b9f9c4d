"""The `eval` step (docs/pipelines.md): the trained weights' accuracy on the
resized images, written as one JSON sample."""
import io
import json
import os

import numpy as np
from PIL import Image

from cohort.data import Dataset, Writer

w = np.asarray(Dataset.open(os.environ["COHORT_INPUT_MODEL"],
                            os.environ["COHORT_INPUT_MODEL_COMMIT"])[0]["weights"])
images = Dataset.open(os.environ["COHORT_INPUT_IMAGES"], os.environ["COHORT_INPUT_IMAGES_COMMIT"])
correct = 0
for sample in images:
    x = np.asarray(Image.open(io.BytesIO(bytes(sample["image"])))).mean() / 255
    correct += int((w[0] * x + w[1] > 0) == bool(int(sample["label"])))
out = Writer.create(os.environ["COHORT_PIPELINE_OUTPUT"], [("metrics", "json")])
out.append({"metrics": json.dumps({"accuracy": correct / len(images), "images": len(images)})})
out.commit("metrics")
print(f"accuracy {correct / len(images):.3f} on {len(images)} images")
