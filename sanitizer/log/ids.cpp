#include "sanitizer/log/ids.h"

namespace streamsan {

std::string to_string(thread_id id) { return "thread#" + std::to_string(raw(id)); }
std::string to_string(stream_id id) { return "stream#" + std::to_string(raw(id)); }
std::string to_string(event_id id) { return "event#" + std::to_string(raw(id)); }
std::string to_string(alloc_id id) { return "alloc#" + std::to_string(raw(id)); }
std::string to_string(graph_id id) { return "graph#" + std::to_string(raw(id)); }

}  // namespace streamsan
