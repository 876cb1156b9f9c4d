// `cohort bench engine`: one data-parallel step's gradients through the
// engine, against one raw allreduce of the same total bytes. Run under
// `cohort run -np N`; rank 0 prints one line per measurement.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli/bench_buffer.h"
#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/model_shapes.h"
#include "cli/usage_error.h"
#include "cohort/cohort.h"

namespace cohort::cli {
namespace {

constexpr char kSynopsis[] =
    "cohort bench engine [--model resnet50|transformer] [--steps N] [--warmup N] [--delay-us D]"
    " [--shared-memory] [--print-shapes]";
constexpr char kHelp[] =
    "\n"
    "Submits one step's gradients of MODEL, one allreduce each in backward order,\n"
    "through the engine, and times them against one raw allreduce of the same bytes.\n"
    "Run it under `cohort run -np N`.\n"
    "  --model M         resnet50 or transformer (default resnet50)\n"
    "  -n, --steps N     timed steps (default 20)\n"
    "  -w, --warmup N    untimed steps before them (default 5)\n"
    "  --delay-us D      busy time between two submissions, as backward computes\n"
    "                    the next gradient (default 0)\n"
    "  --shared-memory   gradients (and the raw reference) in memory from\n"
    "                    cohort::AllocateSharedMemory, which the ranks of a host map\n"
    "  --print-shapes    print the gradients (name and dims, one a line) and exit\n";

struct EngineBenchOptions {
  std::string model = "resnet50";
  int steps = 20;
  int warmup = 5;
  double delay_us = 0;  // busy time between submissions, as backward computes the next gradient
  bool print_shapes = false;
  bool shared_memory = false;  // gradients in memory the ranks of a host map
};

using Micros = std::chrono::duration<double, std::micro>;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The slowest rank's value.
double MaxOverRanks(double v) {
  (void)Allreduce(&v, &v, 1, DataType::kFloat64, AllreduceOptions{ReduceOp::kMax});
  return v;
}

void Spin(double us) {
  const auto until = std::chrono::steady_clock::now() + Micros(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

Status ParseArgs(int argc, char** argv, EngineBenchOptions* o) {
  for (int i = 0; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--print-shapes") {
      o->print_shapes = true;
      continue;
    }
    if (flag == "--shared-memory") {
      o->shared_memory = true;
      continue;
    }
    if (i + 1 >= argc) return Status::InvalidArgument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--model") {
      o->model = value;
    } else if (flag == "--steps" || flag == "-n") {
      Result<int> steps = ParsePositiveInt(flag, value);
      if (!steps.ok()) return steps.status();
      o->steps = *steps;
    } else if (flag == "--warmup" || flag == "-w") {
      Result<int> warmup = ParseNonNegativeInt(flag, value);
      if (!warmup.ok()) return warmup.status();
      o->warmup = *warmup;
    } else if (flag == "--delay-us") {
      Result<double> delay = ParseNonNegativeNumber(flag, value);
      if (!delay.ok()) return delay.status();
      o->delay_us = *delay;
    } else {
      return Status::InvalidArgument("unknown flag " + flag);
    }
  }
  return Status::OK();
}

Status Run(const EngineBenchOptions& o, const std::vector<NamedShape>& grads) {
  COHORT_RETURN_IF_ERROR(Init());
  // The gradients lie one after another in one buffer, as a framework's
  // gradient buckets (or cohort.torch.share_gradients) lay them out.
  std::vector<size_t> offsets(1, 0);
  for (const NamedShape& g : grads) {
    size_t n = 1;
    for (int64_t d : g.shape) n *= static_cast<size_t>(d);
    offsets.push_back(offsets.back() + n);
  }
  const size_t total = offsets.back();
  BenchBuffer grad_memory, flat_memory;
  COHORT_RETURN_IF_ERROR(grad_memory.Allocate(total * sizeof(float), o.shared_memory));
  COHORT_RETURN_IF_ERROR(flat_memory.Allocate(total * sizeof(float), o.shared_memory));
  auto* all_grads = reinterpret_cast<float*>(grad_memory.data());
  auto* flat = reinterpret_cast<float*>(flat_memory.data());
  std::fill(all_grads, all_grads + total, 1.0f);
  std::fill(flat, flat + total, 1.0f);
  // The raw reference runs before the engine starts, on the calling thread.
  std::vector<double> raw;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    COHORT_RETURN_IF_ERROR(
        Allreduce(flat, flat, total, DataType::kFloat32, AllreduceOptions{ReduceOp::kAverage}));
    if (s >= o.warmup) raw.push_back(Micros(std::chrono::steady_clock::now() - t0).count());
  }
  const double raw_us = MaxOverRanks(Median(raw));

  std::vector<double> step, span;
  std::vector<Handle> handles(grads.size());
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    COHORT_RETURN_IF_ERROR(Barrier());
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < grads.size(); ++i) {
      if (i > 0 && o.delay_us > 0) Spin(o.delay_us);
      float* grad = all_grads + offsets[i];
      Result<Handle> h = AllreduceAsync(grads[i].name, grad, grad, grads[i].shape,
                                        DataType::kFloat32, AllreduceOptions{ReduceOp::kAverage});
      if (!h.ok()) return h.status();
      handles[i] = *h;
    }
    const auto submitted = std::chrono::steady_clock::now();
    for (Handle h : handles) {
      COHORT_RETURN_IF_ERROR(Wait(h));
      Release(h);
    }
    const auto done = std::chrono::steady_clock::now();
    if (s >= o.warmup) {
      step.push_back(Micros(done - t0).count());
      span.push_back(Micros(submitted - t0).count());
    }
  }
  const double step_us = MaxOverRanks(Median(step));
  const double span_us = MaxOverRanks(Median(span));
  if (Rank() == 0) {
    std::printf(
        "# cohort bench engine: %s, %zu tensors, %zu float32 parameters (%.1f MiB), %d ranks,"
        " delay %.0f us between tensors, median of %d steps, slowest rank%s\n",
        o.model.c_str(), grads.size(), total, total * 4.0 / (1 << 20), Size(), o.delay_us, o.steps,
        o.shared_memory ? ", shared-memory gradients" : "");
    std::printf(
        "raw_allreduce_us %.1f\nengine_step_us %.1f\nsubmission_span_us %.1f\n"
        "exposed_us %.1f\nstep_over_raw %.3f\n",
        raw_us, step_us, span_us, step_us - span_us, step_us / raw_us);
  }
  return Shutdown();
}

}  // namespace

int EngineBenchCommand(int argc, char** argv) {
  if (argc >= 1 && (std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "-h") == 0)) {
    PrintHelp(kSynopsis, kHelp);
    return 0;
  }
  EngineBenchOptions o;
  Status parsed = ParseArgs(argc, argv, &o);
  if (!parsed.ok()) return UsageError("bench engine", parsed.message(), kSynopsis);
  Result<std::vector<NamedShape>> grads = ModelGradients(o.model);
  if (!grads.ok()) return UsageError("bench engine", grads.status().message(), kSynopsis);
  if (o.print_shapes) {  // one tensor per line, backward order: name dims...
    for (const NamedShape& g : *grads) {
      std::printf("%s", g.name.c_str());
      for (int64_t d : g.shape) std::printf(" %lld", static_cast<long long>(d));
      std::printf("\n");
    }
    return 0;
  }
  Status s = Run(o, *grads);
  if (!s.ok()) {
    std::fprintf(stderr, "cohort bench engine: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace cohort::cli
