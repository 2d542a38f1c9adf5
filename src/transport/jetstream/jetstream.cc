// JetStream publisher and source over libnats (evident/jetstream.h).
#include "evident/jetstream.h"

#include <nats/nats.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "evident/redact.h"
#include "transport/jetstream/nats_client.h"

namespace evident {
namespace {

// What the JetStream error codes an operator meets mean (nats.c hands over the number; these
// are the server's meanings, as nats/status.h gives them). Empty for the others.
std::string_view JetStreamErrorMeaning(jsErrCode code) {
  switch (code) {
    case JSConsumerCreateErr:
      return "the server could not create the consumer";
    case JSConsumerNameExistErr:
      return "a consumer of that name exists with another configuration";
    case JSConsumerNotFoundErr:
      return "no such consumer";
    case JSStreamNameExistErr:
      return "a stream of that name exists with another configuration";
    case JSStreamNotFoundErr:
      return "no such stream";
    case JSStreamSubjectOverlapErr:
      return "its subjects overlap those of another stream";
    case JSStreamMessageExceedsMaximumErr:
      return "the message is larger than the stream's max_msg_size";
    case JSConsumerFilterNotSubsetErr:
      return "the filter subject is none of the stream's subjects (check --subject-prefix and "
             "--filter against the stream's subjects)";
    default:
      return "";
  }
}

// What a JetStream cluster answers while a server is down or a leader is being elected: worth
// trying again shortly.
bool ClusterBusy(jsErrCode code) {
  return code == JSClusterNotAssignedErr || code == JSClusterNotAvailErr ||
         code == JSClusterNotLeaderErr || code == JSStreamOfflineErr ||
         code == JSConsumerOfflineErr || code == JSClusterIncompleteErr;
}

Status NatsError(const std::string& what, natsStatus s,
                 jsErrCode jerr = static_cast<jsErrCode>(0)) {
  std::string m = what + ": " + natsStatus_GetText(s);
  if (jerr != 0) {
    m += " (JetStream error " + std::to_string(static_cast<int>(jerr));
    if (const std::string_view meaning = JetStreamErrorMeaning(jerr); !meaning.empty()) {
      m += ": " + std::string(meaning);
    }
    m += ")";
  } else if (const char* detail = nats_GetLastError(nullptr);
             detail != nullptr && *detail != '\0' &&
             std::string_view(detail).find(natsStatus_GetText(s)) == std::string_view::npos) {
    m += ": " + std::string(detail);  // the library's account, when it says more (the server's)
  }
  if (s == NATS_TIMEOUT || s == NATS_NO_SERVER || s == NATS_CONNECTION_CLOSED ||
      s == NATS_NO_RESPONDERS || ClusterBusy(jerr)) {
    return Status::Unavailable(std::move(m));
  }
  // Refused for what it is, and again as long as the server or the stream is configured as now
  // (Publisher: kInvalidArgument): larger than the server's max_payload (the library's own
  // check) or than the stream's max_msg_size (the server's PubAck).
  if (s == NATS_MAX_PAYLOAD || jerr == JSStreamMessageExceedsMaximumErr) {
    return Status::InvalidArgument(std::move(m));
  }
  // Credentials or a certificate the server refuses are refused again until they change.
  if (s == NATS_CONNECTION_AUTH_FAILED) {
    return Status::FailedPrecondition(
        m +
        " (the server refused the credentials: --broker-config user, password_file, "
        "token_file or creds)");
  }
  if (s == NATS_SECURE_CONNECTION_REQUIRED) {
    return Status::FailedPrecondition(
        m + " (the server requires TLS: --broker-config tls.ca=FILE, or tls=true)");
  }
  if (s == NATS_SECURE_CONNECTION_WANTED) {
    return Status::FailedPrecondition(m + " (TLS was asked for, and the server has none)");
  }
  if (s == NATS_SSL_ERROR) {
    return Status::FailedPrecondition(
        m +
        " (the TLS handshake failed: does the server speak TLS, and is its certificate "
        "signed by --broker-config tls.ca and made out to the host or tls.hostname?)");
  }
  return Status::IoError(std::move(m));
}

// What a connection that is reconnecting answers: worth waiting out, not an error.
bool Transient(natsStatus s) {
  return s == NATS_TIMEOUT || s == NATS_CONNECTION_DISCONNECTED || s == NATS_NO_RESPONDERS ||
         s == NATS_NOT_YET_CONNECTED;
}

// A pull the server broke off because it is going away (libnats 3.4 answers its "409 Server
// Shutdown" or "409 Leadership Change" with NATS_ERR and the text), or any failed pull on a
// connection that is no longer up: the connection reconnects, so it is waited out as a down
// server is.
bool PullInterrupted(natsConnection* nc, natsStatus s) {
  if (s != NATS_ERR) return false;
  const char* text = nats_GetLastError(nullptr);
  const std::string_view said = text != nullptr ? text : "";
  return said.find("Server Shutdown") != std::string_view::npos ||
         said.find("Leadership Change") != std::string_view::npos ||
         natsConnection_Status(nc) != NATS_CONN_STATUS_CONNECTED;
}

// A connection and its JetStream context, destroyed in order.
struct Conn {
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;
  ~Conn() {
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) {
      (void)natsConnection_FlushTimeout(nc, 1000);  // acks and naks still in the write buffer
      natsConnection_Close(nc);
      natsConnection_Destroy(nc);
    }
  }
};

// The libnats options of a connection to `o`'s servers with its credentials and TLS
// (nats_client.h); `timeout_ms` for the connect, and `reconnect`: once made, the connection
// reconnects for as long as it lives (every 250 ms).
Result<natsOptions*> ClientOptions(const JetStreamOptions& o, int64_t timeout_ms, bool reconnect) {
  EVIDENT_ASSIGN_OR_RETURN(const jetstream::ClientSettings settings,
                           jetstream::ParseClientSettings(o.properties));
  natsOptions* opts = nullptr;
  if (const natsStatus s = natsOptions_Create(&opts); s != NATS_OK) {
    return NatsError("connect to " + RedactUri(o.url), s);
  }
  Status applied = jetstream::ApplyClientSettings(opts, o.url, settings);
  natsStatus s = NATS_OK;
  if (applied.ok()) s = natsOptions_SetMaxReconnect(opts, reconnect ? -1 : 0);
  if (applied.ok() && s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 250);
  if (applied.ok() && s == NATS_OK) s = natsOptions_SetTimeout(opts, timeout_ms);
  if (applied.ok() && s != NATS_OK) {
    applied = NatsError("connect to " + RedactUri(o.url), s);
  }
  if (!applied.ok()) {
    natsOptions_Destroy(opts);
    return applied;
  }
  return opts;
}

// A connection that, once made, reconnects for as long as it lives: a server restarted under a
// running relay or consumer is found again, or another server of the cluster (publishes and acks
// made meanwhile wait in the client's reconnect buffer, up to its 8 MiB). The first connect does
// not wait: a caller that cannot reach a server retries with its own backoff.
Status Connect(Conn& c, const JetStreamOptions& o, jsOptions* jo, int64_t timeout_ms = 2000,
               bool reconnect = true) {
  EVIDENT_ASSIGN_OR_RETURN(natsOptions * opts, ClientOptions(o, timeout_ms, reconnect));
  natsStatus s = natsConnection_Connect(&c.nc, opts);
  natsOptions_Destroy(opts);
  const std::string where = RedactUri(o.url);
  if (s != NATS_OK) return NatsError("connect to " + where, s);
  s = natsConnection_JetStream(&c.js, c.nc, jo);
  if (s != NATS_OK) return NatsError("JetStream context on " + where, s);
  return Status::Ok();
}

// Whether the subject filter `pattern` takes every subject under `prefix` ("evident.>" and ">"
// do; "evident.p0.>" does not): one of its tokens up to the prefix's end is '>', and those
// before it are '*' or the prefix's own.
bool CoversPrefix(std::string_view pattern, std::string_view prefix) {
  for (size_t p = 0, t = 0;;) {
    const size_t p_end = std::min(pattern.find('.', p), pattern.size());
    const std::string_view token = pattern.substr(p, p_end - p);
    if (token == ">") return true;
    if (t > prefix.size()) return false;  // the pattern is narrower than the prefix
    const size_t t_end = std::min(prefix.find('.', t), prefix.size());
    if (token != "*" && token != prefix.substr(t, t_end - t)) return false;
    if (p_end == pattern.size()) return false;
    p = p_end + 1;
    t = t_end + 1;
  }
}

// An existing stream's copies: fewer than replicas_required is refused; fewer than asked for, or
// in memory, is said.
Status CheckDurability(const jsStreamConfig& config, const JetStreamOptions& o) {
  const std::string copies =
      std::to_string(config.Replicas) + (config.Replicas == 1 ? " replica" : " replicas");
  if (o.replicas_required > 0 && config.Replicas < o.replicas_required) {
    return Status::FailedPrecondition(
        "stream " + o.stream + " has " + copies + ", fewer than the " +
        std::to_string(o.replicas_required) +
        " required (--require-replicas): an acknowledged event would be lost with fewer "
        "servers than that (nats stream edit " +
        o.stream + " --replicas " + std::to_string(o.replicas_required) + ")");
  }
  if (o.warn && config.Replicas < o.replicas) {
    o.warn("stream " + o.stream + " exists with " + copies + ", fewer than the " +
           std::to_string(o.replicas) +
           " asked for (--replicas applies to a stream the relay creates): an acknowledged event "
           "is only as durable as those copies");
  }
  if (o.warn && config.Storage == js_MemoryStorage) {
    o.warn("stream " + o.stream +
           " keeps its messages in memory: a server's restart loses what it alone held");
  }
  return Status::Ok();
}

// An existing stream must take the relay's subjects and drop a copy offered again within two
// minutes; otherwise its messages would go to another stream (the PubAck naming that one) or
// land twice after a crash between the publish and the mark.
Status CheckExistingStream(const jsStreamConfig& config, const JetStreamOptions& o) {
  bool covered = false;
  std::string subjects;
  for (int i = 0; i < config.SubjectsLen; ++i) {
    const std::string_view subject = config.Subjects[i] != nullptr ? config.Subjects[i] : "";
    subjects += (subjects.empty() ? "" : ", ") + std::string(subject);
    covered = covered || CoversPrefix(subject, o.subject_prefix);
  }
  if (!covered) {
    return Status::InvalidArgument("stream " + o.stream + " takes the subjects " +
                                   (subjects.empty() ? "(none)" : subjects) + ", not " +
                                   o.subject_prefix + ".> (give --subject-prefix to match it)");
  }
  constexpr int64_t kWindowNsMin = int64_t{120} * 1'000'000'000;
  if (config.Duplicates < kWindowNsMin) {
    return Status::FailedPrecondition(
        "stream " + o.stream + " drops repeats for " +
        std::to_string(config.Duplicates / 1'000'000) +
        " ms only; a row published again after a crash must be dropped, which takes a duplicate "
        "window of at least two minutes (nats stream edit " +
        o.stream + " --dupe-window 2m)");
  }
  return CheckDurability(config, o);
}

// Creates the stream when it does not exist; an existing one is checked (CheckExistingStream).
// Returns its max_msg_size (-1: none).
Result<int64_t> EnsureStream(jsCtx* js, const JetStreamOptions& o) {
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetStreamInfo(&si, js, o.stream.c_str(), nullptr, &jerr);
  if (s == NATS_OK) {
    const Status checked =
        si->Config != nullptr ? CheckExistingStream(*si->Config, o) : Status::Ok();
    const int64_t msg_size_max = si->Config != nullptr ? si->Config->MaxMsgSize : -1;
    jsStreamInfo_Destroy(si);
    EVIDENT_RETURN_IF_ERROR(checked);
    return msg_size_max;
  }
  if (s != NATS_NOT_FOUND) return NatsError("stream " + o.stream, s, jerr);
  std::string subjects = o.subject_prefix + ".>";
  const char* subject_list[1] = {subjects.c_str()};
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = o.stream.c_str();
  cfg.Subjects = subject_list;
  cfg.SubjectsLen = 1;
  cfg.Storage = js_FileStorage;
  cfg.Duplicates = o.duplicate_window_ms * 1000000;  // nanoseconds
  cfg.Replicas = o.replicas;
  jerr = static_cast<jsErrCode>(0);
  s = js_AddStream(&si, js, &cfg, nullptr, &jerr);
  // A single server never takes more than one replica: refused for good. A cluster without
  // enough servers up (or still forming, just after its start) may take it later: tried again.
  if (jerr == JSStreamReplicasNotSupportedErr) {
    const Status why = NatsError("create stream " + o.stream, s, jerr);
    return Status::FailedPrecondition(
        why.message() + ": a stream of " + std::to_string(o.replicas) +
        " replicas needs a JetStream cluster of at least that many servers (--replicas, "
        "--require-replicas)");
  }
  if (jerr == JSClusterNoPeersErr || jerr == JSInsufficientResourcesErr) {
    const Status why = NatsError("create stream " + o.stream, s, jerr);
    return Status::Unavailable(why.message() + ": fewer than " + std::to_string(o.replicas) +
                               " servers of the cluster can take a replica now (--replicas)");
  }
  if (s != NATS_OK) return NatsError("create stream " + o.stream, s, jerr);
  jsStreamInfo_Destroy(si);
  return int64_t{-1};
}

// The bytes a stream's max_msg_size counts for a message: its body and its headers as the
// client encodes them ("NATS/1.0\r\nNats-Msg-Id: <id>\r\n\r\n").
int64_t StoredSize(const OutgoingMessage& m) {
  constexpr int64_t kHeaderFixed = 27;
  return kHeaderFixed + static_cast<int64_t>(m.id.size() + m.bytes.size());
}

class JetStreamPublisher final : public Publisher {
 public:
  explicit JetStreamPublisher(JetStreamOptions o) : o_(std::move(o)) {}

  Status Open() {
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = o_.publish_timeout_ms;
    jo.PublishAsync.MaxPending = o_.in_flight_max;
    jo.PublishAsync.StallWait = o_.publish_timeout_ms;
    jo.PublishAsync.AckHandler = &JetStreamPublisher::OnAck;
    jo.PublishAsync.AckHandlerClosure = this;
    EVIDENT_RETURN_IF_ERROR(Connect(c_, o_, &jo));
    EVIDENT_ASSIGN_OR_RETURN(stream_msg_size_max_, EnsureStream(c_.js, o_));
    return Status::Ok();
  }

  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    acks_.clear();
    if (c_.js == nullptr) return Status::FailedPrecondition("JetStream publisher is closed");
    {
      std::lock_guard lock(mu_);
      results_.assign(batch.size(), Outcome{});
      index_.clear();
    }
    Status first_error;
    size_t sent = 0;
    std::string subject;
    for (const OutgoingMessage& m : batch) {
      subject.assign(o_.subject_prefix).push_back('.');
      subject.append(m.destination);
      first_error = CheckSize(m, subject);
      if (!first_error.ok()) break;
      natsMsg* msg = nullptr;
      natsStatus s = natsMsg_Create(&msg, subject.c_str(), nullptr, m.bytes.data(),
                                    static_cast<int>(m.bytes.size()));
      if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", m.id.c_str());
      if (s == NATS_OK) {
        {
          std::lock_guard lock(mu_);
          index_[msg] = sent;  // before publishing: the ack may come before the call returns
        }
        s = js_PublishMsgAsync(c_.js, &msg, nullptr);
        if (s != NATS_OK) {
          std::lock_guard lock(mu_);
          index_.erase(msg);
        }
      }
      if (s != NATS_OK) {
        natsMsg_Destroy(msg);  // NULL when the library took it
        first_error = NatsError("publish " + m.id + " on " + subject, s);
        break;
      }
      ++sent;
    }
    // Wait for the PubAcks of what was sent.
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MaxWait = o_.publish_timeout_ms;
    natsStatus s = js_PublishAsyncComplete(c_.js, &po);
    if (s != NATS_OK) {
      // Forget what is still pending: it will be offered again (ids make that safe).
      natsMsgList pending{};
      if (js_PublishAsyncGetPendingList(&pending, c_.js) == NATS_OK) {
        std::lock_guard lock(mu_);
        for (int i = 0; i < pending.Count; ++i) index_.erase(pending.Msgs[i]);
        natsMsgList_Destroy(&pending);
      }
    }
    std::lock_guard lock(mu_);
    size_t accepted = 0;
    while (accepted < sent && results_[accepted].done && results_[accepted].error.ok()) {
      acks_.push_back(results_[accepted].ack);
      ++accepted;
    }
    if (accepted > 0) return accepted;
    if (sent > 0 && results_[0].done) return results_[0].error;
    if (sent > 0) return NatsError("PubAck for " + batch[0].id, s == NATS_OK ? NATS_TIMEOUT : s);
    if (!first_error.ok()) return first_error;
    return size_t{0};
  }

  const std::vector<PublishAck>& acks() const override { return acks_; }

  // A message larger than the stream's max_msg_size is refused before it is sent, as the
  // library refuses one over max_payload: sent, the server would refuse it and store the
  // messages pipelined behind it, which are then offered again with it, and stored twice once
  // the duplicate window has passed. The limit read at open is read again before a refusal (an
  // operator may have raised it since); a failed read is no refusal.
  Status CheckSize(const OutgoingMessage& m, const std::string& subject) {
    if (stream_msg_size_max_ < 0 || StoredSize(m) <= stream_msg_size_max_) return Status::Ok();
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_GetStreamInfo(&si, c_.js, o_.stream.c_str(), nullptr, &jerr);
    if (s != NATS_OK) return NatsError("stream " + o_.stream, s, jerr);
    stream_msg_size_max_ = si->Config != nullptr ? si->Config->MaxMsgSize : -1;
    jsStreamInfo_Destroy(si);
    if (stream_msg_size_max_ < 0 || StoredSize(m) <= stream_msg_size_max_) return Status::Ok();
    return Status::InvalidArgument(
        "publish " + m.id + " on " + subject + ": " + std::to_string(StoredSize(m)) +
        " bytes with its header, larger than stream " + o_.stream + "'s max_msg_size (" +
        std::to_string(stream_msg_size_max_) + ")");
  }

  Status Close() override {
    if (c_.js != nullptr) {
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MaxWait = o_.publish_timeout_ms;
      (void)js_PublishAsyncComplete(c_.js, &po);
      jsCtx_Destroy(c_.js);
      c_.js = nullptr;
    }
    if (c_.nc != nullptr) {
      (void)natsConnection_FlushTimeout(c_.nc, 1000);
      natsConnection_Close(c_.nc);
      natsConnection_Destroy(c_.nc);
      c_.nc = nullptr;
    }
    return Status::Ok();
  }

  ~JetStreamPublisher() override { (void)Close(); }

 private:
  struct Outcome {
    bool done = false;
    PublishAck ack;
    Status error;
  };

  static void OnAck(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae, void* closure) {
    auto* self = static_cast<JetStreamPublisher*>(closure);
    {
      std::lock_guard lock(self->mu_);
      auto it = self->index_.find(msg);
      if (it != self->index_.end()) {
        Outcome& out = self->results_[it->second];
        out.done = true;
        if (pa != nullptr && (pa->Stream == nullptr || self->o_.stream != pa->Stream)) {
          out.error = Status::Unavailable("PubAck from stream " +
                                          std::string(pa->Stream != nullptr ? pa->Stream : "?") +
                                          ", not " + self->o_.stream + ": not marked sent");
        } else if (pa != nullptr) {
          out.ack = PublishAck{pa->Sequence, pa->Duplicate};
        } else {
          out.error =
              NatsError(std::string("PubAck: ") +
                            (pae != nullptr && pae->ErrText != nullptr ? pae->ErrText : "refused"),
                        pae != nullptr ? pae->Err : NATS_ERR,
                        pae != nullptr ? pae->ErrCode : static_cast<jsErrCode>(0));
        }
        self->index_.erase(it);
      }
    }
    natsMsg_Destroy(msg);
  }

  JetStreamOptions o_;
  Conn c_;
  int64_t stream_msg_size_max_ = -1;  // the stream's max_msg_size when opened; -1: none
  std::mutex mu_;  // results_ and index_: the ack handler runs on the library's thread
  std::vector<Outcome> results_;
  std::unordered_map<natsMsg*, size_t> index_;
  std::vector<PublishAck> acks_;
};

class JetStreamSource final : public Source {
 public:
  JetStreamSource(JetStreamOptions o, std::string durable, std::string filter)
      : o_(std::move(o)),
        durable_(std::move(durable)),
        filter_(std::move(filter)),
        name_("jetstream:" + o_.stream + "/" + durable_) {}
  // A partition's source (OpenJetStreamPartitionSource): ephemeral, from the stored position.
  JetStreamSource(JetStreamOptions o, std::string name, std::string filter, int64_t inactive_ms)
      : o_(std::move(o)),
        filter_(std::move(filter)),
        name_(std::move(name)),
        positioned_(true),
        inactive_ms_(inactive_ms) {}

  ~JetStreamSource() override {
    for (auto& p : pending_) natsMsg_Destroy(p.msg);
    for (auto& p : buffered_) natsMsg_Destroy(p.msg);
    for (auto& p : unsent_) natsMsg_Destroy(p.msg);
    if (sub_ != nullptr) natsSubscription_Destroy(sub_);  // keeps the durable consumer
  }

  Status Open() {
    EVIDENT_RETURN_IF_ERROR(Connect(c_, o_, nullptr));
    return positioned_ ? Status::Ok() : Subscribe(0);  // a partition's waits for its position
  }

  // The pull consumer: the durable one, or (positioned) an ephemeral one from `start_seq`.
  Status Subscribe(uint64_t start_seq) {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = o_.stream.c_str();
    so.Config.Durable = positioned_ ? nullptr : durable_.c_str();
    so.Config.AckPolicy = js_AckExplicit;
    so.Config.DeliverPolicy = js_DeliverAll;
    if (positioned_ && start_seq > 1) {
      so.Config.DeliverPolicy = js_DeliverByStartSequence;
      so.Config.OptStartSeq = start_seq;
    }
    if (positioned_) so.Config.InactiveThreshold = inactive_ms_ * 1000000;
    so.Config.AckWait = o_.ack_wait_ms * 1000000;  // nanoseconds
    std::string subject = filter_.empty() ? o_.subject_prefix + ".>" : filter_;
    if (filter_.empty() && o_.subject_prefix.empty()) {
      EVIDENT_ASSIGN_OR_RETURN(subject, EveryStreamSubject());
    }
    if (!positioned_) EVIDENT_RETURN_IF_ERROR(MatchDurable(subject, so.Config.AckWait));
    if (subject.empty()) {
      // Several subject patterns: a consumer without a filter, made here, then bound to.
      EVIDENT_RETURN_IF_ERROR(AddUnfilteredDurable(so.Config));
      so.Consumer = durable_.c_str();
    }
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_PullSubscribe(&sub_, c_.js, subject.empty() ? nullptr : subject.c_str(),
                                    positioned_ ? nullptr : durable_.c_str(), nullptr, &so, &jerr);
    if (s != NATS_OK) {
      return NatsError(
          "pull consumer " + name_ + " on " + (subject.empty() ? "every subject" : subject), s,
          jerr);
    }
    return Status::Ok();
  }

  // The stream's one subject pattern, or empty when it has several (a consumer of all of them
  // has no filter; nats-server 2.9 takes one filter subject).
  Result<std::string> EveryStreamSubject() {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_GetStreamInfo(&si, c_.js, o_.stream.c_str(), nullptr, &jerr);
    if (s != NATS_OK) return NatsError("stream " + o_.stream, s, jerr);
    const std::unique_ptr<jsStreamInfo, void (*)(jsStreamInfo*)> owned(si, jsStreamInfo_Destroy);
    if (si->Config == nullptr || si->Config->SubjectsLen != 1) return std::string();
    return std::string(si->Config->Subjects[0] != nullptr ? si->Config->Subjects[0] : "");
  }

  // The durable consumer of every subject, when it does not exist yet (MatchDurable checked an
  // existing one).
  Status AddUnfilteredDurable(const jsConsumerConfig& config) {
    jsConsumerInfo* info = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s =
        js_GetConsumerInfo(&info, c_.js, o_.stream.c_str(), durable_.c_str(), nullptr, &jerr);
    if (s == NATS_OK) {
      jsConsumerInfo_Destroy(info);
      return Status::Ok();
    }
    jsConsumerConfig wanted = config;
    wanted.FilterSubject = nullptr;
    jerr = static_cast<jsErrCode>(0);
    s = js_AddConsumer(&info, c_.js, o_.stream.c_str(), &wanted, nullptr, &jerr);
    if (s != NATS_OK) return NatsError("create consumer " + name_, s, jerr);
    jsConsumerInfo_Destroy(info);
    return Status::Ok();
  }

  // A durable consumer made by an earlier run: one that reads another subject is refused,
  // naming both (a durable's subject is its position's meaning; nats-server 2.9 cannot change
  // it); one with another ack wait is given this run's (the server changes it in place).
  Status MatchDurable(const std::string& subject, int64_t ack_wait_ns) {
    jsConsumerInfo* info = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s =
        js_GetConsumerInfo(&info, c_.js, o_.stream.c_str(), durable_.c_str(), nullptr, &jerr);
    if (s == NATS_NOT_FOUND || jerr == JSConsumerNotFoundErr) return Status::Ok();  // a new one
    if (s != NATS_OK) return NatsError("consumer " + name_, s, jerr);
    const std::unique_ptr<jsConsumerInfo, void (*)(jsConsumerInfo*)> owned(info,
                                                                           jsConsumerInfo_Destroy);
    jsConsumerConfig& config = *info->Config;
    const std::string has = config.FilterSubject != nullptr ? config.FilterSubject : "";
    if (has != subject) {
      return Status::FailedPrecondition(
          "durable consumer " + name_ + " reads '" + (has.empty() ? "every subject" : has) +
          "', not '" + subject + "': a durable consumer keeps its subject; give this run " +
          "another --durable, or delete the old consumer first ($JS.API.CONSUMER.DELETE." +
          o_.stream + "." + durable_ + ", `nats consumer rm` in the nats tool)");
    }
    if (config.AckWait == ack_wait_ns) return Status::Ok();
    config.AckWait = ack_wait_ns;
    jsConsumerInfo* updated = nullptr;
    s = js_UpdateConsumer(&updated, c_.js, o_.stream.c_str(), &config, nullptr, &jerr);
    if (s != NATS_OK) return NatsError("changing the ack wait of consumer " + name_, s, jerr);
    jsConsumerInfo_Destroy(updated);
    return Status::Ok();
  }

  const std::string& name() const override { return name_; }

  // The durable consumer is the position: a stored one of ours ("stream_seq=N") is not needed
  // and is ignored; one of another source's making is refused, as the Source contract says.
  Status Start(const std::optional<std::string>& position) override {
    if (position.has_value() && position->rfind("stream_seq=", 0) != 0) {
      return Status::FailedPrecondition(name_ + " cannot resume from \"" + *position +
                                        "\": not a JetStream position");
    }
    if (!positioned_) return Status::Ok();
    uint64_t decided = 0;
    if (position.has_value()) {
      const std::string digits = position->substr(11);
      if (digits.empty() || digits.size() > 19 ||
          digits.find_first_not_of("0123456789") != std::string::npos) {
        return Status::FailedPrecondition(name_ + " cannot resume from \"" + *position +
                                          "\": not a stream sequence");
      }
      decided = std::stoull(digits);
    }
    last_seq_ = decided;
    return Subscribe(decided + 1);
  }

  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    while (buffered_.empty()) {
      if (stopped_.load()) return Fetched::kEnd;
      // A caller that will not wait has other work in hand: a pull (a server round trip) now
      // would only delay it.
      if (wait_ms == 0) return Fetched::kWouldWait;
      int chunk = wait_ms < 0 || wait_ms > 200 ? 200 : wait_ms;  // to notice Stop
      natsMsgList list{};
      jsErrCode jerr = static_cast<jsErrCode>(0);
      natsStatus s = natsSubscription_Fetch(&list, sub_, FetchBatch(), chunk, &jerr);
      if (s != NATS_TIMEOUT && (Transient(s) || PullInterrupted(c_.nc, s))) {
        // The connection is down and reconnecting: wait out the chunk rather than spin.
        unreachable_.store(true);
        std::this_thread::sleep_for(std::chrono::milliseconds(chunk));
        s = NATS_TIMEOUT;
      } else if (s == NATS_TIMEOUT) {
        // A pull sent while reconnecting times out like one that found nothing.
        unreachable_.store(natsConnection_Status(c_.nc) != NATS_CONN_STATUS_CONNECTED);
      } else if (s == NATS_OK) {
        unreachable_.store(false);
      }
      if (s == NATS_TIMEOUT) {
        if (wait_ms > 0) {
          wait_ms -= chunk;
          if (wait_ms <= 0) return Fetched::kWouldWait;
        }
        continue;
      }
      if (s != NATS_OK) return NatsError("fetch from " + name_, s, jerr);
      for (int i = 0; i < list.Count; ++i) {
        natsMsg* m = list.Msgs[i];
        list.Msgs[i] = nullptr;
        jsMsgMetaData* meta = nullptr;
        uint64_t seq = 0;
        int64_t pending = -1;
        if (natsMsg_GetMetaData(&meta, m) == NATS_OK) {
          seq = meta->Sequence.Stream;
          pending = static_cast<int64_t>(meta->NumPending);
          jsMsgMetaData_Destroy(meta);
        }
        if (positioned_ && seq <= last_seq_) {
          // A redelivery of one handed out already (or decided before Start): acknowledged, so
          // that it does not come back every ack_wait; the store holds the position.
          (void)natsMsg_Ack(m, nullptr);
          natsMsg_Destroy(m);
          continue;
        }
        last_seq_ = std::max(last_seq_, seq);
        buffered_.push_back(Held{m, seq, 0, pending});
      }
      natsMsgList_Destroy(&list);
    }
    if (stopped_.load()) return Fetched::kEnd;
    Held h = buffered_.front();
    buffered_.pop_front();
    h.count = ++handed_out_;
    backlog_.store(h.pending);
    {
      std::lock_guard<std::mutex> lock(pending_mutex_);
      pending_.push_back(h);
    }
    out.bytes.assign(natsMsg_GetData(h.msg), static_cast<size_t>(natsMsg_GetDataLength(h.msg)));
    out.index = static_cast<int64_t>(h.seq);
    out.cursor = Cursor{static_cast<int64_t>(h.seq), h.count, 0};
    return Fetched::kMessage;
  }

  // How many messages to ask for. libnats before 3.10 writes past its message array when a
  // fetch first finds messages an earlier pull left behind (they came after that fetch had
  // stopped waiting, as under a stalled batch) and they fill more than half of the batch
  // (nats.c issue 749, fixed in 3.10.0; Debian 12 ships 3.4.1): the heap corruption seen as
  // "malloc(): invalid size" in consumers whose batches waited for a lock. While messages are
  // left, they are taken one per fetch, which that code cannot overflow; a fetch that finds
  // none asks the server for the full batch as before.
  int FetchBatch() const {
    int left = 0;
    if (natsSubscription_GetPending(sub_, &left, nullptr) == NATS_OK && left > 0) return 1;
    return o_.fetch_batch;
  }

  std::string EncodePosition(const Cursor& cursor) const override {
    return "stream_seq=" + std::to_string(cursor.a);
  }

  // An ack the connection cannot carry now is not a failure: the message is kept and its ack
  // tried again with the next batch's and at the end (FlushAcknowledgements); meanwhile the
  // server may redeliver it after ack_wait, and the ledger answers duplicate.
  Status Acknowledge(const Cursor& cursor) override {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    EVIDENT_RETURN_IF_ERROR(AckUnsent());
    while (!pending_.empty() && pending_.front().count <= cursor.b) {
      Held h = pending_.front();
      pending_.pop_front();
      EVIDENT_RETURN_IF_ERROR(AckOrKeep(h));
    }
    return Status::Ok();
  }

  // The unsent acks once more, then a round trip to the server: the server reads a connection's
  // messages in order, so its answer means every ack sent before it arrived. Messages the
  // reconnecting client still buffers, or that it could not take, count as not acknowledged.
  Status FlushAcknowledgements(int64_t timeout_ms) override {
    std::lock_guard<std::mutex> lock(pending_mutex_);
    EVIDENT_RETURN_IF_ERROR(AckUnsent());
    // Fetched but never handed out (the run ended first; the reading thread is gone): given
    // back at once, rather than held from every consumer until their ack wait ends.
    for (const Held& h : buffered_) (void)natsMsg_Nak(h.msg, nullptr);
    // A partition's position is the store's: an ack that went astray only brings a redelivery
    // that this source drops, and its ephemeral consumer goes with the member.
    if (positioned_) return Status::Ok();
    const natsStatus s = natsConnection_FlushTimeout(c_.nc, std::max<int64_t>(timeout_ms, 1));
    if (s == NATS_OK && unsent_.empty() && unsent_dropped_ == 0) return Status::Ok();
    const int64_t unsent = static_cast<int64_t>(unsent_.size()) + unsent_dropped_;
    std::string what =
        unsent > 0 ? std::to_string(unsent) + " acknowledgement(s) could not be sent" : "";
    if (s != NATS_OK) {
      if (!what.empty()) what += ", and ";
      what += "the server did not confirm the ones sent within " + std::to_string(timeout_ms) +
              " ms (" + natsStatus_GetText(s) + ")";
    }
    return Status::Unavailable(name_ + ": " + what +
                               "; the messages of any that did not reach it come again after "
                               "ack_wait, and the ledger answers them duplicate");
  }

  Status Reject(const Cursor& cursor, int64_t delay_ms) override {
    if (positioned_) {
      return Status::FailedPrecondition(
          name_ + " cannot take a batch back: start again from the stored position");
    }
    std::lock_guard<std::mutex> lock(pending_mutex_);
    while (!pending_.empty() && pending_.front().count <= cursor.b) {
      Held h = pending_.front();
      natsStatus s = natsMsg_NakWithDelay(h.msg, delay_ms, nullptr);
      if (s != NATS_OK && !Transient(s)) {  // a lost nak: redelivered after ack_wait anyway
        return NatsError("nak " + std::to_string(h.seq) + " of " + name_, s);
      }
      pending_.pop_front();
      natsMsg_Destroy(h.msg);
    }
    return Status::Ok();
  }

  void Stop() override { stopped_.store(true); }

  bool unreachable() const override { return unreachable_.load(); }

  Result<bool> ConfirmIdle() override {
    if (positioned_) return true;  // a partition's position is the store's
    {
      std::lock_guard<std::mutex> lock(pending_mutex_);
      EVIDENT_RETURN_IF_ERROR(AckUnsent());
      if (!unsent_.empty()) {
        return Status::Unavailable(name_ + ": acknowledgements wait for the connection");
      }
    }
    // The acks sent so far reach the server before the question (it reads a connection in
    // order), and a server that does not answer a ping is not idle but unreachable.
    natsStatus s = natsConnection_FlushTimeout(c_.nc, kConfirmWaitMs);
    if (s != NATS_OK) return NatsError("a round trip to the server of " + name_, s);
    jsConsumerInfo* info = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    s = js_GetConsumerInfo(&info, c_.js, o_.stream.c_str(), durable_.c_str(), nullptr, &jerr);
    if (s != NATS_OK) return NatsError("consumer " + name_, s, jerr);
    const bool idle = info->NumPending == 0 && info->NumAckPending == 0;
    jsConsumerInfo_Destroy(info);
    return idle;
  }

  std::optional<int64_t> backlog() const override {
    const int64_t pending = backlog_.load();
    return pending < 0 ? std::nullopt : std::optional<int64_t>(pending);
  }

 private:
  struct Held {
    natsMsg* msg;
    uint64_t seq;
    int64_t count;
    int64_t pending;  // the consumer's pending count after it; -1 when unknown
  };

  // At most this many messages wait for an ack to be sent again; beyond, the oldest is let go
  // (counted: the server redelivers it anyway).
  static constexpr size_t kUnsentAcksMax = 4096;
  // How long ConfirmIdle waits for the server's answer to a ping.
  static constexpr int kConfirmWaitMs = 2000;

  // Acks `h`, or keeps it in unsent_ when the connection cannot carry the ack now.
  Status AckOrKeep(Held h) {
    const natsStatus s = natsMsg_Ack(h.msg, nullptr);
    if (s == NATS_OK) {
      natsMsg_Destroy(h.msg);
      return Status::Ok();
    }
    if (!Transient(s) && s != NATS_INSUFFICIENT_BUFFER) {
      natsMsg_Destroy(h.msg);
      return NatsError("ack " + std::to_string(h.seq) + " of " + name_, s);
    }
    if (unsent_.size() == kUnsentAcksMax) {
      natsMsg_Destroy(unsent_.front().msg);
      unsent_.pop_front();
      ++unsent_dropped_;
    }
    unsent_.push_back(h);
    return Status::Ok();
  }

  // The acks that could not be sent before, oldest first; those that still cannot stay.
  Status AckUnsent() {
    for (size_t n = unsent_.size(); n > 0; --n) {
      const Held h = unsent_.front();
      unsent_.pop_front();
      EVIDENT_RETURN_IF_ERROR(AckOrKeep(h));
    }
    return Status::Ok();
  }

  JetStreamOptions o_;
  std::string durable_, filter_, name_;
  Conn c_;
  natsSubscription* sub_ = nullptr;
  std::deque<Held> buffered_;  // fetched, not yet handed out
  // Handed out, not yet acknowledged or rejected: Fetch (the loop's reading thread) adds, while
  // Acknowledge and Reject (its deciding thread) take.
  std::mutex pending_mutex_;
  std::deque<Held> pending_;
  std::deque<Held> unsent_;     // decided, their acks not sent yet (pending_mutex_)
  int64_t unsent_dropped_ = 0;  // let go from unsent_ when it was full (pending_mutex_)
  int64_t handed_out_ = 0;
  std::atomic<bool> stopped_{false};
  std::atomic<int64_t> backlog_{-1};
  std::atomic<bool> unreachable_{false};  // the last pull found the server unreachable
  bool positioned_ = false;
  int64_t inactive_ms_ = 0;
  uint64_t last_seq_ = 0;  // positioned: the highest stream sequence fetched (or decided before)
};

}  // namespace

Status ProbeJetStream(const JetStreamOptions& options, int64_t timeout_ms) {
  Conn c;
  jsOptions jo;
  jsOptions_Init(&jo);
  jo.Wait = timeout_ms;
  EVIDENT_RETURN_IF_ERROR(Connect(c, options, &jo, timeout_ms, false));
  jsStreamInfo* si = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s = js_GetStreamInfo(&si, c.js, options.stream.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return NatsError("stream " + options.stream, s, jerr);
  jsStreamInfo_Destroy(si);
  return Status::Ok();
}

Status CheckNatsProperties(const std::vector<std::string>& properties) {
  EVIDENT_ASSIGN_OR_RETURN(const jetstream::ClientSettings settings,
                           jetstream::ParseClientSettings(properties));
  return jetstream::CheckClientFiles(settings);
}

Status CheckSubjectPrefix(std::string_view prefix) {
  const auto refuse = [prefix](std::string_view why) {
    return Status::InvalidArgument("subject prefix '" + std::string(prefix) + "' " +
                                   std::string(why) + " (dot-separated tokens, e.g. orders.eu)");
  };
  if (prefix.empty()) return refuse("is empty");
  if (prefix.front() == '.' || prefix.back() == '.' || prefix.find("..") != std::string::npos) {
    return refuse("has an empty token");
  }
  for (const char c : prefix) {
    if (c == '*' || c == '>') return refuse("holds a wildcard");
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') return refuse("holds white space");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Publisher>> OpenJetStreamPublisher(const JetStreamOptions& options) {
  if (options.url.empty() || options.stream.empty()) {
    return Status::InvalidArgument("JetStream publisher needs a url and a stream");
  }
  EVIDENT_RETURN_IF_ERROR(CheckSubjectPrefix(options.subject_prefix));
  if (options.replicas < 1 || options.replicas_required > options.replicas) {
    return Status::InvalidArgument(
        "a JetStream publisher creates a stream of at least one replica, and of at least as many "
        "as it requires");
  }
  auto p = std::make_unique<JetStreamPublisher>(options);
  EVIDENT_RETURN_IF_ERROR(p->Open());
  return std::unique_ptr<Publisher>(std::move(p));
}

Result<std::unique_ptr<Source>> OpenJetStreamSource(const JetStreamOptions& options,
                                                    std::string durable,
                                                    std::string filter_subject) {
  if (options.url.empty() || options.stream.empty() || durable.empty()) {
    return Status::InvalidArgument("JetStream source needs a url, a stream and a durable name");
  }
  if (filter_subject.empty() && !options.subject_prefix.empty()) {
    EVIDENT_RETURN_IF_ERROR(CheckSubjectPrefix(options.subject_prefix));
  }
  auto s =
      std::make_unique<JetStreamSource>(options, std::move(durable), std::move(filter_subject));
  EVIDENT_RETURN_IF_ERROR(s->Open());
  return std::unique_ptr<Source>(std::move(s));
}

Result<std::unique_ptr<Source>> OpenJetStreamPartitionSource(const JetStreamOptions& options,
                                                             std::string name,
                                                             std::string filter_subject,
                                                             int64_t inactive_ms) {
  if (options.url.empty() || options.stream.empty() || name.empty() || filter_subject.empty() ||
      inactive_ms < 1000) {
    return Status::InvalidArgument(
        "a JetStream partition source needs a url, a stream, a name, a filter subject and an "
        "inactive threshold of at least a second");
  }
  auto s = std::make_unique<JetStreamSource>(options, std::move(name), std::move(filter_subject),
                                             inactive_ms);
  EVIDENT_RETURN_IF_ERROR(s->Open());
  return std::unique_ptr<Source>(std::move(s));
}

}  // namespace evident
