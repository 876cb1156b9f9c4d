"""The `resize` step (docs/pipelines.md): each datum is one image of the raw
imagefolder dataset; its result is the image resized to $COHORT_PARAM_SIZE
pixels square, with its label, appended in datum order."""
import io
import os

from PIL import Image

from cohort.data import Dataset, Writer

raw = Dataset.open(os.environ["COHORT_INPUT_RAW"], os.environ["COHORT_INPUT_RAW_COMMIT"])
size = int(os.environ["COHORT_PARAM_SIZE"])
out = Writer.create(os.environ["COHORT_PIPELINE_OUTPUT"], [("image", "image"), ("label", "label")])
with open(os.environ["COHORT_PIPELINE_DATUMS"]) as datums:
    for line in datums:
        index = int(line.split()[0])
        sample = raw[index]
        image = Image.open(io.BytesIO(bytes(sample["image"]))).resize((size, size))
        png = io.BytesIO()
        image.save(png, format="PNG")
        out.append({"image": png.getvalue(), "label": int(sample["label"])})
out.commit("resized")
