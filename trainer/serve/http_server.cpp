#include "trainer/serve/http_server.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>

#include "core/check.h"
#include "core/logging.h"
#include "trainer/inference/input_mismatch.h"
#include "trainer/serve/answers.h"
#include "trainer/serve/request.h"
#include "trainer/serve/worker_pool.h"

namespace fastnn::serve {
namespace {

// Runs a batch through the predictor: decoding failures become per-item errors (the request's 400),
// anything else thrown fails the batch (the batcher turns it into 500s). The first image far from the
// model's training images is said on the log, once (`mismatch_said`).
void classify_batch(inference::Predictor& predictor, std::span<const inference::InputItem* const> in,
                    std::span<Outcome* const> out, std::atomic<bool>& mismatch_said) {
  std::vector<inference::InputItem> items;
  items.reserve(in.size());
  for (const inference::InputItem* it : in) items.push_back(*it);
  for (size_t i = 0; i < items.size() && !mismatch_said.load(std::memory_order_relaxed); ++i)
    if (const std::string w = inference::input_mismatch_warning(items[i], predictor.model(), "an image sent"); !w.empty())
      if (!mismatch_said.exchange(true)) log_warn("serve: ", w);
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

HttpResponse error(int status, const std::string& message) { return {status, "application/json", error_json(message), {}}; }

HttpResponse retry_later(const std::string& message) {
  HttpResponse r = error(503, message);
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

HttpResponse json_ok(std::string body) { return {200, "application/json", std::move(body), {}}; }

}  // namespace

LoopOptions loop_options(const ServeOptions& o) {
  LoopOptions l;
  l.host = o.host;
  l.port = o.port;
  l.limits.max_body_bytes = o.max_body_bytes;
  l.max_connections = o.max_connections;
  l.max_connections_per_client = o.max_connections_per_client;
  l.max_buffered_bytes = o.max_buffered_bytes;
  l.request_timeout = std::chrono::seconds(o.timeout_s);
  l.idle_timeout = std::chrono::seconds(std::min(o.timeout_s, 5));
  l.log_format = o.access_log_format;
  return l;
}

struct HttpServer::Impl {
  inference::Predictor& predictor;
  ServeOptions options;
  std::atomic<bool> mismatch_said{false};  // before the batcher, whose threads read it
  Batcher batcher;
  EventLoop loop;
  WorkerPool pool;
  std::atomic<bool> stopping{false};
  std::mutex stop_mu;

  Impl(inference::Predictor& p, const ServeOptions& o)
      : predictor(p), options(o),
        batcher(o.batching, [this](std::span<const inference::InputItem* const> in, std::span<Outcome* const> out) {
          classify_batch(predictor, in, out, mismatch_said);
        }),
        loop(loop_options(o), [this](Exchange ex) { pool.push(std::move(ex)); },
             o.access_log ? EventLoop::Log([](const std::string& line) { std::fputs(line.c_str(), stderr); }) : nullptr),
        pool(o.threads, [this](Exchange& ex) { handle(ex); }) {}

  void handle(Exchange& ex) {
    HttpResponse res;
    try {
      res = route(ex.request);
    } catch (const std::exception& e) {
      res = error(500, e.what());
    }
    loop.respond(ex.connection, std::move(res));
  }

  HttpResponse route(HttpRequest& req) {
    const std::string& path = req.path;
    const bool images_path = path == "/v1/classify" || path == "/v1/embed";
    if (!images_path && path != "/v1/model" && path != "/healthz")
      return error(404, "no such endpoint: POST /v1/classify, POST /v1/embed, GET /v1/model, GET /healthz");
    const char* allowed = images_path ? "POST" : "GET";
    if (req.method != allowed) {
      HttpResponse r = error(405, str("method not allowed: ", path, " takes ", allowed));
      r.headers.emplace_back("Allow", allowed);
      return r;
    }
    if (images_path) return images(req, path == "/v1/embed");
    if (path == "/v1/model") return json_ok(model_json(predictor.model(), options.batching));
    if (stopping) return {503, "application/json", R"({"status":"stopping"})", {}};
    return json_ok(R"({"status":"ok"})");
  }

  HttpResponse images(HttpRequest& req, bool embed) {
    std::vector<inference::InputItem> items;
    try {
      const std::string* type = req.header("content-type");
      items = parse_images(type ? *type : std::string(), req.body, static_cast<size_t>(options.batching.queue_capacity));
    } catch (const RequestError& e) {
      return error(e.status(), e.what());
    }
    std::string().swap(req.body);  // the images are copied out; the body is not needed while they wait
    const size_t n = items.size();
    std::shared_ptr<Ticket> ticket = batcher.submit(std::move(items));
    if (!ticket)
      return retry_later(stopping ? "the server is stopping"
                                  : str("the queue is full (", options.batching.queue_capacity, " images); retry later"));
    const std::vector<Outcome>& outs = ticket->wait();
    for (size_t i = 0; i < n; ++i) {
      const Outcome& o = outs[i];
      if (o.error.empty()) continue;
      if (o.cancelled) return retry_later(o.error);
      return error(o.failed ? 500 : 400, n == 1 ? o.error : str("image ", i, ": ", o.error));
    }
    return json_ok(embed ? embed_json(outs) : classify_json(outs, predictor.model().class_names));
  }
};

HttpServer::HttpServer(inference::Predictor& predictor, const ServeOptions& o) {
  FASTNN_CHECK(o.timeout_s >= 1, "serve: timeout must be at least 1 s, not ", o.timeout_s);
  FASTNN_CHECK(o.grace_s >= 0, "serve: the grace period must not be negative");
  impl_ = std::make_unique<Impl>(predictor, o);
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::start() { return impl_->loop.start(); }

void HttpServer::stop() {
  Impl& s = *impl_;
  std::lock_guard lock(s.stop_mu);
  s.stopping = true;
  s.loop.stop(std::chrono::milliseconds(static_cast<int64_t>(s.options.grace_s * 1000.0)));
  // Every connection is closed now: what still waits for the model has nobody to answer.
  s.batcher.cancel("the server is stopping");
  s.pool.stop();
  s.batcher.stop();
}

BatchStats HttpServer::stats() const { return impl_->batcher.stats(); }
LoopStats HttpServer::connections() const { return impl_->loop.stats(); }

}  // namespace fastnn::serve
