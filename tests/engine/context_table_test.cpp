// The context table's own invariants, seen from outside the engine.
#include "sanitizer/engine/context_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace streamsan {
namespace {

// Note [A context's own component is always there]: a tick reads the own
// component without testing for it, so every live context must have it
// from its making on, through joins and the trims of sweeps, on a fresh
// slot and on a reused one.
void expect_own_components(const std::vector<const execution_context*>& live) {
  for (const execution_context* c : live) {
    EXPECT_LT(c->slot, c->clock.size()) << "context of slot " << c->slot;
  }
}

TEST(ContextTable, EveryLiveContextHasItsOwnComponent) {
  context_table table(1);  // sweep at every death: slots reused at once
  thread_state& main = table.thread(thread_id{1});
  expect_own_components({main.context});  // a fresh thread: no creator, no tick
  std::vector<stream_state*> streams;
  for (std::uint32_t s = 1; s <= 4; ++s) {
    streams.push_back(&table.create_stream(stream_id{s}, 0, stream_flavor::blocking,
                                           *main.context));
  }
  // Each stream copied a clock shorter than its own slot.
  for (stream_state* s : streams) expect_own_components({s->context});
  table.tick(*streams[3]->context);
  table.join(*main.context, *streams[3]->context);
  // Slots die (the first never ticked: free at once) and are swept free.
  table.tick(*main.context);
  table.destroy_stream(*streams[0]);
  table.destroy_stream(*streams[3]);
  table.exit_thread(thread_id{1});
  ASSERT_TRUE(table.sweep_due());
  table.sweep([](slot_sweep&) {});  // nothing stored names any slot
  // Trimmed clocks keep their own components; new contexts take the
  // freed slots, the thread's with an epoch history (r.high > 0).
  expect_own_components({streams[1]->context, streams[2]->context});
  table.tick(*streams[1]->context);
  thread_state& next = table.thread(thread_id{2});
  expect_own_components({next.context, streams[1]->context, streams[2]->context});
  EXPECT_EQ(table.tick(*next.context).slot(), next.context->slot);
  stream_state& again =
      table.create_stream(stream_id{9}, 0, stream_flavor::non_blocking, *next.context);
  expect_own_components({again.context, next.context});
}

}  // namespace
}  // namespace streamsan
