// Process plumbing shared by the launcher and the remote agent.
#include "launch/process_util.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace cohort {

void WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd writable = {fd, POLLOUT, 0};
      ::poll(&writable, 1, -1);
    } else if (!(n < 0 && errno == EINTR)) {
      return;
    }
  }
}

Result<Pipe> MakePipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return Status::IoError("pipe: " + ErrnoText(errno));
  return Pipe{Fd(fds[0]), Fd(fds[1])};
}

Status EnsureStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    int opened = ::open("/dev/null", O_RDWR);  // the lowest free descriptor: `fd`
    if (opened < 0) return Status::IoError("/dev/null: " + ErrnoText(errno));
  }
  return Status::OK();
}

std::optional<std::string> FindExecutable(const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), F_OK) != 0) return std::nullopt;
    return name;
  }
  const char* path = std::getenv("PATH");
  const std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = std::min(dirs.find(':', start), dirs.size());
    std::string dir = dirs.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

Status SignalRouting::Install() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  // A signal the launcher was started ignoring (nohup; `&` in a script)
  // stays ignored: a blocked signal is queued even when ignored, so routing
  // it would undo that choice.
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current;
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
      sigaddset(&set, sig);
    }
  }
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  struct sigaction ign = {};
  ign.sa_handler = SIG_IGN;
  // With SIGCHLD ignored the kernel would reap the workers itself and their
  // exit statuses would be lost. With SIGPIPE at its default a reader of the
  // launcher's output going away would kill the launcher and orphan the job.
  if (::sigaction(SIGCHLD, &dfl, &old_chld_) != 0 || ::sigaction(SIGPIPE, &ign, &old_pipe_) != 0 ||
      ::pthread_sigmask(SIG_BLOCK, &set, &old_mask_) != 0) {
    return Status::IoError("setting up signal handling: " + ErrnoText(errno));
  }
  installed_ = true;
  int fd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) return Status::IoError("signalfd: " + ErrnoText(errno));
  fd_ = Fd(fd);
  return Status::OK();
}

std::vector<char*> NullTerminated(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (const std::string& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace cohort
