// `fastnn serve --checkpoint RUN_OR_CKPT [--host 127.0.0.1] [--port 8080] [--max_batch N] [--max_delay_ms D]
//  [--queue N] [--max_body_bytes B] [--threads T] [--timeout_s S] [--max_connections C]
//  [--max_connections_per_client P] [--max_buffered_bytes M] [--grace_s G]`: the checkpoint's model behind
// HTTP (trainer/serve/http_server.h; docs/INFERENCE.md, "Serving", has the limits and the memory they
// bound). Prints "listening on http://HOST:PORT" on stdout once bound (--port 0 picks a free port); access
// log and notes on stderr. SIGTERM / SIGINT: stop accepting, give the requests in flight --grace_s to
// finish, exit 0 (a second signal ends it at once).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "core/check.h"
#include "trainer/inference/predictor.h"
#include "trainer/loop/stop_signal.h"
#include "trainer/serve/http_server.h"

namespace fastnn::cli {
namespace {

struct ServeArgs {
  std::string checkpoint, device = "auto", precision;
  serve::ServeOptions options;
  int top_k = 5, forward_batch = 0;
  // 0: a batch is whatever queued while the previous one ran. Waiting for company cost a lone client more
  // than the wait itself on a loaded CPU (wake-up latency) and bought no throughput (docs/PERFORMANCE.md).
  double max_delay_ms = 0;
  bool quiet = false, json = false;
};

}  // namespace

void add_serve_command(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  serve::ServeOptions& o = a->options;
  CLI::App* cmd = app.add_subcommand("serve", "Serve a checkpoint's model over HTTP (classify, embed)");
  cmd->option_defaults()->always_capture_default();
  cmd->add_option("--checkpoint", a->checkpoint, "Checkpoint prefix or file, or a run directory (its latest)")->required();
  cmd->add_option("--host", o.host, "Address to listen on (default loopback only; 0.0.0.0 for every interface)");
  cmd->add_option("--port", o.port, "TCP port; 0 picks a free one (printed)")->check(CLI::Range(0, 65535));
  cmd->add_option("--max_batch,--max-batch", o.batching.max_batch, "Most images per batch")->check(CLI::Range(1, 4096));
  cmd->add_option("--max_delay_ms,--max-delay-ms", a->max_delay_ms,
                  "Longest wait for more images once one is queued, milliseconds")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--queue", o.batching.queue_capacity, "Most images waiting; more are answered 503")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max_body_bytes,--max-body-bytes", o.max_body_bytes,
                  "Largest request body (after de-chunking; compressed bodies are refused); more is answered 413")
      ->check(CLI::Range(size_t{1}, size_t{1} << 32));
  cmd->add_option("--threads", o.threads,
                  "Handler threads: complete requests parsed and waiting for the model at once (slow clients hold none)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--timeout_s,--timeout-s", o.timeout_s,
                  "A request must arrive whole (headers and body) within this many seconds of its first byte, else 408; "
                  "also the longest a client may take to read an answer")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--max_connections,--max-connections", o.max_connections,
                  "Most open connections; one more is answered 503 and closed")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max_connections_per_client,--max-connections-per-client", o.max_connections_per_client,
                  "Most open connections from one client address; one more is answered 429 and closed")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max_buffered_bytes,--max-buffered-bytes", o.max_buffered_bytes,
                  "Most request and answer bytes held for all connections together (503 over it; one client address "
                  "may hold a quarter: 429); at least 4 x (--max_body_bytes + 80 KiB)")
      ->check(CLI::Range(size_t{1} << 20, size_t{1} << 40));
  cmd->add_option("--grace_s,--grace-s", o.grace_s,
                  "After SIGTERM / SIGINT, seconds the requests in flight get to finish before their connections are closed")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--forward_batch,--forward-batch", a->forward_batch,
                  "Images per forward, at most --max_batch (default 0: the whole batch, or on the CPU slices that keep a "
                  "memory-bound network such as MobileNet in the L3 cache)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--top_k,--top-k", a->top_k, "Classes per image in `topk`")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--device", a->device, "cpu, cuda or auto");
  cmd->add_option("--precision", a->precision,
                  "fp32, fp16, bf16 or auto (default: the run's); on the CPU, bf16 computes the convolutions followed by a "
                  "batch norm in bfloat16 where the CPU has bf16 instructions")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "auto"}));
  cmd->add_flag("--quiet,-q", a->quiet, "No access log");
  cmd->add_flag("--json", a->json, "Access log as one JSON object a line: peer, method, path, status, bytes, ms");
  cmd->callback([a] {
    serve::ServeOptions& o = a->options;
    o.batching.max_delay = std::chrono::microseconds(static_cast<int64_t>(a->max_delay_ms * 1000.0));
    o.access_log = !a->quiet;
    o.access_log_format = a->json ? serve::AccessLogFormat::kJson : serve::AccessLogFormat::kText;
    const size_t per_client_need = 4 * (o.max_body_bytes + (size_t{80} << 10));
    if (o.max_buffered_bytes < per_client_need)
      throw ConfigError(str("serve: --max_buffered_bytes ", o.max_buffered_bytes, " is below 4 x (--max_body_bytes + 80 KiB) = ",
                            per_client_need, ": one client address may hold a quarter of it, which must fit a whole request"));
    // Installed before any thread starts: the first signal only sets a flag, polled below.
    loop::StopSignalScope signals(
        "fastnn: stop requested; answering the requests in flight (signal again to exit at once)\n");
    inference::Predictor predictor(
        a->checkpoint, {.device = a->device, .batch_size = o.batching.max_batch, .forward_batch = a->forward_batch,
                        .top_k = a->top_k, .embeddings = true, .precision = a->precision});
    const inference::ModelInfo& m = predictor.model();
    std::fprintf(stderr, "serve: %s (step %lld): %s, %d classes, %dx%dx%d %s preprocessing, %s, max batch %d%s, delay %.3g ms\n",
                 m.checkpoint.c_str(), static_cast<long long>(m.step), m.model_name.c_str(), m.num_classes, m.height,
                 m.width, m.channels, m.preset.c_str(), m.device.c_str(), o.batching.max_batch,
                 inference::forward_batch_note(m, o.batching.max_batch).c_str(), a->max_delay_ms);
    std::fprintf(stderr, "serve: limits: %d connections (%d per client address), bodies up to %zu bytes, %zu bytes held in all, "
                 "%d handler threads, %d s per request, %.3g s grace\n", o.max_connections, o.max_connections_per_client,
                 o.max_body_bytes, o.max_buffered_bytes, o.threads, o.timeout_s, o.grace_s);
    serve::HttpServer server(predictor, o);
    const int port = server.start();
    std::printf("listening on http://%s:%d\n", o.host.c_str(), port);
    std::fflush(stdout);
    while (!loop::stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
    const serve::BatchStats st = server.stats();
    std::fprintf(stderr, "serve: stopped after %lld images in %lld batches (largest %lld)\n", static_cast<long long>(st.items),
                 static_cast<long long>(st.batches), static_cast<long long>(st.largest));
  });
}

}  // namespace fastnn::cli
