// The qmlsim binary's operator new and delete when mimalloc is linked:
// malloc (mimalloc's), and on failure the standard's loop: the new handler
// (cli/main.cc: one line, exit 2), else std::bad_alloc. mimalloc's own
// operator new aborts instead, since its C code cannot find the program's
// new handler. Definitions in the executable take precedence over the shared
// libraries' (symbol interposition), for every caller in the process.
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

void* allocate(std::size_t n, std::size_t align) {
  if (n == 0) n = 1;
  if (align > alignof(std::max_align_t)) n = (n + align - 1) / align * align;
  for (;;) {
    void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, n) : std::malloc(n);
    if (p) return p;
    const std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}

void* allocate_nothrow(std::size_t n, std::size_t align) noexcept {
  try {
    return allocate(n, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

constexpr std::size_t kPlain = alignof(std::max_align_t);

}  // namespace

void* operator new(std::size_t n) { return allocate(n, kPlain); }
void* operator new[](std::size_t n) { return allocate(n, kPlain); }
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate_nothrow(n, kPlain);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate_nothrow(n, kPlain);
}
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_nothrow(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_nothrow(n, static_cast<std::size_t>(a));
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
