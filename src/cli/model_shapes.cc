// Parameter shapes of ResNet-50 and a GPT-style transformer.
#include "cli/model_shapes.h"

#include <algorithm>

namespace cohort::cli {
namespace {

void Add(std::vector<NamedShape>* out, std::string name, std::vector<int64_t> shape) {
  out->push_back({std::move(name), std::move(shape)});
}

void ConvBn(std::vector<NamedShape>* out, const std::string& prefix, const std::string& conv,
            const std::string& bn, int64_t out_ch, int64_t in_ch, int64_t k) {
  Add(out, prefix + conv + ".weight", {out_ch, in_ch, k, k});
  Add(out, prefix + bn + ".weight", {out_ch});
  Add(out, prefix + bn + ".bias", {out_ch});
}

// Forward order, as torchvision names them.
std::vector<NamedShape> ResNet50() {
  std::vector<NamedShape> p;
  ConvBn(&p, "", "conv1", "bn1", 64, 3, 7);
  const int64_t planes[] = {64, 128, 256, 512};
  const int blocks[] = {3, 4, 6, 3};
  int64_t in = 64;
  for (int layer = 0; layer < 4; ++layer) {
    for (int b = 0; b < blocks[layer]; ++b) {
      const std::string prefix = "layer" + std::to_string(layer + 1) + "." + std::to_string(b) + ".";
      const int64_t w = planes[layer];
      ConvBn(&p, prefix, "conv1", "bn1", w, in, 1);
      ConvBn(&p, prefix, "conv2", "bn2", w, w, 3);
      ConvBn(&p, prefix, "conv3", "bn3", 4 * w, w, 1);
      if (b == 0) ConvBn(&p, prefix, "downsample.0", "downsample.1", 4 * w, in, 1);
      in = 4 * w;
    }
  }
  Add(&p, "fc.weight", {1000, 2048});
  Add(&p, "fc.bias", {1000});
  return p;
}

std::vector<NamedShape> Transformer() {
  const int64_t d = 512, vocab = 8192, context = 1024, layers = 8;
  std::vector<NamedShape> p;
  Add(&p, "wte.weight", {vocab, d});
  Add(&p, "wpe.weight", {context, d});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    Add(&p, h + "ln_1.weight", {d});
    Add(&p, h + "ln_1.bias", {d});
    Add(&p, h + "attn.c_attn.weight", {d, 3 * d});
    Add(&p, h + "attn.c_attn.bias", {3 * d});
    Add(&p, h + "attn.c_proj.weight", {d, d});
    Add(&p, h + "attn.c_proj.bias", {d});
    Add(&p, h + "ln_2.weight", {d});
    Add(&p, h + "ln_2.bias", {d});
    Add(&p, h + "mlp.c_fc.weight", {d, 4 * d});
    Add(&p, h + "mlp.c_fc.bias", {4 * d});
    Add(&p, h + "mlp.c_proj.weight", {4 * d, d});
    Add(&p, h + "mlp.c_proj.bias", {d});
  }
  Add(&p, "ln_f.weight", {d});
  Add(&p, "ln_f.bias", {d});
  return p;
}

}  // namespace

Result<std::vector<NamedShape>> ModelGradients(const std::string& model) {
  std::vector<NamedShape> params;
  if (model == "resnet50") {
    params = ResNet50();
  } else if (model == "transformer") {
    params = Transformer();
  } else {
    return Status::InvalidArgument("unknown model '" + model + "' (expected resnet50 or transformer)");
  }
  std::reverse(params.begin(), params.end());  // backward produces the last layer's gradients first
  return params;
}

}  // namespace cohort::cli
