// storage_read_bench: read throughput of a dataset storage with one request
// in flight versus many (Storage::ReadMany). Uploads N objects of SIZE bytes
// under LOCATION once, then reads all of them R times per in-flight setting,
// interleaved (rep 1: 1, 4, 16; rep 2: ...), checks every byte, and prints
// the median MiB/s of each setting and its ratio to one in flight.
//   storage_read_bench --location s3://bucket/bench [--objects 8] [--size 16M]
//                      [--in-flight 1,4,16] [--reps 5]
// Credentials and endpoint: AWS_* as for any s3:// dataset.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "common/env_config.h"
#include "data/storage.h"

namespace {

using cohort::Result;
using cohort::Status;
using cohort::data::ByteRange;
using cohort::data::Storage;
using cohort::data::StorageOptions;

struct Args {
  std::string location;
  int objects = 8;
  uint64_t size = 16ull << 20;
  std::vector<int> in_flight = {1, 4, 16};
  int reps = 5;
};

int Usage(const std::string& problem) {
  std::fprintf(stderr,
               "storage_read_bench: %s\nusage: storage_read_bench --location LOC [--objects N] "
               "[--size SIZE] [--in-flight 1,4,16] [--reps R]\n",
               problem.c_str());
  return 2;
}

std::string Content(int object, uint64_t size) {
  std::string s(size, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(object + 1);
  for (uint64_t i = 0; i + 8 <= size; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(&s[i], &x, 8);
  }
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return Usage(a + " needs a value");
    std::string v = argv[++i];
    if (a == "--location") {
      args.location = v;
    } else if (a == "--objects") {
      args.objects = std::atoi(v.c_str());
    } else if (a == "--size") {
      Result<uint64_t> size = cohort::ParseByteSize(v);
      if (!size.ok()) return Usage(size.status().message());
      args.size = *size;
    } else if (a == "--in-flight") {
      args.in_flight.clear();
      std::istringstream list(v);
      for (std::string n; std::getline(list, n, ',');)
        args.in_flight.push_back(std::atoi(n.c_str()));
    } else if (a == "--reps") {
      args.reps = std::atoi(v.c_str());
    } else {
      return Usage("unknown option " + a);
    }
  }
  if (args.location.empty() || args.objects < 1 || args.reps < 1 || args.in_flight.empty())
    return Usage("--location is required; counts must be positive");

  Result<StorageOptions> options = cohort::data::StorageOptionsFromEnv();
  if (!options.ok()) return Usage(options.status().ToString());
  std::vector<std::string> contents;
  {
    Result<std::unique_ptr<Storage>> storage =
        cohort::data::OpenStorage(args.location, true, *options);
    if (!storage.ok()) return Usage(storage.status().ToString());
    for (int o = 0; o < args.objects; ++o) {
      contents.push_back(Content(o, args.size));
      std::fprintf(stderr, "\rupload %d/%d", o + 1, args.objects);
      Status s = (*storage)->Put("obj/" + std::to_string(o), contents.back());
      if (!s.ok()) return Usage(s.ToString());
    }
    std::fprintf(stderr, "\n");
  }
  std::vector<ByteRange> ranges;
  for (int o = 0; o < args.objects; ++o)
    ranges.push_back({"obj/" + std::to_string(o), 0, args.size});

  std::vector<std::vector<double>> mibps(args.in_flight.size());
  for (int rep = 0; rep < args.reps; ++rep) {
    for (size_t k = 0; k < args.in_flight.size(); ++k) {
      StorageOptions o = *options;
      o.max_in_flight = args.in_flight[k];
      Result<std::unique_ptr<Storage>> storage = cohort::data::OpenStorage(args.location, false, o);
      if (!storage.ok()) return Usage(storage.status().ToString());
      auto start = std::chrono::steady_clock::now();
      Result<std::vector<std::string>> got = (*storage)->ReadMany(ranges);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!got.ok()) return Usage(got.status().ToString());
      for (int i = 0; i < args.objects; ++i) {
        if ((*got)[i] != contents[i]) {
          std::fprintf(stderr, "WRONG bytes in object %d\n", i);
          return 1;
        }
      }
      mibps[k].push_back(static_cast<double>(args.size) * args.objects / s / (1 << 20));
      std::fprintf(stderr, "rep %d/%d in-flight %d: %.1f MiB/s\n", rep + 1, args.reps,
                   args.in_flight[k], mibps[k].back());
    }
  }
  std::printf("# %s: %d objects x %llu bytes, %d repetitions, median MiB/s\n",
              args.location.c_str(), args.objects, static_cast<unsigned long long>(args.size),
              args.reps);
  std::printf("# %9s %10s %12s\n", "in_flight", "MiB/s", "ratio_vs_1");
  const double base = Median(mibps[0]);
  for (size_t k = 0; k < args.in_flight.size(); ++k) {
    std::printf("  %9d %10.1f %12.2f\n", args.in_flight[k], Median(mibps[k]),
                Median(mibps[k]) / base);
  }
  return 0;
}
