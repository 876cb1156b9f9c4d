// Data-parallel training of a small MLP with the LibTorch adapter
// (include/cohort/torch.h), on synthetic data: points drawn around one of
// `classes` random centres, labelled by their centre. Every rank generates the
// same data set, trains on its own shard of each global batch with a
// DistributedOptimizer, and the accuracy on a held-out set is summed over the
// ranks' shards.
//
//   cohort run -np 2 -- build/examples/cpp/train_mlp [--epochs N] [--samples N]
//       [--batch N] [--lr X] [--min-accuracy X]
//
// Prints the mean training loss per epoch and the final accuracy (rank 0);
// exits 1 when --min-accuracy is given and not reached.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cohort/torch.h"

namespace ct = cohort::torch;

namespace {

struct Flags {
  int epochs = 10;
  int samples = 4096;  // training points; the test set has a quarter as many
  int batch = 64;      // global batch, split over the ranks
  double lr = 0.05;
  double min_accuracy = -1;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "train_mlp: %s needs a value\n", flag.c_str());
      std::exit(2);
    }
    const char* value = argv[++i];
    if (flag == "--epochs")
      f.epochs = std::atoi(value);
    else if (flag == "--samples")
      f.samples = std::atoi(value);
    else if (flag == "--batch")
      f.batch = std::atoi(value);
    else if (flag == "--lr")
      f.lr = std::atof(value);
    else if (flag == "--min-accuracy")
      f.min_accuracy = std::atof(value);
    else {
      std::fprintf(stderr, "train_mlp: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (f.epochs < 1 || f.samples < 1 || f.batch < ct::size()) {
    std::fprintf(stderr,
                 "train_mlp: --epochs and --samples must be positive and --batch at least "
                 "the number of ranks (%d)\n",
                 ct::size());
    std::exit(2);
  }
  return f;
}

constexpr int kFeatures = 20, kClasses = 5;

// `n` points around fixed random centres (the same on every rank).
std::pair<at::Tensor, at::Tensor> Blobs(int64_t n, int seed) {
  ::torch::manual_seed(1);
  const at::Tensor centres = ::torch::randn({kClasses, kFeatures});
  ::torch::manual_seed(seed);
  const at::Tensor labels = ::torch::randint(0, kClasses, {n}, at::kLong);
  return {centres.index_select(0, labels) + ::torch::randn({n, kFeatures}) * 1.5, labels};
}

struct MlpImpl : ::torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", ::torch::nn::Linear(kFeatures, 64))),
        fc2(register_module("fc2", ::torch::nn::Linear(64, kClasses))) {}
  at::Tensor forward(const at::Tensor& x) { return fc2(::torch::relu(fc1(x))); }
  ::torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

// This rank's rows of a global batch [start, start + count).
at::Tensor Shard(const at::Tensor& t, int64_t start, int64_t count) {
  const int64_t per_rank = count / ct::size();
  return t.narrow(0, start + ct::rank() * per_rank, per_rank);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    ct::init();
    const Flags flags = ParseFlags(argc, argv);
    auto [x, y] = Blobs(flags.samples, 2);
    auto [test_x, test_y] = Blobs(flags.samples / 4, 3);

    ::torch::manual_seed(10 + ct::rank());  // different initial weights on every rank...
    Mlp model;
    ct::broadcast_parameters(*model, 0);  // ...until rank 0's are copied everywhere
    ::torch::optim::SGD sgd(model->parameters(),
                            ::torch::optim::SGDOptions(flags.lr).momentum(0.9));
    ct::DistributedOptimizer optimizer(sgd, model->named_parameters());

    for (int epoch = 0; epoch < flags.epochs; ++epoch) {
      at::Tensor loss_sum = at::zeros({1}, at::kDouble);
      int64_t batches = 0;
      for (int64_t start = 0; start + flags.batch <= flags.samples; start += flags.batch) {
        optimizer.zero_grad();
        at::Tensor loss = ::torch::nn::functional::cross_entropy(
            model->forward(Shard(x, start, flags.batch)), Shard(y, start, flags.batch));
        loss.backward();
        optimizer.step();
        loss_sum += loss.detach().to(at::kDouble);
        ++batches;
      }
      at::Tensor mean_loss = ct::allreduce(loss_sum / batches, {.name = "epoch_loss"});
      if (ct::rank() == 0) {
        std::printf("epoch %d: loss %.4f\n", epoch + 1, mean_loss.item<double>());
      }
    }

    ::torch::NoGradGuard no_grad;
    const int64_t n = test_x.size(0) / ct::size() * ct::size();
    at::Tensor correct =
        (model->forward(Shard(test_x, 0, n)).argmax(1) == Shard(test_y, 0, n)).sum().to(at::kLong);
    const double accuracy =
        static_cast<double>(
            ct::allreduce(correct, {.op = cohort::ReduceOp::kSum, .name = "correct"})
                .item<int64_t>()) /
        static_cast<double>(n);
    if (ct::rank() == 0)
      std::printf("final accuracy %.4f on %lld test points\n", accuracy, static_cast<long long>(n));
    ct::shutdown();
    return flags.min_accuracy >= 0 && accuracy < flags.min_accuracy ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_mlp: rank %d: %s\n", ct::rank(), e.what());
    return 1;
  }
}
