#include "sanitizer/report/html_report.h"

#include <sstream>

#include "sanitizer/report/cause_text.h"
#include "sanitizer/report/describe.h"
#include "sanitizer/report/fix_hint.h"
#include "sanitizer/report/text_report.h"
#include "sanitizer/report/timeline_layout.h"

namespace streamsan {
namespace {

// Note [The page fetches nothing]
// No external style sheet, font, script or image; the SVG is inline and
// carries no xmlns (HTML5 does not need one), so the page holds no URL at
// all, and tests check that it stays so.
constexpr std::string_view style = R"(
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 24px 48px; color: #1d2330; background: #fafbfc; }
h1 { font-size: 20px; margin: 20px 0 4px; }
h2 { font-size: 16px; margin: 0 0 8px; color: #a1121f; }
.summary { color: #555; margin-bottom: 16px; }
section.warning { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: 14px 18px; margin: 16px 0; }
.access { margin: 2px 0; color: #1a4f9c; }
.cause { margin: 8px 0; padding: 6px 10px; background: #fff6df; border-left: 4px solid #e3a008; }
.fix { margin: 8px 0; padding: 6px 10px; background: #e9f7ee; border-left: 4px solid #2f9e5b; }
.why, .note { margin: 6px 0; color: #444; }
code { background: #eef1f4; padding: 0 3px; border-radius: 3px; font-size: 13px; }
.timeline { overflow-x: auto; border: 1px solid #e3e6ea; border-radius: 4px; background: #fcfdfe; margin: 10px 0 4px; }
.legend { font-size: 12px; color: #555; margin: 2px 0 8px; }
.legend span { margin-right: 16px; }
svg text { font: 12px system-ui, sans-serif; }
svg .lane-label { font-weight: 600; fill: #39414d; }
svg .lane { fill: #f2f4f7; }
svg .op rect { fill: #dfe9f8; stroke: #7c98c4; stroke-width: 1; cursor: pointer; }
svg .op.host rect { fill: #fbe7d3; stroke: #c7925c; }
svg .op.sync rect { fill: #e8e8ee; stroke: #8f8fa3; }
svg .op.conflict rect { fill: #fbd5d8; stroke: #c81e2c; stroke-width: 2.5; }
svg .op.selected rect { stroke: #111; stroke-width: 3; }
svg .op:focus { outline: none; }
svg .op .seq { font-size: 10px; fill: #666; }
svg .role { font-size: 11px; font-weight: 700; fill: #c81e2c; }
svg .edge { fill: none; stroke: #4b5563; stroke-width: 1.4; stroke-linejoin: round; }
svg .edge.missing { stroke: #c81e2c; stroke-width: 2; stroke-dasharray: 6 4; }
svg .gap { fill: #888; font-style: italic; }
.stack-panel { font: 12px/1.5 ui-monospace, monospace; background: #f6f8fa; border: 1px solid #e3e6ea; border-radius: 4px; padding: 8px 12px; min-height: 2.5em; white-space: pre-wrap; }
.stack-panel h3 { font: 600 13px system-ui, sans-serif; margin: 0 0 4px; }
.stack-panel ol { margin: 0; padding-left: 0; list-style: none; }
.stack-panel details { margin-top: 4px; color: #555; }
details.text { margin-top: 10px; }
details.text pre { font-size: 12px; background: #f6f8fa; padding: 8px; overflow-x: auto; }
)";

constexpr std::string_view script = R"(
(function () {
  function select(op) {
    var section = op.closest('section');
    section.querySelectorAll('.op.selected').forEach(function (o) { o.classList.remove('selected'); });
    op.classList.add('selected');
    var source = document.getElementById(op.getAttribute('data-stack'));
    var panel = section.querySelector('.stack-panel');
    panel.innerHTML = source ? source.innerHTML : '';
    panel.setAttribute('data-showing', op.getAttribute('data-stack'));
  }
  document.addEventListener('click', function (event) {
    var op = event.target.closest && event.target.closest('.op');
    if (op) select(op);
  });
  document.addEventListener('keydown', function (event) {
    var op = event.target.closest && event.target.closest('.op');
    if (op && (event.key === 'Enter' || event.key === ' ')) { select(op); event.preventDefault(); }
  });
  document.querySelectorAll('section.warning .op.current').forEach(select);
})();
)";

// Geometry of a timeline picture, in pixels.
constexpr int left_margin = 104;
constexpr int column_width = 138;
constexpr int box_width = 122;
constexpr int box_height = 36;
constexpr int lane_height = 66;
constexpr int top_margin = 26;
constexpr std::size_t label_chars = 17;

std::string truncated(std::string text) {
  if (text.size() <= label_chars) return text;
  // Cut on a UTF-8 character boundary.
  std::size_t cut = label_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

bool is_sync(operation_kind op) noexcept {
  switch (op) {
    case operation_kind::event_record:
    case operation_kind::event_wait:
    case operation_kind::event_synchronize:
    case operation_kind::event_query:
    case operation_kind::stream_synchronize:
    case operation_kind::stream_query:
    case operation_kind::stream_wait_stream:
    case operation_kind::device_synchronize:
      return true;
    case operation_kind::kernel:
    case operation_kind::memcpy:
    case operation_kind::staged_upload:
    case operation_kind::memset:
    case operation_kind::host_func:
    case operation_kind::host_access:
    case operation_kind::graph_node:
    case operation_kind::alloc:
    case operation_kind::free:
    case operation_kind::stream_destroy:
    case operation_kind::event_destroy:
    case operation_kind::graph_launch:
      return false;
  }
  return false;
}

class html_printer {
 public:
  html_printer(std::ostream& out, symbolizer& symbols, const report_options& options)
      : out_(out), symbols_(symbols), options_(options), tables_(symbols.tables()) {}

  void page(const report_input& input);

 private:
  void warning(const diagnostic& d, std::size_t ordinal);
  void timeline(const race_timeline& t, const std::string& prefix);
  void stack_block(const std::string& id, const std::string& title, stack_id stack,
                   const operation_ref* op);

  std::ostream& out_;
  symbolizer& symbols_;
  const report_options& options_;
  const log_tables& tables_;
};

void html_printer::stack_block(const std::string& id, const std::string& title, stack_id stack,
                               const operation_ref* op) {
  out_ << "<div class=\"stack\" id=\"" << id << "\" hidden><h3>" << html_escaped(title)
       << "</h3><ol>";
  const auto view = view_stack(stack, op, symbols_, options_.stacks);
  if (view.lines.empty()) out_ << "<li>(no stack recorded)</li>";
  for (std::size_t i = 0; i < view.lines.size(); ++i) {
    out_ << "<li>" << html_escaped(describe_stack_line(i, view.lines[i], options_.source_root))
         << "</li>";
  }
  out_ << "</ol>";
  const auto frames = tables_.stack(stack);
  if (!options_.stacks.raw && frames.size() != view.lines.size()) {
    stack_view_options raw_view = options_.stacks;
    raw_view.raw = true;
    const auto all = view_stack(stack, op, symbols_, raw_view);
    out_ << "<details><summary>all " << all.lines.size() << " frames</summary><ol>";
    for (std::size_t i = 0; i < all.lines.size(); ++i) {
      out_ << "<li>" << html_escaped(describe_stack_line(i, all.lines[i], options_.source_root))
           << " <small>[" << to_string(all.lines[i].kind) << "]</small></li>";
    }
    out_ << "</ol></details>";
  }
  out_ << "</div>\n";
}

void html_printer::timeline(const race_timeline& t, const std::string& prefix) {
  const timeline_layout layout = lay_out(t);
  const int width = left_margin + static_cast<int>(layout.columns) * column_width + 16;
  const int height = top_margin + static_cast<int>(layout.lanes.size()) * lane_height + 6;
  const auto box_x = [&](std::uint32_t i) { return left_margin + static_cast<int>(layout.column[i]) * column_width; };
  const auto box_y = [&](std::uint32_t i) {
    return top_margin + static_cast<int>(layout.lane[i]) * lane_height + (lane_height - box_height) / 2 - 4;
  };

  out_ << "<div class=\"timeline\"><svg role=\"img\" width=\"" << width << "\" height=\"" << height
       << "\" viewBox=\"0 0 " << width << ' ' << height << "\">\n";
  out_ << "<defs><marker id=\"" << prefix << "-arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" "
          "markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 "
          "L0,10 z\" fill=\"#4b5563\"/></marker><marker id=\"" << prefix << "-missing\" viewBox=\"0 0 10 10\" "
          "refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
          "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#c81e2c\"/></marker></defs>\n";
  for (std::size_t l = 0; l < layout.lanes.size(); ++l) {
    const int y = top_margin + static_cast<int>(l) * lane_height;
    out_ << "<g class=\"lane-row\" data-lane=\"" << html_escaped(layout.lanes[l].label) << "\">"
         << "<rect class=\"lane\" x=\"0\" y=\"" << y << "\" width=\"" << width << "\" height=\""
         << lane_height - 6 << "\"/><text class=\"lane-label\" x=\"8\" y=\""
         << y + lane_height / 2 << "\">" << html_escaped(layout.lanes[l].label) << "</text></g>\n";
  }
  if (layout.has_gap) {
    const int x = left_margin + static_cast<int>(layout.gap_column) * column_width;
    out_ << "<text class=\"gap\" x=\"" << x + 8 << "\" y=\"" << top_margin - 8 << "\">"
         << (t.previous_outside_window ? std::string("… earlier operations not kept")
                                       : "… " + std::to_string(t.omitted) + " not shown")
         << "</text>\n";
  }
  // Note [Edge routes]
  // Each column holds one operation, so an edge between neighbouring
  // columns can curve straight across; a longer one would cross the boxes
  // of the columns between. It leaves its source downwards, runs along the
  // free strip under the boxes of the source's lane, and enters its target
  // from above or below: no box lies in the source's or the target's column
  // but their own. The missing edge runs a little lower than the others.
  const auto route = [&](std::uint32_t from, std::uint32_t to, int strip_offset) {
    std::ostringstream d;
    const int x1 = box_x(from), y1 = box_y(from);
    const int x2 = box_x(to), y2 = box_y(to);
    if (layout.column[to] == layout.column[from] + 1 || layout.column[to] <= layout.column[from]) {
      const int sx = x1 + box_width, sy = y1 + box_height / 2;
      const int ex = x2, ey = y2 + box_height / 2;
      const int dx = std::max(24, (ex - sx) / 2);
      d << "M" << sx << "," << sy << " C" << sx + dx << "," << sy << " " << ex - dx << "," << ey
        << " " << ex << "," << ey;
      return d.str();
    }
    const int strip = y1 + box_height + 6 + strip_offset;
    const int sx = x1 + box_width / 2 + strip_offset, ex = x2 + box_width / 2 - strip_offset;
    const int ey = layout.lane[to] > layout.lane[from] ? y2 : y2 + box_height;
    const int ey_strip = layout.lane[to] == layout.lane[from] ? y2 + box_height : ey;
    d << "M" << sx << "," << y1 + box_height << " L" << sx << "," << strip << " L" << ex << ","
      << strip << " L" << ex << "," << ey_strip;
    return d.str();
  };
  // Edges first, so boxes draw over their ends.
  for (const timeline_edge& e : t.edges) {
    if (e.from >= t.ops.size() || e.to >= t.ops.size()) continue;
    out_ << "<path class=\"edge\" data-kind=\"" << to_string(e.kind) << "\" data-from=\"" << e.from
         << "\" data-to=\"" << e.to << "\" d=\"" << route(e.from, e.to, 0) << "\" marker-end=\"url(#"
         << prefix << "-arrow)\"><title>happens before (" << to_string(e.kind) << ")</title></path>\n";
  }
  out_ << "<path class=\"edge missing\" data-from=\"" << t.previous << "\" data-to=\"" << t.current
       << "\" d=\"" << route(t.previous, t.current, 5) << "\" marker-end=\"url(#"
       << prefix << "-missing)\"><title>missing: nothing orders these two</title></path>\n";
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const timeline_op& op = t.ops[i];
    std::string classes = "op";
    if (op.context == context_kind::host_thread) classes += " host";
    if (is_sync(op.op)) classes += " sync";
    if (i == t.previous || i == t.current) classes += " conflict";
    if (i == t.current) classes += " current";
    if (i == t.previous) classes += " previous";
    const int x = box_x(i), y = box_y(i);
    out_ << "<g class=\"" << classes << "\" tabindex=\"0\" data-index=\"" << i << "\" data-stack=\""
         << prefix << "-op" << i << "\"><title>" << html_escaped(timeline_title(op, tables_))
         << "</title><rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << box_width
         << "\" height=\"" << box_height << "\" rx=\"5\"/><text x=\"" << x + 7 << "\" y=\"" << y + 15
         << "\">" << html_escaped(truncated(timeline_label(op, tables_))) << "</text><text class=\"seq\" x=\""
         << x + 7 << "\" y=\"" << y + 29 << "\">seq " << op.seq << "</text>";
    if (i == t.previous || i == t.current) {
      out_ << "<text class=\"role\" x=\"" << x + box_width << "\" y=\"" << y - 4
           << "\" text-anchor=\"end\">"
           << (i == t.current ? "current" : "previous") << "</text>";
    }
    out_ << "</g>\n";
  }
  out_ << "</svg></div>\n<p class=\"legend\"><span>▭ operation, in issue order</span>"
          "<span>→ happens before</span><span style=\"color:#c81e2c\">⇢ missing order</span>"
          "<span style=\"color:#c81e2c\">■ the conflicting pair</span></p>\n";
  out_ << "<div class=\"stack-panel\">Click an operation to see its stack.</div>\n";
  for (std::uint32_t i = 0; i < t.ops.size(); ++i) {
    const operation_ref o = as_operation(t.ops[i]);
    stack_block(prefix + "-op" + std::to_string(i), timeline_title(t.ops[i], tables_),
                t.ops[i].stack, &o);
  }
}

void html_printer::warning(const diagnostic& d, std::size_t ordinal) {
  const std::string prefix = "w" + std::to_string(d.id != 0 ? d.id : ordinal);
  const alloc_id shown = shown_allocation(d);
  out_ << "<section class=\"warning\" id=\"" << prefix << "\" data-kind=\"" << to_string(d.kind)
       << "\">\n<h2>" << html_escaped(headline(d, tables_)) << "</h2>\n";
  out_ << "<p class=\"access current-access\">" << html_escaped(describe_access(d.current, tables_, shown))
       << "</p>\n";
  if (d.previous) {
    out_ << "<p class=\"access previous-access\">"
         << html_escaped(describe_previous(*d.previous, tables_, shown)) << "</p>\n";
  }
  if (const auto cause = cause_sentence(d, tables_)) {
    out_ << "<p class=\"cause\"><b>Cause:</b> " << html_escaped(*cause) << ".";
    if (const auto reference = cause_reference(d)) out_ << ' ' << html_escaped(*reference);
    out_ << "</p>\n";
  }
  if (const auto why = explanation(d)) out_ << "<p class=\"why\">" << html_escaped(*why) << "</p>\n";
  if (const auto prevented = prevented_sentence(d)) {
    out_ << "<p class=\"note\">" << html_escaped(*prevented) << "</p>\n";
  }
  if (const auto fix = fix_hint(d, tables_, options_.vocabulary); !fix.empty()) {
    // Backticks mark code in hints.
    std::string html = html_escaped(fix);
    std::string marked;
    bool open = false;
    for (const char c : html) {
      if (c == '`') {
        marked += open ? "</code>" : "<code>";
        open = !open;
      } else {
        marked += c;
      }
    }
    if (open) marked += "</code>";
    out_ << "<p class=\"fix\"><b>Fix:</b> " << marked << "</p>\n";
  }
  if (d.timeline) {
    timeline(*d.timeline, prefix);
  } else if (is_race(d.kind)) {
    out_ << "<p class=\"note\">No timeline was kept for this race.</p>\n";
  }
  std::ostringstream text;
  report_options plain = options_;
  plain.color = false;
  print_text_diagnostic(text, d, symbols_, plain);
  out_ << "<details class=\"text\"><summary>Text report</summary><pre>" << html_escaped(text.str())
       << "</pre></details>\n</section>\n";
}

void html_printer::page(const report_input& input) {
  out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>streamsan report</title>\n<style>"
       << style << "</style>\n</head>\n<body>\n";
  // Candidates are no warnings (Note [Candidates and confirmed diagnostics]).
  const auto total = confirmed_count(input.diagnostics);
  out_ << "<h1>streamsan: " << total << (total == 1 ? " warning" : " warnings") << "</h1>\n";
  out_ << "<p class=\"summary\">" << input.records_processed << " records analyzed";
  if (input.suppressed > 0) out_ << ", " << input.suppressed << " warnings suppressed";
  if (input.unmodelled_calls != nullptr && !input.unmodelled_calls->empty()) {
    out_ << "; unmodelled CUDA API calls:";
    const char* separator = " ";
    for (const auto& [name, count] : *input.unmodelled_calls) {
      out_ << separator << html_escaped(name) << " (" << count << ")";
      separator = ", ";
    }
  }
  // What was not checked, as the text summary says it (Notes [Kernels that
  // synchronize on the device] and [Host threads order what the log does
  // not show]).
  if (input.device_synchronized_conflicts > 0) {
    out_ << "; not checked: " << input.device_synchronized_conflicts
         << " conflicts between cooperative launches on different devices";
  }
  if (input.host_ordered_conflicts > 0) {
    out_ << "; not checked: " << input.host_ordered_conflicts
         << " conflicts whose earlier access a host thread had already seen complete";
  }
  out_ << ".</p>\n";
  std::size_t ordinal = 0;
  for (const diagnostic& d : input.diagnostics) {
    if (!is_candidate(d)) warning(d, ++ordinal);
  }
  if (total < input.diagnostics.size()) {
    std::ostringstream possible;
    print_possible_races(possible, input, symbols_, options_);
    out_ << "<section class=\"possible\"><h2>Possible races</h2>\n<pre>"
         << html_escaped(possible.str()) << "</pre>\n</section>\n";
  }
  out_ << "<script>" << script << "</script>\n</body>\n</html>\n";
}

}  // namespace

std::string html_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

void print_html_report(std::ostream& out, const report_input& input, symbolizer& symbols,
                       const report_options& options) {
  html_printer(out, symbols, options).page(input);
}

}  // namespace streamsan
