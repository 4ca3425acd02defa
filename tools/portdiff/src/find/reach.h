#pragma once

#include "find/branches.h"

#include <git2.h>

#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace portdiff {

/// Hash and equality of object ids, for the index of walked commits.
struct OidHash final {
  std::size_t operator()(const git_oid& id) const {
    std::size_t h;
    std::memcpy(&h, id.id, sizeof h);  // an object id is already uniformly spread
    return h;
  }
};
struct OidEqual final {
  bool operator()(const git_oid& a, const git_oid& b) const { return git_oid_equal(&a, &b) != 0; }
};

/*
 * Which matched branches reach each walked commit, as one bit per branch. The walk
 * is topological (children first), so a commit's bits are complete when it comes
 * up and flow on to its parents: one pass answers "which branches contain this
 * port", where a merge-base query per port and branch would re-walk the history.
 */
class Reach final {
 public:
  Reach(const std::vector<git_oid>& walked, const std::vector<Branch>& branches);
  /// Passes commit `i`'s branches to its parents; `commit` is walked commit `i`.
  /// A parent outside the walk is COMMIT's history: reaching COMMIT itself is noted.
  void flow(std::size_t i, git_commit* commit, const git_oid& target);
  bool reaches(std::size_t commit, std::size_t branch) const {
    return (bits_[commit * words_ + branch / 64] >> (branch % 64)) & 1U;
  }
  /// Whether the commit is on the branch's first-parent line (`git log
  /// --first-parent`): committed there, or before the branch forked, not merged in.
  bool on_first_parent_line(std::size_t commit, std::size_t branch) const {
    return (first_bits_[commit * words_ + branch / 64] >> (branch % 64)) & 1U;
  }
  /// Whether the branch reaches the commit the walk hid (COMMIT) through walked commits.
  bool reaches_target(std::size_t branch) const {
    return !target_bits_.empty() && ((target_bits_[branch / 64] >> (branch % 64)) & 1U);
  }

 private:
  void set(std::size_t commit, std::size_t branch) {
    bits_[commit * words_ + branch / 64] |= std::uint64_t{1} << (branch % 64);
    first_bits_[commit * words_ + branch / 64] |= std::uint64_t{1} << (branch % 64);
  }
  void merge_into(std::vector<std::uint64_t>& into, std::size_t commit) const {
    into.resize(words_, 0);
    for (std::size_t w = 0; w < words_; ++w) into[w] |= bits_[commit * words_ + w];
  }
  std::size_t words_;
  std::vector<std::uint64_t> bits_;
  std::vector<std::uint64_t> first_bits_;  // reached by first parents only
  std::vector<std::uint64_t> target_bits_;
  std::unordered_map<git_oid, std::size_t, OidHash, OidEqual> index_;
};

}  // namespace portdiff
