#include "harness/junit_writer.h"

#include <cstdio>

namespace streamsan::harness {
namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') break;
        out += c;
    }
  }
  return out;
}

void write_junit(std::ostream& out, const std::vector<scenario_result>& results) {
  std::size_t failures = 0;
  std::size_t skipped = 0;
  double seconds = 0;
  for (const auto& r : results) {
    failures += r.status == result_status::failed ? 1 : 0;
    skipped += r.status == result_status::skipped ? 1 : 0;
    seconds += r.seconds;
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"streamsan test\" tests=\"" << results.size() << "\" failures=\""
      << failures << "\" skipped=\"" << skipped << "\" time=\"" << seconds_text(seconds) << "\">\n"
      << "  <testsuite name=\"scenarios\" tests=\"" << results.size() << "\" failures=\""
      << failures << "\" errors=\"0\" skipped=\"" << skipped << "\" time=\""
      << seconds_text(seconds) << "\">\n";
  for (const auto& r : results) {
    const auto slash = r.name.rfind('/');
    const std::string area = slash == std::string::npos ? "" : "." + r.name.substr(0, slash);
    const std::string leaf = slash == std::string::npos ? r.name : r.name.substr(slash + 1);
    out << "    <testcase classname=\"" << xml_escape("scenarios" + area) << "\" name=\""
        << xml_escape(leaf + " [" + r.backend + "]") << "\" file=\"" << xml_escape(r.file)
        << "\" time=\"" << seconds_text(r.seconds) << "\">\n";
    out << "      <properties>\n";
    for (const auto& rule : r.rules) {
      out << "        <property name=\"rule\" value=\"" << xml_escape(rule) << "\"/>\n";
    }
    out << "        <property name=\"expected\" value=\"" << xml_escape(r.expected_verdict)
        << "\"/>\n"
        << "        <property name=\"seen\" value=\"" << xml_escape(r.seen_verdict) << "\"/>\n";
    if (r.schedules && r.schedules->first) {
      out << "        <property name=\"witness\" value=\"" << xml_escape(describe(*r.schedules->first))
          << "\"/>\n";
    }
    out << "      </properties>\n";
    switch (r.status) {
      case result_status::passed:
        break;
      case result_status::skipped:
        out << "      <skipped message=\"" << xml_escape(r.skip_reason) << "\"/>\n";
        break;
      case result_status::failed: {
        std::string body;
        for (const auto& f : r.failures) body += f + '\n';
        out << "      <failure message=\""
            << xml_escape(r.failures.empty() ? std::string("failed") : r.failures.front())
            << "\" type=\"scenario\">" << xml_escape(body) << "</failure>\n";
        break;
      }
    }
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

}  // namespace streamsan::harness
