#pragma once

#include <cstddef>

namespace portdiff {

/// "commits 1200/11905" on standard error, rewritten in place as `find` walks;
/// only on a terminal, so logs and pipes see nothing. Cleared when destroyed.
class Progress final {
 public:
  explicit Progress(std::size_t total);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  void tick(std::size_t done);

 private:
  std::size_t total_;
  bool on_;
  bool shown_ = false;
};

}  // namespace portdiff
