#pragma once

#include <string>

#include "git_handle.h"

namespace portdiff {

/*
 * The content a patch compares for one end of a file, read from the object
 * database only (never the work tree): a regular file's blob, a symlink's target
 * (its blob, one line without a final newline) or, for a submodule, the line
 * "Subproject commit <sha>\n" that git diff shows. An absent end (mode 0) is empty.
 */
std::string read_content(git_repository* repo, std::uint32_t mode, const git_oid& id);

/// git's binary test without attributes: a NUL byte in the first 8000 bytes.
/// Portdiff reads no attributes at all (no .gitattributes, no .git/info/attributes),
/// so a report pinned to SHAs depends on those SHAs only.
bool looks_binary(const std::string& content);

}  // namespace portdiff
