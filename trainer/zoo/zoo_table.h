// One row per zoo model at its default size, for `fastnn models`: parameter counts, moving statistics
// and forward multiply-adds from shape inference (no tensor memory), the default input and the
// default preprocessing preset. Cheap: every model planned at batch 1, well under a second in all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fastnn::zoo {

struct ZooTableRow {
  std::string name, summary, preset;
  int default_size = 0, min_size = 0, channels = 0, num_classes = 0;
  bool aux_logits = false;         // the net as `fastnn train` builds it has an auxiliary head
  int64_t trainable_params = 0;    // with the aux head where there is one
  int64_t state_elements = 0;      // moving statistics (batch norm)
  int64_t macs = 0;                // forward multiply-adds per image, conv and fully connected layers
  int layers = 0;                  // NetDef layers
};

// `num_classes` 0: each model's default (10 for the MNIST / CIFAR nets, 1000 otherwise); TF-slim's
// ImageNet checkpoints use 1001.
std::vector<ZooTableRow> zoo_table(int num_classes = 0);

nlohmann::json zoo_table_json(const std::vector<ZooTableRow>& rows);
// Aligned text columns, one model a line, a header first.
std::string zoo_table_text(const std::vector<ZooTableRow>& rows);

}  // namespace fastnn::zoo
