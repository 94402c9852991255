// TensorBoard event files read back with core's TFRecordReader and libprotobuf.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/check.h"
#include "core/tfrecord.h"
#include "schemas/event.pb.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/metrics/event_writer.h"

namespace fastnn {
namespace {

std::vector<tensorflow::Event> read_events(const std::string& path) {
  std::vector<tensorflow::Event> out;
  TFRecordReader r(path);
  std::string_view rec;
  while (r.next(&rec)) {
    tensorflow::Event e;
    EXPECT_TRUE(e.ParseFromArray(rec.data(), static_cast<int>(rec.size())));
    out.push_back(e);
  }
  return out;
}

TEST(MetricsEvent, ScalarsReadBack) {
  testing_util::ScratchDir dir("metrics-events");
  EventFileWriter::Options o;
  o.hostname = "testhost";
  EventFileWriter w(dir.file("tb"), o);
  const std::string name = std::filesystem::path(w.path()).filename().string();
  EXPECT_TRUE(name.starts_with("events.out.tfevents.")) << name;
  EXPECT_TRUE(name.ends_with(".testhost")) << name;

  w.add_scalar("train/loss", 2.302585, 0, 1714567890.5);
  // flush_every = 1: a reader sees each event as soon as it is added (TensorBoard on a live run).
  EXPECT_EQ(read_events(w.path()).size(), 2u);
  w.add_scalars({{"train/accuracy", 0.5}, {"train/lr", 0.01}}, 10);
  w.add_scalar("eval/top1", 0.9, 1000);
  w.close();

  const auto events = read_events(w.path());
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].what_case(), tensorflow::Event::kFileVersion);
  EXPECT_GT(events[0].wall_time(), 1.6e9);

  EXPECT_EQ(events[1].what_case(), tensorflow::Event::kSummary);
  EXPECT_EQ(events[1].step(), 0);
  EXPECT_EQ(events[1].wall_time(), 1714567890.5);
  ASSERT_EQ(events[1].summary().value_size(), 1);
  EXPECT_EQ(events[1].summary().value(0).tag(), "train/loss");
  EXPECT_EQ(events[1].summary().value(0).simple_value(), 2.302585f);

  EXPECT_EQ(events[2].step(), 10);
  ASSERT_EQ(events[2].summary().value_size(), 2);
  EXPECT_EQ(events[2].summary().value(1).tag(), "train/lr");
  EXPECT_EQ(events[2].summary().value(1).simple_value(), 0.01f);
  EXPECT_EQ(events[3].step(), 1000);
  EXPECT_EQ(events[3].summary().value(0).simple_value(), 0.9f);
}

TEST(MetricsEvent, WireBytesMatchTensorFlowFieldNumbers) {
  // Event{wall_time=1 (fixed64), step=2 (varint), summary=5 {value=1 {tag=1, simple_value=2 (fixed32)}}}
  tensorflow::Event e;
  e.set_wall_time(1.0);
  e.set_step(3);
  auto* v = e.mutable_summary()->add_value();
  v->set_tag("a");
  v->set_simple_value(1.0f);
  const std::string want("\x09\x00\x00\x00\x00\x00\x00\xf0\x3f"  // 1: double 1.0
                         "\x10\x03"                               // 2: varint 3
                         "\x2a\x0a"                               // 5: 10 bytes
                         "\x0a\x08"                               //   value 1: 8 bytes
                         "\x0a\x01" "a"                           //     tag 1: "a"
                         "\x15\x00\x00\x80\x3f",                  //     simple_value 2: float 1.0
                         23);
  EXPECT_EQ(e.SerializeAsString(), want);
  tensorflow::Event f;
  f.set_file_version("brain.Event:2");
  EXPECT_EQ(f.SerializeAsString(), std::string("\x1a\x0d") + "brain.Event:2");
}

TEST(MetricsEvent, TwoWritersInOneSecondGetTwoFiles) {
  testing_util::ScratchDir dir("metrics-events2");
  EventFileWriter::Options o;
  o.hostname = "h";
  EventFileWriter a(dir.path(), o), b(dir.path(), o);
  EXPECT_NE(a.path(), b.path());
  a.close();
  b.close();
  EXPECT_EQ(read_events(a.path()).size(), 1u);
  EXPECT_EQ(read_events(b.path()).size(), 1u);
}

TEST(MetricsEvent, PeriodicFlush) {
  testing_util::ScratchDir dir("metrics-events3");
  EventFileWriter::Options o;
  o.flush_every = 3;
  EventFileWriter w(dir.path(), o);
  EXPECT_EQ(read_events(w.path()).size(), 1u);  // the version event is flushed at once
  w.add_scalar("x", 1, 1);
  w.add_scalar("x", 2, 2);
  EXPECT_EQ(read_events(w.path()).size(), 1u);
  w.add_scalar("x", 3, 3);
  EXPECT_EQ(read_events(w.path()).size(), 4u);
  w.add_scalar("x", 4, 4);
  w.flush();
  EXPECT_EQ(read_events(w.path()).size(), 5u);
}

}  // namespace
}  // namespace fastnn
