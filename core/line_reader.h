// Reading an untrusted text file line by line: opened through core/input_file.h (only a regular file;
// a FIFO or a folder is refused at once instead of blocking), lines bounded in length (a longer one is
// a FormatError naming the file and line, never buffered whole), "\n" and "\r\n" endings both taken.
// For line-oriented inputs: base64-TSV lists, metrics.jsonl, text class maps.
// Errors: IoError / FormatError naming the path (and the 1-based line). One thread per reader.
#pragma once

#include <cstdint>
#include <string>

#include "core/input_file.h"

namespace fastnn {

class LineReader {
 public:
  LineReader(const std::string& path, size_t max_line_bytes);
  // The next line without its ending into *line; false at the end of the file. A last line without a
  // final '\n' is returned too, with ended() false.
  bool next(std::string* line);
  // The 1-based number of the line next() returned last.
  int64_t line_number() const { return line_; }
  // Whether that line ended with '\n' (a writer killed mid-line leaves a torn last line).
  bool ended() const { return ended_; }
  const std::string& path() const { return path_; }

 private:
  bool fill();
  std::string path_;
  InputFile file_;
  size_t max_line_bytes_;
  std::string buf_;
  size_t pos_ = 0;
  bool eof_ = false, ended_ = false;
  int64_t line_ = 0;
};

}  // namespace fastnn
