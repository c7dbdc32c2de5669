// Texture and surface objects: what a kernel reads and writes through them.
//
// Note [Texture and surface objects]
// cudaCreateTextureObject / cuTexObjectCreate make a texture object over a
// resource: a CUDA array, a mipmapped array, or linear or pitched 2D device
// memory; cudaCreateSurfaceObject / cuSurfObjectCreate a surface object
// over an array. The object is an opaque 64-bit value that the program
// passes to kernels, which fetch through it (tex2D, surf2Dread/write). So:
// - Which words. The type of every object (cudaTextureObject_t,
//   cudaSurfaceObject_t, CUtexObject, CUsurfObject) is `unsigned long
//   long`: the mangled name types the parameter `y`, and no other spelling
//   of it exists once typedefs are gone. A launch's candidate words are
//   those of `unsigned long long` parameters (param_class::wide_integer,
//   never taken for an address) and every word of a parameter of unknown
//   type (a struct holding an object, an `extern "C"` kernel), the words
//   Note [Kernel access inference] scans for pointers. Parameters of any
//   other arithmetic type (int, size_t = unsigned long, uint64_t) are never
//   objects.
// - Which objects. A word names an object when its value is the handle of
//   a live one: the value is looked up in a handle_table that maps it to an
//   id of the model's own, bound at create and retired at destroy, so that a
//   handle value the driver hands out again after a destroy names the new
//   object only, and a destroyed one names nothing (a launch with a
//   destroyed object is the program's error, not ours to report as a race).
//   The value is never kept beyond that lookup. When no object is live,
//   no word is looked at.
// - What it touches. A texture object reads its whole resource: the whole
//   array or mipmapped array (Note [CUDA arrays]: no linear range of a
//   tiled layout is exact), or the linear range of the descriptor
//   (`sizeInBytes`; `pitchInBytes` x `height` for pitch2D). A surface
//   object reads and writes its whole array: surf*write and surf*read both
//   go through it. The range is resolved at each launch, so a resource
//   freed before the launch is a use after free.
// - Origin. Texture and surface fetches are no global-memory instructions:
//   the Compute Sanitizer API does not instrument them, so no measurement
//   can confirm, narrow or refute such an access (Note [Candidates and
//   confirmed diagnostics]). An `inferred` access would therefore stay a
//   candidate for ever, and a real race through a texture would never be
//   reported. The footprint itself is the resource's extent as the API
//   declared it, the same whole-array extent the copies to and from arrays
//   have as `exact`. What is guessed is only whether the word is the object:
//   - the word of an `unsigned long long` parameter whose value is a live
//     object is taken as `exact`. A false report needs an integer argument
//     of exactly that type equal to a live handle *and* unordered work
//     writing that object's resource; the program's own fix is an
//     annotation of the launch (which replaces its footprint) or a
//     suppression;
//   - a word of a parameter of unknown type is `inferred`: structs pack
//     32-bit fields into words, so `{int n; int zero;}` with n equal to a
//     small handle value is common, and an `extern "C"` kernel's 8-byte
//     integers (size_t, long) are words of unknown type too (its 4-byte
//     ones are never read as words). Races through it are listed as
//     possible races; measuring the kernel cannot confirm them (the
//     candidate's measurements are bounded, Note [Which launches are
//     measured]).
//   Nothing here depends on the handle values a driver hands out (small
//   indices or wide values: the GPU examples texture_read, surface_write
//   and mipmap_level print theirs); small values make the first case's
//   coincidence likelier, which is why it needs the exact type.
// - Measured launches keep these accesses: a measured footprint replaces
//   the inferred accesses of the pointer words only (cuda_model_measurement
//   appends the object accesses to what was measured), so --precise loses
//   no texture read.
// - Annotated launches take their annotation only, as always; launches
//   inside a framework operator take the operator's tensors (Note
//   [Operators narrow kernel footprints]); graph kernel nodes do not look
//   at object words yet (docs/injection.md lists what is missed).
#include "inject/model/cuda_model.h"

namespace streamsan::injection {

void cuda_model::texture_object_created(std::uint64_t object, const memory_region& resource,
                                        access_mode mode) {
  std::lock_guard lock(mutex_);
  if (object == 0) return;
  const auto* before = texture_objects_.find(object);
  if (before != nullptr && !before->destroyed) {
    // Handed out again without a destroy we saw: the old object is gone.
    texture_views_.erase(raw(before->id));
  }
  if (resource.address == 0 || resource.size == 0) {
    if (before != nullptr && !before->destroyed) texture_objects_.destroy(object);
    return;
  }
  const auto id = texture_object{++next_texture_object_};
  texture_objects_.create(object, id);
  texture_views_[raw(id)] = texture_view{resource, mode};
}

void cuda_model::texture_object_destroyed(std::uint64_t object) {
  std::lock_guard lock(mutex_);
  const auto id = texture_objects_.destroy(object);
  if (!id) return;
  texture_views_.erase(raw(*id));
}

void cuda_model::object_accesses_locked(const kernel_info* info, const kernel_arguments& args) {
  object_accesses_.clear();
  // Each live object has its view: none, no word to look at.
  if (texture_views_.empty() || info == nullptr) return;
  object_words(info->plans, args, object_scratch_);
  for (const auto& w : object_scratch_) {
    const auto* e = texture_objects_.find(w.value);
    if (e == nullptr || e->destroyed) continue;
    const auto view = texture_views_.find(raw(e->id));
    if (view == texture_views_.end()) continue;
    memory_kind kind{};
    const auto range = tracked_range_locked(view->second.resource, kind);
    if (!range) continue;
    const access a{*range, view->second.mode,
                   w.typed ? access_origin::exact : access_origin::inferred};
    // One access per object, origin and mode: the same object passed twice
    // is one access.
    bool seen = false;
    for (const auto& b : object_accesses_) seen = seen || b == a;
    if (!seen) object_accesses_.push_back(a);
  }
}

}  // namespace streamsan::injection
