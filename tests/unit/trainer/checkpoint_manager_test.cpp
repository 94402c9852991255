// CheckpointManager: layout, round trip with optimizer state and metadata, keep-last-K, crash safety
// (a real _exit at every stage of save, in a death-test child), stale files, corruption, one writer.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <google/protobuf/text_format.h>
#include <set>

#include "core/check.h"
#include "core/half.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/checkpoint/checkpoint_manager.h"
#include "trainer/checkpoint/optimizer_state.h"
#include "trainer/optim/optimizers.h"

namespace fastnn::checkpoint {
namespace {

using testing_util::ScratchDir;
namespace fs = std::filesystem;

// A small model's weights; values depend on `seed` so checkpoints of different steps differ.
struct Model {
  explicit Model(float seed) : w(12), b(3), h(4) {
    for (size_t i = 0; i < w.size(); ++i) w[i] = seed + 0.25f * static_cast<float>(i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = -seed * static_cast<float>(i);
    for (size_t i = 0; i < h.size(); ++i) h[i] = f32_to_f16_bits(seed / static_cast<float>(i + 1));
  }
  std::vector<ArrayView> views() const {
    return {f32_view("fc/weights", {4, 3}, w.data(), w.size()), f32_view("fc/bias", {3}, b.data(), b.size()),
            typed_view("half/scale", DType::kF16, {2, 2}, h.data(), h.size() * 2)};
  }
  std::vector<float> w, b;
  std::vector<uint16_t> h;
};

using testing_util::files_in;

std::vector<int64_t> steps_of(const std::vector<CheckpointInfo>& v) {
  std::vector<int64_t> s;
  for (const auto& c : v) s.push_back(c.step);
  return s;
}


void save_plain(const std::string& dir, int64_t step, int keep_max = 5) {
  CheckpointManager m(dir, testing_util::quick_manager_options(keep_max));
  const Model model(static_cast<float>(step));
  m.save(step, model.views(), {}, CheckpointMeta());
}

CheckpointIndex read_index(const std::string& dir) {
  CheckpointIndex idx;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(testing_util::read_bytes(dir + "/checkpoint"), &idx));
  return idx;
}

TEST(CheckpointManager, RoundTripWithOptimizerStateAndMeta) {
  ScratchDir dir("ckpt-roundtrip");
  // Adam with state after two steps: exact restore must continue the same trajectory.
  std::vector<float> w = {0.5f, -1.0f, 2.0f}, g = {0.1f, -0.2f, 0.3f};
  auto adam = make_adam({{"fc/weights", w.data(), g.data(), w.size()}}, 0.9f, 0.999f, 1e-8f);
  adam->step(0.01f);
  adam->step(0.01f);
  const std::vector<NamedArray> state = adam->export_state();
  const Model model(1.5f);

  CheckpointMeta meta;
  meta.set_epoch(3);
  meta.set_samples_seen(12345);
  meta.set_samples_in_epoch(45);
  meta.set_lr_schedule_step(200);
  meta.set_learning_rate(0.0075);
  meta.mutable_loss_scale()->set_scale(32768);
  meta.mutable_loss_scale()->set_clean_steps(17);
  meta.mutable_loss_scale()->set_dynamic(true);
  meta.set_world_size(4);
  meta.mutable_rng()->set_seed(1234);
  (*meta.mutable_rng()->mutable_counters())["dropout"] = 99;
  meta.mutable_config()->set_model_name("lenet");
  meta.mutable_config()->set_batch_size(64);
  meta.mutable_config()->set_learning_rate(0.1);
  meta.set_model_name("lenet");
  meta.set_optimizer("adam");
  (*meta.mutable_extra())["best_top1"] = 0.875;

  CheckpointManager::Options opts;
  opts.fastnn_version = "fastnn 0.1.0";
  CheckpointManager m(dir.path(), opts);
  const auto info = m.save(200, model.views(), optimizer_state_views(state), meta);
  EXPECT_EQ(info.step, 200);
  EXPECT_EQ(info.prefix, dir.file("ckpt-200"));
  EXPECT_EQ(files_in(dir.path()),
            (std::set<std::string>{"ckpt-200.weights.safetensors", "ckpt-200.optimizer.safetensors", "ckpt-200.meta.pbtxt",
                                   "checkpoint", ".checkpoint.lock"}));
  const CheckpointIndex idx = read_index(dir.path());
  EXPECT_EQ(idx.model_checkpoint_path(), "ckpt-200");
  ASSERT_EQ(idx.all_model_checkpoint_paths_size(), 1);

  const LoadedCheckpoint ck = m.load_latest();
  EXPECT_EQ(ck.prefix, info.prefix);
  const auto want = model.views();
  ASSERT_EQ(ck.weights.arrays().size(), want.size());
  for (const auto& a : want) {
    const ArrayView& got = ck.weights.at(a.name);
    EXPECT_EQ(got.dtype, a.dtype);
    EXPECT_EQ(got.shape, a.shape);
    EXPECT_TRUE(std::equal(got.bytes.begin(), got.bytes.end(), a.bytes.begin(), a.bytes.end())) << a.name;
  }
  EXPECT_EQ(ck.weights.metadata().at("fastnn_step"), "200");
  // Metadata: what the caller gave, plus what save() fills in.
  EXPECT_EQ(ck.meta.step(), 200);
  EXPECT_EQ(ck.meta.epoch(), 3);
  EXPECT_EQ(ck.meta.samples_seen(), 12345);
  EXPECT_EQ(ck.meta.samples_in_epoch(), 45);
  EXPECT_EQ(ck.meta.learning_rate(), 0.0075);
  EXPECT_EQ(ck.meta.loss_scale().scale(), 32768);
  EXPECT_EQ(ck.meta.loss_scale().clean_steps(), 17);
  EXPECT_EQ(ck.meta.world_size(), 4);
  EXPECT_EQ(ck.meta.rng().seed(), 1234u);
  EXPECT_EQ(ck.meta.rng().counters().at("dropout"), 99u);
  EXPECT_EQ(ck.meta.config().batch_size(), 64);
  EXPECT_EQ(ck.meta.config().learning_rate(), 0.1);
  EXPECT_FALSE(ck.meta.config().has_optimizer());  // only set fields travel
  EXPECT_EQ(ck.meta.model_name(), "lenet");
  EXPECT_EQ(ck.meta.extra().at("best_top1"), 0.875);
  EXPECT_EQ(ck.meta.fastnn_version(), "fastnn 0.1.0");
  EXPECT_GT(ck.meta.wall_time(), 1.6e9);
  EXPECT_EQ(ck.meta.timestamp().size(), 20u);  // 2024-05-01T12:34:56Z
  EXPECT_EQ(ck.meta.weights_file().name(), "ckpt-200.weights.safetensors");
  EXPECT_EQ(ck.meta.weights_file().size_bytes(), fs::file_size(dir.file("ckpt-200.weights.safetensors")));
  EXPECT_EQ(ck.meta.weights_file().num_arrays(), 3);
  EXPECT_EQ(ck.meta.optimizer_file().num_arrays(), static_cast<int64_t>(state.size()));

  // Restored optimizer continues bit for bit like the original.
  ASSERT_TRUE(ck.optimizer.has_value());
  std::vector<float> w2 = w, g2 = g;
  auto adam2 = make_adam({{"fc/weights", w2.data(), g2.data(), w2.size()}}, 0.9f, 0.999f, 1e-8f);
  adam2->import_state(optimizer_state_from(*ck.optimizer));
  adam->step(0.01f);
  adam2->step(0.01f);
  EXPECT_EQ(w, w2);
  const auto s1 = adam->export_state(), s2 = adam2->export_state();
  ASSERT_EQ(s1.size(), s2.size());
  for (size_t i = 0; i < s1.size(); ++i) EXPECT_EQ(s1[i].data, s2[i].data) << s1[i].name;
}

TEST(CheckpointManager, LoadAcceptsPrefixFilesAndDirectory) {
  ScratchDir dir("ckpt-paths");
  save_plain(dir.path(), 7);
  CheckpointManager m(dir.path());
  for (const std::string& p : {dir.file("ckpt-7"), dir.file("ckpt-7.meta.pbtxt"), dir.file("ckpt-7.weights.safetensors"),
                               dir.file("ckpt-7.optimizer.safetensors"), dir.path(), std::string("ckpt-7")}) {
    SCOPED_TRACE(p);
    EXPECT_EQ(m.load(p).meta.step(), 7);
  }
  CheckpointLoadOptions weights_only;
  weights_only.optimizer = false;
  EXPECT_FALSE(load_checkpoint(dir.path(), weights_only).optimizer.has_value());
  EXPECT_THROW(m.load("ckpt-8"), ConfigError);
  ScratchDir empty("ckpt-empty");
  EXPECT_THROW(load_checkpoint(empty.path()), ConfigError);
  EXPECT_THROW(CheckpointManager(empty.path()).load_latest(), ConfigError);
  EXPECT_FALSE(CheckpointManager(empty.path() + "/not/there").latest().has_value());
}

TEST(CheckpointManager, KeepsTheLastK) {
  ScratchDir dir("ckpt-keep");
  {
    CheckpointManager m(dir.path(), testing_util::quick_manager_options(3));
    for (int64_t s = 10; s <= 60; s += 10) m.save(s, Model(static_cast<float>(s)).views(), {}, CheckpointMeta());
    EXPECT_EQ(steps_of(m.list()), (std::vector<int64_t>{40, 50, 60}));
    EXPECT_EQ(m.latest()->step, 60);
    const CheckpointIndex idx = read_index(dir.path());
    EXPECT_EQ(std::vector<std::string>(idx.all_model_checkpoint_paths().begin(), idx.all_model_checkpoint_paths().end()),
              (std::vector<std::string>{"ckpt-40", "ckpt-50", "ckpt-60"}));
    for (const char* gone : {"ckpt-10", "ckpt-20", "ckpt-30"})
      for (const char* suffix : {".weights.safetensors", ".optimizer.safetensors", ".meta.pbtxt"})
        EXPECT_FALSE(fs::exists(dir.file(std::string(gone) + suffix))) << gone << suffix;
    // A run resumed from an earlier checkpoint: the new one is latest and kept, with the highest others.
    m.save(45, Model(45).views(), {}, CheckpointMeta());
    EXPECT_EQ(steps_of(m.list()), (std::vector<int64_t>{45, 50, 60}));
    EXPECT_EQ(m.latest()->step, 45);
    EXPECT_EQ(m.load_latest().meta.step(), 45);
  }
  ScratchDir all("ckpt-keep-all");
  CheckpointManager m(all.path(), testing_util::quick_manager_options(0));
  for (int64_t s = 1; s <= 8; ++s) m.save(s, Model(static_cast<float>(s)).views(), {}, CheckpointMeta());
  EXPECT_EQ(m.list().size(), 8u);
}

TEST(CheckpointManager, ResavingAStepReplacesIt) {
  ScratchDir dir("ckpt-resave");
  CheckpointManager m(dir.path(), testing_util::quick_manager_options());
  m.save(5, Model(1).views(), {}, CheckpointMeta());
  m.save(5, Model(2).views(), {}, CheckpointMeta());
  EXPECT_EQ(steps_of(m.list()), (std::vector<int64_t>{5}));
  EXPECT_EQ(to_f32(m.load_latest().weights.at("fc/weights"))[0], 2.0f);
}

// Every stage of save() at which the process may die, and the latest checkpoint a reader must then see.
struct CrashCase {
  const char* stage;
  int64_t latest;
};

TEST(CheckpointManager, CrashAtAnyStageLeavesALoadableLatest) {
  for (const CrashCase c : {CrashCase{"weights", 10}, {"optimizer", 10}, {"meta_temp", 10}, {"renamed_data", 10},
                            {"meta", 10},  // complete, but the index still names 10
                            {"index", 20}, {"retention", 20}}) {
    SCOPED_TRACE(c.stage);
    ScratchDir dir("ckpt-crash");
    save_plain(dir.path(), 10, 1);
    const std::string stage = c.stage;
    EXPECT_EXIT(
        {
          auto o = testing_util::quick_manager_options(1);
          o.fault_hook = [&](const std::string& s) {
            if (s == stage) ::_exit(3);  // no destructors, no cleanup: like kill -9
          };
          CheckpointManager m(dir.path(), o);
          m.save(20, Model(20).views(), {}, CheckpointMeta());
        },
        ::testing::ExitedWithCode(3), "");
    CheckpointManager reader(dir.path());
    ASSERT_TRUE(reader.latest().has_value());
    EXPECT_EQ(reader.latest()->step, c.latest);
    const LoadedCheckpoint ck = reader.load_latest();  // verifies sizes and CRCs
    EXPECT_EQ(to_f32(ck.weights.at("fc/weights"))[0], static_cast<float>(c.latest));
    for (const auto& info : reader.list()) EXPECT_NO_THROW(reader.load(info.prefix)) << info.prefix;

    // The next writer removes what the dead one left and carries on.
    CheckpointManager next(dir.path(), testing_util::quick_manager_options(2));
    next.save(30, Model(30).views(), {}, CheckpointMeta());
    for (const auto& name : files_in(dir.path())) {
      EXPECT_FALSE(name.ends_with(".fastnn-tmp")) << name;
      if (name.ends_with(".safetensors")) {
        const std::string prefix = name.substr(0, name.find('.'));
        EXPECT_TRUE(fs::exists(dir.file(prefix + ".meta.pbtxt"))) << name;
      }
    }
    EXPECT_EQ(next.latest()->step, 30);
  }
}

TEST(CheckpointManager, FailedSaveLeavesNoTemporaries) {
  ScratchDir dir("ckpt-throw");
  save_plain(dir.path(), 10);
  auto o = testing_util::quick_manager_options();
  o.fault_hook = [](const std::string& s) {
    if (s == "meta_temp") throw IoError("disk full (simulated)");
  };
  CheckpointManager m(dir.path(), o);
  EXPECT_THROW(m.save(20, Model(20).views(), {}, CheckpointMeta()), IoError);
  for (const auto& name : files_in(dir.path())) EXPECT_FALSE(name.ends_with(".fastnn-tmp")) << name;
  EXPECT_EQ(m.latest()->step, 10);
}

TEST(CheckpointManager, StaleAndIncompleteFilesAreIgnored) {
  ScratchDir dir("ckpt-stale");
  save_plain(dir.path(), 10);
  save_plain(dir.path(), 20);
  testing_util::write_bytes(dir.file(".ckpt-30.weights.safetensors.fastnn-tmp"), "partial");
  testing_util::write_bytes(dir.file(".ckpt-30.meta.pbtxt.fastnn-tmp"), "step: 30");
  testing_util::write_bytes(dir.file("ckpt-40.weights.safetensors"), "orphan");  // meta never written
  testing_util::write_bytes(dir.file("ckpt-50.meta.pbtxt"), "step: 50 garbage {");   // unparsable meta
  fs::copy_file(dir.file("ckpt-20.meta.pbtxt"), dir.file("ckpt-60.meta.pbtxt"));    // meta without its files
  testing_util::write_bytes(dir.file("notes.txt"), "the user's own file");
  CheckpointManager m(dir.path(), testing_util::quick_manager_options());
  EXPECT_EQ(steps_of(m.list()), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(m.latest()->step, 20);

  // An index naming an incomplete checkpoint, or garbage: the highest complete step wins.
  testing_util::write_bytes(dir.file("checkpoint"), "model_checkpoint_path: \"ckpt-50\"\n");
  EXPECT_EQ(m.latest()->step, 20);
  testing_util::write_bytes(dir.file("checkpoint"), "\x01\x02 not text format");
  EXPECT_EQ(m.latest()->step, 20);
  testing_util::write_bytes(dir.file("checkpoint"), "model_checkpoint_path: \"ckpt-10\"\n");
  EXPECT_EQ(m.latest()->step, 10);  // the index decides among complete ones
  fs::remove(dir.file("checkpoint"));
  EXPECT_EQ(m.latest()->step, 20);

  m.save(70, Model(70).views(), {}, CheckpointMeta());
  const auto left = files_in(dir.path());
  EXPECT_FALSE(left.count(".ckpt-30.weights.safetensors.fastnn-tmp"));
  EXPECT_FALSE(left.count(".ckpt-30.meta.pbtxt.fastnn-tmp"));
  EXPECT_FALSE(left.count("ckpt-40.weights.safetensors"));
  EXPECT_TRUE(left.count("ckpt-50.meta.pbtxt"));  // not ours to judge: left alone, never listed
  EXPECT_TRUE(left.count("notes.txt"));
  EXPECT_EQ(steps_of(m.list()), (std::vector<int64_t>{10, 20, 70}));
}

TEST(CheckpointManager, DetectsChangedDataFiles) {
  ScratchDir dir("ckpt-corrupt");
  save_plain(dir.path(), 10);
  const std::string w = dir.file("ckpt-10.weights.safetensors");
  std::string bytes = testing_util::read_bytes(w);
  bytes[bytes.size() - 3] ^= 0x01;  // a flipped bit in the data: same size, valid safetensors
  testing_util::write_bytes(w, bytes);
  try {
    load_checkpoint(dir.file("ckpt-10"));
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("CRC32C"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
  CheckpointLoadOptions no_verify;
  no_verify.verify = false;
  EXPECT_NO_THROW(load_checkpoint(dir.file("ckpt-10"), no_verify));
  testing_util::write_bytes(w, bytes.substr(0, bytes.size() - 1));  // truncated: no longer complete
  EXPECT_TRUE(CheckpointManager(dir.path()).list().empty());
}

TEST(CheckpointManager, OneWriterPerDirectory) {
  ScratchDir dir("ckpt-lock");
  auto first = std::make_unique<CheckpointManager>(dir.path(), testing_util::quick_manager_options());
  first->save(1, Model(1).views(), {}, CheckpointMeta());
  CheckpointManager second(dir.path(), testing_util::quick_manager_options());
  EXPECT_THROW(second.save(2, Model(2).views(), {}, CheckpointMeta()), ConfigError);
  EXPECT_EQ(second.latest()->step, 1);  // reading needs no lock
  first.reset();
  EXPECT_NO_THROW(second.save(2, Model(2).views(), {}, CheckpointMeta()));
}

TEST(CheckpointManager, NamesAndMetaText) {
  std::string suffix;
  EXPECT_EQ(parse_checkpoint_name("ckpt-120.meta.pbtxt", &suffix), 120);
  EXPECT_EQ(suffix, ".meta.pbtxt");
  EXPECT_EQ(parse_checkpoint_name("ckpt-0"), 0);
  EXPECT_FALSE(parse_checkpoint_name("ckpt-012.meta.pbtxt"));
  EXPECT_FALSE(parse_checkpoint_name("ckpt-.meta.pbtxt"));
  EXPECT_FALSE(parse_checkpoint_name("ckpt-12.meta.pbtxt.bak"));
  EXPECT_FALSE(parse_checkpoint_name("ckpt-99999999999999999999"));
  EXPECT_FALSE(parse_checkpoint_name("model.ckpt-12"));
  EXPECT_EQ(weights_path(checkpoint_prefix("/r", 3)), "/r/ckpt-3.weights.safetensors");

  CheckpointMeta m;
  m.set_step(3);
  m.mutable_config()->set_optimizer("adam");
  const std::string text = checkpoint_meta_to_text(m);
  EXPECT_NE(text.find("config {"), std::string::npos) << text;
  EXPECT_EQ(parse_checkpoint_meta(text, "x").config().optimizer(), "adam");
  try {
    parse_checkpoint_meta("step: 1\nbogus: 2\n", "ckpt-1.meta.pbtxt");
    ADD_FAILURE();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("ckpt-1.meta.pbtxt:2:"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fastnn::checkpoint
