// serve/routes.h — the daemon's routes other than POST /events: operations (healthz, readyz,
// metrics), the webhook handshake, and the admin API behind its bearer token.
//
// Thread-safety: used on the HTTP thread only (it owns the read-only store handle).
#pragma once

#include <microhttpd.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/serve.h"
#include "evident/store.h"
#include "serve/metrics.h"

namespace evident::serve {

inline constexpr size_t kAdminBodyBytesMax = 64 << 10;

// What the routes need of the daemon.
class Responder {
 public:
  virtual ~Responder() = default;
  virtual MHD_Result Respond(MHD_Connection* connection, int status, std::string_view body,
                             std::string_view content_type,
                             const std::vector<std::pair<std::string, std::string>>& extra) = 0;
  virtual bool LoopRunning() const = 0;
  virtual std::string StoreTrouble() const = 0;   // the store's last failure, empty when none
  virtual std::string BrokerTrouble() const = 0;  // empty: no broker, or it answers
  virtual bool Stopping() const = 0;
};

class Routes {
 public:
  Routes(Responder& responder, Metrics& metrics, const ServeOptions& options)
      : responder_(responder), metrics_(metrics), options_(options) {}
  void SetReader(std::unique_ptr<Store> reader) { reader_ = std::move(reader); }

  // A complete request other than POST /events and the admin API.
  MHD_Result Dispatch(MHD_Connection* connection, std::string_view url, std::string_view method,
                      std::string_view body);
  // The admin API's gate: MHD_YES when the request may go on to the admin worker (nothing is
  // queued); else the refusal is queued (403 disabled, 401 without the right token) and its
  // result returned in `refused`.
  bool AdminGate(MHD_Connection* connection, MHD_Result& refused);
  // A refusal body ({"status","reason","message"}) with `status`.
  // A 405 names the methods the route takes in `allow`.
  MHD_Result Refuse(MHD_Connection* connection, int status, std::string_view reason,
                    std::string_view message, std::string_view allow = {});

 private:
  MHD_Result Ready(MHD_Connection* connection);
  MHD_Result Page(MHD_Connection* connection, std::string_view url);
  MHD_Result Handshake(MHD_Connection* connection);
  bool Authorized(MHD_Connection* connection) const;

  Responder& responder_;
  Metrics& metrics_;
  const ServeOptions& options_;
  std::unique_ptr<Store> reader_;
};

}  // namespace evident::serve
