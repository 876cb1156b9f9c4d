// cohort data loader: streams a dataset commit (include/cohort/data.h) as
// batches for data-parallel training.
//
//   data::LoaderOptions o;
//   o.rank = rank; o.world_size = size; o.batch_size = 256;
//   o.image.size = 224;                       // random resized crop + flip + normalise
//   auto loader = data::Loader::Open("/data/imagenet", o);
//   while (true) {
//     Result<std::optional<data::Batch>> b = (*loader)->Next();
//     if (!b.ok()) ...;                        // names the dataset, commit and chunk
//     if (!*b) break;                          // end of the epoch; Next() starts the next one
//     float* x = (*b)->column("image").data<float>();   // [256, 3, 224, 224]
//   }
//   checkpoint((*loader)->state());            // {seed, epoch, consumed, commit, ...}
//
// An epoch has one global sample order that depends only on (seed, epoch):
// chunks are permuted, then the samples of each window of `window_chunks`
// consecutive chunks are permuted together. Step t of the job hands global
// positions [consumed + t*R*B, consumed + (t+1)*R*B) out, B to each of the R
// ranks in rank order, so every rank gets the same number of batches and a
// state saved at any step resumes exactly, with the same or another number
// of ranks. The order also depends on the commit (its chunks) and the
// shuffle settings, so a saved state names them and a resumed loader reads
// that commit (see LoaderState). Memory is bounded: a rank holds at most the chunks of the
// windows its batches in flight touch, plus one window fetched ahead.
#ifndef COHORT_LOADER_H_
#define COHORT_LOADER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cohort/status.h"
#include "cohort/types.h"

namespace cohort::data {

// Where an epoch's sample stream stands; identical on every rank between steps.
// A state a loader returns also names what fixes the epoch's order: the
// commit read and the shuffle settings. Resuming from it (LoaderOptions::start)
// reads that commit (unless allow_commit_change) and needs the same shuffle
// settings. The batch size, rank count and drop_last may change on resume:
// `consumed` counts samples, not steps, and they do not change the order.
struct LoaderState {
  uint64_t seed = 0;
  uint64_t epoch = 0;
  uint64_t consumed = 0;  // samples of this epoch consumed by all ranks together
  std::string commit;     // commit id read; empty in a fresh start (then ref decides)
  uint64_t window_chunks = 0;  // the shuffle window of the order (0 in a fresh start)
  bool shuffle = true;         // checked only when `commit` is set
  bool operator==(const LoaderState&) const = default;
};

// How image columns (JPEG) become fixed-size tensors.
struct ImageOptions {
  int size = 0;  // output is size x size; 0: decode only (a batch's images must then agree)
  // Training: torchvision's RandomResizedCrop (area and aspect drawn per
  // sample) and a random horizontal flip. Otherwise: the central square of
  // side `center_fraction` * the shorter side, resized.
  bool random_crop = true;
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  double flip_probability = 0.5;  // only with random_crop
  double center_fraction = 0.875;
  // Decode a JPEG at 1/2, 1/4 or 1/8 of its size, in the DCT domain, when
  // the crop still has `size` pixels per side there (PIL's draft mode; FFCV
  // and DALI do the same): much less to decode and resize, but the pixels
  // are not those of a full-size decode and resize. false: exact.
  bool dct_scaling = true;
  // Output: float32 CHW normalised as (x/255 - mean) / std, or uint8 CHW.
  bool to_float = true;
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};
};

struct LoaderOptions {
  std::string ref;                   // branch, tag or commit; empty: HEAD
  std::vector<std::string> columns;  // columns to load, in this order; empty: all
  int rank = 0, world_size = 1;
  uint64_t batch_size = 32;
  // Last step of an epoch when the samples left do not fill R*B: drop them, or
  // pad with samples from the start of the epoch's order (Batch::padded says how many).
  bool drop_last = false;
  bool shuffle = true;
  uint64_t window_chunks = 8;  // chunks whose samples are mixed together (COHORT_SHUFFLE_WINDOW)
  LoaderState start;           // seed, epoch and where to start (resume from a saved state)
  // Resume `start` on the commit `ref` names although the state was saved on
  // another one. That commit's epoch order differs, so the rest of epoch
  // start.epoch may repeat or skip samples (none when start.consumed is 0);
  // later epochs are whole again.
  bool allow_commit_change = false;
  int threads = 2;  // decode and batch assembly threads, 1..256 (COHORT_LOADER_THREADS)
  int prefetch_batches = 4;  // batches built ahead of Next(), >= 1 (COHORT_LOADER_PREFETCH)
  ImageOptions image;
};

// Reads COHORT_LOADER_THREADS, COHORT_LOADER_PREFETCH and COHORT_SHUFFLE_WINDOW
// over `options`; a value that is not a number fails naming the variable.
// The bounds are checked once, by Loader::Open, whichever way a value came.
Status ApplyLoaderEnv(LoaderOptions* options);

// A contiguous, row-major array owned by shared storage (kept alive by copies).
struct Tensor {
  DataType dtype = DataType::kUInt8;
  std::vector<uint64_t> shape;
  std::shared_ptr<uint8_t[]> storage;
  uint64_t nbytes = 0;

  template <typename T>
  T* data() const {
    return reinterpret_cast<T*>(storage.get());
  }
};

struct Batch {
  std::vector<std::string> names;  // one per tensor, the column names
  std::vector<Tensor> tensors;     // [B, ...] each
  std::vector<uint64_t> indices;   // dataset sample index of each row
  // Trailing rows repeating earlier samples (pad mode, the epoch's last step).
  // With R ranks the last step can leave a rank nothing new: then all its B
  // rows are padding (padded == B). Mask them out of the loss, e.g.
  // `loss[:B - padded]` (examples/loader_padding.py); every rank still runs
  // the step, so collectives stay matched.
  uint64_t padded = 0;
  uint64_t epoch = 0, step = 0;    // step counts from the epoch's start
  LoaderState state_after;         // the state to save after training on this batch

  // The tensor of column `name`; fails loudly (aborts) when absent.
  const Tensor& column(const std::string& name) const;
};

class Loader {
 public:
  // `location` is a dataset directory (see Dataset::Open). Fails with
  // kInvalidArgument, naming the sizes, when an epoch would have no batch (a
  // commit without samples, or drop_last with R*B above its size), when
  // options.start does not fit the commit (consumed beyond the epoch) or was
  // saved on another commit or shuffle window (see allow_commit_change).
  static Result<std::unique_ptr<Loader>> Open(const std::string& location, LoaderOptions options);
  virtual ~Loader() = default;

  // The next batch of this rank, or nullopt at the end of an epoch; the call
  // after that starts the next epoch.
  virtual Result<std::optional<Batch>> Next() = 0;
  // The state after the last batch Next() returned (options.start before any).
  virtual LoaderState state() const = 0;
  // Batches each rank still gets in the current epoch from state().
  virtual uint64_t batches_left() const = 0;
  virtual uint64_t dataset_size() const = 0;
};

// --- The loader's steps one by one, for tools, tests and benchmarks ---

// The global order of one epoch (dataset indices), as the loader deals it:
// `chunk_samples` is CommitInfo::chunk_samples, the rest as in LoaderOptions.
std::vector<uint64_t> EpochSampleOrder(const std::vector<uint64_t>& chunk_samples, uint64_t seed,
                                       uint64_t epoch, uint64_t window_chunks, bool shuffle);

// How well an order mixes, against a uniformly random permutation.
struct ShuffleQuality {
  // Mean |a[i+1] - a[i]| over consecutive positions divided by its value for
  // a uniform random permutation, (n + 1) / 3: ~1 is as good as uniform.
  double mean_jump_ratio = 0;
  // Consecutive pairs from the same chunk (uniform: about 1 / chunks).
  double same_chunk_fraction = 0;
  // Mean |position - dataset index| / ((n + 1) / 3), the displacement of each sample.
  double mean_displacement_ratio = 0;
};
ShuffleQuality MeasureShuffle(const std::vector<uint64_t>& order,
                              const std::vector<uint64_t>& chunk_samples);

// 8-bit interleaved pixels, row-major (height x width x channels).
struct Image {
  int width = 0, height = 0, channels = 3;
  std::vector<uint8_t> pixels;
  uint8_t* row(int y) { return pixels.data() + size_t(y) * width * channels; }
  const uint8_t* row(int y) const { return pixels.data() + size_t(y) * width * channels; }
};

struct Box {
  int x = 0, y = 0, width = 0, height = 0;
  bool operator==(const Box&) const = default;
};

// Decodes a JPEG or PNG image (the formats image columns may hold) to RGB.
// `region` (default: all) limits the work for a JPEG; the result covers at
// least the region and `*origin` says where its (0, 0) lies in the full image.
Result<Image> DecodeImage(std::string_view bytes, const Box* region = nullptr,
                          Box* origin = nullptr);

// PIL's Image.resize(BILINEAR) of the part `box` of `src` (the box's edges
// act as the image's edges, as after a crop) to out_width x out_height.
Image ResizeRegion(const Image& src, const Box& box, int out_width, int out_height);

}  // namespace cohort::data

#endif  // COHORT_LOADER_H_
