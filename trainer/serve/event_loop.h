// `fastnn serve`'s connections: one epoll thread accepts, reads, parses (http_parser.h) and writes every
// connection without blocking; only complete requests leave it (dispatch), so a slow or stalled client
// holds a connection slot and its bytes, never a thread.
//
// Bounds (LoopOptions), each enforced for every client:
//   - connections: at most max_connections open and max_connections_per_client from one address; one
//     over is answered 503 (total) or 429 (per address), with Retry-After: 1, and closed. Such refused
//     connections linger like any refused request (below) outside the caps, at most max_connections of
//     them at once; beyond that they are closed unanswered. So 2 x max_connections descriptors are needed.
//   - bytes: each connection's request buffers (head, body, pipelined bytes), answers being written and
//     bodies out with a handler are counted; a read that takes the total over max_buffered_bytes is
//     answered 503, one that takes a client address over a quarter of it 429, and the connection closed.
//     The parser bounds each request (ParserLimits).
//   - time: a request must arrive whole (head and body) within request_timeout of its first byte, else
//     408; a connection waits at most idle_timeout for the first byte of a request (then it is closed
//     without an answer); an answer must be taken by the client within request_timeout of its first
//     write, else the connection is closed. Deadlines are checked every kSweep.
// Every refused request is answered with a JSON error body and the connection closed; after an error
// the server stops writing (shutdown) and discards what the client still sends for up to kLinger, so a
// client still sending its body reads the answer rather than a connection reset.
// Keep-alive and pipelining: one request per connection at a time; bytes after it wait (at most one
// read, 64 KiB) until it is answered. HTTP/1.1 "Expect: 100-continue" gets its interim answer.
//
// dispatch runs on the loop thread and must not block (hand the request to other threads); respond()
// may be called from any thread, once per dispatched request. The access log (log, when set) gets one
// line per answer (access_log.h), from the loop thread.
// stop(grace): closes the listening socket (new connections are refused), closes idle connections, lets
// requests being received, handled or answered finish for up to `grace`, then closes the rest and
// joins the thread. Answers for connections gone by then are dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "trainer/serve/access_log.h"
#include "trainer/serve/http_message.h"
#include "trainer/serve/http_parser.h"

namespace fastnn::serve {

struct LoopOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port
  ParserLimits limits;
  int max_connections = 512;
  int max_connections_per_client = 64;
  size_t max_buffered_bytes = size_t{1} << 30;
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds idle_timeout{5000};
  AccessLogFormat log_format = AccessLogFormat::kText;
};

constexpr std::chrono::milliseconds kSweep{25};
constexpr std::chrono::milliseconds kLinger{1000};

struct Exchange {
  uint64_t connection = 0;
  HttpRequest request;
};

struct LoopStats {
  int64_t accepted = 0, refused = 0, requests = 0, timed_out = 0;
  int64_t open = 0;
  int64_t buffered = 0;  // bytes counted against max_buffered_bytes now
};

class EventLoop {
 public:
  using Dispatch = std::function<void(Exchange)>;
  using Log = std::function<void(const std::string& line)>;

  EventLoop(const LoopOptions& options, Dispatch dispatch, Log log);
  ~EventLoop();  // stop(0)
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Binds, listens and starts the loop thread; returns the bound port. IoError when it cannot bind.
  int start();
  void respond(uint64_t connection, HttpResponse response);
  void stop(std::chrono::milliseconds grace);
  LoopStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fastnn::serve
