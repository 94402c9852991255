#include "trainer/serve/event_loop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "core/clock.h"
#include "trainer/serve/access_log.h"
#include "trainer/serve/answers.h"
#include "trainer/serve/listener.h"

namespace fastnn::serve {
namespace {

constexpr int kBacklog = 1024;     // connections the kernel holds before accept (capped by somaxconn)
constexpr size_t kReadChunk = size_t{64} << 10;
constexpr uint64_t kListenTag = 0, kWakeTag = 1, kFirstConnection = 2;  // epoll data: what woke the loop
constexpr int kOwnFiles = 64;      // descriptors besides connections: listener, epoll, eventfd, stdio, model files

enum class Phase { kRead, kHandle, kWrite, kLinger };

struct Conn {
  Conn(uint64_t i, int f, std::string a, std::string p, const ParserLimits& limits)
      : id(i), fd(f), address(std::move(a)), peer(std::move(p)), parser(limits) {}
  uint64_t id;
  int fd;
  std::string address, peer;
  RequestParser parser;
  Phase phase = Phase::kRead;
  Clock::time_point deadline;  // of the phase: idle or whole-request (kRead), write, linger
  std::string pending;         // bytes read past the request being handled (pipelining)
  std::string out;             // answer being written
  size_t out_done = 0;
  bool close_after = false, linger_after = false, continue_sent = false, keep_alive = false;
  bool has_slot = true;        // counted against the connection caps (false: refused at accept, lingering)
  size_t held = 0;             // body bytes out with a handler
  size_t counted = 0;          // bytes counted against the budgets now
  uint32_t interest = 0;       // epoll events asked for now
  Clock::time_point handed;    // when the request went to a handler (the log's milliseconds)
  std::string method, path;    // of the request being handled, for the log
};

struct Client {
  int connections = 0;
  size_t bytes = 0;
};

}  // namespace

struct EventLoop::Impl {
  LoopOptions o;
  Dispatch dispatch;
  Log log;
  int listen_fd = -1, epoll_fd = -1, wake_fd = -1;
  std::thread thread;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;  // loop thread only
  std::unordered_map<std::string, Client> clients;            // loop thread only
  uint64_t next_id = kFirstConnection;
  size_t buffered = 0;
  size_t refusing = 0;  // connections refused at accept, still lingering
  bool stopping = false;
  Clock::time_point grace_end;
  uint32_t listen_interest = EPOLLIN;

  std::mutex mu;  // guards what other threads hand in
  std::vector<std::pair<uint64_t, HttpResponse>> answers;
  bool stop_asked = false;
  std::chrono::milliseconds grace{0};

  std::atomic<int64_t> accepted{0}, refused{0}, requests{0}, timed_out{0}, open{0}, buffered_now{0};

  Impl(const LoopOptions& opt, Dispatch d, Log l) : o(opt), dispatch(std::move(d)), log(std::move(l)) {}

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof one);
  }

  void watch(Conn& c, uint32_t events) {
    if (events == c.interest) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c.id;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c.fd, &ev);
    c.interest = events;
  }

  void watch_listener(uint32_t events) {
    if (listen_fd < 0 || events == listen_interest) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = kListenTag;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
    listen_interest = events;
  }

  void write_log(const std::string& line) {
    if (log) log(line);
  }

  // Re-counts a connection's bytes against the budgets; the status to refuse it with when over (0: fine).
  int account(Conn& c) {
    const size_t now = c.parser.memory() + c.pending.capacity() + c.out.capacity() + c.held;
    buffered = buffered - c.counted + now;
    buffered_now = static_cast<int64_t>(buffered);
    size_t client_bytes = 0;
    if (c.has_slot) {
      Client& cl = clients.at(c.address);
      client_bytes = cl.bytes = cl.bytes - c.counted + now;
    }
    c.counted = now;
    if (buffered > o.max_buffered_bytes) return 503;
    if (client_bytes > o.max_buffered_bytes / 4) return 429;
    return 0;
  }

  void close_conn(Conn& c) {
    buffered -= c.counted;
    buffered_now = static_cast<int64_t>(buffered);
    if (c.has_slot) {
      auto it = clients.find(c.address);
      it->second.bytes -= c.counted;
      if (--it->second.connections == 0) clients.erase(it);
    } else {
      --refusing;
    }
    ::close(c.fd);  // also removes it from the epoll set
    --open;
    conns.erase(c.id);  // destroys c
  }

  // A connection over a cap is answered and closed like a refused request (lingering, so the client reads
  // the answer), but holds no slot: at most max_connections such connections at once, beyond that they
  // are closed unanswered.
  void refuse_at_accept(int fd, std::string address, std::string peer, int status, const std::string& why, Clock::time_point now) {
    ++refused;
    if (refusing >= static_cast<size_t>(o.max_connections)) {
      ::close(fd);
      return;
    }
    Conn& c = add_conn(fd, std::move(address), std::move(peer), false, now);
    refuse(c, status, why);
  }

  Conn& add_conn(int fd, std::string address, std::string peer, bool counted, Clock::time_point now) {
    auto conn = std::make_unique<Conn>(next_id++, fd, std::move(address), std::move(peer), o.limits);
    Conn& c = *conn;
    c.has_slot = counted;
    if (counted) ++clients[c.address].connections;
    else ++refusing;
    conns.emplace(c.id, std::move(conn));
    c.deadline = now + o.idle_timeout;
    epoll_event ev{};
    ev.events = c.interest = EPOLLIN;
    ev.data.u64 = c.id;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    ++open;
    return c;
  }

  void accept_all(Clock::time_point now) {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors (something besides connections uses them): the listening socket would stay
        // readable and spin the loop, so stop watching it until the next sweep.
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) watch_listener(0);
        return;  // EAGAIN, or a connection that died in the backlog
      }
      const int yes = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      std::string address = address_of(addr), peer = peer_of(addr);
      if (conns.size() - refusing >= static_cast<size_t>(o.max_connections)) {
        refuse_at_accept(fd, std::move(address), std::move(peer), 503,
                         str("the server has ", o.max_connections, " connections open (its limit); retry later"), now);
        continue;
      }
      const auto cl = clients.find(address);
      if (cl != clients.end() && cl->second.connections >= o.max_connections_per_client) {
        refuse_at_accept(fd, std::move(address), std::move(peer), 429,
                         str("this address has ", o.max_connections_per_client,
                             " connections open (the server's limit per client); retry later"), now);
        continue;
      }
      add_conn(fd, std::move(address), std::move(peer), true, now);
      ++accepted;
    }
  }

  // An error answer for the request being received; the connection closes after it (lingering).
  void refuse(Conn& c, int status, const std::string& why) {
    const HttpRequest& r = c.parser.request();
    HttpResponse res{status, "application/json", error_json(why), {}};
    if (status == 503 || status == 429) res.headers.emplace_back("Retry-After", "1");
    write_log(access_entry(o.log_format, c.peer, r.method, r.path, status, res.body.size(), -1));
    c.parser.reset();  // its buffers are not needed for the answer
    std::string().swap(c.pending);
    c.close_after = c.linger_after = true;
    send_answer(c, serialize_response(res, false), Clock::now());
  }

  void send_answer(Conn& c, std::string bytes, Clock::time_point now) {
    c.out += bytes;
    c.phase = Phase::kWrite;
    c.deadline = now + o.request_timeout;
    account(c);
    flush(c);
  }

  // Feeds bytes of the connection's request(s) to its parser; false when the connection was closed.
  void take_input(Conn& c, std::string_view data, Clock::time_point now) {
    if (!c.parser.started() && !data.empty()) c.deadline = now + o.request_timeout;  // the whole request's clock
    const size_t used = c.parser.feed(data);
    const RequestParser::State st = c.parser.state();
    if (st == RequestParser::State::kDone) c.pending.assign(data.substr(used));
    if (const int over = account(c); over != 0 && st != RequestParser::State::kFailed) {
      return refuse(c, over, over == 503 ? "the server holds too many request bytes (--max_buffered_bytes); retry later"
                                         : "this address holds too many request bytes (a quarter of --max_buffered_bytes); retry later");
    }
    if (st == RequestParser::State::kFailed) return refuse(c, c.parser.error_status(), c.parser.error());
    if (st == RequestParser::State::kDone) return hand_off(c, now);
    if (c.parser.awaits_continue() && !c.continue_sent) {
      c.continue_sent = true;
      c.out += "HTTP/1.1 100 Continue\r\n\r\n";
      flush(c);
    }
  }

  void hand_off(Conn& c, Clock::time_point now) {
    Exchange ex{c.id, c.parser.take()};
    c.method = ex.request.method;
    c.path = ex.request.path;
    c.keep_alive = ex.request.keep_alive;
    c.held = ex.request.body.capacity();
    c.parser.reset();
    c.phase = Phase::kHandle;
    c.handed = now;
    account(c);
    watch(c, 0);
    ++requests;
    dispatch(std::move(ex));
  }

  void answer(uint64_t id, HttpResponse& res, Clock::time_point now) {
    auto it = conns.find(id);
    if (it == conns.end() || it->second->phase != Phase::kHandle) return;  // gone meanwhile
    Conn& c = *it->second;
    write_log(access_entry(o.log_format, c.peer, c.method, c.path, res.status, res.body.size(),
                           std::chrono::duration<double, std::milli>(now - c.handed).count()));
    c.held = 0;
    const bool keep = c.keep_alive && !stopping;
    c.close_after = !keep;
    send_answer(c, serialize_response(res, keep), now);
  }

  void next_request(Conn& c, Clock::time_point now) {
    c.phase = Phase::kRead;
    c.continue_sent = false;
    c.deadline = now + o.idle_timeout;
    watch(c, EPOLLIN);
    if (c.pending.empty()) return;
    const std::string data = std::move(c.pending);
    c.pending.clear();
    take_input(c, data, now);
  }

  // Writes what it can of c.out; when all is written, moves the connection on (which may close it).
  void flush(Conn& c) {
    while (c.out_done < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.out_done, c.out.size() - c.out_done, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_done += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return watch(c, c.phase == Phase::kRead ? EPOLLIN | EPOLLOUT : EPOLLOUT);
      } else if (!(n < 0 && errno == EINTR)) {
        return close_conn(c);
      }
    }
    std::string().swap(c.out);
    c.out_done = 0;
    account(c);
    const Clock::time_point now = Clock::now();
    if (c.phase == Phase::kRead) return watch(c, EPOLLIN);  // an interim 100 Continue went out
    if (!c.close_after) return next_request(c, now);
    if (!c.linger_after) return close_conn(c);
    ::shutdown(c.fd, SHUT_WR);
    c.phase = Phase::kLinger;
    c.deadline = now + kLinger;
    watch(c, EPOLLIN);
  }

  void readable(Conn& c, Clock::time_point now) {
    static thread_local std::string buf(kReadChunk, '\0');
    const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) return close_conn(c);  // the client closed (or reset): a request cut short is dropped
    if (c.phase == Phase::kLinger) return;  // discarded
    take_input(c, std::string_view(buf.data(), static_cast<size_t>(n)), now);
  }

  void sweep(Clock::time_point now) {
    std::vector<uint64_t> due;
    for (const auto& [id, c] : conns)
      if (c->phase != Phase::kHandle && now >= c->deadline) due.push_back(id);
    for (uint64_t id : due) {
      Conn& c = *conns.at(id);
      if (c.phase == Phase::kRead && c.parser.started()) {
        ++timed_out;
        refuse(c, 408, str("the request did not arrive whole within the server's limit (", o.request_timeout.count() / 1000.0,
                           " s, --timeout_s)"));
      } else {
        close_conn(c);  // idle keep-alive, an answer the client does not read, or the linger is over
      }
    }
  }

  void begin_stop(Clock::time_point now) {
    stopping = true;
    grace_end = now + grace;
    ::close(listen_fd);  // new connections are refused from here on
    listen_fd = -1;
    std::vector<uint64_t> idle;
    for (const auto& [id, c] : conns)
      if (c->phase == Phase::kRead && !c->parser.started() && c->pending.empty()) idle.push_back(id);
    for (uint64_t id : idle) close_conn(*conns.at(id));
  }

  void run() {
    std::vector<epoll_event> events(256);
    Clock::time_point next_sweep = Clock::now() + kSweep;
    std::vector<std::pair<uint64_t, HttpResponse>> ready;
    for (;;) {
      const int n = ::epoll_wait(epoll_fd, events.data(), static_cast<int>(events.size()), static_cast<int>(kSweep.count()));
      Clock::time_point now = Clock::now();
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag == kListenTag) {
          if (!stopping) accept_all(now);
          continue;
        }
        if (tag == kWakeTag) {
          uint64_t count;
          [[maybe_unused]] ssize_t r = ::read(wake_fd, &count, sizeof count);
          continue;
        }
        auto it = conns.find(tag);
        if (it == conns.end()) continue;  // closed earlier in this round
        Conn& c = *it->second;
        const uint32_t ev = events[i].events;
        if (ev & EPOLLERR) {
          close_conn(c);
        } else if (ev & EPOLLOUT) {
          flush(c);
        } else if (ev & EPOLLIN) {
          readable(c, now);
        } else if (ev & EPOLLHUP) {
          close_conn(c);  // both directions shut: nobody to answer
        }
      }
      bool stop_now;
      {
        std::lock_guard lock(mu);
        ready.swap(answers);
        stop_now = stop_asked;
      }
      now = Clock::now();
      for (auto& [id, res] : ready) answer(id, res, now);
      ready.clear();
      if (stop_now && !stopping) begin_stop(now);
      if (now >= next_sweep) {
        watch_listener(EPOLLIN);
        sweep(now);
        next_sweep = now + kSweep;
      }
      if (stopping && (conns.empty() || now >= grace_end)) break;
    }
    while (!conns.empty()) close_conn(*conns.begin()->second);
  }
};

EventLoop::EventLoop(const LoopOptions& o, Dispatch dispatch, Log log)
    : impl_(std::make_unique<Impl>(o, std::move(dispatch), std::move(log))) {
  FASTNN_CHECK(o.max_connections >= 1 && o.max_connections_per_client >= 1, "serve: connection limits must be at least 1");
  FASTNN_CHECK(o.request_timeout.count() >= 1 && o.idle_timeout.count() >= 1, "serve: timeouts must be positive");
  // A client address may hold a quarter of the budget: that must fit one largest request.
  FASTNN_CHECK(o.max_buffered_bytes / 4 >= o.limits.max_body_bytes + o.limits.max_head_bytes + kReadChunk,
               "serve: --max_buffered_bytes must be at least 4 x (--max_body_bytes + ",
               (o.limits.max_head_bytes + kReadChunk) >> 10, " KiB): ", o.max_buffered_bytes, " is less");
}

EventLoop::~EventLoop() {
  stop(std::chrono::milliseconds(0));
  if (impl_->epoll_fd >= 0) ::close(impl_->epoll_fd);
  if (impl_->wake_fd >= 0) ::close(impl_->wake_fd);
  if (impl_->listen_fd >= 0) ::close(impl_->listen_fd);
}

int EventLoop::start() {
  Impl& s = *impl_;
  FASTNN_CHECK(!s.thread.joinable() && s.listen_fd < 0, "serve: the event loop is already started");
  ensure_open_files(2 * static_cast<size_t>(s.o.max_connections) + kOwnFiles);  // the refused ones linger too
  const Listener l = listen_on(s.o.host, s.o.port, kBacklog);
  s.listen_fd = l.fd;
  s.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s.epoll_fd < 0 || s.wake_fd < 0) throw_io_error("epoll", "create the event loop");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.listen_fd, &ev);
  ev.data.u64 = kWakeTag;
  ::epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, s.wake_fd, &ev);
  s.thread = std::thread([&s] { s.run(); });
  return l.port;
}

void EventLoop::respond(uint64_t connection, HttpResponse response) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    s.answers.emplace_back(connection, std::move(response));
  }
  s.wake();
}

void EventLoop::stop(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  {
    std::lock_guard lock(s.mu);
    if (!s.stop_asked) s.grace = grace;
    s.stop_asked = true;
  }
  if (!s.thread.joinable()) return;
  s.wake();
  s.thread.join();
}

LoopStats EventLoop::stats() const {
  const Impl& s = *impl_;
  return {s.accepted, s.refused, s.requests, s.timed_out, s.open, s.buffered_now};
}

}  // namespace fastnn::serve
