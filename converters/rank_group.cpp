#include "converters/rank_group.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "converters/file_io.h"
#include "core/atomic_output.h"
#include "core/crc32c.h"

namespace fastnn::converters {
namespace {

// A failure as one line: its kind's letter, then the message.
std::string describe_failure(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const ConfigError& e) {
    return str("C", e.what());
  } catch (const FormatError& e) {
    return str("F", e.what());
  } catch (const IoError& e) {
    return str("I", e.what());
  } catch (const std::exception& e) {
    return str("E", e.what());
  } catch (...) {
    return "Eunknown exception";
  }
}

[[noreturn]] void throw_kind(char kind, const std::string& message) {
  if (kind == 'C') throw ConfigError(message);
  if (kind == 'F') throw FormatError(message);
  if (kind == 'I') throw IoError(message);
  throw Error(message);
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "an unknown host";
  return name;
}

}  // namespace

std::vector<std::string> exchange(RankGroup& group, const std::function<std::string()>& produce) {
  FASTNN_CHECK(!group.failed(), "exchange after a failed one");
  std::string payload;
  std::exception_ptr mine;
  try {
    payload = "K" + produce();
  } catch (...) {
    mine = std::current_exception();
    payload = describe_failure(mine);
  }
  std::vector<std::string> all = group.allgather(payload);
  std::vector<int> failed;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].empty() || all[r][0] != 'K') failed.push_back(static_cast<int>(r));
  if (failed.empty()) {
    for (std::string& s : all) s.erase(0, 1);
    return all;
  }
  group.set_failed();
  if (group.rank() != 0) throw OtherRankFailed("another rank failed; rank 0 reports it");
  if (failed.size() == 1 && failed[0] == 0) std::rethrow_exception(mine);
  // One message per distinct failure, with the ranks that had it; the same failure everywhere (an option
  // every rank refuses) is said as one process would say it.
  std::vector<std::pair<std::string, std::vector<int>>> distinct;
  for (int r : failed) {
    auto it = std::find_if(distinct.begin(), distinct.end(), [&](const auto& d) { return d.first == all[r]; });
    if (it == distinct.end()) distinct.push_back({all[r], {r}});
    else it->second.push_back(r);
  }
  if (distinct.size() == 1 && failed.size() == all.size()) throw_kind(all[0][0], all[0].substr(1));
  std::string message;
  for (const auto& [text, who] : distinct) {
    std::string names;
    for (int r : who) names += str(names.empty() ? "" : ", ", r);
    message += str(message.empty() ? "" : "; ", who.size() > 1 ? "ranks " : "rank ", names, " of ", group.size(), ": ",
                   text.substr(1));
  }
  throw_kind(all[failed[0]][0], message);
}

void settle(RankGroup& group, std::exception_ptr mine) {
  exchange(group, [&] {
    if (mine) std::rethrow_exception(mine);
    return std::string();
  });
}

void share_items(RankGroup& group, std::vector<std::string>& items) {
  const size_t ranks = static_cast<size_t>(group.size()), rank = static_cast<size_t>(group.rank());
  const std::vector<std::string> all = exchange(group, [&] {
    ItemWriter out;
    for (size_t i = rank; i < items.size(); i += ranks) out.text(items[i]);
    return out.take();
  });
  for (size_t r = 0; r < ranks; ++r) {
    ItemReader in(all[r]);
    for (size_t i = r; i < items.size(); i += ranks) items[i] = in.text();
    FASTNN_CHECK(in.done(), "share_items: rank ", r, " sent more than its items");
  }
}

ItemWriter& ItemWriter::u64(uint64_t v) {
  out_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  return *this;
}

ItemWriter& ItemWriter::text(std::string_view s) {
  u64(s.size());
  out_.append(s);
  return *this;
}

uint64_t ItemReader::u64() {
  uint64_t v;
  FASTNN_CHECK(in_.size() - at_ >= sizeof(v), "shared item: a number is cut short");
  std::memcpy(&v, in_.data() + at_, sizeof(v));
  at_ += sizeof(v);
  return v;
}

std::string ItemReader::text() {
  const uint64_t n = u64();
  FASTNN_CHECK(n <= in_.size() - at_, "shared item: a string is cut short");
  std::string s(in_.substr(at_, n));
  at_ += n;
  return s;
}

void check_shared_folder(RankGroup& group, const std::string& dir) {
  const std::string path = dir + "/" + OutputDir::temp_name("rank-check");
  // Rank 0 writes the token, and every rank learns what it wrote.
  const std::string token = exchange(group, [&] {
    if (group.rank() != 0) return std::string();
    const std::string t = str(host_name(), " pid ", ::getpid(), " at ",
                              std::chrono::steady_clock::now().time_since_epoch().count());
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw_io_error(path, "create");
    const bool ok = std::fwrite(t.data(), 1, t.size(), f) == t.size();
    if (std::fclose(f) != 0 || !ok) throw_io_error(path, "write");
    return t;
  })[0];
  std::exception_ptr failure;
  try {
    std::string seen;
    try {
      seen = read_whole_file(path, 4096);
    } catch (const Error&) {
    }
    if (seen != token)
      throw ConfigError(str("on ", host_name(), " the output folder ", dir, " that rank 0 (on ",
                            token.substr(0, token.find(" pid ")),
                            ") prepared is not there: the ranks of an mpirun conversion write into one folder, so --output must "
                            "be on a file system every rank shares"));
  } catch (...) {
    failure = std::current_exception();
  }
  // The token goes whatever the outcome (an OutputDir of a later run would also remove it).
  try {
    settle(group, failure);
  } catch (...) {
    if (group.rank() == 0) std::remove(path.c_str());
    throw;
  }
  if (group.rank() == 0) std::remove(path.c_str());
}

uint32_t plan_fingerprint(const DatasetIndex& index, const std::vector<ShardPlan>& plans) {
  uint32_t crc = 0;
  const auto add = [&crc](const void* p, size_t n) { crc = crc32c_extend(crc, p, n); };
  const auto add_string = [&](const std::string& s) { add(s.c_str(), s.size() + 1); };
  for (const std::string& s : index.class_names) add_string(s);
  for (const std::string& s : index.files) add_string(s);
  for (const SplitIndex& s : index.splits) {
    add_string(s.name);
    add(s.samples.data(), s.samples.size() * sizeof(SampleRef));
  }
  for (const ShardPlan& p : plans)
    for (const std::vector<uint32_t>& shard : p.shards) {
      const uint64_t n = shard.size();
      add(&n, sizeof(n));
      add(shard.data(), shard.size() * sizeof(uint32_t));
    }
  return crc;
}

void check_same_plan(RankGroup& group, uint32_t fingerprint) {
  const std::vector<std::string> all = exchange(group, [&] { return std::to_string(fingerprint); });
  run_settled(group, [&] {
    if (all[static_cast<size_t>(group.rank())] != all[0])
      throw ConfigError(str("rank ", group.rank(), " planned other shards than rank 0 (plan checksum ",
                            all[static_cast<size_t>(group.rank())], " against ", all[0],
                            "): the ranks read different inputs; every rank must see the same input files"));
  });
}

std::string encode_outcomes(const std::vector<size_t>& jobs, const std::vector<ShardOutcome>& outcomes) {
  ItemWriter w;
  w.u64(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const ShardOutcome& o = outcomes[i];
    w.u64(jobs[i]).u64(o.records).u64(o.file_bytes).u64(o.image.any ? 1 : 0).text(o.image.format);
    w.u64(static_cast<uint64_t>(o.image.height)).u64(static_cast<uint64_t>(o.image.width));
    w.u64(static_cast<uint64_t>(o.image.channels));
  }
  return w.take();
}

std::vector<ShardOutcome> gather_outcomes(RankGroup& group, const std::string& mine, size_t num_jobs) {
  std::vector<ShardOutcome> all(num_jobs);
  std::vector<bool> seen(num_jobs, false);
  for (const std::string& block : exchange(group, [&] { return mine; })) {
    ItemReader in(block);
    for (uint64_t n = in.u64(); n > 0; --n) {
      const uint64_t job = in.u64();
      FASTNN_CHECK(job < num_jobs && !seen[job], "rank outcomes: job ", job, " reported twice or out of range");
      ShardOutcome& o = all[job];
      o.records = in.u64();
      o.file_bytes = in.u64();
      o.image.any = in.u64() != 0;
      o.image.format = in.text();
      o.image.height = static_cast<int>(in.u64());
      o.image.width = static_cast<int>(in.u64());
      o.image.channels = static_cast<int>(in.u64());
      seen[job] = true;
    }
  }
  for (size_t j = 0; j < num_jobs; ++j) FASTNN_CHECK(seen[j], "rank outcomes: no rank wrote job ", j);
  return all;
}

}  // namespace fastnn::converters
