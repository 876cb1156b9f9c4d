// `cohort data`: inspect, verify, check out and ingest datasets. Parses the
// command line and calls the public data API (include/cohort/data.h).
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/usage_error.h"
#include "cohort/data.h"
#include "common/env_config.h"
#include "data/storage_backends.h"

namespace cohort::cli {

namespace {

constexpr int kExitFailure = 1;
constexpr char kSynopsis[] = "cohort data <command> [-d DATASET] [options] [ARGS...]";

void PrintUsage() {
  std::fprintf(stdout,
               "usage: %s\n"
               "\n"
               "commands:\n"
               "  info [REF]             commit, schema, sample and chunk counts (default HEAD)\n"
               "  log [REF]              history from REF (default HEAD), newest first\n"
               "  diff A B               sample ids added, removed and changed from A to B\n"
               "  checkout REF           point HEAD at a branch, or detach it at a tag or commit\n"
               "  verify                 read every chunk of every commit and check every\n"
               "                         checksum and SHA-256; exit 1 on any problem\n"
               "  ingest numpy FILE.npy  append each row of FILE.npy as one sample and commit\n"
               "                         (creates the dataset when it does not exist, its\n"
               "                         column fixed to the file's row shape)\n"
               "  gc [--dry-run]         remove chunks and commits no ref reaches (left by an\n"
               "                         interrupted or failed writer), older than every open\n"
               "                         writer's lease and than --min-age SECONDS (300)\n"
               "  cp SRC DST             copy a dataset (all commits, branches and tags) from\n"
               "                         SRC to the empty location DST, refs last\n"
               "  ingest imagefolder DIR [DATASET]\n"
               "                         append DIR/CLASS/IMAGE files (.jpg, .jpeg, .png) as\n"
               "                         image + label samples (label: index of CLASS among\n"
               "                         the sorted folders), read in parallel, and commit\n"
               "\n"
               "DATASET, SRC and DST are dataset locations (docs/dataset-format.md):\n"
               "  %s\n"
               "(s3: credentials and endpoint from AWS_*).\n"
               "REF is a branch, a tag, a commit id or a unique prefix of one, or HEAD;\n"
               "REF~N is the commit N parents back (REF~ = REF~1).\n"
               "\n"
               "options:\n"
               "  -d, --dataset DIR      the dataset (default: the current directory)\n"
               "  -h, --help             print this help\n"
               "ingest options:\n"
               "  --column NAME          column name (default data)\n"
               "  --ragged               numpy, new dataset: rows may differ in shape\n"
               "  --branch NAME          branch to commit to (default: HEAD's branch, or main)\n"
               "  --chunk-size SIZE      target chunk size, e.g. 4M (default 16M)\n"
               "  --compression C        none, zstd or lz4 (default none)\n"
               "  -m, --message TEXT     commit message\n"
               "  --author NAME          commit author (default $USER)\n"
               "  --threads N            imagefolder: reader threads (default: one per core)\n"
               "gc options:\n"
               "  --dry-run              list what would be removed, remove nothing\n"
               "  --min-age SECONDS      keep unreachable objects younger than this (300)\n"
               "  --lease-expiry SECONDS writer leases older than this are dead writers' and\n"
               "                         removed (86400)\n"
               "\n"
               "exit status: 0 on success, 1 when the command fails, 2 for a usage error.\n",
               kSynopsis, data::StorageLocationForms().c_str());
}

int UsageError(const std::string& problem) { return cli::UsageError("data", problem, kSynopsis); }

int Failure(const Status& status) {
  std::fprintf(stderr, "cohort data: %s\n", status.ToString().c_str());
  return kExitFailure;
}

struct Args {
  bool help = false;
  std::string dataset = ".";
  std::map<std::string, std::string> options;  // "--column" -> "x"
  std::vector<std::string> positional;         // the command first
};

// Options may appear anywhere; every option but -h, --ragged and --dry-run takes a value.
Result<Args> ParseArgs(int argc, char** argv) {
  static const std::map<std::string, std::string> kNames = {{"-d", "--dataset"},
                                                            {"--dataset", "--dataset"},
                                                            {"--column", "--column"},
                                                            {"--branch", "--branch"},
                                                            {"--chunk-size", "--chunk-size"},
                                                            {"--compression", "--compression"},
                                                            {"-m", "--message"},
                                                            {"--message", "--message"},
                                                            {"--author", "--author"},
                                                            {"--threads", "--threads"},
                                                            {"--min-age", "--min-age"},
                                                            {"--lease-expiry", "--lease-expiry"}};
  Args args;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      args.help = true;
      continue;
    }
    if (arg == "--ragged" || arg == "--dry-run") {  // flags without a value
      args.options[arg] = "yes";
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      args.positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) name = arg.substr(0, eq);
    auto it = kNames.find(name);
    if (it == kNames.end()) return Status::InvalidArgument("unknown option '" + arg + "'");
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Status::InvalidArgument(name + " needs a value");
    }
    if (it->second == "--dataset")
      args.dataset = value;
    else
      args.options[it->second] = value;
  }
  return args;
}

std::string FormatTime(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm;
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

int Info(const Args& args) {
  const std::string ref = args.positional.size() > 1 ? args.positional[1] : "";
  Result<std::unique_ptr<data::Dataset>> ds = data::Dataset::Open(args.dataset, ref);
  if (!ds.ok()) return Failure(ds.status());
  const data::CommitInfo& c = (*ds)->commit();
  std::printf(
      "dataset   %s\ncommit    %s\nmessage   %s\nsamples   %llu\nchunks    %llu\n"
      "stored    %llu bytes\ncolumns\n",
      args.dataset.c_str(), c.id.c_str(), c.message.c_str(),
      static_cast<unsigned long long>(c.num_samples), static_cast<unsigned long long>(c.num_chunks),
      static_cast<unsigned long long>(c.stored_bytes));
  for (const data::Column& col : c.schema) {
    if (col.kind == data::ColumnKind::kArray) {
      std::printf("  %-20s %-6s %-7s %s\n", col.name.c_str(), data::ColumnKindName(col.kind),
                  DataTypeName(col.dtype), data::ShapeName(col.shape).c_str());
    } else {
      std::printf("  %-20s %s\n", col.name.c_str(), data::ColumnKindName(col.kind));
    }
  }
  return 0;
}

int LogCommand(const Args& args) {
  const std::string ref = args.positional.size() > 1 ? args.positional[1] : "";
  Result<std::vector<data::CommitInfo>> log = data::Log(args.dataset, ref);
  if (!log.ok()) return Failure(log.status());
  for (const data::CommitInfo& c : *log) {
    std::printf("commit %s\nAuthor: %s\nDate:   %s\nSamples: %llu in %llu chunks\n", c.id.c_str(),
                c.author.c_str(), FormatTime(c.time).c_str(),
                static_cast<unsigned long long>(c.num_samples),
                static_cast<unsigned long long>(c.num_chunks));
    if (!c.command.empty()) std::printf("Command: %s\n", c.command.c_str());
    std::printf("\n    %s\n\n", c.message.c_str());
  }
  return 0;
}

int DiffCommand(const Args& args) {
  if (args.positional.size() != 3) return UsageError("diff needs two refs: diff A B");
  Result<data::DiffResult> diff = data::Diff(args.dataset, args.positional[1], args.positional[2]);
  if (!diff.ok()) return Failure(diff.status());
  std::printf("%zu added, %zu removed, %zu changed\n", diff->added.size(), diff->removed.size(),
              diff->changed.size());
  for (uint64_t id : diff->added) std::printf("+ %llu\n", static_cast<unsigned long long>(id));
  for (uint64_t id : diff->removed) std::printf("- %llu\n", static_cast<unsigned long long>(id));
  for (uint64_t id : diff->changed) std::printf("~ %llu\n", static_cast<unsigned long long>(id));
  return 0;
}

int CheckoutCommand(const Args& args) {
  if (args.positional.size() != 2) return UsageError("checkout needs one ref: checkout REF");
  Status s = data::Checkout(args.dataset, args.positional[1]);
  if (!s.ok()) return Failure(s);
  Result<std::string> id = data::ResolveRef(args.dataset, "HEAD");
  if (!id.ok()) return Failure(id.status());
  std::printf("HEAD is now at %s (%s)\n", id->c_str(), args.positional[1].c_str());
  return 0;
}

int VerifyCommand(const Args& args) {
  if (args.positional.size() != 1) return UsageError("verify takes no arguments");
  Result<data::VerifyReport> report = data::Verify(args.dataset);
  if (!report.ok()) return Failure(report.status());
  for (const std::string& problem : report->problems) std::printf("problem: %s\n", problem.c_str());
  std::printf("%s: %llu commits, %llu chunks, %llu bytes checked, %zu problems\n",
              report->problems.empty() ? "ok" : "FAILED",
              static_cast<unsigned long long>(report->commits),
              static_cast<unsigned long long>(report->chunks),
              static_cast<unsigned long long>(report->bytes), report->problems.size());
  return report->problems.empty() ? 0 : kExitFailure;
}

// The options every ingest kind shares; false after printing a usage error.
bool WriterFlags(const Args& args, data::WriterOptions* writer, int* exit_code) {
  auto get = [&](const char* name) {
    auto it = args.options.find(name);
    return it == args.options.end() ? std::string() : it->second;
  };
  writer->branch = get("--branch");
  if (!get("--chunk-size").empty()) {
    Result<uint64_t> size = ParseByteSize(get("--chunk-size"));
    if (!size.ok() || *size == 0) {
      *exit_code = UsageError("--chunk-size '" + get("--chunk-size") + "' is not a positive size");
      return false;
    }
    writer->chunk_bytes = *size;
  }
  if (!get("--compression").empty()) {
    Result<data::Compression> c = data::ParseCompression(get("--compression"));
    if (!c.ok()) {
      *exit_code = UsageError(c.status().message());
      return false;
    }
    writer->compression = *c;
  }
  return true;
}

std::string Option(const Args& args, const char* name) {
  auto it = args.options.find(name);
  return it == args.options.end() ? std::string() : it->second;
}

int IngestImageFolderCommand(const Args& args, const std::string& command_line) {
  if (args.positional.size() != 3 && args.positional.size() != 4) {
    return UsageError("ingest imagefolder needs a folder: ingest imagefolder DIR [DATASET]");
  }
  data::ImageFolderIngestOptions options;
  int code = 0;
  if (!WriterFlags(args, &options.writer, &code)) return code;
  if (!Option(args, "--column").empty()) return UsageError("imagefolder ingest has no --column");
  if (!Option(args, "--ragged").empty()) return UsageError("imagefolder ingest has no --ragged");
  if (!Option(args, "--threads").empty()) {
    Result<uint64_t> n = ParseByteSize(Option(args, "--threads"));
    if (!n.ok() || *n == 0 || *n > 1024)
      return UsageError("--threads '" + Option(args, "--threads") + "' is not a count of 1..1024");
    options.threads = static_cast<int>(*n);
  }
  options.message = Option(args, "--message");
  options.author = Option(args, "--author");
  options.command = command_line;
  const std::string dataset = args.positional.size() == 4 ? args.positional[3] : args.dataset;
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool progress_shown = false;
  options.progress = [&](uint64_t done, uint64_t total) {
    progress_shown = true;
    std::fprintf(stderr, "\ringest: %llu/%llu images, %.0f images/s", (unsigned long long)done,
                 (unsigned long long)total, done / std::max(seconds(), 1e-9));
    std::fflush(stderr);
  };
  Result<data::ImageFolderIngestResult> result =
      data::IngestImageFolder(args.positional[2], dataset, options);
  if (progress_shown) std::fprintf(stderr, "\n");
  if (!result.ok()) return Failure(result.status());
  std::printf("%s %llu images in %zu classes from %s into %s at commit %s (%.1f s%s)\n",
              result->ingest.created ? "created dataset with" : "appended",
              static_cast<unsigned long long>(result->ingest.samples), result->classes.size(),
              args.positional[2].c_str(), dataset.c_str(), result->ingest.commit.c_str(), seconds(),
              result->skipped ? (", skipped " + std::to_string(result->skipped) +
                                 " files that are not .jpg, .jpeg or .png")
                                    .c_str()
                              : "");
  return 0;
}

int IngestCommand(const Args& args, const std::string& command_line) {
  if (args.positional.size() >= 2 && args.positional[1] == "imagefolder") {
    return IngestImageFolderCommand(args, command_line);
  }
  if (args.positional.size() != 3 || args.positional[1] != "numpy") {
    return UsageError(
        "ingest needs a kind and a source: ingest numpy FILE.npy, ingest imagefolder DIR");
  }
  if (!Option(args, "--threads").empty()) return UsageError("numpy ingest has no --threads");
  data::NumpyIngestOptions options;
  int code = 0;
  if (!WriterFlags(args, &options.writer, &code)) return code;
  if (!Option(args, "--column").empty()) options.column = Option(args, "--column");
  options.ragged = !Option(args, "--ragged").empty();
  options.message = Option(args, "--message");
  options.author = Option(args, "--author");
  options.command = command_line;
  Result<data::IngestResult> result = data::IngestNumpy(args.dataset, args.positional[2], options);
  if (!result.ok()) return Failure(result.status());
  std::printf("%s %llu samples from %s into %s at commit %s\n",
              result->created ? "created dataset with" : "appended",
              static_cast<unsigned long long>(result->samples), args.positional[2].c_str(),
              args.dataset.c_str(), result->commit.c_str());
  return 0;
}

// Progress on stderr: one rewritten line on a terminal, else a line per tenth.
void ShowCopyProgress(const data::CopyProgress& p, int* last_tenth) {
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  const int tenth =
      p.objects_total == 0 ? 10 : static_cast<int>(p.objects_done * 10 / p.objects_total);
  if (!tty && tenth == *last_tenth) return;
  *last_tenth = tenth;
  std::fprintf(stderr, "%scp: %llu/%llu objects, %.1f MiB written%s", tty ? "\r" : "",
               static_cast<unsigned long long>(p.objects_done),
               static_cast<unsigned long long>(p.objects_total),
               static_cast<double>(p.bytes_copied) / (1 << 20), tty ? "" : "\n");
  std::fflush(stderr);
}

int CpCommand(const Args& args) {
  if (args.positional.size() != 3)
    return UsageError("cp needs a source and a destination: cp SRC DST");
  int last_tenth = -1;
  data::CopyOptions options;
  options.on_progress = [&](const data::CopyProgress& p) { ShowCopyProgress(p, &last_tenth); };
  Result<data::CopyResult> result =
      data::CopyDataset(args.positional[1], args.positional[2], options);
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\n");
  if (!result.ok()) return Failure(result.status());
  std::printf("copied %llu objects (%llu bytes) from %s to %s; %llu were already there\n",
              static_cast<unsigned long long>(result->copied),
              static_cast<unsigned long long>(result->bytes), args.positional[1].c_str(),
              args.positional[2].c_str(), static_cast<unsigned long long>(result->skipped));
  return 0;
}

// --min-age / --lease-expiry: whole seconds.
bool SecondsFlag(const Args& args, const char* name, int64_t* out, int* exit_code) {
  const std::string text = Option(args, name);
  if (text.empty()) return true;
  if (text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos) {
    *exit_code = UsageError(std::string(name) + " '" + text + "' is not a number of seconds");
    return false;
  }
  *out = std::stoll(text);
  return true;
}

int GcCommand(const Args& args) {
  if (args.positional.size() != 1) return UsageError("gc takes no arguments");
  for (const auto& [name, value] : args.options) {
    if (name != "--dry-run" && name != "--min-age" && name != "--lease-expiry")
      return UsageError("gc has no " + name);
  }
  data::GcOptions options;
  options.dry_run = !Option(args, "--dry-run").empty();
  int code = 0;
  if (!SecondsFlag(args, "--min-age", &options.min_age_s, &code) ||
      !SecondsFlag(args, "--lease-expiry", &options.lease_expiry_s, &code)) {
    return code;
  }
  Result<data::GcReport> report = data::CollectGarbage(args.dataset, options);
  if (!report.ok()) return Failure(report.status());
  const char* verb = options.dry_run ? "would remove" : "removed";
  for (const std::string& key : report->removed) std::printf("%s %s\n", verb, key.c_str());
  for (const std::string& key : report->dead_leases)
    std::printf("%s expired writer lease %s\n", verb, key.c_str());
  std::printf("%s %zu unreachable objects; kept %llu reachable and %llu recent ones "
              "(%zu writers open)\n",
              verb, report->removed.size(), static_cast<unsigned long long>(report->reachable),
              static_cast<unsigned long long>(report->kept_recent), report->open_leases.size());
  return 0;
}

}  // namespace

int DataCommand(int argc, char** argv) {
  Result<Args> args = ParseArgs(argc, argv);
  if (!args.ok()) return UsageError(args.status().message());
  if (args->help) {
    PrintUsage();
    return 0;
  }
  if (args->positional.empty()) return UsageError("no command given");
  const std::string& command = args->positional[0];
  for (const char* no_options : {"info", "log", "diff", "checkout", "verify", "cp"}) {
    if (command == no_options && !args->options.empty()) {
      return UsageError("'" + command + "' takes no option other than -d");
    }
  }
  if (command == "info" || command == "log") {
    if (args->positional.size() > 2) return UsageError(command + " takes at most one ref");
    return command == "info" ? Info(*args) : LogCommand(*args);
  }
  if (command == "diff") return DiffCommand(*args);
  if (command == "checkout") return CheckoutCommand(*args);
  if (command == "verify") return VerifyCommand(*args);
  if (command == "cp") return CpCommand(*args);
  if (command == "gc") return GcCommand(*args);
  if (command == "ingest") {
    std::string line = "cohort data";
    for (int i = 0; i < argc; ++i) line += std::string(" ") + argv[i];
    return IngestCommand(*args, line);
  }
  return UsageError("unknown command '" + command + "'");
}

}  // namespace cohort::cli
