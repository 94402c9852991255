// The picture page of `fastnn check --report FILE.html`: one self-contained HTML file (core/report/)
// built from the CheckReport the check itself produced with its survey on (shard_check.h,
// image_survey.h), so the page and the text/--json report cannot disagree.
//
// Sections (each a <section id=...>): "summary" (dataset, result, per-split counts), "samples" (up to
// samples_per_class thumbnails per class, with the class names of the manifest or labels.txt),
// "classes" (per split: a bar per class, the largest / smallest ratio marked against max_class_ratio,
// the missing classes; a class × split count table of at most 100 classes),
// "balance" (per split: a stacked bar chart of each shard's label histogram and a shard × class
// count table with each shard's chi-square p-value), "sizes" (image sizes, most common first),
// "channels" (per-channel mean and standard deviation, saying whether over all records or a sample
// and how many), "problems" (errors, warnings, what could not be checked). Every number shown is
// also in the page's JSON block (`<script type="application/json" id="data">`, layout in
// docs/REPORTS.md). Large sets are bounded: the chart shows at most kMaxBars shards and 23 classes
// (the rest as "other classes"), the count table at most 64 shards × 100 classes, the sizes table
// the 100 most common sizes; the JSON block has every shard's histogram. Pure function.
#pragma once

#include <string>

#include "converters/shard_check.h"

namespace fastnn::converters {

std::string check_report_page(const CheckReport& report, const CheckOptions& options);

}  // namespace fastnn::converters
