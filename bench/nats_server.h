// bench/nats_server.h — a NATS server with JetStream for one benchmark run, started and stopped
// through scripts/nats.sh in a temporary directory (as src/transport/jetstream/jetstream_test.cc
// does), and the stream both sides of a benchmark publish to.
#pragma once

#include <nats/nats.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "shell.h"

namespace evident::bench {

// Lifecycle: Start() once; the destructor stops the server and removes its directory, and so
// does std::exit (a benchmark that fails midway exits without running destructors).
class NatsServer {
 public:
  NatsServer() = default;
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;
  ~NatsServer() { Stop(); }

  // False (with the script's words on stderr) when the server did not start.
  bool Start(const std::string& source_dir) {
    script_ = source_dir + "/scripts/nats.sh";
    char pattern[] = "/tmp/evident-bench-nats-XXXXXX";
    if (mkdtemp(pattern) == nullptr) return false;
    dir_ = pattern;
    Active() = this;
    static const bool registered = std::atexit([] {
                                     if (Active() != nullptr) Active()->Stop();
                                   }) == 0;
    (void)registered;
    int rc = 0;
    url_ = Shell("bash " + script_ + " start " + dir_, rc);
    if (rc != 0 || url_.rfind("nats://", 0) != 0) {
      std::fprintf(stderr, "nats-server did not start (%s): %s\n", script_.c_str(), url_.c_str());
      return false;
    }
    return true;
  }

  void Stop() {
    if (Active() == this) Active() = nullptr;
    if (dir_.empty()) return;
    int rc = 0;
    Shell("bash " + script_ + " stop " + dir_, rc);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }

  const std::string& url() const { return url_; }
  const std::string& dir() const { return dir_; }

 private:
  static NatsServer*& Active() {
    static NatsServer* active = nullptr;
    return active;
  }

  std::string script_, dir_, url_;
};

// A connection and JetStream context for the benchmark's own stream management.
struct NatsAdmin {
  natsConnection* connection = nullptr;
  jsCtx* js = nullptr;
  ~NatsAdmin() {
    if (js != nullptr) jsCtx_Destroy(js);
    if (connection != nullptr) natsConnection_Destroy(connection);
  }
  bool Connect(const std::string& url) {
    return natsConnection_ConnectTo(&connection, url.c_str()) == NATS_OK &&
           natsConnection_JetStream(&js, connection, nullptr) == NATS_OK;
  }

  // The stream evident's JetStream publisher creates when it finds none (jetstream.cc
  // EnsureStream): file storage, subjects "<prefix>.>", the duplicate window.
  bool CreateStream(const std::string& name, const std::string& subject_prefix,
                    int64_t duplicate_window_ms) {
    const std::string subjects = subject_prefix + ".>";
    const char* subject_list[1] = {subjects.c_str()};
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = name.c_str();
    config.Subjects = subject_list;
    config.SubjectsLen = 1;
    config.Storage = js_FileStorage;
    config.Duplicates = duplicate_window_ms * 1000000;  // nanoseconds
    jsStreamInfo* info = nullptr;
    jsErrCode error = static_cast<jsErrCode>(0);
    const natsStatus s = js_AddStream(&info, js, &config, nullptr, &error);
    if (s != NATS_OK) {
      std::fprintf(stderr, "create stream %s: %s (JetStream error %d)\n", name.c_str(),
                   natsStatus_GetText(s), static_cast<int>(error));
      return false;
    }
    jsStreamInfo_Destroy(info);
    return true;
  }

  bool DeleteStream(const std::string& name) {
    return js_DeleteStream(js, name.c_str(), nullptr, nullptr) == NATS_OK;
  }

  // Messages the stream holds; UINT64_MAX when it cannot be asked.
  uint64_t StreamMessages(const std::string& name) {
    jsStreamInfo* info = nullptr;
    if (js_GetStreamInfo(&info, js, name.c_str(), nullptr, nullptr) != NATS_OK) return UINT64_MAX;
    const uint64_t messages = info->State.Msgs;
    jsStreamInfo_Destroy(info);
    return messages;
  }
};

}  // namespace evident::bench
