// serve/admin.h — the daemon's admin API (JSON), behind the bearer token (routes.cc checks it):
//
//   GET  /api/evidence/{subject}[?consumer=C]  the packet, as `evident evidence --format json`
//   GET  /api/gaps                             {"gaps":[...as `evident gaps --format json`],..}
//   GET  /api/quarantine[?status=S&consumer=C&reason=R&limit=N]
//                                              {"records":[...as `quarantine list`],..}
//   GET  /api/quarantine/{id}                  {"record":{...},"audit":[...]}
//   POST /api/quarantine/{id}/replay           body {"by":..,"note":..}: replays the record
//   POST /api/quarantine/{id}/discard          body {"by":..,"note":..}: closes it, audited
//   GET  /api/effects[?state=S&consumer=C&subject=S&limit=N]  {"effects":[...],..}
//   POST /api/effects/{key}/resolve            body {"outcome":"done|failed|intended","by","note"}
//
// Reads go through the read-only handle; actions through a writable one and a pipeline of their
// own (the loop's belongs to its thread), both opened at the first action. Errors are refusal
// bodies: 400 bad input, 404 unknown record or route, 409 not in a state for the action, 503 a
// store that fails.
//
// Thread-safety: the HTTP thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "evident/consumer.h"
#include "evident/serve.h"
#include "evident/store.h"

namespace evident::serve {

struct AdminAnswer {
  int status = 200;
  std::string body;  // JSON
};

class Admin {
 public:
  Admin(const Config& config, const ServeOptions& options) : config_(config), options_(options) {}
  void SetReader(Store* reader) { reader_ = reader; }

  // `query(name)` looks up a query argument (null when absent).
  AdminAnswer Handle(std::string_view path, std::string_view method, std::string_view body,
                     const std::function<const char*(const char*)>& query);

 private:
  AdminAnswer Evidence(std::string_view subject, const char* consumer);
  AdminAnswer Gaps();
  AdminAnswer Quarantine(const std::function<const char*(const char*)>& query);
  AdminAnswer QuarantineRecordOf(std::string_view id_text);
  AdminAnswer QuarantineAction(std::string_view id_text, std::string_view action,
                               std::string_view body);
  AdminAnswer Effects(const std::function<const char*(const char*)>& query);
  AdminAnswer ResolveEffect(std::string_view key, std::string_view body);
  Status OpenWriter();

  const Config& config_;
  const ServeOptions& options_;
  Store* reader_ = nullptr;
  std::unique_ptr<Store> writer_;
  std::unique_ptr<Pipeline> pipeline_;
};

}  // namespace evident::serve
