// The run directory (trainer/loop/run_directory.h): the lock, which files are a run's, the "same run?"
// identity, take-over decisions (fresh, continue, refuse, --overwrite), damaged checkpoints set aside,
// metrics.jsonl repaired on resume; and load_checkpoint(<dir>) refusing a damaged latest checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/check.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/loop/run_directory.h"
#include "trainer/metrics/jsonl_writer.h"

namespace fastnn::loop {
namespace {

using testing_util::ScratchDir;
namespace fs = std::filesystem;

JobConfig config(double lr = 0.01) {
  JobConfig c;
  c.set_model_name("lenet");
  c.set_learning_rate(lr);
  c.set_batch_size(16);
  return c;
}

std::vector<float> g_weights(6, 1.5f);

void save(const std::string& dir, int64_t step, const JobConfig& c) {
  checkpoint::CheckpointManager m(dir, {.keep_max = 0, .fsync = false});
  CheckpointMeta meta;
  *meta.mutable_config() = c;
  meta.set_world_size(1);
  const std::vector<checkpoint::ArrayView> w = {checkpoint::f32_view("fc/weights", {2, 3}, g_weights.data(), g_weights.size())};
  m.save(step, w, w, meta);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

void damage(const std::string& path) {  // flips one byte of the last array's data
  std::string bytes = testing_util::read_bytes(path);
  bytes.back() ^= 0x5a;
  testing_util::write_bytes(path, bytes);
}

TEST(RunDirectory, RunFilesAreOnlyWhatFastnnWrites) {
  ScratchDir d("rundir-files");
  for (const char* n : {"ckpt-10.meta.pbtxt", "ckpt-10.weights.safetensors", "ckpt-10.optimizer.safetensors.damaged",
                        "ckpt-7.meta.pbtxt.damaged-2", ".ckpt-20.weights.safetensors.fastnn-tmp", ".checkpoint.fastnn-tmp",
                        "checkpoint", "metrics.jsonl", "events.out.tfevents.1.host", "timeline-30.json",
                        "report.html", ".report.html.fastnn-tmp",
                        // not ours:
                        "notes.txt", "report.htm", "my-report.html", "ckpt-10.txt", "metrics.jsonl.bak", "timeline-x.json", "ckpt-010.meta.pbtxt",
                        "ckpt-10.meta.pbtxt.damagedX", kRunLockName, ".checkpoint.lock"})
    testing_util::write_bytes(d.file(n), "x");
  fs::create_directories(d.file("ckpt-11.meta.pbtxt"));  // a folder is never a run file
  const std::vector<std::string> expect = {".checkpoint.fastnn-tmp", ".ckpt-20.weights.safetensors.fastnn-tmp",
                                           ".report.html.fastnn-tmp",
                                           "checkpoint", "ckpt-10.meta.pbtxt", "ckpt-10.optimizer.safetensors.damaged",
                                           "ckpt-10.weights.safetensors", "ckpt-7.meta.pbtxt.damaged-2",
                                           "events.out.tfevents.1.host", "metrics.jsonl",
                                           "report.html", "timeline-30.json"};
  EXPECT_EQ(run_files(d.path()), expect);
  EXPECT_TRUE(run_files(d.file("missing")).empty());
}

TEST(RunDirectory, TheBestCheckpointTheMovingAveragesAndTheEvaluationEventsAreRunFilesToo) {
  ScratchDir d("rundir-subfolders");
  for (const char* sub : {"best", "ema", "eval", "other"}) fs::create_directories(d.file(sub));
  for (const char* n : {"best/ckpt-20.meta.pbtxt", "best/ckpt-20.weights.safetensors", "best/checkpoint",
                        "ema/ckpt-30.weights.safetensors", "eval/events.out.tfevents.1.host", "ckpt-30.meta.pbtxt",
                        // not ours:
                        "best/notes.txt", "ema/notes.txt", "eval/plot.png", "other/ckpt-1.meta.pbtxt"})
    testing_util::write_bytes(d.file(n), "x");
  const std::vector<std::string> expect = {"best/checkpoint", "best/ckpt-20.meta.pbtxt", "best/ckpt-20.weights.safetensors",
                                           "ckpt-30.meta.pbtxt", "ema/ckpt-30.weights.safetensors",
                                           "eval/events.out.tfevents.1.host"};
  EXPECT_EQ(run_files(d.path()), expect);
}

TEST(RunDirectory, IdentityIgnoresCadenceAndPaths) {
  JobConfig a = config(), b = config();
  b.set_stop_at_step(500);
  b.set_num_epochs(3);
  b.set_save_checkpoints_steps(7);
  b.set_output_dir("/elsewhere");
  b.set_num_preprocessing_threads(2);
  EXPECT_TRUE(identity_differences(a, b).empty());
  b.set_learning_rate(0.02);
  b.set_optimizer("adam");
  const auto d = identity_differences(a, b);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].find("learning_rate (saved 0.01, now 0.02)"), std::string::npos) << d[0];
  EXPECT_NE(d[1].find("optimizer"), std::string::npos) << d[1];
}

TEST(RunDirectory, LockedForOneRunNamingThePid) {
  ScratchDir d("rundir-lock");
  {
    RunDirectory first(d.path(), config(), {});
    const std::string e = error_of([&] { RunDirectory second(d.path(), config(), {}); });
    EXPECT_NE(e.find("in use by another fastnn train"), std::string::npos) << e;
    EXPECT_NE(e.find(str("pid ", ::getpid())), std::string::npos) << e;
    RunDirectory reader(d.path(), config(), {.writer = false});  // rank > 0: no lock
  }
  EXPECT_EQ(error_of([&] { RunDirectory again(d.path(), config(), {}); }), "");  // released at the end
}

TEST(RunDirectory, FreshEmptyFolder) {
  ScratchDir d("rundir-fresh");
  testing_util::write_bytes(d.file("README"), "mine");
  RunDirectory r(d.path(), config(), {});
  EXPECT_EQ(r.resume_from(), nullptr);
}

TEST(RunDirectory, SameConfigurationContinuesOtherIsRefused) {
  ScratchDir d("rundir-same");
  save(d.path(), 10, config());
  JobConfig longer = config();
  longer.set_stop_at_step(100);
  {
    RunDirectory r(d.path(), longer, {});
    ASSERT_NE(r.resume_from(), nullptr);
    EXPECT_EQ(r.resume_from()->meta.step(), 10);
  }
  const std::string e = error_of([&] { RunDirectory r(d.path(), config(0.02), {}); });
  EXPECT_NE(e.find("learning_rate (saved 0.01, now 0.02)"), std::string::npos) << e;
  EXPECT_NE(e.find("--overwrite"), std::string::npos) << e;
  EXPECT_NE(e.find("--resume"), std::string::npos) << e;
  const std::string w = error_of([&] { RunDirectory r(d.path(), config(), {.world = 2}); });
  EXPECT_NE(w.find("ranks (saved 1, now 2)"), std::string::npos) << w;
  RunDirectory forced(d.path(), config(0.02), {.resume = true});
  ASSERT_NE(forced.resume_from(), nullptr);
  EXPECT_NE(error_of([&] { RunDirectory r(d.path() + "/x", config(), {.resume = true, .overwrite = true}); }), "");
}

// A run that failed before its first checkpoint left nothing trained: the corrected rerun starts it again
// from step 0 (with or without --resume) instead of demanding --overwrite; only damaged checkpoints refuse.
TEST(RunDirectory, RunFilesWithoutCheckpointStartAgain) {
  ScratchDir d("rundir-nockpt");
  testing_util::write_bytes(d.file("metrics.jsonl"), "{\"event\":\"train\",\"step\":5}\n");
  {
    RunDirectory r(d.path(), config(0.5), {});  // any configuration: there is no trained state to compare
    EXPECT_EQ(r.resume_from(), nullptr);
  }
  EXPECT_EQ(testing_util::read_bytes(d.file("metrics.jsonl")), "");  // later lines dropped
  testing_util::write_bytes(d.file("metrics.jsonl"), "{\"event\":\"train\",\"step\":5}\n");
  RunDirectory r(d.path(), config(), {.resume = true});
  EXPECT_EQ(r.resume_from(), nullptr);
  EXPECT_EQ(testing_util::read_bytes(d.file("metrics.jsonl")), "");
}

TEST(RunDirectory, OverwriteRemovesOnlyRunFiles) {
  ScratchDir d("rundir-overwrite");
  save(d.path(), 10, config());
  testing_util::write_bytes(d.file("metrics.jsonl"), "{}\n");
  testing_util::write_bytes(d.file("notes.txt"), "keep me");
  fs::create_directories(d.file("sub"));
  testing_util::write_bytes(d.file("sub/ckpt-3.meta.pbtxt"), "not at the top: not ours to remove");
  RunDirectory r(d.path(), config(0.5), {.overwrite = true});
  EXPECT_EQ(r.resume_from(), nullptr);
  EXPECT_TRUE(run_files(d.path()).empty());
  EXPECT_TRUE(fs::exists(d.file("notes.txt")));
  EXPECT_TRUE(fs::exists(d.file("sub/ckpt-3.meta.pbtxt")));
}

TEST(RunDirectory, DamagedLatestIsSetAsideAndReported) {
  ScratchDir d("rundir-damaged");
  save(d.path(), 10, config());
  save(d.path(), 20, config());
  damage(d.file("ckpt-20.weights.safetensors"));
  // eval's reader: an error naming the damaged checkpoint, the reason and the last good one.
  const std::string e = error_of([&] { checkpoint::load_checkpoint(d.path()); });
  EXPECT_NE(e.find("ckpt-20 is damaged"), std::string::npos) << e;
  EXPECT_NE(e.find("CRC32C"), std::string::npos) << e;
  EXPECT_NE(e.find("last good checkpoint is " + d.file("ckpt-10")), std::string::npos) << e;
  EXPECT_NE(checkpoint::checkpoint_damage(d.file("ckpt-20")), "");
  EXPECT_EQ(checkpoint::checkpoint_damage(d.file("ckpt-10")), "");
  {
    RunDirectory reader(d.path(), config(), {.resume = true, .writer = false});  // rank > 0 moves nothing
    EXPECT_TRUE(fs::exists(d.file("ckpt-20.meta.pbtxt")));
  }
  RunDirectory r(d.path(), config(), {.resume = true});
  ASSERT_NE(r.resume_from(), nullptr);
  EXPECT_EQ(r.resume_from()->meta.step(), 10);
  EXPECT_FALSE(fs::exists(d.file("ckpt-20.meta.pbtxt")));
  EXPECT_TRUE(fs::exists(d.file("ckpt-20.weights.safetensors.damaged")));  // renamed, never deleted
  EXPECT_TRUE(fs::exists(d.file("ckpt-20.meta.pbtxt.damaged")));
}

TEST(RunDirectory, ResumeRepairsMetrics) {
  ScratchDir d("rundir-metrics");
  save(d.path(), 20, config());
  testing_util::write_bytes(d.file("metrics.jsonl"),
                            "{\"event\":\"train\",\"step\":10}\n{\"event\":\"train\",\"step\":20}\n"
                            "{\"event\":\"eval\",\"step\":20}\n{\"event\":\"train\",\"step\":30}\n{\"event\":\"tra");
  RunDirectory r(d.path(), config(), {});
  EXPECT_EQ(testing_util::read_bytes(d.file("metrics.jsonl")),
            "{\"event\":\"train\",\"step\":10}\n{\"event\":\"train\",\"step\":20}\n{\"event\":\"eval\",\"step\":20}\n");
}

TEST(MetricsRepair, DropsTornAndLaterLinesOnly) {
  ScratchDir d("jsonl-repair");
  const std::string path = d.file("metrics.jsonl");
  EXPECT_EQ(repair_jsonl_for_resume(path, 5).kept, 0);  // missing: fine
  testing_util::write_bytes(path, "{\"step\":1}\n{\"step\":2}\n");
  const auto before = fs::last_write_time(path);
  JsonlRepair r = repair_jsonl_for_resume(path, 2);
  EXPECT_EQ(r.kept, 2);
  EXPECT_EQ(r.torn + r.after_step, 0);
  EXPECT_EQ(fs::last_write_time(path), before);  // clean: untouched
  testing_util::write_bytes(path, "{\"step\":1}\nnot json\n{\"step\":3}\n{\"step\":2}\n{\"step\":2");
  r = repair_jsonl_for_resume(path, 2);
  EXPECT_EQ(r.kept, 2);
  EXPECT_EQ(r.torn, 2);
  EXPECT_EQ(r.after_step, 1);
  EXPECT_EQ(testing_util::read_bytes(path), "{\"step\":1}\n{\"step\":2}\n");
  {
    JsonlMetricsWriter w(path, /*append=*/true);  // the resumed run appends
    w.write(nlohmann::json{{"step", 3}});
  }
  EXPECT_EQ(testing_util::read_bytes(path), "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n");
}

}  // namespace
}  // namespace fastnn::loop
