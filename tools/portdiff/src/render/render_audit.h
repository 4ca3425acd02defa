#pragma once

#include "audit/audit.h"
#include "options.h"

#include <string>

namespace portdiff {

/// Stage 6 for `portdiff audit`: one table of the range's commits × targets
/// (identical / different with the rows that differ / not ported / only a hint /
/// contained), then each target's commits with no source in the range, in
/// `options.format` (JSON "portdiff-audit/1"); --brief keeps only the commits that
/// are not identical or contained on every target.
std::string render_audit(const AuditReport& report, const Options& options);

}  // namespace portdiff
