#include "harness/scenario_parser.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>

#include "harness/nearest_name.h"
#include "harness/parse_context.h"
#include "harness/rule_catalog.h"
#include "harness/scenario_error.h"
#include "sanitizer/log/printable_text.h"

namespace streamsan::harness {
namespace detail {
namespace {

// "; did you mean 'side'? declared: default, per_thread, side".
std::string declared_list(const std::string& typed, const std::vector<std::string>& names) {
  if (names.empty()) return "none are declared";
  std::string out = did_you_mean(typed, names);
  out += out.empty() ? "declared: " : " declared: ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

template <class Decl>
std::vector<std::string> names_of(const std::vector<Decl>& decls) {
  std::vector<std::string> out;
  for (const auto& d : decls) out.push_back(d.name);
  return out;
}

}  // namespace

void parse_context::check_stream(const yaml_value& where, const std::string& name) const {
  if (name == legacy_stream_name || name == per_thread_stream_name) return;
  for (const auto& s : result.streams) {
    if (s.name == name) return;
  }
  std::vector<std::string> names{std::string(legacy_stream_name),
                                 std::string(per_thread_stream_name)};
  for (const auto& s : result.streams) names.push_back(s.name);
  where.fail("unknown stream '" + name + "' in " + where.what() + "; " + declared_list(name, names));
}

void parse_context::check_event(const yaml_value& where, const std::string& name) const {
  for (const auto& e : result.events) {
    if (e.name == name) return;
  }
  where.fail("unknown event '" + name + "' in " + where.what() + "; " +
             declared_list(name, names_of(result.events)));
}

const buffer_decl& parse_context::check_buffer(const yaml_value& where,
                                               const std::string& name) const {
  if (const buffer_decl* b = result.find_buffer(name)) return *b;
  where.fail("unknown buffer '" + name + "' in " + where.what() + "; " +
             declared_list(name, names_of(result.buffers)));
}

void parse_context::check_device(const yaml_value& where, std::int64_t device) const {
  if (device < 0 || device >= result.requires_.devices) {
    where.fail("device " + std::to_string(device) + " in " + where.what() +
               " is out of range; the scenario requires " +
               std::to_string(result.requires_.devices) +
               " device(s) (raise 'devices' under 'requires')");
  }
}

buffer_slice parse_context::slice(const yaml_value& value) const {
  const std::string text = value.text();
  buffer_slice out;
  const auto open = text.find('[');
  out.buffer = text.substr(0, open);
  const buffer_decl& decl = check_buffer(value, out.buffer);
  out.end = decl.size;
  if (open == std::string::npos) return out;
  // NAME[BEGIN:END], elements, END exclusive.
  const auto colon = text.find(':', open);
  const auto close = text.find(']', open);
  auto parse_index = [&](std::string_view digits, std::uint64_t& into) {
    if (digits.empty() ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c) != 0; })) {
      return false;
    }
    into = std::stoull(std::string(digits));
    return true;
  };
  if (colon == std::string::npos || close == std::string::npos || close != text.size() - 1 ||
      colon > close ||
      !parse_index(std::string_view(text).substr(open + 1, colon - open - 1), out.begin) ||
      !parse_index(std::string_view(text).substr(colon + 1, close - colon - 1), out.end)) {
    value.fail("expected BUFFER or BUFFER[BEGIN:END] for " + value.what() + ", got '" + text + "'");
  }
  if (out.begin >= out.end || out.end > decl.size) {
    value.fail("slice " + text + " in " + value.what() + " is empty or outside buffer " +
               decl.name + " (" + std::to_string(decl.size) + " elements)");
  }
  return out;
}

namespace {

constexpr std::string_view name_chars =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.";

void check_identifier(const yaml_value& value, const std::string& name) {
  if (name.find_first_not_of(name_chars) != std::string::npos) {
    value.fail("'" + name + "' is not a valid name for " + value.what() +
               "; use letters, digits, '_', '-' and '.'");
  }
}

template <class Decl>
void check_unique(const std::vector<Decl>& decls, const yaml_value& value,
                  const std::string& name, std::string_view kind) {
  for (const auto& d : decls) {
    if (d.name == name) {
      value.fail("duplicate " + std::string(kind) + " name '" + name + "' (first declared at " +
                 to_string(d.where) + ")");
    }
  }
}

void parse_name(parse_context& ctx, const yaml_map& top, const scenario_place& place) {
  const yaml_value v = top.get("name");
  const std::string name = v.text();
  if (name.find_first_not_of(std::string(name_chars) + "/") != std::string::npos) {
    v.fail("'" + printable_text(name) +
           "' is not a valid scenario name; use AREA/NAME with letters, digits, '_', '-' and '.'");
  }
  // In a corpus the name is the file's path below the root, so that a
  // failure message leads straight to the file. The expected name comes
  // from absolute paths: it does not depend on the working directory.
  if (place.level == scenario_level::corpus && name != place.expected_name) {
    v.fail("scenario name '" + name + "' does not match its file; expected '" +
           place.expected_name + "', the file's path below the corpus root " +
           place.root.generic_string() +
           (place.marked ? " (marked by " + std::string(corpus_marker_name) + ")"
                         : std::string(" (given with --strict)")) +
           ", without .yaml");
  }
  ctx.result.name = name;
}

bool looks_like_our_rule_id(std::string_view id) {
  return id.starts_with("S-") && id.size() > 2 && std::isupper(static_cast<unsigned char>(id[2]));
}

// Corpus level: at least one rule, each one of semantics.md, quoted word
// for word. Standalone: optional, any id; an id of the S-... form is still
// one of ours, and text is optional.
void parse_rules(parse_context& ctx, const yaml_map& top) {
  const bool corpus = ctx.result.level == scenario_level::corpus;
  const auto list = corpus ? std::optional<yaml_value>(top.get("rules")) : top.find("rules");
  if (!list) return;
  const auto items = list->items();
  if (items.empty() && corpus) list->fail("expected at least one rule in 'rules'");
  for (const auto& item : items) {
    const yaml_map m(item, {"id", "text"});
    const yaml_value id = m.get("id");
    rule_citation c{id.text(), corpus ? m.text("text") : m.text_or("text", ""), m.where()};
    if ((corpus || looks_like_our_rule_id(c.id)) && !is_known_rule(c.id)) {
      id.fail("unknown rule id '" + c.id + "'; expected an S-... id of semantics.md");
    }
    if (corpus && !quotes_rule(c.id, c.text)) {
      m.get("text").fail("the text quoted for " + c.id + " is not the rule's own words (a corpus "
                         "scenario quotes its rules word for word); " + c.id + " says: \"" +
                         std::string(rule_text(c.id)) + "\"");
    }
    for (const auto& earlier : ctx.result.rules) {
      if (earlier.id == c.id) id.fail("rule " + c.id + " is cited twice");
    }
    ctx.result.rules.push_back(std::move(c));
  }
}

void parse_requires(parse_context& ctx, const yaml_map& top) {
  const auto v = top.find("requires");
  if (!v) return;
  const yaml_map m(*v, {"devices", "backends"});
  if (const auto d = m.find("devices")) {
    const auto n = d->integer();
    if (n < 1 || n > 16) d->fail("expected 1 to 16 for " + d->what());
    ctx.result.requires_.devices = static_cast<int>(n);
  }
  if (const auto b = m.find("backends")) {
    for (const auto& item : b->items()) ctx.result.requires_.backends.push_back(item.one_of({"sim", "cuda"}));
  }
}

void parse_streams(parse_context& ctx, const yaml_map& top) {
  const auto v = top.find("streams");
  if (!v) return;
  for (const auto& item : v->items()) {
    const yaml_map m(item, {"name", "device", "flags", "priority"});
    const yaml_value name_v = m.get("name");
    stream_decl d;
    d.name = name_v.text();
    check_identifier(name_v, d.name);
    if (d.name == legacy_stream_name || d.name == per_thread_stream_name) {
      name_v.fail("'" + d.name + "' names a built-in stream; choose another name");
    }
    check_unique(ctx.result.streams, name_v, d.name, "stream");
    if (const auto dev = m.find("device")) {
      ctx.check_device(*dev, dev->integer());
      d.device = static_cast<int>(dev->integer());
    }
    if (const auto f = m.find("flags")) {
      d.flag = f->one_of({"blocking", "non_blocking"}) == "blocking" ? stream_flag::blocking
                                                                     : stream_flag::non_blocking;
    }
    d.priority = static_cast<int>(m.integer_or("priority", 0));
    d.where = m.where();
    ctx.result.streams.push_back(std::move(d));
  }
}

void parse_events(parse_context& ctx, const yaml_map& top) {
  const auto v = top.find("events");
  if (!v) return;
  for (const auto& item : v->items()) {
    const yaml_map m(item, {"name", "flags"});
    const yaml_value name_v = m.get("name");
    event_decl d;
    d.name = name_v.text();
    check_identifier(name_v, d.name);
    check_unique(ctx.result.events, name_v, d.name, "event");
    if (const auto f = m.find("flags")) {
      for (const auto& flag : f->items()) {
        const std::string s = flag.one_of({"timing", "blocking_sync", "interprocess"});
        if (s == "timing") d.timing = true;
        if (s == "blocking_sync") d.blocking_sync = true;
        if (s == "interprocess") d.interprocess = true;
      }
    }
    d.where = m.where();
    ctx.result.events.push_back(std::move(d));
  }
}

buffer_kind parse_buffer_kind(const yaml_value& v) {
  const std::string s =
      v.one_of({"device", "pinned", "pageable", "managed", "stream_ordered", "cached"});
  if (s == "device") return buffer_kind::device;
  if (s == "pinned") return buffer_kind::pinned;
  if (s == "pageable") return buffer_kind::pageable;
  if (s == "managed") return buffer_kind::managed;
  if (s == "stream_ordered") return buffer_kind::stream_ordered;
  return buffer_kind::cached;
}

void parse_buffers(parse_context& ctx, const yaml_map& top) {
  const auto v = top.find("buffers");
  if (!v) return;
  for (const auto& item : v->items()) {
    const yaml_map m(item, {"name", "kind", "device", "size", "fill", "stream"});
    const yaml_value name_v = m.get("name");
    buffer_decl d;
    d.name = name_v.text();
    check_identifier(name_v, d.name);
    check_unique(ctx.result.buffers, name_v, d.name, "buffer");
    d.kind = parse_buffer_kind(m.get("kind"));
    if (const auto dev = m.find("device")) {
      ctx.check_device(*dev, dev->integer());
      d.device = static_cast<int>(dev->integer());
    }
    const yaml_value size_v = m.get("size");
    const auto size = size_v.integer();
    if (size < 1 || size > (1 << 24)) size_v.fail("expected 1 to 16777216 elements for " + size_v.what());
    d.size = static_cast<std::uint64_t>(size);
    if (const auto f = m.find("fill")) {
      const auto values = f->numbers();
      if (values.size() != 1 && values.size() != d.size) {
        f->fail("expected one value or " + std::to_string(d.size) + " values for " + f->what() +
                ", got " + std::to_string(values.size()));
      }
      d.fill.assign(d.size, static_cast<float>(values.front()));
      if (values.size() == d.size) std::copy(values.begin(), values.end(), d.fill.begin());
    }
    if (const auto s = m.find("stream")) {
      if (d.kind != buffer_kind::stream_ordered && d.kind != buffer_kind::cached) {
        s->fail("'stream' applies to stream_ordered and cached buffers only, not to a " +
                std::string(to_string(d.kind)) + " buffer");
      }
      d.stream = s->text();
      ctx.check_stream(*s, d.stream);
    }
    d.where = m.where();
    ctx.result.buffers.push_back(std::move(d));
  }
}

void parse_twin(parse_context& ctx, const yaml_map& top) {
  const auto v = top.find("twin");
  if (!v) return;
  ctx.result.twin = v->text();
  ctx.result.twin_where = v->where();
  if (ctx.result.twin == ctx.result.name) v->fail("a scenario cannot be its own twin");
}

}  // namespace
}  // namespace detail

scenario parse_scenario(std::string_view yaml_text, const scenario_place& place) {
  const std::string& file = place.file;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw scenario_error(mark_of(e.mark, file), "YAML syntax error: " + e.msg);
  }
  if (!root.IsDefined() || root.IsNull()) throw scenario_error({file, 1, 1}, "empty scenario file");
  detail::parse_context ctx;
  ctx.file = file;
  ctx.result.file = file;
  ctx.result.level = place.level;
  ctx.result.corpus_root = place.root;
  const yaml_map top(root, file, "scenario",
                     {"name", "description", "rules", "twin", "requires", "launch_blocking", "streams",
                      "events", "buffers", "operations", "expect"});
  // Order matters: later sections refer to what earlier ones declare.
  detail::parse_name(ctx, top, place);
  ctx.result.description = top.text_or("description", "");
  detail::parse_rules(ctx, top);
  detail::parse_twin(ctx, top);
  detail::parse_requires(ctx, top);
  ctx.result.settings.launch_blocking = top.boolean_or("launch_blocking", false);
  detail::parse_streams(ctx, top);
  detail::parse_events(ctx, top);
  detail::parse_buffers(ctx, top);
  detail::parse_operations(ctx, top.get("operations"));
  detail::parse_expectation(ctx, top.get("expect"));
  if (ctx.result.level == scenario_level::corpus && ctx.result.expects_diagnostics() &&
      ctx.result.twin.empty()) {
    throw scenario_error(top.key_where("expect"),
                         "the scenario expects diagnostics, so it needs a 'twin': the fixed "
                         "scenario that does the same work correctly (every buggy scenario of a "
                         "corpus has one)");
  }
  return std::move(ctx.result);
}

scenario load_scenario(const scenario_place& place) {
  const std::string& file = place.file;
  std::ifstream in(file, std::ios::binary);
  if (!in) throw scenario_error({file, 0, 0}, "cannot open scenario file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw scenario_error({file, 0, 0}, "cannot read scenario file");
  return parse_scenario(text.str(), place);
}

}  // namespace streamsan::harness
