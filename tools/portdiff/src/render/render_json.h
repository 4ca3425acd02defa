#pragma once

#include "options.h"
#include "render/matrix.h"
#include "report.h"

#include <nlohmann/json.hpp>

namespace portdiff {

/// The JSON pieces render_json and render_matrix share (README: JSON schema).
using json = nlohmann::ordered_json;

json report_json(const Report& report, const Options& options);  // "portdiff/2"
json range_json(const ResolvedRange& range);
json side_json(const FileChange* change);  // null for a side that does not touch the file
json matrix_json(const Matrix& matrix, const Options& options);  // "portdiff-matrix/1"
std::string dump_json(const json& document);

}  // namespace portdiff
