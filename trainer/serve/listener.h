// The socket plumbing of `fastnn serve`'s event loop: the listening socket, peer names, the open-file limit.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string>

namespace fastnn::serve {

struct Listener {
  int fd = -1;
  int port = 0;  // the bound port (the ephemeral one for port 0)
};

// A non-blocking listening TCP socket on host:port with SO_REUSEADDR (a restart binds while old
// connections sit in TIME_WAIT) and without SO_REUSEPORT (a second server on the port must fail, not
// silently share its connections). IoError naming host:port when it cannot be bound.
Listener listen_on(const std::string& host, int port, int backlog);

// "1.2.3.4" / "::1" (the address alone: connections are counted per client address) and the
// printable "1.2.3.4:5678" / "[::1]:5678".
std::string address_of(const sockaddr_storage& addr);
std::string peer_of(const sockaddr_storage& addr);

// Raises the soft RLIMIT_NOFILE to at least `needed` descriptors (up to the hard limit); ConfigError
// when the hard limit is lower.
void ensure_open_files(size_t needed);

}  // namespace fastnn::serve
