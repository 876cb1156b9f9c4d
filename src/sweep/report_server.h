// The channel from trials to the sweep controller: a Unix socket in the
// sweep's directory. A trial's process sends one line per report,
//   "report TRIAL RANK STEP JSON\n"   (JSON: a number, or {"metric": number, ...})
// and waits for one line back: "continue|pause|stop RESOURCE" (RESOURCE: what
// to train up to now, raised when ASHA promotes a trial at once) or "error MESSAGE".
#ifndef COHORT_SWEEP_REPORT_SERVER_H_
#define COHORT_SWEEP_REPORT_SERVER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cohort/status.h"

namespace cohort::sweep {

struct ReportMessage {
  int fd = -1;  // the connection to answer on
  int64_t trial = 0;
  int rank = 0;
  int64_t step = 0;
  std::string payload;  // the JSON value
};

class ReportServer {
 public:
  static Result<ReportServer> Listen(const std::string& path);
  ReportServer(ReportServer&& other) noexcept;
  ReportServer& operator=(ReportServer&&) = delete;
  ~ReportServer();

  const std::string& path() const { return path_; }
  // Waits up to timeout_ms for connections and lines; returns the complete
  // lines received. A malformed line is answered with "error ..." here.
  std::vector<ReportMessage> Poll(int timeout_ms);
  void Reply(int fd, const std::string& line);
  // The file descriptors a forked child must close.
  std::vector<int> Descriptors() const;

 private:
  ReportServer(std::string path, int fd) : path_(std::move(path)), listen_fd_(fd) {}
  void Accept();
  void Read(int fd, std::vector<ReportMessage>* out);

  std::string path_;
  int listen_fd_ = -1;
  std::map<int, std::string> buffers_;  // connection -> bytes not yet a full line
};

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_REPORT_SERVER_H_
