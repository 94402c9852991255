#include "trainer/serve/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace fastnn::serve {

Listener listen_on(const std::string& host, int port, int backlog) {
  const std::string where = str(host, ":", port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0)
    throw IoError(str("serve: cannot bind ", where, ": ", ::gai_strerror(rc)));
  Listener l;
  std::string why = "no address";
  for (addrinfo* a = found; a && l.fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      l.fd = fd;
    } else {
      why = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (l.fd < 0) throw IoError(str("serve: cannot bind ", where, " (", why, "; in use, or not an address of this machine)"));
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(l.fd, reinterpret_cast<sockaddr*>(&bound), &len);
  l.port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port);
  return l;
}

std::string address_of(const sockaddr_storage& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr, buf, sizeof buf);
  else if (addr.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(addr).sin_addr, buf, sizeof buf);
  return buf;
}

std::string peer_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET6)
    return str("[", address_of(addr), "]:", ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port));
  return str(address_of(addr), ":", ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port));
}

void ensure_open_files(size_t needed) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur >= needed) return;
  if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < needed)
    throw ConfigError(str("serve: ", needed, " open files are needed (--max_connections and the server's own), the limit is ",
                          lim.rlim_max, " (ulimit -Hn); lower --max_connections"));
  lim.rlim_cur = needed;
  if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) throw_io_error("RLIMIT_NOFILE", "raise the open-file limit");
}

}  // namespace fastnn::serve
