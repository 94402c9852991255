// docs/CONFIG.md stays in sync with schemas/job_config.proto: every field's row (name, type, default,
// help, choices), as config_fields_markdown() renders it, must appear verbatim.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "schemas/job_config.pb.h"
#include "trainer/config/config_fields.h"

namespace fastnn {
namespace {

TEST(ConfigDocs, EveryFieldRowAppearsInConfigMd) {
  const std::string path = std::string(FASTNN_SOURCE_DIR) + "/docs/CONFIG.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << "docs/CONFIG.md is missing";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  // FASTNN_WRITE_CONFIG_MD=1: rewrite the tables (everything from "### Dataset" on) from the schema.
  if (std::getenv("FASTNN_WRITE_CONFIG_MD")) {
    const size_t at = doc.find("### Dataset\n");
    ASSERT_NE(at, std::string::npos);
    doc = doc.substr(0, at) + config_fields_markdown(*JobConfig::descriptor());
    std::ofstream(path) << doc;
  }
  const Descriptor& d = *JobConfig::descriptor();
  const std::vector<std::string> rows = config_markdown_rows(d);
  ASSERT_EQ(rows.size(), static_cast<size_t>(d.field_count()));
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NE(doc.find(rows[i] + "\n"), std::string::npos)
        << "docs/CONFIG.md is out of date for field " << d.field(static_cast<int>(i))->name()
        << "; its row should read:\n" << rows[i];
  }
}

TEST(ConfigDocs, MarkdownTablesHaveOneSectionPerGroup) {
  const std::string md = config_fields_markdown(*JobConfig::descriptor());
  EXPECT_EQ(md.find("### Dataset\n"), 0u);
  for (const char* s : {"### Learning rate\n", "### Optimizer\n", "### Accepted and ignored\n"}) {
    EXPECT_NE(md.find(s), std::string::npos) << s;
  }
  EXPECT_NE(md.find("| `learning_rate` | float | 0.01 | Initial learning rate. Also --lr. |\n"), std::string::npos);
  EXPECT_NE(md.find("| `dataset_name` | string | \"mock\" |"), std::string::npos);
}

}  // namespace
}  // namespace fastnn
