#include "classify/interdiff.h"

#include <cstdint>
#include <string_view>
#include <unordered_map>

namespace portdiff {
namespace {

/// Above this many cells the exact table is too big; lines then match as
/// multisets (each line of `b` consumes one equal line of `a`), which gives the
/// same counts whenever the common lines keep their order, as ports' lines do.
constexpr std::size_t max_cells = 4'000'000;

/// Marks the lines of `a` and `b` that have no partner; returns the number matched.
std::size_t match(const LineSeq& a, const LineSeq& b, std::vector<bool>& a_only,
                  std::vector<bool>& b_only) {
  a_only.assign(a.size(), true);
  b_only.assign(b.size(), true);
  std::size_t head = 0, tail = 0;
  while (head < a.size() && head < b.size() && a.line(head) == b.line(head)) {
    a_only[head] = b_only[head] = false;
    ++head;
  }
  while (tail < a.size() - head && tail < b.size() - head &&
         a.line(a.size() - 1 - tail) == b.line(b.size() - 1 - tail)) {
    a_only[a.size() - 1 - tail] = b_only[b.size() - 1 - tail] = false;
    ++tail;
  }
  const std::size_t n = a.size() - head - tail, m = b.size() - head - tail;
  std::size_t common = head + tail;
  if (n == 0 || m == 0) return common;

  if ((n + 1) * (m + 1) > max_cells) {
    std::unordered_multimap<std::string_view, std::size_t> unmatched;
    for (std::size_t i = 0; i < n; ++i) unmatched.emplace(a.line(head + i), head + i);
    for (std::size_t j = 0; j < m; ++j) {
      auto found = unmatched.find(b.line(head + j));
      if (found == unmatched.end()) continue;
      a_only[found->second] = b_only[head + j] = false;
      unmatched.erase(found);
      ++common;
    }
    return common;
  }
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..] (middle part).
  std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
  const auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& {
    return lcs[i * (m + 1) + j];
  };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) = a.line(head + i) == b.line(head + j) ? at(i + 1, j + 1) + 1
                                                      : std::max(at(i + 1, j), at(i, j + 1));
  for (std::size_t i = 0, j = 0; i < n && j < m;) {
    if (a.line(head + i) == b.line(head + j)) {
      a_only[head + i] = b_only[head + j] = false;
      ++common;
      ++i;
      ++j;
    } else if (at(i + 1, j) >= at(i, j + 1)) {
      ++i;
    } else {
      ++j;
    }
  }
  return common;
}

std::size_t count_true(const std::vector<bool>& flags) {
  std::size_t n = 0;
  for (bool flag : flags) n += flag;
  return n;
}

}  // namespace

Interdiff interdiff(const PatchLines& source, const PatchLines& target) {
  Interdiff out;
  out.common = match(source.added, target.added, out.source_added, out.target_added) +
               match(source.deleted, target.deleted, out.source_deleted, out.target_deleted);
  out.source_only = count_true(out.source_added) + count_true(out.source_deleted);
  out.target_only = count_true(out.target_added) + count_true(out.target_deleted);
  return out;
}

void size_differences(std::vector<FileVerdict>& rows) {
  for (FileVerdict& row : rows) {
    if (row.verdict != Verdict::different || row.source->binary || row.target->binary) continue;
    const Interdiff lines = interdiff(row.source->lines, row.target->lines);
    row.size = {true, lines.common, lines.source_only, lines.target_only};
  }
}

}  // namespace portdiff
