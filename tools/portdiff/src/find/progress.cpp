#include "find/progress.h"

#include <cstdio>
#include <unistd.h>

namespace portdiff {

Progress::Progress(std::size_t total) : total_(total), on_(::isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() {
  if (shown_) std::fputs("\r\033[K", stderr);
}

void Progress::tick(std::size_t done) {
  if (!on_ || (done % 256 != 0 && done != total_)) return;
  std::fprintf(stderr, "\rportdiff find: %zu/%zu commits", done, total_);
  std::fflush(stderr);
  shown_ = true;
}

}  // namespace portdiff
