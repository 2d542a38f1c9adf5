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
#include "serve/admin.h"
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
  virtual std::string BrokerTrouble() const = 0;  // empty: no broker, or it answers
  virtual bool Stopping() const = 0;
};

class Routes {
 public:
  Routes(Responder& responder, Metrics& metrics, const Config& config, const ServeOptions& options)
      : responder_(responder), metrics_(metrics), options_(options), admin_(config, options) {}
  void SetReader(std::unique_ptr<Store> reader) {
    reader_ = std::move(reader);
    admin_.SetReader(reader_.get());
  }

  // A complete request other than POST /events.
  MHD_Result Dispatch(MHD_Connection* connection, std::string_view url, std::string_view method,
                      std::string_view body);
  // A refusal body ({"status","reason","message"}) with `status`.
  MHD_Result Refuse(MHD_Connection* connection, int status, std::string_view reason,
                    std::string_view message);

 private:
  MHD_Result Ready(MHD_Connection* connection);
  MHD_Result Page(MHD_Connection* connection, std::string_view url);
  MHD_Result Handshake(MHD_Connection* connection);
  MHD_Result AdminRoute(MHD_Connection* connection, std::string_view url, std::string_view method,
                        std::string_view body);
  bool Authorized(MHD_Connection* connection) const;

  Responder& responder_;
  Metrics& metrics_;
  const ServeOptions& options_;
  std::unique_ptr<Store> reader_;
  serve::Admin admin_;
};

}  // namespace evident::serve
