// Every GPU kernel a process runs, with its time, from CUPTI's activity records: the same measurement
// for fastnn and for PyTorch (scripts/gpu/compare.py --kernel-profile), so that their convolution times
// compare like for like (a CUDA event window around a layer also holds launch gaps and other streams'
// work; a profiler inside one of the two programs measures only that one).
//
// A CUDA injection library: with CUDA_INJECTION64_PATH=<this .so> the CUDA driver loads it into any
// process at its first CUDA call and calls InitializeInjection(); no change to the program measured.
// At exit it writes $FASTNN_KERNEL_RECORDS (a JSON file):
//   {"kernels": [{"name": "<demangled>", "count": N, "ns": total}, ...], "dropped_records": D,
//    "first_start_ns": t0, "last_end_ns": t1}
// one row per kernel name, the time summed over its launches (end - start, the GPU's own clock).
// Windows of steps are told apart by the caller: two runs of different step counts, their difference.
//
// Built with the CUDA backend where CMake finds CUPTI (target fastnn_kernel_records), carried by
// scripts/gpu/bundle.sh. It links libcupti, which the GPU machine's PyTorch wheels provide.
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {

struct Totals {
  uint64_t count = 0;
  uint64_t ns = 0;
};

std::mutex g_mutex;
std::map<std::string, Totals>* g_kernels = nullptr;  // never freed: CUPTI may deliver during exit
uint64_t g_first = UINT64_MAX, g_last = 0, g_dropped = 0;
constexpr size_t kBufferBytes = size_t{8} << 20;

std::string demangled(const char* name) {
  if (!name) return "(unnamed)";
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  // CUPTI wants 8-byte alignment; aligned_alloc gives more.
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(64, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
        continue;
      // Only the leading fields of the kernel record are read (kind, start, end, name): a newer CUPTI's
      // record version appends fields, these keep their places.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      if (k->end < k->start) continue;
      Totals& t = (*g_kernels)[demangled(k->name)];
      t.count += 1;
      t.ns += k->end - k->start;
      if (k->start < g_first) g_first = k->start;
      if (k->end > g_last) g_last = k->end;
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(nullptr, stream, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
  }
  std::free(buffer);
}

void write_json_string(std::FILE* f, const std::string& s) {
  std::fputc('"', f);
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') std::fprintf(f, "\\%c", c);
    else if (c < 0x20) std::fprintf(f, "\\u%04x", c);
    else std::fputc(c, f);
  }
  std::fputc('"', f);
}

void write_records() {
  cuptiActivityFlushAll(1);  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: also the records of unfinished buffers
  const char* path = std::getenv("FASTNN_KERNEL_RECORDS");
  if (!path || !*path) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  std::FILE* f = std::fopen(path, "w");
  if (!f) {
    std::fprintf(stderr, "kernel_records: cannot write %s\n", path);
    return;
  }
  std::fprintf(f, "{\"kernels\": [");
  bool first = true;
  for (const auto& [name, t] : *g_kernels) {
    std::fprintf(f, "%s\n {\"name\": ", first ? "" : ",");
    write_json_string(f, name);
    std::fprintf(f, ", \"count\": %llu, \"ns\": %llu}", static_cast<unsigned long long>(t.count),
                 static_cast<unsigned long long>(t.ns));
    first = false;
  }
  std::fprintf(f, "],\n \"dropped_records\": %llu, \"first_start_ns\": %llu, \"last_end_ns\": %llu}\n",
               static_cast<unsigned long long>(g_dropped),
               static_cast<unsigned long long>(g_first == UINT64_MAX ? 0 : g_first),
               static_cast<unsigned long long>(g_last));
  std::fclose(f);
}

}  // namespace

extern "C" int InitializeInjection(void) {
  g_kernels = new std::map<std::string, Totals>();
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    std::fprintf(stderr, "kernel_records: CUPTI refused the kernel activity records\n");
    return 0;
  }
  std::atexit(write_records);
  return 1;
}
