// cohort._data: the dataset loader for Python. Batches come back as numpy
// arrays that share the loader's buffers (the array keeps the C++ storage
// alive through a capsule), so torch.from_numpy wraps them without a copy;
// no torch header is needed here. Helpers for tests and benchmarks expose
// the epoch order, image decoding and resampling. Only the public API
// (include/cohort/data.h, loader.h) is used.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>

#include "cohort/data.h"
#include "cohort/loader.h"
#include "convert.h"

namespace py = pybind11;

namespace cohort::data {
namespace {

// A numpy view of the tensor that owns a reference to its storage.
py::array ToNumpy(const Tensor& t) {
  auto* owner = new std::shared_ptr<uint8_t[]>(t.storage);
  py::capsule keep(owner, [](void* p) { delete static_cast<std::shared_ptr<uint8_t[]>*>(p); });
  std::vector<py::ssize_t> shape(t.shape.begin(), t.shape.end());
  return py::array(NumpyType(t.dtype), shape, t.storage.get(), keep);
}

// The state as cohort.data.DataLoader.state_dict() hands it out (and takes it back).
py::dict StateDict(const LoaderState& s) {
  py::dict d;
  d["seed"] = s.seed;
  d["epoch"] = s.epoch;
  d["consumed"] = s.consumed;
  d["commit"] = s.commit;
  d["window_chunks"] = s.window_chunks;
  d["shuffle"] = s.shuffle;
  return d;
}

LoaderOptions MakeOptions(const py::dict& kw) {
  LoaderOptions o;
  const Status env = ApplyLoaderEnv(&o);  // COHORT_LOADER_* first; arguments override them
  if (!env.ok()) Raise(env);
  for (auto [key, value] : kw) {
    const std::string k = py::str(key);
    if (k == "ref")
      o.ref = value.cast<std::string>();
    else if (k == "columns")
      o.columns = value.cast<std::vector<std::string>>();
    else if (k == "rank")
      o.rank = value.cast<int>();
    else if (k == "world_size")
      o.world_size = value.cast<int>();
    else if (k == "batch_size")
      o.batch_size = value.cast<uint64_t>();
    else if (k == "drop_last")
      o.drop_last = value.cast<bool>();
    else if (k == "shuffle")
      o.shuffle = value.cast<bool>();
    else if (k == "window_chunks")
      o.window_chunks = value.cast<uint64_t>();
    else if (k == "seed")
      o.start.seed = value.cast<uint64_t>();
    else if (k == "epoch")
      o.start.epoch = value.cast<uint64_t>();
    else if (k == "consumed")
      o.start.consumed = value.cast<uint64_t>();
    else if (k == "commit")
      o.start.commit = value.cast<std::string>();
    else if (k == "state_window_chunks")
      o.start.window_chunks = value.cast<uint64_t>();
    else if (k == "state_shuffle")
      o.start.shuffle = value.cast<bool>();
    else if (k == "allow_commit_change")
      o.allow_commit_change = value.cast<bool>();
    else if (k == "threads")
      o.threads = value.cast<int>();
    else if (k == "prefetch_batches")
      o.prefetch_batches = value.cast<int>();
    else if (k == "image_size")
      o.image.size = value.cast<int>();
    else if (k == "random_crop")
      o.image.random_crop = value.cast<bool>();
    else if (k == "scale")
      std::tie(o.image.scale_min, o.image.scale_max) = value.cast<std::pair<double, double>>();
    else if (k == "ratio")
      std::tie(o.image.ratio_min, o.image.ratio_max) = value.cast<std::pair<double, double>>();
    else if (k == "flip_probability")
      o.image.flip_probability = value.cast<double>();
    else if (k == "center_fraction")
      o.image.center_fraction = value.cast<double>();
    else if (k == "dct_scaling")
      o.image.dct_scaling = value.cast<bool>();
    else if (k == "to_float")
      o.image.to_float = value.cast<bool>();
    else if (k == "mean")
      o.image.mean = value.cast<std::array<float, 3>>();
    else if (k == "std")
      o.image.std = value.cast<std::array<float, 3>>();
    else
      throw py::type_error("Loader got an unknown option '" + k + "'");
  }
  return o;
}

class PyLoader {
 public:
  PyLoader(const std::string& location, const py::kwargs& kw)
      : loader_(Check(Loader::Open(location, MakeOptions(kw)))) {}

  // {column: array, "__indices__": ..., "__padded__": n, "__state__": StateDict},
  // or None at the end of an epoch.
  py::object Next() {
    Result<std::optional<Batch>> batch = Status::OK();
    {
      py::gil_scoped_release release;
      batch = loader_->Next();
    }
    std::optional<Batch> b = Check(std::move(batch));
    if (!b) return py::none();
    py::dict out;
    for (size_t i = 0; i < b->names.size(); ++i) out[py::str(b->names[i])] = ToNumpy(b->tensors[i]);
    out["__indices__"] = py::array_t<uint64_t>(b->indices.size(), b->indices.data());
    out["__padded__"] = b->padded;
    out["__epoch__"] = b->epoch;
    out["__state__"] = StateDict(b->state_after);
    return out;
  }

  py::dict State() const { return StateDict(loader_->state()); }
  uint64_t BatchesLeft() const { return loader_->batches_left(); }
  uint64_t DatasetSize() const { return loader_->dataset_size(); }

 private:
  std::unique_ptr<Loader> loader_;
};

std::vector<uint64_t> ChunkSizes(const std::string& location, const std::string& ref) {
  return Check(Dataset::Open(location, ref))->commit().chunk_samples;
}

py::array_t<uint64_t> EpochOrderArray(const std::vector<uint64_t>& chunk_sizes, uint64_t seed,
                                      uint64_t epoch, uint64_t window_chunks, bool shuffle) {
  if (window_chunks == 0) throw py::value_error("window_chunks must be at least 1");
  std::vector<uint64_t> all = EpochSampleOrder(chunk_sizes, seed, epoch, window_chunks, shuffle);
  return py::array_t<uint64_t>(all.size(), all.data());
}

py::dict ShuffleQualityDict(const std::vector<uint64_t>& order,
                            const std::vector<uint64_t>& chunk_sizes) {
  ShuffleQuality q = MeasureShuffle(order, chunk_sizes);
  py::dict d;
  d["mean_jump_ratio"] = q.mean_jump_ratio;
  d["same_chunk_fraction"] = q.same_chunk_fraction;
  d["mean_displacement_ratio"] = q.mean_displacement_ratio;
  return d;
}

py::array_t<uint8_t> ImageArray(const Image& image) {
  py::array_t<uint8_t> out({image.height, image.width, image.channels});
  std::copy(image.pixels.begin(), image.pixels.end(), out.mutable_data());
  return out;
}

// HWC uint8 array -> Image (a copy).
Image FromArray(const py::array_t<uint8_t, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 3) throw py::value_error("expected an H x W x C uint8 array");
  Image image;
  image.height = int(a.shape(0));
  image.width = int(a.shape(1));
  image.channels = int(a.shape(2));
  image.pixels.assign(a.data(), a.data() + a.size());
  return image;
}

py::array_t<uint8_t> DecodeJpegArray(const py::bytes& jpeg,
                                     std::optional<std::array<int, 4>> region) {
  const std::string bytes = jpeg;
  Box box;
  if (region) box = {(*region)[0], (*region)[1], (*region)[2], (*region)[3]};
  Box origin;
  Image image = Check(DecodeImage(bytes, region ? &box : nullptr, &origin));
  if (!region) return ImageArray(image);
  // Cut the decoded area (widened to whole blocks) down to the region.
  Image cut;
  cut.width = box.width;
  cut.height = box.height;
  cut.pixels.resize(size_t(box.width) * box.height * 3);
  for (int y = 0; y < box.height; ++y) {
    const uint8_t* src = image.row(box.y - origin.y + y) + size_t(box.x - origin.x) * 3;
    std::copy(src, src + size_t(box.width) * 3, cut.row(y));
  }
  return ImageArray(cut);
}

py::dict IngestImageFolderDict(const std::string& dir, const std::string& location, int threads) {
  ImageFolderIngestOptions options;
  options.threads = threads;
  ImageFolderIngestResult r;
  {
    py::gil_scoped_release release;
    Result<ImageFolderIngestResult> result = IngestImageFolder(dir, location, options);
    if (!result.ok()) {
      py::gil_scoped_acquire acquire;
      Raise(result.status());
    }
    r = std::move(*result);
  }
  py::dict d;
  d["samples"] = r.ingest.samples;
  d["commit"] = r.ingest.commit;
  d["classes"] = r.classes;
  d["skipped"] = r.skipped;
  return d;
}

}  // namespace
}  // namespace cohort::data

PYBIND11_MODULE(_data, m) {
  using namespace cohort::data;
  m.doc() =
      "cohort datasets: reader, writer, history, the loader and its helpers (see cohort.data)";
  BindDatasets(m);
  py::class_<PyLoader>(m, "Loader")
      .def(py::init<const std::string&, const py::kwargs&>(), py::arg("location"))
      .def("next", &PyLoader::Next)
      .def("state", &PyLoader::State)
      .def_property_readonly("batches_left", &PyLoader::BatchesLeft)
      .def_property_readonly("dataset_size", &PyLoader::DatasetSize);
  m.def("chunk_sizes", &ChunkSizes, py::arg("location"), py::arg("ref") = "");
  m.def("epoch_order", &EpochOrderArray, py::arg("chunk_sizes"), py::arg("seed"), py::arg("epoch"),
        py::arg("window_chunks"), py::arg("shuffle") = true);
  m.def("shuffle_quality", &ShuffleQualityDict, py::arg("order"), py::arg("chunk_sizes"));
  m.def("decode_jpeg", &DecodeJpegArray, py::arg("jpeg"), py::arg("region") = py::none(),
        "HWC uint8 RGB pixels of a JPEG or PNG; region (x, y, width, height) decodes only "
        "that part");
  m.def(
      "resize_region",
      [](const py::array_t<uint8_t, py::array::c_style | py::array::forcecast>& a,
         std::array<int, 4> box, int width, int height) {
        const Image image = FromArray(a);
        if (box[0] < 0 || box[1] < 0 || box[2] <= 0 || box[3] <= 0 ||
            box[0] + box[2] > image.width || box[1] + box[3] > image.height) {
          throw py::value_error("box (" + std::to_string(box[0]) + ", " + std::to_string(box[1]) +
                                ", " + std::to_string(box[2]) + ", " + std::to_string(box[3]) +
                                ") is not a non-empty part of the " + std::to_string(image.width) +
                                "x" + std::to_string(image.height) + " image");
        }
        if (width <= 0 || height <= 0 || image.channels < 1) {
          throw py::value_error(
              "resize_region needs a positive width and height and at least "
              "one channel");
        }
        return ImageArray(ResizeRegion(image, {box[0], box[1], box[2], box[3]}, width, height));
      },
      py::arg("image"), py::arg("box"), py::arg("width"), py::arg("height"),
      "PIL-style antialiased bilinear resize of image[box] (x, y, width, height)");
  m.def("ingest_imagefolder", &IngestImageFolderDict, py::arg("dir"), py::arg("location"),
        py::arg("threads") = 0);
}
