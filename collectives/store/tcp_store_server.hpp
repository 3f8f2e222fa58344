// The TCP store's server, as the client (tcp_store_client.cpp) sees it: a handle that serves the
// key/value map from a background thread while it lives. Everything else about the server (its
// poll loop, handshake and limits) stays inside tcp_store_server.cpp.
#pragma once

#include <memory>
#include <string>

namespace cohort::comm::detail {

class TcpStoreServer {
 public:
  // Listens on `bind_host` (an IPv4 address or a name; "0.0.0.0": every interface) at `port`
  // (0: any free port), for clients that present `token` ("" accepts any client of this
  // protocol). Throws cohort::Error when it cannot.
  TcpStoreServer(const std::string& bind_host, int port, std::string token);
  ~TcpStoreServer();  // stops the thread and closes every connection
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const;  // the port it listens on (the chosen one when asked for 0)

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cohort::comm::detail
