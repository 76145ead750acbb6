// Files compiled into the binary for the HTML report (docs/report.md): the
// vendored Chart.js build (third_party/chartjs/chart.umd.js) and the page's
// own script and style sheet (src/report/assets/). The definitions are
// generated at build time by cmake/embed_files.cmake, so the report needs no
// file at run time and an edit of these files rebuilds the binary.
//
// Thread-safety: immutable static data.
#ifndef MIGSCHED_REPORT_ASSETS_H_
#define MIGSCHED_REPORT_ASSETS_H_

#include <string_view>

namespace migsched::report_assets {

std::string_view ChartJs();    // third_party/chartjs/chart.umd.js, as vendored
std::string_view ReportJs();   // src/report/assets/report.js
std::string_view ReportCss();  // src/report/assets/report.css

}  // namespace migsched::report_assets

#endif  // MIGSCHED_REPORT_ASSETS_H_
