// `fastnn serve`'s HTTP/1.1 server: the endpoints of docs/INFERENCE.md ("Serving") in front of one
// Predictor driven by a Batcher. Connections, parsing and every bound on what a client may hold live in
// event_loop.h (one epoll thread) and http_parser.h; this file routes complete requests, on `threads`
// handler threads (worker_pool.h).
//
//   POST /v1/classify  an image body or {"base64_string": [...]} (request.h) → answers.h's classify body
//   POST /v1/embed     the same bodies → {"instance": [{"embedding": [...]}]} (the penultimate features)
//   GET  /v1/model     what the model is and takes (answers.h)
//   GET  /healthz      {"status":"ok"} while serving, 503 {"status":"stopping"} once stop() began
// Status codes: 200; 400 bad JSON / base64 / not an image / an image the preprocessing cannot decode,
// or a malformed request (http_parser.h lists the framing refusals: 400, 411, 413, 414, 415, 417, 431,
// 501, 505); 404 unknown path; 405 another method on a known path (with Allow); 408 a request not
// whole within timeout_s; 413 a body over max_body_bytes or more images than the queue holds; 415
// unsupported or missing Content-Type, or a compressed body; 429 / 503 over a connection or byte limit
// (event_loop.h, with Retry-After: 1); 503 queue full (with Retry-After: 1) or stopping; 500 the model
// failed. Error bodies are {"error": MESSAGE}.
// Access log (access_log.h): one line per answer on stderr,
//   serve: ADDR:PORT "METHOD PATH" STATUS BODY_BYTES MILLISECONDS
// Lifecycle: start() binds (port 0: an ephemeral port; the bound port is returned) and serves on
// background threads; stop() (any thread, idempotent) stops accepting, gives the requests in flight up
// to grace_s to be received, answered and written, then closes every connection, fails what is still
// queued for the model (503) and joins; only a batch already running in the model is waited for. The
// Predictor must outlive the server and be used by no one else meanwhile (the batcher's worker thread
// drives it); build it with embeddings = true for /v1/embed.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "trainer/inference/predictor.h"
#include "trainer/serve/batcher.h"
#include "trainer/serve/event_loop.h"

namespace fastnn::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  BatcherOptions batching;
  size_t max_body_bytes = size_t{32} << 20;
  int threads = 32;                // handler threads
  int timeout_s = 10;              // a whole request (head + body) must arrive within it; also an answer's write
  int max_connections = 512;
  int max_connections_per_client = 64;
  size_t max_buffered_bytes = size_t{1} << 30;
  double grace_s = 10;
  bool access_log = true;
  AccessLogFormat access_log_format = AccessLogFormat::kText;  // kJson: one JSON object a line (access_log.h)
};

// The event loop's settings from the server's (the idle keep-alive wait is min(timeout_s, 5) s).
LoopOptions loop_options(const ServeOptions& options);

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
  LoopStats connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::serve
