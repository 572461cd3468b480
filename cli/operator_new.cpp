// operator new for the programs that link mimalloc (CMakeLists.txt, kvsim_allocator): Debian's libmimalloc
// replaces operator new with one that aborts when memory runs out, where the standard's throws
// std::bad_alloc. kvsim's main catches that and exits 71 with one line (README.md, Verdicts and exit codes);
// an abort would leave nothing on standard error. malloc is mimalloc's; the nothrow, aligned and delete
// forms stay mimalloc's, which free what these return.
#include <cstdlib>
#include <new>

void* operator new(std::size_t size) {
    if (void* p = std::malloc(size != 0 ? size : 1)) return p;
    throw std::bad_alloc();
}

void* operator new[](std::size_t size) { return ::operator new(size); }
