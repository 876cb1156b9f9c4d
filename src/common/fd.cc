// The text of an errno value.
#include "common/fd.h"

#include <cstring>

namespace cohort {

std::string ErrnoText(int error) {
  char buf[256];
  return strerror_r(error, buf, sizeof(buf));  // the GNU variant: returns the text
}

}  // namespace cohort
