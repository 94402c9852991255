// The encoded image of one training or evaluation record, found again by where the pipeline read it
// (pipeline::SampleSource: shard file, record index, byte offset of its frame in the uncompressed
// record stream): what `fastnn report`'s gallery of misclassified images shows.
//
// A plain shard is read at the offset only (one frame, both CRCs checked, and its index is not
// re-counted); a GZIP / ZLIB shard is read from its start up to the record. The record's Example must
// hold image/encoded (PNG or JPEG, as fastnn's converters write).
// Errors: IoError (the file), FormatError naming the file, record and offset (a frame that is not one,
// no image/encoded, an image that is neither PNG nor JPEG).
#pragma once

#include <cstdint>
#include <string>

namespace fastnn {

struct RecordImage {
  std::string bytes;   // the encoded image
  std::string format;  // "png" or "jpeg"
  int width = 0, height = 0;
};

RecordImage read_record_image(const std::string& path, uint64_t record, uint64_t offset);

}  // namespace fastnn
