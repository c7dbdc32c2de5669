#include "sanitizer/log/owned_record.h"

#include <functional>
#include <variant>

#include "sanitizer/log/record_fields.h"

namespace streamsan {

// The archive of Note [One field list drives every encoding] that re-homes
// a record's spans and views into an owned_record's storage.
class owning_archive : public payload_archive_base {
 public:
  explicit owning_archive(owned_record& owner) : owner_(owner) {}

  void text(std::string_view, std::string_view& value) {
    value = owner_.texts_.emplace_back(value);
  }
  void addresses(std::string_view, std::span<const std::uint64_t>& values) {
    values = owner_.addresses_.emplace_back(values.begin(), values.end());
  }
  template <class T>
  void object(std::string_view, T& value) {
    visit_fields(*this, value);
  }
  template <class T>
  void list(std::string_view, std::span<const T>& values) {
    auto& copy = new_list<T>();
    copy.assign(values.begin(), values.end());
    for (auto& element : copy) visit_fields(*this, element);
    values = copy;
  }

 private:
  template <class T>
  std::vector<T>& new_list() {
    if constexpr (std::is_same_v<T, access>) {
      return owner_.new_access_list();
    } else if constexpr (std::is_same_v<T, graph_node>) {
      return owner_.nodes_.emplace_back();
    } else {
      static_assert(std::is_same_v<T, graph_edge>, "a list kind owned_record does not store");
      return owner_.edges_.emplace_back();
    }
  }
  owned_record& owner_;
};

// Note [A launch's accesses stay in the record]
// Nearly every record kept is a held launch (Note [Measured footprints
// arrive late]), whose one list of accesses would otherwise cost a list
// node beside the list's own buffer. The first list stored lives in the
// record itself; only graphs (a list per node) use the node list. A
// vector's buffer stays where it is when the record moves, so the record's
// span into it stays valid.
std::vector<access>& owned_record::new_access_list() {
  if (!first_accesses_used_) {
    first_accesses_used_ = true;
    return first_accesses_;
  }
  return accesses_.emplace_back();
}

std::vector<access>* owned_record::list_holding(std::span<const access> s) noexcept {
  if (s.empty()) return nullptr;
  if (first_accesses_used_ && first_accesses_.data() == s.data()) return &first_accesses_;
  if (!accesses_.empty() && accesses_.back().data() == s.data()) return &accesses_.back();
  return nullptr;
}

owned_record::owned_record(const record& r) : record_(r) {
  owning_archive archive(*this);
  std::visit([&](auto& body) { visit_fields(archive, body); }, record_.body);
}

// Note [Replaced accesses reuse their list]
// Every launch held for its footprint (a PyTorch operator's, or one
// measured) gets its accesses replaced once, with about as many as its
// placeholders. The record's own list (its first, or the last one stored)
// takes them in place: no new list and, when its capacity suffices, no
// allocation. Only
// a list the new accesses point into (a replacement by the record's own
// accesses) is left alone, and a new one is stored.
bool owned_record::replace_accesses(std::span<const access> accesses) {
  std::span<const access>* target = nullptr;
  if (auto* k = std::get_if<kernel_launch>(&record_.body)) {
    target = &k->accesses;
  } else if (auto* h = std::get_if<host_func>(&record_.body)) {
    target = &h->accesses;
  } else {
    return false;
  }
  const auto inside = [&](const std::vector<access>& list) {
    const std::less<const access*> before;
    return !before(accesses.data(), list.data()) &&
           before(accesses.data(), list.data() + list.capacity());
  };
  std::vector<access>* list = list_holding(*target);
  if (list == nullptr || inside(*list)) list = &new_access_list();
  list->assign(accesses.begin(), accesses.end());
  *target = *list;
  return true;
}

bool owned_record::replace_node_accesses(std::uint32_t node, std::span<const access> accesses) {
  auto* g = std::get_if<graph_instantiate>(&record_.body);
  if (g == nullptr || node >= g->nodes.size()) return false;
  // The record's node list is one of nodes_, copied at construction.
  for (auto& list : nodes_) {
    if (list.data() != g->nodes.data()) continue;
    auto& copy = new_access_list();
    copy.assign(accesses.begin(), accesses.end());
    list[node].accesses = copy;
    return true;
  }
  return false;
}

}  // namespace streamsan
