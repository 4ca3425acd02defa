#include "diff/diff_rule.h"

#include "diff/buffer_blobs.h"
#include "git_handle.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace portdiff {
namespace {

/// Bytes `begin` to `begin + size` of one end.
struct Span final {
  std::size_t begin;
  std::size_t size;
};

int on_line(const git_diff_delta* /*delta*/, const git_diff_hunk* /*hunk*/,
            const git_diff_line* line, void* payload) {
  PatchLines& lines = *static_cast<PatchLines*>(payload);
  // The *_EOFNL origins only annotate the previous line, whose content already
  // lacks the '\n'; context lines do not occur with zero context.
  if (line->origin == GIT_DIFF_LINE_ADDITION)
    lines.push('+', line->content, line->content_len, static_cast<std::uint32_t>(line->new_lineno));
  else if (line->origin == GIT_DIFF_LINE_DELETION)
    lines.push('-', line->content, line->content_len, static_cast<std::uint32_t>(line->old_lineno));
  return 0;
}

/// libgit2's xdiff of `old_span` of one end against `new_span` of the other: Myers,
/// indent heuristic, zero context, no whitespace option, no binary check (the
/// caller has decided it is text). The spans go in as blobs, which libgit2 does not
/// hash (Note [Unhashed blobs]); each end is released as soon as its blob holds a
/// copy, so at most one end is held twice.
PatchLines xdiff(Content old_end, Span old_span, Content new_end, Span new_span) {
  git_diff_options options;
  check(git_diff_options_init(&options, GIT_DIFF_OPTIONS_VERSION), "diff options");
  options.flags = GIT_DIFF_FORCE_TEXT | GIT_DIFF_INDENT_HEURISTIC;
  options.context_lines = 0;
  options.interhunk_lines = 0;
  BufferBlobs blobs;
  const BlobPtr old_blob = blobs.blob(old_end.text().substr(old_span.begin, old_span.size));
  old_end = Content();
  const BlobPtr new_blob = blobs.blob(new_end.text().substr(new_span.begin, new_span.size));
  new_end = Content();
  PatchLines lines;
  // An empty path, not none: libgit2 then reads no attributes for a diff driver,
  // as it does not for git_diff_buffers (a null path would become "file").
  check(git_diff_blobs(old_blob.get(), "", new_blob.get(), "", &options, nullptr, nullptr, nullptr,
                       on_line, &lines),
        "diffing two blobs");
  return lines;
}

/// Start offsets of each line of `text`, plus text.size() at the end.
std::vector<std::size_t> line_starts(std::string_view text) {
  std::vector<std::size_t> starts{0};
  for (std::size_t at = text.find('\n'); at != std::string_view::npos; at = text.find('\n', at + 1))
    starts.push_back(at + 1);
  if (starts.back() != text.size()) starts.push_back(text.size());
  return starts;
}

}  // namespace

std::size_t git_trimmed_tail(std::string_view a, std::string_view b) {
  constexpr std::size_t block = 1024;
  const std::size_t smaller = std::min(a.size(), b.size());
  std::size_t trimmed = 0;
  while (trimmed + block <= smaller &&
         a.substr(a.size() - trimmed - block, block) == b.substr(b.size() - trimmed - block, block))
    trimmed += block;
  // Give back the dropped bytes up to the first newline, so what is diffed ends on
  // a whole line (the last dropped block rarely starts on a line boundary).
  const std::size_t start = a.size() - trimmed;
  std::size_t recovered = 0;
  while (recovered < trimmed)
    if (a[start + recovered++] == '\n') break;
  return trimmed - recovered;
}

PatchLines read_git(Content old_end, Content new_end) {
  const std::size_t old_size = old_end.text().size(), new_size = new_end.text().size();
  const std::size_t tail = git_trimmed_tail(old_end.text(), new_end.text());
  return xdiff(std::move(old_end), {0, old_size - tail}, std::move(new_end), {0, new_size - tail});
}

PatchLines read_region(Content old_end, Content new_end) {
  const std::string_view old_text = old_end.text(), new_text = new_end.text();
  const std::vector<std::size_t> a = line_starts(old_text);
  const std::vector<std::size_t> b = line_starts(new_text);
  const std::size_t a_lines = a.size() - 1, b_lines = b.size() - 1;
  const auto a_line = [&](std::size_t i) { return old_text.substr(a[i], a[i + 1] - a[i]); };
  const auto b_line = [&](std::size_t i) { return new_text.substr(b[i], b[i + 1] - b[i]); };

  const std::size_t most = std::min(a_lines, b_lines);
  std::size_t prefix = 0;
  while (prefix < most && a_line(prefix) == b_line(prefix)) ++prefix;
  std::size_t suffix = 0;  // never overlapping the prefix
  while (prefix + suffix < most && a_line(a_lines - 1 - suffix) == b_line(b_lines - 1 - suffix))
    ++suffix;
  PatchLines lines = xdiff(std::move(old_end), {a[prefix], a[a_lines - suffix] - a[prefix]},
                           std::move(new_end), {b[prefix], b[b_lines - suffix] - b[prefix]});
  // Numbered in the whole files, not in the cut-out region.
  for (std::uint32_t& at : lines.added_at) at += static_cast<std::uint32_t>(prefix);
  for (std::uint32_t& at : lines.deleted_at) at += static_cast<std::uint32_t>(prefix);
  return lines;
}

void push_all_lines(std::string_view text, char origin, PatchLines& lines) {
  std::size_t begin = 0;
  std::uint32_t number = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    end = end == std::string_view::npos ? text.size() : end + 1;
    lines.push(origin, text.data() + begin, end - begin, ++number);
    begin = end;
  }
}

}  // namespace portdiff
