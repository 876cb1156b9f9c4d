"""The `train` step (docs/pipelines.md), run under `cohort run -np 2`: logistic
regression on the resized images' mean brightness, gradients averaged across
the ranks with cohort's allreduce; rank 0 tracks the run (its tags name the
pipeline, the step and the input commits) and writes the weights as the
step's output."""
import io
import os

import numpy as np
from PIL import Image

import cohort
import cohort.track
from cohort.data import Dataset, Writer

cohort.init()
images = Dataset.open(os.environ["COHORT_INPUT_IMAGES"], os.environ["COHORT_INPUT_IMAGES_COMMIT"])
mine = range(cohort.rank(), len(images), cohort.size())
x = np.array([np.asarray(Image.open(io.BytesIO(bytes(images[i]["image"])))).mean() / 255
              for i in mine])
y = np.array([int(images[i]["label"]) for i in mine], dtype=np.float64)
run = cohort.track.init(project="pipelines-example", config={"epochs": 200, "lr": 5.0})
w = np.zeros(2)
for epoch in range(200):
    p = 1 / (1 + np.exp(-(w[0] * x + w[1])))
    grad = np.array([((p - y) * x).mean(), (p - y).mean()])
    grad = cohort.allreduce(grad, name="grad")
    w -= 5.0 * grad
    if epoch % 50 == 0:
        run.log({"loss": float(-np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9)))},
                step=epoch)
run.finish()
if cohort.rank() == 0:
    out = Writer.create(os.environ["COHORT_PIPELINE_OUTPUT"], [("weights", "array", "float64")])
    out.append({"weights": w})
    out.commit("weights")
cohort.shutdown()
