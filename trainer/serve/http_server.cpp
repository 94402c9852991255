#include "trainer/serve/http_server.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <sys/socket.h>

#include <httplib.h>

#include "core/check.h"
#include "trainer/serve/answers.h"
#include "trainer/serve/request.h"

namespace fastnn::serve {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kListenBacklog = 1024;  // connections the kernel holds before accept (capped by somaxconn)
// Set when a request is routed, read by the access log on the same connection thread (cpp-httplib
// calls the logger on the thread that served the request); zero for a request refused before routing.
thread_local Clock::time_point request_start{};

// Runs a batch through the predictor: decoding failures become per-item errors (the request's 400),
// anything else thrown fails the batch (the batcher turns it into 500s).
void classify_batch(inference::Predictor& predictor, std::span<const inference::InputItem* const> in,
                    std::span<Outcome* const> out) {
  std::vector<inference::InputItem> items;
  items.reserve(in.size());
  for (const inference::InputItem* it : in) items.push_back(*it);
  std::vector<bool> bad(items.size(), false);
  const std::vector<inference::Prediction> preds = predictor.classify(items, [&](const inference::InputItem& it, const std::string& why) {
    const size_t i = static_cast<size_t>(&it - items.data());
    bad[i] = true;
    out[i]->error = str("cannot decode the image: ", why);
  });
  size_t next = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (bad[i]) continue;
    FASTNN_CHECK(next < preds.size(), "serve: fewer predictions than good images");
    out[i]->prediction = preds[next++];
  }
}

const char* status_text(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "no such endpoint: POST /v1/classify, POST /v1/embed, GET /v1/model, GET /healthz";
    case 405: return "method not allowed";
    case 413: return "the request body is larger than the server's limit (--max_body_bytes)";
    case 414: return "the request URI is too long";
    case 431: return "the request headers are too large";
    default: return "request failed";
  }
}

// cpp-httplib 0.11 (Debian's) listens with a backlog of 5, fixed in its compiled library: a burst of a few
// dozen clients overflows it and connections are dropped or reset. listen() again on the bound socket
// raises the backlog (Linux applies a new backlog to a listening socket).
class Server : public httplib::Server {
 public:
  void raise_backlog(int backlog) {
    const socket_t fd = svr_sock_;
    if (fd != INVALID_SOCKET && ::listen(fd, backlog) != 0) throw IoError(str("serve: listen(", backlog, ") failed"));
  }
};

void answer_error(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(error_json(message), "application/json");
}

}  // namespace

struct HttpServer::Impl {
  inference::Predictor& predictor;
  ServeOptions options;
  Batcher batcher;
  Server http;
  std::thread listener;
  std::atomic<bool> stopping{false}, listener_done{false};
  std::mutex stop_mu;
  size_t max_images;

  Impl(inference::Predictor& p, const ServeOptions& o)
      : predictor(p), options(o),
        batcher(o.batching, [&p](std::span<const inference::InputItem* const> in, std::span<Outcome* const> out) {
          classify_batch(p, in, out);
        }),
        max_images(static_cast<size_t>(o.batching.queue_capacity)) {}

  void images(const httplib::Request& req, httplib::Response& res, bool embed) {
    std::vector<inference::InputItem> items;
    try {
      items = parse_images(req.get_header_value("Content-Type"), req.body, max_images);
    } catch (const RequestError& e) {
      return answer_error(res, e.status(), e.what());
    }
    const size_t n = items.size();
    std::shared_ptr<Ticket> ticket = batcher.submit(std::move(items));
    if (!ticket) {
      res.set_header("Retry-After", "1");
      return answer_error(res, 503, stopping ? "the server is stopping"
                                             : str("the queue is full (", options.batching.queue_capacity,
                                                   " images); retry later"));
    }
    const std::vector<Outcome>& outs = ticket->wait();
    for (size_t i = 0; i < n; ++i) {
      if (outs[i].error.empty()) continue;
      return answer_error(res, outs[i].failed ? 500 : 400, n == 1 ? outs[i].error : str("image ", i, ": ", outs[i].error));
    }
    res.set_content(embed ? embed_json(outs) : classify_json(outs, predictor.model().class_names), "application/json");
  }

  void log(const httplib::Request& req, const httplib::Response& res) {
    if (!options.access_log) return;
    char ms[32] = "-";
    if (request_start != Clock::time_point{})
      std::snprintf(ms, sizeof ms, "%.3f", std::chrono::duration<double, std::milli>(Clock::now() - request_start).count());
    request_start = {};
    std::fprintf(stderr, "serve: %s:%d \"%s %s\" %d %zu %s\n", req.remote_addr.c_str(), req.remote_port, req.method.c_str(),
                 req.path.c_str(), res.status, res.body.size(), ms);
  }
};

HttpServer::HttpServer(inference::Predictor& predictor, const ServeOptions& o) : impl_(std::make_unique<Impl>(predictor, o)) {
  FASTNN_CHECK(o.threads >= 1, "serve: threads must be at least 1, not ", o.threads);
  FASTNN_CHECK(o.timeout_s >= 1, "serve: timeout must be at least 1 s, not ", o.timeout_s);
  Impl& s = *impl_;
  httplib::Server& h = s.http;
  const size_t threads = static_cast<size_t>(o.threads);
  h.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  h.set_payload_max_length(o.max_body_bytes);
  h.set_read_timeout(o.timeout_s, 0);
  h.set_write_timeout(o.timeout_s, 0);
  h.set_keep_alive_timeout(std::min(o.timeout_s, 5));
  h.set_keep_alive_max_count(1000);
  h.set_tcp_nodelay(true);
  // cpp-httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and silently
  // share its connections; SO_REUSEADDR alone still allows a restart while old connections sit in TIME_WAIT.
  h.set_socket_options([](socket_t fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  h.set_pre_routing_handler([](const httplib::Request&, httplib::Response&) {
    request_start = Clock::now();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  h.Post("/v1/classify", [&s](const httplib::Request& req, httplib::Response& res) { s.images(req, res, false); });
  h.Post("/v1/embed", [&s](const httplib::Request& req, httplib::Response& res) { s.images(req, res, true); });
  h.Get("/v1/model", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(model_json(s.predictor.model(), s.options.batching), "application/json");
  });
  h.Get("/healthz", [&s](const httplib::Request&, httplib::Response& res) {
    if (s.stopping) {
      res.status = 503;
      res.set_content(R"({"status":"stopping"})", "application/json");
    } else {
      res.set_content(R"({"status":"ok"})", "application/json");
    }
  });
  // Statuses cpp-httplib sets itself (404, 413, 400 for a malformed request) get a JSON body too.
  h.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) res.set_content(error_json(status_text(res.status)), "application/json");
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string why = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
    }
    answer_error(res, 500, why);
  });
  h.set_logger([&s](const httplib::Request& req, const httplib::Response& res) { s.log(req, res); });
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() {
  Impl& s = *impl_;
  int port = s.options.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(s.options.host);
    if (port < 0) throw IoError(str("serve: cannot bind ", s.options.host, " to any port"));
  } else if (!s.http.bind_to_port(s.options.host, port)) {
    throw IoError(str("serve: cannot bind ", s.options.host, ":", port, " (in use, or not an address of this machine)"));
  }
  s.http.raise_backlog(kListenBacklog);
  s.listener = std::thread([&s] {
    s.http.listen_after_bind();
    s.listener_done = true;
  });
  // stop() before the listener runs would find nothing to close and leave it listening forever.
  while (!s.http.is_running() && !s.listener_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!s.http.is_running()) {
    s.listener.join();
    throw IoError(str("serve: cannot listen on ", s.options.host, ":", port));
  }
  return port;
}

void HttpServer::stop() {
  Impl& s = *impl_;
  std::lock_guard lock(s.stop_mu);
  s.stopping = true;
  // cpp-httplib's stop() closes the listening socket; listen_after_bind() then shuts its pool down,
  // which waits for every connection thread: the requests in flight are answered first.
  if (s.listener.joinable()) {
    s.http.stop();
    s.listener.join();
  }
  s.batcher.stop();
}

BatchStats HttpServer::stats() const { return impl_->batcher.stats(); }

}  // namespace fastnn::serve
