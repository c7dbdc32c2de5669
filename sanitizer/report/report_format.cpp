#include "sanitizer/report/report_format.h"

#include "sanitizer/report/chrome_trace.h"
#include "sanitizer/report/html_report.h"
#include "sanitizer/report/json_report.h"
#include "sanitizer/report/sarif_report.h"
#include "sanitizer/report/text_report.h"

namespace streamsan {

void print_report(std::ostream& out, report_format format, const report_input& input,
                  symbolizer& symbols, const report_options& options) {
  constexpr auto replace = nlohmann::ordered_json::error_handler_t::replace;
  switch (format) {
    case report_format::text:
      print_text_report(out, input, symbols, options);
      break;
    case report_format::json:
      out << json_report(input, symbols, options).dump(2, ' ', false, replace) << '\n';
      break;
    case report_format::sarif:
      out << sarif_report(input, symbols, options).dump(2, ' ', false, replace) << '\n';
      break;
    case report_format::html:
      print_html_report(out, input, symbols, options);
      break;
    case report_format::chrome_trace:
      out << chrome_trace(input, symbols, options).dump(1, ' ', false, replace) << '\n';
      break;
  }
}

}  // namespace streamsan
