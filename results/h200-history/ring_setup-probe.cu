// Scratch probe run once on the H200 (nvcc -O2 ring_setup-probe.cu; log: ring_setup-db91234.log): the cost of making
// and freeing a pinned ring, cudaHostAlloc against mmap + touch + cudaHostRegister.
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>
using C = std::chrono::steady_clock;
double since(C::time_point t) { return std::chrono::duration<double>(C::now() - t).count() * 1e3; }
void touch(char* p, size_t n, int threads) {
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([=] {
      size_t b = n / threads * t, e = t + 1 == threads ? n : n / threads * (t + 1);
      memset(p + b, 0, e - b);
    });
  for (auto& t : ts) t.join();
}
int main() {
  cudaFree(0);
  for (size_t mib : {48, 64, 128}) {
    size_t n = mib << 20;
    for (int rep = 0; rep < 3; ++rep) {
      auto t = C::now(); void* p; cudaHostAlloc(&p, n, cudaHostAllocDefault); double a = since(t);
      t = C::now(); cudaFreeHost(p); double f = since(t);
      for (int huge = 0; huge < 2; ++huge) {
        t = C::now();
        char* q = (char*)mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (huge) madvise(q, n, MADV_HUGEPAGE);
        touch(q, n, 16);
        double tt = since(t);
        cudaError_t e = cudaHostRegister(q, n, cudaHostRegisterDefault);
        double r = since(t);
        auto t2 = C::now(); cudaHostUnregister(q); munmap(q, n); double u = since(t2);
        printf(
            "%4zu MiB rep %d: hostalloc %.1f ms free %.1f | mmap%s touch %.1f +register %.1f (err %d) "
            "unregister+munmap %.1f\n",
            mib, rep, a, f, huge ? "+THP" : "", tt, r, (int)e, u);
      }
    }
  }
}
