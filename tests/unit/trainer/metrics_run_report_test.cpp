// The confusion matrix of an evaluation (loop/evaluate.h count_confusion), its metrics.jsonl field
// (jsonl_writer.h) read back by `fastnn report` (metrics/run_report.h): arg-max per example against
// the label, refused shapes, torn and bad lines skipped with a note, NaN kept out of the curves, class
// names escaped on the page; the most confident mistakes kept with their records, and the report's
// gallery reading each image back from its shard (plain or gzip), naming the ones it cannot read.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/base64.h"
#include "core/check.h"
#include "core/example.h"
#include "core/image.h"
#include "core/tfrecord.h"
#include "tests/unit/trainer/checkpoint_test_util.h"
#include "trainer/loop/evaluate.h"
#include "trainer/metrics/jsonl_writer.h"
#include "trainer/metrics/run_report.h"
#include "trainer/tensor.h"

namespace fastnn {
namespace {

TEST(Confusion, CountsTheArgMaxAgainstTheLabel) {
  // 4 examples, 3 classes; the tie in row 3 goes to the lower index.
  const Tensor logits = Tensor::from<float>({4, 3}, {0.1f, 2.0f, 0.3f,  //
                                                     5.0f, 1.0f, 1.0f,  //
                                                     -1.f, -2.f, -0.5f,  //
                                                     0.7f, 0.7f, 0.1f});
  const Tensor labels = Tensor::from<int32_t>({4}, {1, 0, 0, 1});
  loop::EvalResult r;
  ASSERT_TRUE(loop::count_confusion(logits, labels, &r));
  ASSERT_EQ(r.confusion_classes, 3);
  EXPECT_EQ(r.confusion, (std::vector<int64_t>{1, 0, 1,  //
                                               1, 1, 0,  //
                                               0, 0, 0}));
  ASSERT_TRUE(loop::count_confusion(logits, Tensor::from<int64_t>({4}, {2, 2, 2, 2}), &r));  // accumulates
  EXPECT_EQ(r.confusion[6] + r.confusion[7] + r.confusion[8], 4);
  EXPECT_FALSE(loop::count_confusion(Tensor(), labels, &r));                            // no logits
  EXPECT_FALSE(loop::count_confusion(Tensor::zeros({4, 5}), labels, &r));                // other width
  EXPECT_FALSE(loop::count_confusion(Tensor::zeros({3, 3}), labels, &r));                // other count
  loop::EvalResult big;
  EXPECT_FALSE(loop::count_confusion(Tensor::zeros({4, kMaxConfusionClasses + 1}), labels, &big));
  EXPECT_EQ(big.confusion_classes, 0);
  EXPECT_THROW(loop::count_confusion(logits, Tensor::from<int32_t>({4}, {0, 1, 3, 0}), &r), Error);
}

TEST(Misclassified, KeepsTheMostConfidentMistakesWithTheirRecords) {
  pipeline::FileList files;
  files.files = {{.path = "a.tfrecord"}, {.path = "b.tfrecord"}};
  // 3 classes; sample 0 right, 1 wrong (p = e^2 / (e^2 + 2)), 2 a cached record (no file), 3 wrong with
  // the same logits as 1 but in an earlier file (ties: file order).
  const Tensor logits = Tensor::from<float>({4, 3}, {3, 0, 0,  //
                                                     0, 2, 0,  //
                                                     0, 0, 9,  //
                                                     0, 2, 0});
  const Tensor labels = Tensor::from<int32_t>({4}, {0, 0, 1, 2});
  const std::vector<pipeline::SampleSource> sources = {
      {0, 1, 10}, {1, 5, 700}, {pipeline::SampleSource::kCacheFile, 0, 0}, {0, 7, 900}};
  loop::EvalResult r;
  loop::note_misclassified(logits, labels, sources, files, &r);
  ASSERT_EQ(r.misclassified.size(), 2u);
  const double p = std::exp(2.0) / (std::exp(2.0) + 2);
  EXPECT_EQ(r.misclassified[0].file, std::filesystem::absolute("a.tfrecord").string());
  EXPECT_EQ(r.misclassified[0].record, 7u);
  EXPECT_EQ(r.misclassified[0].offset, 900u);
  EXPECT_EQ(r.misclassified[0].label, 2);
  EXPECT_EQ(r.misclassified[0].predicted, 1);
  EXPECT_NEAR(r.misclassified[0].confidence, p, 1e-12);
  EXPECT_EQ(r.misclassified[1].file, std::filesystem::absolute("b.tfrecord").string());
  // Over many batches only the kMaxMisclassified most confident stay, most confident first.
  for (int b = 0; b < 10; ++b) {
    std::vector<float> z;
    for (int i = 0; i < 4; ++i) z.insert(z.end(), {0, 0, static_cast<float>(b + i)});
    loop::note_misclassified(Tensor::from<float>({4, 3}, z), Tensor::from<int32_t>({4}, {0, 0, 0, 0}),
                             std::vector<pipeline::SampleSource>(4, {1, static_cast<uint64_t>(b), 0}), files, &r);
  }
  ASSERT_EQ(r.misclassified.size(), kMaxMisclassified);
  EXPECT_EQ(r.misclassified[0].confidence, 1.0 / (2 * std::exp(-12.0) + 1));  // logit 12: b 9, i 3
  for (size_t i = 1; i < r.misclassified.size(); ++i)
    EXPECT_GE(r.misclassified[i - 1].confidence, r.misclassified[i].confidence);
  loop::note_misclassified(Tensor(), labels, sources, files, &r);  // no logits: nothing
  EXPECT_EQ(r.misclassified.size(), kMaxMisclassified);
}

// The gallery: each mistake's image read back from its shard, a plain file at the offset and a gzip file
// from its start, shown as its own PNG bytes; a missing file or a wrong offset is named, not fatal.
TEST(RunReport, GalleryShowsEachMistakeFromItsShard) {
  testing_util::ScratchDir dir("run-report-gallery");
  std::vector<std::string> pngs;
  std::vector<uint64_t> offsets;
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    const std::string shard = dir.file(c == Compression::kNone ? "plain.tfrecord" : "packed.tfrecord");
    TFRecordWriter w(shard, c);
    for (int i = 0; i < 3; ++i) {
      std::vector<uint8_t> pixels(6 * 5, static_cast<uint8_t>(40 * i + (c == Compression::kNone ? 0 : 7)));
      pngs.push_back(encode_png(pixels.data(), 6, 5, 1));
      ExampleBuilder b;
      b.add_bytes(keys::kImageEncoded, pngs.back());
      b.add_bytes(keys::kImageFormat, "png");
      b.add_int64(keys::kLabel, i);
      w.write(b.serialize());
    }
    w.close();
    TFRecordReader r(shard, {.compression = c});
    std::string_view rec;
    while (r.next(&rec)) offsets.push_back(r.record_offset());
  }
  const std::string path = dir.file("metrics.jsonl");
  {
    JsonlMetricsWriter w(path);
    EvalLogEntry e;
    e.step = 40;
    e.misclassified = {{dir.file("plain.tfrecord"), 2, offsets[2], 2, 0, 0.9},
                       {dir.file("packed.tfrecord"), 1, offsets[4], 1, 2, 0.8},
                       {dir.file("gone.tfrecord"), 0, 0, 0, 1, 0.7},
                       {dir.file("plain.tfrecord"), 1, offsets[1] + 3, 1, 0, 0.6}};
    w.write(e);
  }
  const RunMetrics m = read_run_metrics(path);
  ASSERT_EQ(m.misclassified.size(), 4u);
  EXPECT_EQ(m.misclassified_step, 40);
  const std::string page = run_report_page(m, RunReportInfo{.class_names = {"zero", "one", "two"}});
  EXPECT_NE(page.find("data:image/png;base64," + base64_encode(pngs[2])), std::string::npos);
  EXPECT_NE(page.find("data:image/png;base64," + base64_encode(pngs[4])), std::string::npos);
  EXPECT_NE(page.find("two → zero (0.9)"), std::string::npos);
  EXPECT_NE(page.find("width=\"96\" height=\"80\""), std::string::npos);  // 6x5 scaled by 16
  EXPECT_NE(page.find("gone.tfrecord"), std::string::npos);
  EXPECT_NE(page.find(str("record 1 at offset ", offsets[1] + 3)), std::string::npos);
  const auto data = page.find("\"misclassified\":[{");
  EXPECT_NE(data, std::string::npos);

  std::ofstream(path, std::ios::app) << R"({"event":"eval","step":50,"misclassified":[{"file":3}]})" << "\n";
  const RunMetrics bad = read_run_metrics(path);
  EXPECT_EQ(bad.misclassified_step, 40);  // the bad line's list is ignored, with a warning
  ASSERT_FALSE(bad.warnings.empty());
  EXPECT_NE(bad.warnings.back().find("misclassified is not a list"), std::string::npos);
}

TEST(RunReport, ReadsTheLinesTheWriterWrites) {
  testing_util::ScratchDir dir("run-report");
  const std::string path = dir.file("metrics.jsonl");
  {
    JsonlMetricsWriter w(path);
    for (int s = 10; s <= 30; s += 10) {
      TrainLogEntry t;
      t.step = s;
      t.loss = s == 20 ? std::nan("") : 1.0 / s;
      t.accuracy = 0.5;
      t.lr = 0.1;
      t.images_per_sec = 100 + s;
      w.write(t);
    }
    EvalLogEntry e;
    e.step = 30;
    e.split = "test";
    e.top1 = 0.75;
    e.num_examples = 4;
    e.confusion_classes = 2;
    e.confusion = {1, 1, 0, 2};
    w.write(e);
    e.confusion_classes = 3;  // a wrong size is the writer's error, not a bad line
    EXPECT_THROW(w.write(e), Error);
  }
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"event\":\"eval\",\"step\":40,\"top1\":0.5,\"confusion_matrix\":[[1,2],[3]]}\n";  // not square
    out << "{\"event\":\"train\",\"st";                                                          // torn
  }
  const RunMetrics m = read_run_metrics(path);
  EXPECT_EQ(m.train_step, (std::vector<double>{10, 20, 30}));
  EXPECT_TRUE(std::isnan(m.loss[1]));
  EXPECT_EQ(m.images_per_sec[2], 130);
  ASSERT_EQ(m.evals.size(), 2u);
  EXPECT_EQ(m.confusion_step, 30);  // the last usable matrix
  EXPECT_EQ(m.confusion, (std::vector<int64_t>{1, 1, 0, 2}));
  EXPECT_EQ(m.skipped, 1);
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_NE(m.warnings[0].find("not a square matrix"), std::string::npos) << m.warnings[0];

  RunReportInfo info;
  info.run_dir = "runs/<x>";
  info.class_names = {"<script>alert(1)</script>", "a&b"};
  const std::string page = run_report_page(m, info);
  for (const char* id : {"curves", "confusion", "notes"})
    EXPECT_NE(page.find(str("<section id=\"", id, "\">")), std::string::npos) << id;
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  const size_t data = page.find("<script type=\"application/json\" id=\"data\">");
  ASSERT_NE(data, std::string::npos);
  const size_t begin = page.find('>', data) + 1;
  const nlohmann::json j = nlohmann::json::parse(page.substr(begin, page.find("</script>", begin) - begin));
  EXPECT_TRUE(j["train"]["loss"][1].is_null());
  EXPECT_EQ(j["last_eval"]["confusion_matrix"], nlohmann::json::parse("[[1,1],[0,2]]"));
  EXPECT_EQ(j["last_eval"]["per_class_accuracy"], nlohmann::json::parse("[0.5,1.0]"));
  // Precision: correct / predicted as the class (column sums 1 and 3).
  EXPECT_EQ(j["last_eval"]["per_class_precision"], nlohmann::json::parse("[1.0,0.6666666666666666]"));
  EXPECT_EQ(j["last_eval"]["class_names"][0], "<script>alert(1)</script>");
  EXPECT_TRUE(j["moving_average_evals"].empty());

  std::ofstream(dir.file("empty.jsonl")) << "not json\n";
  EXPECT_THROW(read_run_metrics(dir.file("empty.jsonl")), ConfigError);
  EXPECT_THROW(read_run_metrics(dir.file("missing.jsonl")), IoError);
}

// moving_average_decay's evaluations: their own list (not "the" evaluations, no confusion matrix), in the
// page's meta line and data; a reader that knows only "eval" passes them over.
TEST(RunReport, KeepsTheMovingAveragesEvaluationsApart) {
  testing_util::ScratchDir dir("run-report-ema");
  const std::string path = dir.file("metrics.jsonl");
  {
    JsonlMetricsWriter w(path);
    EvalLogEntry e;
    e.step = 8;
    e.split = "test";
    e.top1 = 0.5;
    e.confusion_classes = 2;
    e.confusion = {1, 1, 0, 2};
    w.write(e);
    e.event = "eval_moving_averages";
    e.top1 = 0.625;
    e.confusion_classes = 0;
    e.confusion.clear();
    w.write(e);
  }
  const RunMetrics m = read_run_metrics(path);
  ASSERT_EQ(m.evals.size(), 1u);
  EXPECT_EQ(m.evals[0].top1, 0.5);
  ASSERT_EQ(m.moving_average_evals.size(), 1u);
  EXPECT_EQ(m.moving_average_evals[0].step, 8);
  EXPECT_EQ(m.moving_average_evals[0].top1, 0.625);
  EXPECT_EQ(m.confusion_step, 8);
  const std::string page = run_report_page(m, RunReportInfo{});
  EXPECT_NE(page.find("last top-1 0.5 (moving averages 0.625)"), std::string::npos);
  EXPECT_NE(page.find("\"moving_average_evals\":[{"), std::string::npos);
}

}  // namespace
}  // namespace fastnn
