#include "trainer/comm/world_check.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/check.h"
#include "trainer/config/config_fields.h"

namespace fastnn {

void check_world_consistency(Communicator& comm, int64_t per_rank_batches_per_epoch, int64_t shard_count) {
  const int world = comm.world_size();
  const int64_t mine[2] = {per_rank_batches_per_epoch, shard_count};
  std::vector<int64_t> all(2 * static_cast<size_t>(world));
  comm.allgather(std::span<const int64_t>(mine, 2), std::span<int64_t>(all));

  auto list = [&](int field, const char* unit) {
    std::ostringstream os;
    for (int r = 0; r < world; ++r) os << (r ? ", " : "") << "rank " << r << ": " << all[2 * r + field] << unit;
    return os.str();
  };
  bool batches_differ = false, shards_differ = false;
  for (int r = 1; r < world; ++r) {
    batches_differ |= all[2 * r] != all[0];
    shards_differ |= all[2 * r + 1] != all[1];
  }
  if (batches_differ)
    throw ConfigError(str("per-rank epoch lengths differ (", list(0, " batches"),
                          "); every rank must run the same number of steps per epoch or the ranks with more "
                          "would wait forever in the last allreduce. Use shards with equal record counts "
                          "(convert with padding or drop_remainder) and the same batch size on every rank"));
  if (shards_differ)
    throw ConfigError(str("ranks see different train shard counts (", list(1, " shards"),
                          "); every rank must read the same dataset"));
  if (all[1] <= 0 || all[1] % world != 0)
    throw ConfigError(str("the ", all[1], " train shards do not divide over ", world,
                          " ranks; convert with a shard count that is a multiple of the world size "
                          "(num_gpus x shards_per_gpu), or launch a number of ranks that divides it"));
  if (all[0] <= 0)
    throw ConfigError(str("each rank has ", all[0], " batches per epoch; the per-rank data is smaller than one batch"));
}

namespace {

// Every rank's `text` (allgather of the lengths, then of the texts padded to the longest, in int64 words).
std::vector<std::string> allgather_text(Communicator& comm, const std::string& text) {
  const int world = comm.world_size();
  const int64_t len = static_cast<int64_t>(text.size());
  std::vector<int64_t> lens(static_cast<size_t>(world));
  comm.allgather(std::span<const int64_t>(&len, 1), std::span<int64_t>(lens));
  const size_t words = (static_cast<size_t>(*std::max_element(lens.begin(), lens.end())) + 7) / 8;
  std::vector<int64_t> mine(words, 0), all(words * static_cast<size_t>(world));
  std::memcpy(mine.data(), text.data(), text.size());
  comm.allgather(std::span<const int64_t>(mine), std::span<int64_t>(all));
  std::vector<std::string> out;
  for (int r = 0; r < world; ++r)
    out.emplace_back(reinterpret_cast<const char*>(all.data() + static_cast<size_t>(r) * words),
                     static_cast<size_t>(lens[static_cast<size_t>(r)]));
  return out;
}

// True when every rank's digest of `text` is the same (one allgather of 8 bytes).
bool same_everywhere(Communicator& comm, const std::string& text) {
  const int64_t mine = static_cast<int64_t>(text_digest(text));
  std::vector<int64_t> all(static_cast<size_t>(comm.world_size()));
  comm.allgather(std::span<const int64_t>(&mine, 1), std::span<int64_t>(all));
  return std::all_of(all.begin(), all.end(), [&](int64_t d) { return d == all[0]; });
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

}  // namespace

uint64_t text_digest(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

const std::set<std::string>& rank_local_config_fields() {
  static const std::set<std::string> fields = {
      // Paths: the same storage may be mounted at different points on different machines; the data
      // itself is checked by check_world_consistency (shard counts, epoch lengths), the model by
      // check_model_consistency, and only rank 0 writes into output_dir.
      "dataset_dir", "output_dir", "model_dir", "train_files", "eval_files",
      // Pipeline performance knobs: sized to each machine's cores and memory; they do not change the
      // batches a rank sees.
      "num_preprocessing_threads", "num_parallel_batches", "prefetch_buffer_size", "datasets_use_caching"};
  return fields;
}

void check_job_config_consistency(Communicator& comm, const google::protobuf::Message& config) {
  if (comm.world_size() == 1) return;
  std::string text;
  for (const auto& [name, value] : config_field_values(config, rank_local_config_fields()))
    text += name + "=" + value + "\n";
  if (same_everywhere(comm, text)) return;
  const std::vector<std::string> texts = allgather_text(comm, text);
  std::vector<std::map<std::string, std::string>> fields;
  for (const std::string& t : texts) {
    std::map<std::string, std::string>& m = fields.emplace_back();
    for (const std::string& line : split_lines(t)) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  std::set<std::string> names;
  for (const auto& m : fields)
    for (const auto& [k, v] : m) names.insert(k);
  std::ostringstream os;
  int differing = 0;
  for (const std::string& name : names) {
    bool differs = false;
    for (const auto& m : fields) differs |= !m.contains(name) || m.at(name) != fields[0].at(name);
    if (!differs) continue;
    os << (differing++ ? "; " : "") << name << " (";
    for (size_t r = 0; r < fields.size(); ++r)
      os << (r ? ", " : "") << "rank " << r << ": " << (fields[r].contains(name) ? fields[r].at(name) : "(unknown field)");
    os << ")";
  }
  throw ConfigError(str("the ranks of this job have different configurations: ", os.str(),
                        "; every rank must train with the same job configuration (same --config and flags; only "
                        "paths and pipeline thread/prefetch settings may differ)"));
}

void check_model_consistency(Communicator& comm, const std::vector<std::string>& variables) {
  if (comm.world_size() == 1) return;
  std::string text;
  for (const std::string& v : variables) text += v + "\n";
  if (same_everywhere(comm, text)) return;
  const std::vector<std::string> texts = allgather_text(comm, text);
  const std::vector<std::string> ref = split_lines(texts[0]);
  std::ostringstream os;
  for (size_t r = 1; r < texts.size(); ++r) {
    const std::vector<std::string> mine = split_lines(texts[r]);
    if (mine == ref) continue;
    size_t i = 0;
    while (i < ref.size() && i < mine.size() && ref[i] == mine[i]) ++i;
    os << "; rank " << r << " has " << mine.size() << " variables, rank 0 " << ref.size() << ", first difference at #"
       << i << ": rank 0 " << (i < ref.size() ? ref[i] : "(none)") << ", rank " << r << " "
       << (i < mine.size() ? mine[i] : "(none)");
  }
  throw ConfigError(str("the ranks of this job build different models", os.str(),
                        "; every rank must train the same model_name with the same num_classes"));
}

}  // namespace fastnn
