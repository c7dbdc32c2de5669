// The `operations:` list. Each operation is a mapping whose `op` key selects
// the operation and therefore the keys it accepts.
#include <algorithm>
#include <functional>
#include <initializer_list>

#include "harness/operation_catalog.h"
#include "harness/parse_context.h"
#include "harness/scenario_error.h"

namespace streamsan::harness::detail {
namespace {

struct op_parser {
  parse_context& ctx;
  std::vector<std::string> captured_graphs;
  int guard_depth = 0;

  void parse_list(const yaml_value& list);
  void parse_one(const yaml_value& item);

  std::string stream(const yaml_map& m, std::string_view key = "stream") const {
    const auto v = m.find(key);
    if (!v) return "";
    std::string s = v->text();
    ctx.check_stream(*v, s);
    return s;
  }
  std::string required_stream(const yaml_map& m, std::string_view key = "stream") const {
    const yaml_value v = m.get(key);
    std::string s = v.text();
    ctx.check_stream(v, s);
    return s;
  }
  std::string event(const yaml_map& m, std::string_view key = "event") const {
    const yaml_value v = m.get(key);
    std::string e = v.text();
    ctx.check_event(v, e);
    return e;
  }
  std::string buffer(const yaml_map& m, std::string_view key = "buffer") const {
    const yaml_value v = m.get(key);
    std::string b = v.text();
    ctx.check_buffer(v, b);
    return b;
  }
  std::vector<buffer_slice> slices(const yaml_map& m, std::string_view key) const {
    std::vector<buffer_slice> out;
    const auto v = m.find(key);
    if (!v) return out;
    if (v->is_scalar()) return {ctx.slice(*v)};
    for (const auto& item : v->items()) out.push_back(ctx.slice(item));
    return out;
  }
  int device(const yaml_map& m, int fallback) const {
    const auto v = m.find("device");
    if (!v) return fallback;
    ctx.check_device(*v, v->integer());
    return static_cast<int>(v->integer());
  }
  // `stream: s` or `event: e` (or neither when `allow_device`).
  std::pair<sync_target, std::string> target(const yaml_map& m, bool allow_device) const {
    if (m.has("stream") && m.has("event")) {
      throw scenario_error(m.key_where("event"),
                           "give either 'stream' or 'event' in " + m.what() + ", not both");
    }
    if (m.has("stream")) return {sync_target::stream, required_stream(m)};
    if (m.has("event")) return {sync_target::event, event(m)};
    if (!allow_device) m.fail("expected 'stream' or 'event' in " + m.what());
    return {sync_target::device, ""};
  }

  // `keys` receives the accepted keys (they outlive the returned map).
  operation_body launch(const yaml_value& item, const std::string& what,
                        std::vector<std::string_view>& keys);
  operation_body copy_or_set(const yaml_map& m, bool is_memset) const;
};

std::string op_list() {
  std::string out;
  for (const auto n : operation_names()) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// 'op', 'label' and the operation's own keys.
std::vector<std::string_view> keys_of(const operation_spec& spec) {
  std::vector<std::string_view> keys{"op", "label"};
  keys.insert(keys.end(), spec.keys.begin(), spec.keys.end());
  return keys;
}

void check_element_count(const yaml_value& v, const std::vector<float>& values,
                         const buffer_slice& slice) {
  const auto n = slice.end - slice.begin;
  if (values.size() != 1 && values.size() != n) {
    v.fail("expected one value or " + std::to_string(n) + " values for " + v.what() + " (" +
           to_string(slice) + "), got " + std::to_string(values.size()));
  }
}

std::vector<float> floats(const std::vector<double>& in) {
  return {in.begin(), in.end()};
}

operation_body op_parser::copy_or_set(const yaml_map& m, bool is_memset) const {
  const bool async = m.boolean_or("async", false);
  if (!async && m.has("stream")) {
    throw scenario_error(m.key_where("stream"),
                         "'stream' needs 'async: true' in " + m.what() +
                             " (a synchronous copy or memset uses the default stream)");
  }
  if (is_memset) {
    memset_op op;
    op.dst = ctx.slice(m.get("dst"));
    const yaml_value value = m.get("value");
    const auto byte = value.integer();
    if (byte < 0 || byte > 255) value.fail("expected a byte (0 to 255) for " + value.what());
    op.value = static_cast<int>(byte);
    op.async = async;
    op.stream = stream(m);
    return op;
  }
  memcpy_op op;
  op.dst = ctx.slice(m.get("dst"));
  op.src = ctx.slice(m.get("src"));
  if (op.dst.end - op.dst.begin != op.src.end - op.src.begin) {
    m.fail("memcpy copies equal lengths; src " + to_string(op.src) + " and dst " +
           to_string(op.dst) + " differ in " + m.what());
  }
  op.async = async;
  op.stream = stream(m);
  return op;
}

operation_body op_parser::launch(const yaml_value& item, const std::string& what,
                                 std::vector<std::string_view>& keys) {
  // The kernel decides which keys are parameters, so read it before the map.
  const YAML::Node kernel_node = item.node()["kernel"];
  if (!kernel_node.IsDefined()) {
    throw scenario_error(item.where(), "missing required key 'kernel' in " + what);
  }
  const yaml_value kv(kernel_node, ctx.file, "'kernel' of " + what);
  const auto kind = find_kernel(kv.text());
  if (!kind) {
    std::vector<std::string_view> names;
    for (const auto& k : kernel_catalog()) names.push_back(k.name);
    kv.fail("unknown kernel '" + kv.text() + "'" +
            hint_or_expected(kv.text(), names, join_choices(names)));
  }
  const kernel_signature& sig = signature(*kind);
  keys = keys_of(*find_operation("launch"));
  for (const auto& p : sig.params) keys.push_back(p.name);
  const yaml_map m(item.node(), ctx.file, what + " (kernel " + std::string(sig.name) + ")", keys);
  launch_op op;
  op.kernel = *kind;
  op.stream = stream(m);
  for (const auto& p : sig.params) {
    switch (p.role) {
      case param_role::read:
      case param_role::write:
      case param_role::read_write:
        op.buffers.push_back(ctx.slice(m.get(p.name)));
        break;
      case param_role::scalar:
        op.scalars.push_back(p.optional ? m.number_or(p.name, p.default_value)
                                        : m.get(p.name).number());
        break;
    }
  }
  return op;
}

void op_parser::parse_list(const yaml_value& list) {
  for (const auto& item : list.items()) parse_one(item);
}

void op_parser::parse_one(const yaml_value& item) {
  std::string what = "operation at line " + std::to_string(item.where().line);
  if (!item.is_map()) item.fail("expected a mapping with an 'op' key for " + item.what());
  const YAML::Node op_node = item.node()["op"];
  if (!op_node.IsDefined()) {
    item.fail("missing required key 'op' in " + what + "; expected one of: " + op_list());
  }
  const yaml_value op_v(op_node, ctx.file, "'op' of " + what);
  const std::string op = op_v.text();
  const operation_spec* spec = find_operation(op);
  if (spec == nullptr) {
    const auto names = operation_names();
    std::string message = "unknown operation '" + op + "'" +
                          hint_or_expected(op, names, "one of: " + op_list());
    if (find_kernel(op)) {
      // A kernel's name where an operation belongs.
      message += "; a kernel runs as 'op: launch, kernel: " + op + "'";
    }
    op_v.fail(message);
  }
  what = op + " at line " + std::to_string(item.where().line);
  const std::vector<std::string_view> keys = keys_of(*spec);

  operation result;
  result.where = item.where();
  auto finish = [&](const yaml_map& m, operation_body body) {
    if (const auto l = m.find("label")) {
      result.label = l->text();
      if (result.label.find_first_not_of(
              "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") !=
          std::string::npos) {
        l->fail("'" + result.label + "' is not a valid label; use letters, digits, '_', '-', '.'");
      }
      const auto earlier = ctx.result.find_label(result.label);
      if (earlier != std::string::npos) {
        l->fail("duplicate label '" + result.label + "' (first used at " +
                to_string(ctx.result.operations[earlier].where) + ")");
      }
    }
    result.body = std::move(body);
    ctx.result.operations.push_back(std::move(result));
  };
  if (op == "launch") {
    std::vector<std::string_view> kernel_keys;
    operation_body body = launch(item, what, kernel_keys);
    finish(yaml_map(item.node(), ctx.file, what, kernel_keys), std::move(body));
  } else if (op == "memcpy") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, copy_or_set(m, false));
  } else if (op == "memset") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, copy_or_set(m, true));
  } else if (op == "record") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, record_op{event(m), stream(m)});
  } else if (op == "wait") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, wait_op{stream(m), event(m)});
  } else if (op == "wait_stream") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, wait_stream_op{required_stream(m), required_stream(m, "other")});
  } else if (op == "synchronize") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const auto [t, name] = target(m, true);
    if (t != sync_target::device && m.has("device")) {
      throw scenario_error(m.key_where("device"),
                           "'device' applies to a device synchronize only, in " + what);
    }
    finish(m, synchronize_op{t, name, device(m, -1)});
  } else if (op == "query") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const auto [t, name] = target(m, false);
    bool until_true = false;
    if (const auto u = m.find("until")) {
      if (!u->boolean()) u->fail("'until' can only be true (poll until the work completed)");
      until_true = true;
    }
    finish(m, query_op{t, name, until_true});
  } else if (op == "elapsed_time") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, elapsed_time_op{event(m, "start"), event(m, "end")});
  } else if (op == "destroy") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const auto [t, name] = target(m, false);
    finish(m, destroy_op{t, name});
  } else if (op == "alloc") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const std::string b = buffer(m);
    auto& decl = const_cast<buffer_decl&>(*ctx.result.find_buffer(b));
    if (decl.deferred) m.fail("buffer " + b + " is allocated twice");
    if (!decl.fill.empty()) {
      m.fail("buffer " + b + " is allocated by this operation, so it has no contents before the "
             "first operation: drop its 'fill' and write it with host_write or a launch");
    }
    decl.deferred = true;
    finish(m, alloc_op{b});
  } else if (op == "free") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const std::string b = buffer(m);
    const auto* decl = ctx.result.find_buffer(b);
    if (m.has("stream") && decl->kind != buffer_kind::stream_ordered) {
      throw scenario_error(m.key_where("stream"),
                           "'stream' (cudaFreeAsync) applies to stream_ordered buffers only; " + b +
                               " is " + std::string(to_string(decl->kind)));
    }
    finish(m, free_op{b, stream(m)});
  } else if (op == "record_stream") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const std::string b = buffer(m);
    if (ctx.result.find_buffer(b)->kind != buffer_kind::cached) {
      m.fail("record_stream applies to cached buffers (the caching allocator's blocks); " + b +
             " is " + std::string(to_string(ctx.result.find_buffer(b)->kind)));
    }
    finish(m, record_stream_op{b, required_stream(m)});
  } else if (op == "empty_cache") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, empty_cache_op{});
  } else if (op == "memory_fraction") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const yaml_value f = m.get("fraction");
    const double fraction = f.number();
    if (fraction < 0 || fraction > 1) f.fail("expected a fraction from 0 to 1 for " + f.what());
    finish(m, memory_fraction_op{fraction, device(m, 0)});
  } else if (op == "reset_peak_stats") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, reset_peak_stats_op{});
  } else if (op == "memory_stats") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, memory_stats_op{});
  } else if (op == "host_write") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    host_write_op w;
    w.dst = ctx.slice(m.get("dst"));
    const yaml_value values = m.get("values");
    w.values = floats(values.numbers());
    check_element_count(values, w.values, w.dst);
    finish(m, std::move(w));
  } else if (op == "host_read") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, host_read_op{ctx.slice(m.get("src"))});
  } else if (op == "host_func") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    host_func_op f{stream(m), slices(m, "reads"), slices(m, "writes"),
                   static_cast<float>(m.number_or("value", 0))};
    for (const auto& w : f.writes) {
      const auto kind = ctx.result.find_buffer(w.buffer)->kind;
      if (kind != buffer_kind::pinned && kind != buffer_kind::pageable &&
          kind != buffer_kind::managed) {
        m.get("writes").fail("a host function writes host memory; " + w.buffer + " is " +
                             std::string(to_string(kind)) + " (use pinned, pageable or managed)");
      }
    }
    finish(m, std::move(f));
  } else if (op == "capture_begin") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const yaml_value g = m.get("graph");
    std::string graph = g.text();
    if (std::find(captured_graphs.begin(), captured_graphs.end(), graph) != captured_graphs.end()) {
      g.fail("graph '" + graph + "' is captured twice; give each capture its own graph name");
    }
    captured_graphs.push_back(graph);
    ctx.result.graphs.push_back(graph);
    finish(m, capture_begin_op{required_stream(m), std::move(graph)});
  } else if (op == "capture_end") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, capture_end_op{required_stream(m)});
  } else if (op == "graph_launch") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const yaml_value g = m.get("graph");
    std::string graph = g.text();
    if (std::find(captured_graphs.begin(), captured_graphs.end(), graph) == captured_graphs.end()) {
      g.fail("unknown graph '" + graph + "'; a graph is named by an earlier capture_begin");
    }
    finish(m, graph_launch_op{std::move(graph), stream(m)});
  } else if (op == "device_guard" || op == "stream_guard") {
    const bool dev = op == "device_guard";
    const yaml_map m(item.node(), ctx.file, what, keys);
    if (dev) {
      // A negative index is a no-op guard (S-DEV-1), so it is allowed here.
      const yaml_value d = m.get("device");
      const auto index = d.integer();
      if (index >= 0) ctx.check_device(d, index);
      finish(m, device_guard_enter_op{static_cast<int>(index)});
    } else {
      finish(m, stream_guard_enter_op{required_stream(m)});
    }
    ++guard_depth;
    parse_list(m.get("body"));
    --guard_depth;
    operation exit;
    exit.where = m.where();
    if (dev) {
      exit.body = device_guard_exit_op{};
    } else {
      exit.body = stream_guard_exit_op{};
    }
    ctx.result.operations.push_back(std::move(exit));
  } else if (op == "set_device") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    // Any index: selecting a device that is not visible is an error the
    // runtime reports (S-DEV-2), and scenarios may expect it.
    const yaml_value d = m.get("device");
    const auto index = d.integer();
    if (index < -1 || index > 1024) d.fail("expected a device index for " + d.what());
    finish(m, set_device_op{static_cast<int>(index)});
  } else if (op == "nvtx_push") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, nvtx_push_op{m.text("message")});
  } else if (op == "nvtx_pop") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, nvtx_pop_op{});
  } else if (op == "nvtx_mark") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    finish(m, nvtx_mark_op{m.text("message")});
  } else if (op == "sync_debug_mode") {
    const yaml_map m(item.node(), ctx.file, what, keys);
    const std::string mode = m.get("mode").one_of({"off", "warn", "error"});
    finish(m, sync_debug_mode_op{mode == "off"    ? sync_debug_mode::off
                                 : mode == "warn" ? sync_debug_mode::warn
                                                  : sync_debug_mode::error});
  }
}

}  // namespace

void parse_operations(parse_context& ctx, const yaml_value& list) {
  op_parser p{ctx, {}, 0};
  if (list.items().empty()) list.fail("expected at least one operation in 'operations'");
  p.parse_list(list);
}

}  // namespace streamsan::harness::detail
