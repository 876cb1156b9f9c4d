// Fd: an owned file descriptor (closed when the object goes), and the text
// of an errno value. In common/ because the launcher, the HTTP server and
// the artifact stores all hold descriptors.
#ifndef COHORT_COMMON_FD_H_
#define COHORT_COMMON_FD_H_

#include <unistd.h>

#include <string>
#include <utility>

namespace cohort {

// The text of an errno value.
std::string ErrnoText(int error);

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Close();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~Fd() { Close(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives the descriptor up without closing it.
  int release() { return std::exchange(fd_, -1); }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

}  // namespace cohort

#endif  // COHORT_COMMON_FD_H_
