// `ingest imagefolder`: a class-per-folder tree of images (torchvision's
// ImageFolder layout, DIR/CLASS/FILE) becomes samples with an image column
// (the encoded file bytes) and a label column (the class's index among the
// sorted folder names). Files are read and checked by several threads while
// the writer appends the previous block, in the same order every time.
#ifndef COHORT_DATA_IMAGE_FOLDER_INGEST_H_
#define COHORT_DATA_IMAGE_FOLDER_INGEST_H_

#include <functional>
#include <string>
#include <vector>

#include "data/ingest.h"

namespace cohort::data {

struct ImageFolderIngestOptions {
  std::string image_column = "image", label_column = "label";
  int threads = 0;       // readers; 0: one per core
  WriterOptions writer;  // branch, chunk size, compression
  std::string message;   // empty: "ingest imagefolder DIR" and the classes
  std::string author;
  std::string command;
  // Called after each block with images appended so far and the total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct ImageFolderIngestResult {
  IngestResult ingest;
  std::vector<std::string> classes;  // label i is classes[i]
  uint64_t skipped = 0;              // files that are not .jpg, .jpeg or .png
};

// Appends every image under `dir` (sorted by class, then file name) to the
// dataset at `location` (created with the two columns when absent) and
// commits. A file that is not a readable JPEG/PNG fails the ingest, naming it.
Result<ImageFolderIngestResult> IngestImageFolder(const std::string& dir,
                                                  const std::string& location,
                                                  ImageFolderIngestOptions options);

}  // namespace cohort::data

#endif  // COHORT_DATA_IMAGE_FOLDER_INGEST_H_
