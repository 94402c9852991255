// checkpoint_summary.h: a checkpoint described for inspect.
#include "trainer/checkpoint/checkpoint_summary.h"

#include <cstdio>

#include "core/check.h"
#include "trainer/checkpoint/row_shards.h"

namespace fastnn::checkpoint {
namespace {

nlohmann::json file_json(const CheckpointFile& f) {
  return {{"name", f.name()}, {"size_bytes", f.size_bytes()}, {"crc32c", f.crc32c()}, {"num_arrays", f.num_arrays()}};
}

nlohmann::json arrays_json(const SafetensorsFile& f) {
  nlohmann::json out = nlohmann::json::array();
  for (const ArrayView& a : f.arrays()) out.push_back({{"name", a.name}, {"dtype", safetensors_dtype_name(a.dtype)}, {"shape", a.shape}});
  return out;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

nlohmann::json checkpoint_summary_json(const LoadedCheckpoint& ck) {
  const CheckpointMeta& m = ck.meta;
  nlohmann::json j = {{"prefix", ck.prefix},          {"step", m.step()},
                      {"epoch", m.epoch()},           {"world_size", m.world_size()},
                      {"model_name", m.model_name()}, {"optimizer", m.optimizer()},
                      {"weights_file", file_json(m.weights_file())}, {"weights", arrays_json(ck.weights)}};
  if (ck.optimizer) {
    j["optimizer_file"] = file_json(m.optimizer_file());
    j["optimizer_arrays"] = arrays_json(*ck.optimizer);
  }
  nlohmann::json files = nlohmann::json::array(), sharded = nlohmann::json::array();
  for (const RowShardFile& f : m.shard_files())
    files.push_back({{"name", f.name()},
                     {"rank", f.rank()},
                     {"world_size", f.world_size()},
                     {"size_bytes", f.size_bytes()},
                     {"crc32c", f.crc32c()},
                     {"num_arrays", f.arrays_size()}});
  for (const RowShardedArrayLayout& a : row_sharded_arrays(m)) {
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& p : a.parts) parts.push_back({{"file", p.file}, {"rank", p.rank}, {"rows", {p.rows.begin, p.rows.end}}});
    sharded.push_back({{"name", a.name}, {"dtype", "F32"}, {"global_shape", a.global_shape}, {"optimizer", a.optimizer},
                       {"parts", parts}});
  }
  j["shard_files"] = files;
  j["sharded_arrays"] = sharded;
  return j;
}

std::string checkpoint_summary_text(const LoadedCheckpoint& ck) {
  const CheckpointMeta& m = ck.meta;
  std::string out = str("checkpoint ", ck.prefix, ": step ", m.step(), ", epoch ", m.epoch(), ", world size ",
                        m.world_size(), m.model_name().empty() ? "" : ", model " + m.model_name(),
                        m.optimizer().empty() ? "" : ", optimizer " + m.optimizer(), "\nfiles:\n");
  auto file_line = [&](const std::string& name, uint64_t size, uint32_t crc, int64_t arrays, const std::string& extra) {
    out += str("  ", name, "  ", size, " bytes, crc32c ", hex(crc), ", ", arrays, " arrays", extra, "\n");
  };
  file_line(m.weights_file().name(), m.weights_file().size_bytes(), m.weights_file().crc32c(), m.weights_file().num_arrays(), "");
  if (m.has_optimizer_file())
    file_line(m.optimizer_file().name(), m.optimizer_file().size_bytes(), m.optimizer_file().crc32c(),
              m.optimizer_file().num_arrays(), "");
  for (const RowShardFile& f : m.shard_files())
    file_line(f.name(), f.size_bytes(), f.crc32c(), f.arrays_size(), str(", rank ", f.rank(), " of ", f.world_size()));
  auto list = [&](const char* title, const SafetensorsFile& f) {
    out += str(title, " (", f.arrays().size(), "):\n");
    for (const ArrayView& a : f.arrays()) out += str("  ", a.name, "  ", safetensors_dtype_name(a.dtype), " ", shape_string(a.shape), "\n");
  };
  list("weights", ck.weights);
  if (ck.optimizer) list("optimizer state", *ck.optimizer);
  const auto sharded = row_sharded_arrays(m);
  if (!sharded.empty()) {
    out += str("row-partitioned arrays (", sharded.size(), ", over ", m.shard_files_size(), " shard files):\n");
    for (const RowShardedArrayLayout& a : sharded) {
      out += str("  ", a.name, "  F32 ", shape_string(a.global_shape), a.optimizer ? "  (optimizer state)" : "", "\n");
      for (const auto& p : a.parts) out += str("    ", p.file, " rows ", p.rows.begin, "..", p.rows.end, "\n");
    }
  }
  return out;
}

}  // namespace fastnn::checkpoint
