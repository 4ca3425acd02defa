#include "find/reach.h"

namespace portdiff {

Reach::Reach(const std::vector<git_oid>& walked, const std::vector<Branch>& branches)
    : words_((branches.size() + 63) / 64),
      bits_(walked.size() * words_, 0),
      first_bits_(walked.size() * words_, 0) {
  index_.reserve(walked.size());
  for (std::size_t i = 0; i < walked.size(); ++i) index_.emplace(walked[i], i);
  for (std::size_t b = 0; b < branches.size(); ++b) {
    auto found = index_.find(branches[b].tip);
    if (found != index_.end()) set(found->second, b);
  }
}

void Reach::flow(std::size_t i, git_commit* commit, const git_oid& target) {
  for (unsigned p = 0; p < git_commit_parentcount(commit); ++p) {
    const git_oid* parent = git_commit_parent_id(commit, p);
    if (git_oid_equal(parent, &target)) merge_into(target_bits_, i);
    auto found = index_.find(*parent);
    if (found == index_.end()) continue;
    for (std::size_t w = 0; w < words_; ++w) {
      bits_[found->second * words_ + w] |= bits_[i * words_ + w];
      if (p == 0) first_bits_[found->second * words_ + w] |= first_bits_[i * words_ + w];
    }
  }
}

}  // namespace portdiff
