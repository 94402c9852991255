// safetensors writer: header encoding and a direct, checksummed write of the arrays.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>

#include "core/check.h"
#include "core/crc32c.h"
#include "core/safetensors.h"

namespace fastnn::checkpoint {
namespace {

constexpr std::string_view kMetadataKey = "__metadata__";

void put_le64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}

class FdWriter {
 public:
  explicit FdWriter(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_io_error(path, "create");
  }
  ~FdWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(const void* data, size_t n) {
    crc_ = crc32c_extend(crc_, data, n);
    size_ += n;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, std::min(n, size_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        if (w == 0) errno = EIO;
        throw_io_error(path_, "write");
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  SafetensorsWriteResult close(bool sync) {
    if (sync && ::fsync(fd_) != 0) throw_io_error(path_, "fsync");
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw_io_error(path_, "close");
    return {size_, crc_};
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint32_t crc_ = 0;
  uint64_t size_ = 0;
};

}  // namespace

std::string encode_safetensors_header(std::span<const ArrayView> arrays,
                                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::set<std::string_view> names;
  uint64_t offset = 0;
  for (const auto& a : arrays) {
    FASTNN_CHECK(!a.name.empty(), "safetensors: an array has an empty name");
    FASTNN_CHECK(a.name != kMetadataKey, "safetensors: an array may not be named ", kMetadataKey);
    FASTNN_CHECK(names.insert(a.name).second, "safetensors: array name '", a.name, "' is used twice");
    FASTNN_CHECK(a.shape.size() <= kMaxRank, "safetensors: array '", a.name, "' has rank ", a.shape.size(),
                 " > ", kMaxRank);
    const uint64_t n = element_count(a.shape);
    FASTNN_CHECK(n * dtype_size(a.dtype) == a.bytes.size(), "safetensors: array '", a.name, "': shape ",
                 shape_string(a.shape), " of ", safetensors_dtype_name(a.dtype), " needs ", n * dtype_size(a.dtype),
                 " bytes, has ", a.bytes.size());
    header[a.name] = {{"dtype", safetensors_dtype_name(a.dtype)},
                      {"shape", a.shape},
                      {"data_offsets", {offset, offset + a.bytes.size()}}};
    offset += a.bytes.size();
  }
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  std::string json;
  try {
    json = header.dump();
  } catch (const nlohmann::json::exception& e) {  // a name or metadata string that is not UTF-8
    throw Error(str("safetensors: cannot encode the header: ", e.what()));
  }
  json.append((8 - json.size() % 8) % 8, ' ');  // the buffer starts 8-aligned in the file
  std::string out(8, '\0');
  put_le64(out.data(), json.size());
  return out + json;
}

std::string encode_safetensors(std::span<const ArrayView> arrays, const std::map<std::string, std::string>& metadata) {
  std::string out = encode_safetensors_header(arrays, metadata);
  for (const auto& a : arrays) out.append(reinterpret_cast<const char*>(a.bytes.data()), a.bytes.size());
  return out;
}

SafetensorsWriteResult write_safetensors(const std::string& path, std::span<const ArrayView> arrays,
                                         const std::map<std::string, std::string>& metadata, bool fsync) {
  const std::string header = encode_safetensors_header(arrays, metadata);
  FdWriter w(path);
  w.write(header.data(), header.size());
  for (const auto& a : arrays) w.write(a.bytes.data(), a.bytes.size());
  return w.close(fsync);
}

}  // namespace fastnn::checkpoint
