#include "render/render_reports.h"

#include "render/matrix.h"
#include "render/render.h"
#include "render/render_matrix.h"

namespace portdiff {

std::string render_reports(const std::vector<Report>& reports, const Options& options) {
  if (reports.size() == 1) {
    const Report& report = reports.front();
    switch (options.format) {
      case Format::json:
        return render_json(report, options);
      case Format::text:
        return render_text(report, options);
      case Format::markdown:
        break;
    }
    return render_markdown(report, options);
  }
  const Matrix matrix = build_matrix(reports);
  switch (options.format) {
    case Format::json:
      return render_matrix_json(matrix, options);
    case Format::text:
      return render_matrix_text(matrix, options);
    case Format::markdown:
      break;
  }
  return render_matrix_markdown(matrix, options);
}

}  // namespace portdiff
