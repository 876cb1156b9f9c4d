// Gradient tensor shapes of reference models, for the engine benchmark:
// what a data-parallel step hands to the engine, in backward (reverse layer)
// order.
#ifndef COHORT_CLI_MODEL_SHAPES_H_
#define COHORT_CLI_MODEL_SHAPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::cli {

struct NamedShape {
  std::string name;
  std::vector<int64_t> shape;
};

// "resnet50": torchvision's ResNet-50, 161 tensors, 25,557,032 parameters.
// "transformer": a GPT-style decoder (8 layers, width 512, vocabulary 8192),
// 100 tensors, about 29.9 M parameters.
Result<std::vector<NamedShape>> ModelGradients(const std::string& model);

}  // namespace cohort::cli

#endif  // COHORT_CLI_MODEL_SHAPES_H_
