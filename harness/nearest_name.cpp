#include "harness/nearest_name.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <limits>

namespace streamsan::harness {
namespace {

// Lower case without '_' and '-': the form words are compared in.
std::string folded(std::string_view s) {
  std::string out;
  for (const char c : s) {
    if (c == '_' || c == '-') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

struct synonym {
  std::initializer_list<std::string_view> words;  // folded
  std::initializer_list<std::string_view> names;  // valid names they may mean
};

// Note [Suggesting a name], step 2. Words are folded; names are spelled as
// in scenarios.
const synonym synonyms[] = {
    // operations, from CUDA and torch vocabulary
    {{"copy", "cpy", "copyasync", "memcpyasync", "cudamemcpy", "cudamemcpyasync", "copyto"},
     {"memcpy"}},
    {{"memsetasync", "cudamemset", "cudamemsetasync", "zero", "clear"}, {"memset"}},
    {{"eventrecord", "cudaeventrecord", "recordevent"}, {"record"}},
    {{"waitevent", "streamwaitevent", "cudastreamwaitevent"}, {"wait"}},
    {{"sync", "synchronise", "devicesynchronize", "cudadevicesynchronize", "streamsynchronize",
      "cudastreamsynchronize", "eventsynchronize", "cudaeventsynchronize"},
     {"synchronize"}},
    {{"streamquery", "cudastreamquery", "eventquery", "cudaeventquery"}, {"query"}},
    {{"elapsed", "elapsedtime", "cudaeventelapsedtime"}, {"elapsed_time"}},
    {{"cudastreamdestroy", "cudaeventdestroy", "delete"}, {"destroy"}},
    {{"malloc", "allocate", "cudamalloc", "cudamallocasync", "mallocasync", "cudamallochost"},
     {"alloc"}},
    {{"cudafree", "cudafreeasync", "freeasync", "dealloc", "deallocate", "release"}, {"free"}},
    {{"kernel", "run", "call", "cudalaunchkernel", "launchkernel"}, {"launch"}},
    {{"hostfn", "hostfunction", "callback", "cudalaunchhostfunc", "launchhostfunc"},
     {"host_func"}},
    {{"capture", "begincapture", "cudastreambegincapture"}, {"capture_begin"}},
    {{"endcapture", "cudastreamendcapture"}, {"capture_end"}},
    {{"launchgraph", "cudagraphlaunch", "replay"}, {"graph_launch"}},
    {{"cudasetdevice", "device"}, {"set_device"}},
    {{"write"}, {"host_write", "dst", "out", "y", "writes"}},
    {{"read"}, {"host_read", "src", "in", "x", "reads"}},
    // kernels
    {{"sum", "reduce", "reduction", "reducesum"}, {"reduce_sum"}},
    {{"sleep", "delay", "busy", "busywait"}, {"spin"}},
    {{"saxpy", "daxpy"}, {"axpy"}},
    {{"mul", "multiply", "scal"}, {"scale"}},
    {{"set", "constant"}, {"fill"}},
    // keys: words for a role
    {{"buffer", "buf", "buffers", "array", "tensor", "ptr", "pointer", "memory", "mem"},
     {"buffer", "src", "dst", "in", "out", "data", "x", "y", "reads", "writes", "buffers"}},
    {{"source", "from", "input", "inputs", "srcbuffer"}, {"src", "in", "x", "reads"}},
    {{"destination", "dest", "to", "output", "outputs", "target", "dstbuffer"},
     {"dst", "out", "y", "writes"}},
    {{"kernelname", "func", "function", "name"}, {"kernel"}},
    {{"type", "operation", "action"}, {"op", "kind"}},
    {{"count", "length", "len", "n", "elements", "numelements", "numel", "bytes"}, {"size"}},
    {{"init", "initial", "value", "values", "data", "contents"}, {"fill", "values", "value"}},
    {{"expected", "expectation", "expectations", "expects", "check", "checks"}, {"expect"}},
    {{"ops", "steps", "program", "calls", "commands"}, {"operations"}},
    {{"rule", "reference", "references", "cites", "citations"}, {"rules"}},
    {{"fixed", "counterpart", "pair", "fix"}, {"twin"}},
    {{"diagnostic", "races", "race", "reports", "findings", "issues"},
     {"diagnostics", "stream-race"}},
    {{"flag"}, {"flags"}},
    {{"dev", "gpu"}, {"device"}},
    {{"queue", "cudastream"}, {"stream"}},
    {{"blocking", "nonblocking"}, {"flags"}},
    {{"message", "msg", "text", "error"}, {"message"}},
    {{"label", "id"}, {"at", "label"}},
    // values
    {{"host", "cpu"}, {"pinned", "pageable"}},
    {{"cuda", "global", "gpu"}, {"device"}},
    {{"unified", "uvm"}, {"managed"}},
    {{"async", "pool", "mallocasync"}, {"stream_ordered"}},
    {{"caching", "torch", "cachingallocator"}, {"cached"}},
    {{"datarace", "streamrace"}, {"stream-race"}},
    {{"raw"}, {"read-after-write"}},
    {{"war"}, {"write-after-read"}},
    {{"waw"}, {"write-after-write"}},
    {{"uaf"}, {"use-after-free"}},
};

// The largest edit distance still taken for a typo of a word this long.
std::size_t typo_bound(std::size_t length) {
  if (length <= 3) return 1;
  if (length <= 7) return 2;
  return 3;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic program are enough for transpositions.
  std::vector<std::size_t> two(b.size() + 1), one(b.size() + 1), row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) one[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({one[j] + 1, row[j - 1] + 1, one[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], two[j - 2] + 1);
      }
    }
    std::swap(two, one);
    std::swap(one, row);
  }
  return one[b.size()];
}

std::vector<std::string_view> nearest_names(std::string_view typed,
                                            std::span<const std::string_view> valid) {
  constexpr std::size_t most = 3;
  const std::string word = folded(typed);
  std::vector<std::string_view> out;
  if (word.empty()) return out;
  // 1. the same spelling up to case and separators
  for (const auto v : valid) {
    if (folded(v) == word && v != typed) out.push_back(v);
  }
  if (!out.empty()) return out;
  // 2. synonyms
  // In the order of `valid`, which is the order the format documents.
  for (const auto v : valid) {
    for (const auto& s : synonyms) {
      if (std::find(s.words.begin(), s.words.end(), word) != s.words.end() &&
          std::find(s.names.begin(), s.names.end(), v) != s.names.end() && v != typed &&
          std::find(out.begin(), out.end(), v) == out.end()) {
        out.push_back(v);
      }
    }
  }
  if (!out.empty()) {
    if (out.size() > most) out.resize(most);
    return out;
  }
  // 3. typos and prefixes
  std::size_t best = std::numeric_limits<std::size_t>::max();
  for (const auto v : valid) {
    const std::string name = folded(v);
    std::size_t d = edit_distance(word, name);
    const bool prefix = (word.size() >= 3 && name.starts_with(word)) ||
                        (name.size() >= 4 && word.starts_with(name));
    if (prefix) d = std::min<std::size_t>(d, 1);
    if (d > typo_bound(std::min(word.size(), name.size())) && !prefix) continue;
    if (d < best) {
      best = d;
      out.clear();
    }
    if (d == best) out.push_back(v);
  }
  if (out.size() > most) out.clear();  // too many equally close: no real hint
  return out;
}

std::vector<std::string_view> nearest_names(std::string_view typed,
                                            const std::vector<std::string>& valid) {
  // The views point into `valid`'s strings, which outlive the result.
  const std::vector<std::string_view> views(valid.begin(), valid.end());
  return nearest_names(typed, std::span<const std::string_view>(views));
}

namespace {

std::string phrase(const std::vector<std::string_view>& names) {
  if (names.empty()) return "";
  std::string out = "did you mean ";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " or " : ", ";
    out += "'" + std::string(names[i]) + "'";
  }
  return out + "?";
}

}  // namespace

std::string did_you_mean(std::string_view typed, std::span<const std::string_view> valid) {
  return phrase(nearest_names(typed, valid));
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& valid) {
  return phrase(nearest_names(typed, valid));
}

}  // namespace streamsan::harness
