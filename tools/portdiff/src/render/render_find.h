#pragma once

#include "options.h"
#include "report.h"

#include <string>
#include <utility>
#include <vector>

namespace portdiff {

/// Stage 6 for `portdiff find`: the listing of a FindReport in `options.format`,
/// and after it, with --report, its comparison as render_reports() writes it. JSON
/// ("portdiff-find/2") carries that comparison as its "report" member instead: a
/// pair report for one port, else a matrix.
std::string render_find(const FindReport& report, const Options& options);

/// How a port was found, strongest evidence first ("cherry-pick trailer", ...);
/// `json_names` gives the JSON names ("cherry-pick-trailer", ...).
std::vector<std::string> found_by(const Port& port, bool json_names);

/// Marks that name no commit in the repository, in words: `cherry-pick trailer
/// names 0a1b2c3d4e5f, not in the repository`; empty when there are none.
std::string unresolved_words(const std::vector<CommitMark>& marks);

/// The same for JSON: [{"mark": "cherry-pick-trailer", "names": hex as written}].
std::vector<std::pair<std::string, std::string>> unresolved_pairs(
    const std::vector<CommitMark>& marks);

}  // namespace portdiff
