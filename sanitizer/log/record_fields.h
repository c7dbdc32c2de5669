// The field list of every access-log record, in encoding order.
//
// Note [One field list drives every encoding]
// The trace writer, the trace reader and the JSON-lines dump all walk a
// record's fields through visit_fields(archive, record). Each archive decides
// what a field kind means: the encoder appends varints, the decoder reads and
// validates them, the dumper adds a named JSON member. Describing each record
// once keeps the three in lock-step; a field added to a record in record.h
// must be added here, and the round-trip test (tests/log/
// trace_roundtrip_test.cpp) compares every field independently of this list,
// so a forgotten one fails there.
//
// An archive provides:
//   id(name, Id&)                  a strong id (stream_id, alloc_id, ...)
//   string_ref(name, string_id&)   a use of an interned string
//   stack_ref(name, stack_id&)     a use of an interned stack
//   u32 / u64 / i32 / flag(name, value&)
//   address(name, std::uint64_t&)  a code or data address
//   enumeration(name, Enum&)       one of the small enums of record.h
//   text(name, std::string_view&)
//   addresses(name, std::span<const std::uint64_t>&)
//   object(name, T&)               a nested struct (byte_range, access, ...)
//   list(name, std::span<const T>&) a sequence of nested structs
// Records are visited as non-const references; encoders only read them.
#pragma once

#include "sanitizer/log/record.h"

namespace streamsan {

// The fixed-size fields, ignored: a base for archives that only move a
// record's payload (its spans and views, Note [Records are views]) and
// define text, addresses, object and list themselves.
struct payload_archive_base {
  template <class Id>
  void id(std::string_view, Id&) {}
  void string_ref(std::string_view, string_id&) {}
  void stack_ref(std::string_view, stack_id&) {}
  void u32(std::string_view, std::uint32_t&) {}
  void u64(std::string_view, std::uint64_t&) {}
  void i32(std::string_view, std::int32_t&) {}
  void flag(std::string_view, bool&) {}
  void address(std::string_view, std::uint64_t&) {}
  template <class Enum>
  void enumeration(std::string_view, Enum&) {}
};

template <class A> void visit_fields(A& a, byte_range& r) {
  a.id("alloc", r.alloc);
  a.u64("offset", r.offset);
  a.u64("size", r.size);
}
template <class A> void visit_fields(A& a, access& r) {
  a.object("range", r.range);
  a.enumeration("mode", r.mode);
  a.enumeration("origin", r.origin);
}
template <class A> void visit_fields(A& a, graph_node& r) {
  a.enumeration("node_kind", r.kind);
  a.string_ref("name", r.name);
  a.list("accesses", r.accesses);
  a.stack_ref("stack", r.stack);
  a.id("memory", r.memory);
}
template <class A> void visit_fields(A& a, graph_edge& r) {
  a.u32("from", r.from);
  a.u32("to", r.to);
}

template <class A> void visit_fields(A& a, string_define& r) {
  a.id("id", r.id);
  a.text("text", r.text);
}
template <class A> void visit_fields(A& a, stack_define& r) {
  a.id("id", r.id);
  a.addresses("frames", r.frames);
}
template <class A> void visit_fields(A& a, frame_symbol& r) {
  a.address("address", r.address);
  a.text("function", r.function);
  a.text("file", r.file);
  a.u32("line", r.line);
  a.text("module", r.module);
  a.address("module_offset", r.module_offset);
}
template <class A> void visit_fields(A& a, thread_start& r) { a.string_ref("name", r.name); }
template <class A> void visit_fields(A&, thread_exit&) {}

template <class A> void visit_fields(A& a, stream_create& r) {
  a.id("stream", r.stream);
  a.i32("device", r.device);
  a.enumeration("flavor", r.flavor);
  a.i32("priority", r.priority);
}
template <class A> void visit_fields(A& a, stream_destroy& r) { a.id("stream", r.stream); }
template <class A> void visit_fields(A& a, stream_synchronize& r) { a.id("stream", r.stream); }
template <class A> void visit_fields(A& a, stream_query& r) {
  a.id("stream", r.stream);
  a.flag("complete", r.complete);
}
template <class A> void visit_fields(A& a, stream_wait_stream& r) {
  a.id("waiter", r.waiter);
  a.id("waited", r.waited);
}
template <class A> void visit_fields(A& a, device_synchronize& r) { a.i32("device", r.device); }

template <class A> void visit_fields(A& a, event_create& r) {
  a.id("event", r.event);
  a.u32("flags", r.flags);
}
template <class A> void visit_fields(A& a, event_destroy& r) { a.id("event", r.event); }
template <class A> void visit_fields(A& a, event_record& r) {
  a.id("event", r.event);
  a.id("stream", r.stream);
}
template <class A> void visit_fields(A& a, event_wait& r) {
  a.id("event", r.event);
  a.id("stream", r.stream);
}
template <class A> void visit_fields(A& a, event_synchronize& r) { a.id("event", r.event); }
template <class A> void visit_fields(A& a, event_query& r) {
  a.id("event", r.event);
  a.flag("complete", r.complete);
}

template <class A> void visit_fields(A& a, alloc_record& r) {
  a.id("alloc", r.alloc);
  a.enumeration("memory", r.kind);
  a.i32("device", r.device);
  a.u64("size", r.size);
  a.address("address", r.address);
  a.id("stream", r.stream);
  a.id("parent", r.parent);
  a.u64("parent_offset", r.parent_offset);
  a.string_ref("label", r.label);
}
template <class A> void visit_fields(A& a, free_record& r) {
  a.id("alloc", r.alloc);
  a.enumeration("mode", r.mode);
  a.id("stream", r.stream);
}
template <class A> void visit_fields(A& a, memcpy_record& r) {
  a.id("stream", r.stream);
  a.object("src", r.src);
  a.object("dst", r.dst);
  a.enumeration("src_memory", r.src_kind);
  a.enumeration("dst_memory", r.dst_kind);
  a.flag("async", r.async);
}
template <class A> void visit_fields(A& a, memset_record& r) {
  a.id("stream", r.stream);
  a.object("dst", r.dst);
  a.enumeration("dst_memory", r.dst_kind);
  a.flag("async", r.async);
}

template <class A> void visit_fields(A& a, kernel_launch& r) {
  a.id("stream", r.stream);
  a.string_ref("kernel", r.kernel);
  a.list("accesses", r.accesses);
  a.flag("cooperative", r.cooperative);
}
template <class A> void visit_fields(A& a, host_func& r) {
  a.id("stream", r.stream);
  a.string_ref("name", r.name);
  a.list("accesses", r.accesses);
}
template <class A> void visit_fields(A& a, host_access& r) {
  a.list("accesses", r.accesses);
  a.string_ref("what", r.what);
}

template <class A> void visit_fields(A& a, graph_capture_begin& r) {
  a.id("stream", r.stream);
  a.id("graph", r.graph);
}
template <class A> void visit_fields(A& a, graph_capture_end& r) {
  a.id("stream", r.stream);
  a.id("graph", r.graph);
}
template <class A> void visit_fields(A& a, graph_instantiate& r) {
  a.id("graph", r.graph);
  a.list("nodes", r.nodes);
  a.list("edges", r.edges);
}
template <class A> void visit_fields(A& a, graph_launch& r) {
  a.id("graph", r.graph);
  a.id("stream", r.stream);
}

template <class A> void visit_fields(A& a, nvtx_push& r) { a.string_ref("message", r.message); }
template <class A> void visit_fields(A&, nvtx_pop&) {}
template <class A> void visit_fields(A& a, nvtx_mark& r) { a.string_ref("message", r.message); }
template <class A> void visit_fields(A& a, unmodelled_call& r) { a.string_ref("api", r.api); }

}  // namespace streamsan
