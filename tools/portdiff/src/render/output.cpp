#include "render/output.h"

#include "error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace portdiff {
namespace {

[[noreturn]] void fail(const std::string& destination, int error) {
  throw Error("cannot write the report to " + destination + ": " + std::strerror(error));
}

void write_all(int fd, const std::string& text, const std::string& destination) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(destination, errno);
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

void write_output(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    write_all(STDOUT_FILENO, text, "standard output");
    return;
  }
  const std::string destination = "'" + path + "'";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(destination, errno);
  try {
    write_all(fd, text, destination);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) fail(destination, errno);
}

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

}  // namespace portdiff
