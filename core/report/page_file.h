// Writing a report page: all or nothing, and never over someone's file by accident.
//
// The page is written as core/output_file.h writes every output: beside `path`, fsync'ed, then renamed
// onto it, so a reader (or a crash) sees the old file or the whole new one, never half a page; on any
// error the temporary is removed; a FIFO or device in its place is refused. An existing `path` is a ConfigError naming
// --overwrite unless `overwrite` is set or it is a page fastnn wrote (is_fastnn_page): rerunning
// `report` or `check --report` refreshes its own page, but never replaces someone else's file.
// Errors: ConfigError (exists), IoError naming the path (create, write, rename). Not for concurrent
// writers of the same path.
#pragma once

#include <string>
#include <string_view>

namespace fastnn::report {

void write_page_file(const std::string& path, std::string_view content, bool overwrite);

// write_page_file's refusals without the write, for a command to run before long work: a FIFO, device
// or folder at `path`, or an existing file that is not a fastnn page while `overwrite` is unset.
void check_page_target(const std::string& path, bool overwrite);

// True when `path` is a regular file whose head (first 4 KiB) carries html.h's kGeneratorMeta.
bool is_fastnn_page(const std::string& path);

}  // namespace fastnn::report
