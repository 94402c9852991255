// `fastnn serve`'s HTTP/1.1 server (cpp-httplib): the endpoints of docs/INFERENCE.md ("Serving") in
// front of one Predictor driven by a Batcher.
//
//   POST /v1/classify  an image body or {"base64_string": [...]} (request.h) → answers.h's classify body
//   POST /v1/embed     the same bodies → {"instance": [{"embedding": [...]}]} (the penultimate features)
//   GET  /v1/model     what the model is and takes (answers.h)
//   GET  /healthz      {"status":"ok"} while serving, 503 {"status":"stopping"} once stop() began
// Status codes: 200; 400 bad JSON / base64 / not an image / an image the preprocessing cannot decode;
// 404 unknown path; 413 body over max_body_bytes (checked from Content-Length before the body is read)
// or more images than the queue holds; 415 unsupported or missing Content-Type; 503 queue full (with
// Retry-After: 1) or stopping; 500 the model failed. Error bodies are {"error": MESSAGE}.
// Connections: `threads` worker threads (cpp-httplib's pool; each open connection holds one while it is
// served), read/write timeout `timeout` (a client that stalls longer mid-request is dropped), keep-alive.
// Access log: one line per answered request on stderr:
//   serve: ADDR:PORT "METHOD PATH" STATUS BODY_BYTES MILLISECONDS
// Lifecycle: start() binds (port 0: an ephemeral port; the bound port is returned) and serves on a
// background thread; stop() (any thread, idempotent) stops accepting, lets the requests in flight
// finish, drains the batcher and joins. The Predictor must outlive the server and be used by no one
// else meanwhile (the batcher's worker thread drives it); build it with embeddings = true for /v1/embed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "trainer/inference/predictor.h"
#include "trainer/serve/batcher.h"

namespace fastnn::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  BatcherOptions batching;
  size_t max_body_bytes = size_t{32} << 20;
  int threads = 32;
  int timeout_s = 10;
  bool access_log = true;
};

class HttpServer {
 public:
  HttpServer(inference::Predictor& predictor, const ServeOptions& options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving; returns the bound port. IoError when the address cannot be bound.
  int start();
  void stop();
  BatchStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::serve
