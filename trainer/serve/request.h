// What a POST to /v1/classify or /v1/embed asks for, turned into the items a Predictor classifies.
//
// Bodies (by Content-Type, its parameters such as "; charset=utf-8" ignored, case-insensitive):
//   image/jpeg, image/png, application/octet-stream  the body is one encoded image (JPEG or PNG);
//   application/json  {"base64_string": ["<base64 image>", ...]} (PaddlePaddle PLSC's serving field; a
//                     single string is taken as a list of one), strict base64 (core/base64.h); other
//                     members are skipped, nested at most kMaxJsonDepth deep. Read without a document
//                     tree, each string decoded as it is read (base64_json.h).
// Each image becomes the in-memory tf.train.Example `fastnn predict` makes of an image file
// (inference::image_example), with path "<index>" (its position in the request) so a batch's errors can
// name it. The image itself is decoded later, by the model's preprocessing; here only its magic bytes
// are checked, so "not an image" is refused before it takes a queue slot.
// Errors are RequestError with the HTTP status to answer: 415 for a missing or unsupported content type,
// 400 for an empty body, bad or too deeply nested JSON, a bad base64 string, or bytes that are not a
// JPEG or PNG, 413 for more than max_images images. Body size is bounded by the HTTP layer before this is called.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trainer/inference/predict_inputs.h"
#include "trainer/serve/http_message.h"

namespace fastnn::serve {

// "image/jpeg; q=1" -> "image/jpeg" (lower case, parameters and blanks dropped).
std::string media_type(std::string_view content_type);

std::vector<inference::InputItem> parse_images(std::string_view content_type, std::string_view body, size_t max_images);

}  // namespace fastnn::serve
