// serve: the event loop and handler threads (trainer/serve/event_loop.h, worker_pool.h) over real
// loopback sockets, with a handler that answers the path and body size: keep-alive and pipelining,
// 100-continue, the whole-request deadline, slow clients holding no thread, the connection and byte caps
// (other client addresses come from 127.0.0.2... which Linux routes to loopback), error answers a
// still-sending client can read, and a stop bounded by its grace period.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "trainer/serve/event_loop.h"
#include "trainer/serve/worker_pool.h"

namespace fastnn::serve {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A loop with `threads` handler threads answering "PATH BODY_SIZE" after `delay`.
struct TestServer {
  explicit TestServer(LoopOptions o, int threads = 2, std::chrono::milliseconds delay = 0ms)
      : loop(with_port0(o), [this](Exchange ex) { pool.push(std::move(ex)); },
             [this](const std::string& line) {
               std::lock_guard lock(log_mu);
               log += line;
             }),
        pool(threads, [this, delay](Exchange& ex) {
          std::this_thread::sleep_for(delay);
          ++handled;
          loop.respond(ex.connection, {200, "text/plain", ex.request.path + " " + std::to_string(ex.request.body.size()), {}});
        }) {
    port = loop.start();
  }
  ~TestServer() {
    loop.stop(0ms);
    pool.stop();
  }
  static LoopOptions with_port0(LoopOptions o) {
    o.host = "127.0.0.1";
    o.port = 0;
    return o;
  }
  std::string log_text() {
    std::lock_guard lock(log_mu);
    return log;
  }

  EventLoop loop;
  WorkerPool pool;
  int port = 0;
  std::atomic<int> handled{0};
  std::mutex log_mu;
  std::string log;
};

LoopOptions fast_options() {
  LoopOptions o;
  o.request_timeout = 400ms;
  o.idle_timeout = 300ms;
  o.limits.max_body_bytes = 100000;
  o.max_buffered_bytes = 4 * (100000 + o.limits.max_head_bytes + (64 << 10));
  return o;
}

// A client socket from `source` (any 127.x.y.z) with a receive timeout.
int connect_to(int port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &a.sin_addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

bool send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    s.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

struct Answer {
  int status = 0;  // 0: the connection closed (or timed out) before an answer
  std::string head, body;
};

// Reads one answer (head + Content-Length body); `buf` keeps bytes of the next one.
Answer read_answer(int fd, std::string& buf) {
  Answer a;
  char chunk[4096];
  size_t end;
  while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return a;
    buf.append(chunk, static_cast<size_t>(n));
  }
  a.head = buf.substr(0, end + 4);
  buf.erase(0, end + 4);
  a.status = std::stoi(a.head.substr(9, 3));
  size_t length = 0;
  if (const size_t at = a.head.find("Content-Length: "); at != std::string::npos) length = std::stoul(a.head.substr(at + 16));
  while (buf.size() < length) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) return Answer{};
    buf.append(chunk, static_cast<size_t>(n));
  }
  a.body = buf.substr(0, length);
  buf.erase(0, length);
  return a;
}

Answer roundtrip(int port, std::string_view request, const char* source = "127.0.0.1") {
  const int fd = connect_to(port, source);
  send_all(fd, request);
  std::string buf;
  Answer a = read_answer(fd, buf);
  ::close(fd);
  return a;
}

bool closed_by_server(int fd) {
  char c;
  return ::recv(fd, &c, 1, 0) == 0;
}

const std::string kGet = "GET /x HTTP/1.1\r\nHost: t\r\n\r\n";

TEST(ServeEventLoop, KeepAliveAndPipelining) {
  TestServer s(fast_options());
  const int fd = connect_to(s.port);
  std::string buf;
  ASSERT_TRUE(send_all(fd, kGet));
  Answer a = read_answer(fd, buf);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "/x 0");
  EXPECT_NE(a.head.find("Connection: keep-alive"), std::string::npos);
  // Three requests in one write: answered in order, one at a time.
  ASSERT_TRUE(send_all(fd, "POST /a HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: t\r\n\r\n"
                           "POST /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                           "2\r\nab\r\n0\r\n\r\n"));
  EXPECT_EQ(read_answer(fd, buf).body, "/a 3");
  EXPECT_EQ(read_answer(fd, buf).body, "/b 0");
  a = read_answer(fd, buf);
  EXPECT_EQ(a.body, "/c 2");
  EXPECT_NE(a.head.find("Connection: close"), std::string::npos);
  EXPECT_TRUE(closed_by_server(fd));
  ::close(fd);
  EXPECT_EQ(s.loop.stats().requests, 4);
}

TEST(ServeEventLoop, ExpectContinue) {
  TestServer s(fast_options());
  const int fd = connect_to(s.port);
  ASSERT_TRUE(send_all(fd, "POST /up HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  std::string buf;
  EXPECT_EQ(read_answer(fd, buf).status, 100);
  ASSERT_TRUE(send_all(fd, "data"));
  EXPECT_EQ(read_answer(fd, buf).body, "/up 4");
  ::close(fd);
}

TEST(ServeEventLoop, ErrorsAreAnsweredAndTheConnectionClosed) {
  TestServer s(fast_options());
  const Answer a = roundtrip(s.port, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.head.find("Connection: close"), std::string::npos);
  EXPECT_NE(a.body.find("\"error\""), std::string::npos);
  EXPECT_EQ(roundtrip(s.port, "POST /x HTTP/1.1\r\nHost: t\r\n\r\n").status, 411);
  EXPECT_EQ(roundtrip(s.port, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\nab").status, 415);
  EXPECT_EQ(s.handled, 0);  // none reached a handler
}

TEST(ServeEventLoop, AnOversizedBodyIsAnsweredWhileTheClientStillSends) {
  TestServer s(fast_options());
  const int fd = connect_to(s.port);
  ASSERT_TRUE(send_all(fd, "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 5000000\r\n\r\n"));
  // The client goes on sending what it declared; the answer must still reach it, not a reset.
  std::thread sender([fd] { send_all(fd, std::string(400000, 'x')); });
  std::string buf;
  EXPECT_EQ(read_answer(fd, buf).status, 413);
  sender.join();
  ::close(fd);
}

TEST(ServeEventLoop, WholeRequestDeadline) {
  TestServer s(fast_options());  // 400 ms for a whole request
  const int fd = connect_to(s.port);
  const std::string req = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'b');
  const auto t0 = Clock::now();
  std::string buf;
  // One byte every 30 ms never times out a single read, but the request as a whole does.
  for (size_t i = 0; i < req.size() && Clock::now() - t0 < 2s; ++i) {
    if (!send_all(fd, req.substr(i, 1))) break;
    std::this_thread::sleep_for(30ms);
    char c;
    if (::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1) break;
  }
  const Answer a = read_answer(fd, buf);
  const auto took = Clock::now() - t0;
  EXPECT_EQ(a.status, 408);
  EXPECT_GE(took, 350ms);
  EXPECT_LT(took, 1000ms);
  ::close(fd);
  EXPECT_EQ(s.loop.stats().timed_out, 1);
}

TEST(ServeEventLoop, IdleConnectionsAreClosed) {
  TestServer s(fast_options());  // 300 ms idle
  const int fd = connect_to(s.port);
  const auto t0 = Clock::now();
  EXPECT_TRUE(closed_by_server(fd));  // no answer, just closed
  EXPECT_LT(Clock::now() - t0, 1000ms);
  ::close(fd);
}

TEST(ServeEventLoop, SlowClientsHoldNoThread) {
  LoopOptions o = fast_options();
  o.request_timeout = 5000ms;
  o.idle_timeout = 5000ms;
  TestServer s(o, /*threads=*/1);
  std::vector<int> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(connect_to(s.port));
    send_all(slow.back(), "POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab");
  }
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    EXPECT_EQ(roundtrip(s.port, kGet).status, 200);
    EXPECT_LT(Clock::now() - t0, 300ms);
  }
  for (int fd : slow) ::close(fd);
}

TEST(ServeEventLoop, ConnectionCaps) {
  LoopOptions o = fast_options();
  o.idle_timeout = 5000ms;
  o.max_connections = 4;
  o.max_connections_per_client = 2;
  TestServer s(o);
  std::vector<int> held = {connect_to(s.port), connect_to(s.port)};
  std::this_thread::sleep_for(50ms);  // accepted before the next ones
  Answer a = roundtrip(s.port, kGet);
  EXPECT_EQ(a.status, 429);
  EXPECT_NE(a.head.find("Retry-After: 1"), std::string::npos);
  // Another address is not limited by the first one's connections, only by the total.
  held.push_back(connect_to(s.port, "127.0.0.2"));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(roundtrip(s.port, kGet, "127.0.0.3").status, 200);
  std::this_thread::sleep_for(50ms);  // its close reaches the server
  held.push_back(connect_to(s.port, "127.0.0.4"));
  std::this_thread::sleep_for(50ms);
  a = roundtrip(s.port, kGet, "127.0.0.5");
  EXPECT_EQ(a.status, 503);
  EXPECT_EQ(s.loop.stats().refused, 2);
  for (int fd : held) ::close(fd);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(roundtrip(s.port, kGet).status, 200);  // slots come back
}

TEST(ServeEventLoop, ByteBudgets) {
  LoopOptions o = fast_options();  // a quarter of the budget: 4 x 100000-byte bodies would pass it
  o.request_timeout = 5000ms;
  TestServer s(o);
  const std::string head = "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n";
  std::vector<int> fds;
  std::string buf;
  int refused = 0;
  for (int i = 0; i < 4 && refused == 0; ++i) {
    fds.push_back(connect_to(s.port));
    send_all(fds.back(), head + std::string(99000, 'x'));
    std::this_thread::sleep_for(100ms);
    char c;
    if (::recv(fds.back(), &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
      EXPECT_EQ(read_answer(fds.back(), buf).status, 429);
      ++refused;
    }
  }
  EXPECT_EQ(refused, 1);
  EXPECT_LE(s.loop.stats().buffered, static_cast<int64_t>(o.max_buffered_bytes / 4));
  // Another address still gets its share.
  EXPECT_EQ(roundtrip(s.port, head + std::string(100000, 'y'), "127.0.0.2").body, "/x 100000");
  for (int fd : fds) ::close(fd);
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(s.loop.stats().buffered, 0);
}

TEST(ServeEventLoop, StopIsBoundedByTheGracePeriod) {
  LoopOptions o = fast_options();
  o.request_timeout = 10000ms;
  o.idle_timeout = 10000ms;
  auto s = std::make_unique<TestServer>(o, 2, 200ms);
  const int idle = connect_to(s->port);
  const int trickler = connect_to(s->port);
  send_all(trickler, "POST /t HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab");
  const int busy = connect_to(s->port);
  send_all(busy, kGet);  // its handler takes 200 ms
  std::this_thread::sleep_for(50ms);
  const auto t0 = Clock::now();
  std::thread stopper([&] { s->loop.stop(600ms); });
  std::this_thread::sleep_for(50ms);
  // New connections are refused, idle ones closed, the request being handled is answered (closing).
  const int late = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(s->port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  EXPECT_NE(::connect(late, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(late);
  EXPECT_TRUE(closed_by_server(idle));
  std::string buf;
  const Answer answered = read_answer(busy, buf);
  EXPECT_EQ(answered.status, 200);
  EXPECT_NE(answered.head.find("Connection: close"), std::string::npos);
  // The trickling client is cut when the grace period ends, and stop() returns then.
  EXPECT_TRUE(closed_by_server(trickler));
  stopper.join();
  const auto took = Clock::now() - t0;
  EXPECT_GE(took, 550ms);
  EXPECT_LT(took, 1000ms);
  for (int fd : {idle, trickler, busy}) ::close(fd);
}

TEST(ServeEventLoop, AccessLogEscapesThePath) {
  TestServer s(fast_options());
  roundtrip(s.port, "GET /a%0Aserve:%20forged%1B[2J HTTP/1.1\r\nHost: t\r\n\r\n");
  roundtrip(s.port, "BAD\r\n\r\n");
  std::this_thread::sleep_for(50ms);
  const std::string log = s.log_text();
  EXPECT_NE(log.find("\"GET /a\\x0aserve: forged\\x1b[2J\" 200 "), std::string::npos) << log;
  EXPECT_NE(log.find("\"- -\" 400 "), std::string::npos) << log;
  size_t lines = 0;
  for (char c : log) {
    lines += c == '\n';
    EXPECT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << int(c);
  }
  EXPECT_EQ(lines, 2u);
}

}  // namespace
}  // namespace fastnn::serve
