// evident/jetstream.h — NATS JetStream as a relay's destination (Publisher) and as a consume
// loop's Source, over the NATS C client (libnats, Debian's libnats-dev).
//
// Publisher: every message goes to subject "<subject_prefix>.<destination>" of `stream` (created
// when absent: file storage, subjects "<subject_prefix>.>", the duplicate window), its exact
// bytes as the payload, its id as the Nats-Msg-Id header, so the server drops a copy offered
// again within the window (the PubAck says duplicate and gives the first copy's sequence).
// Publishes are asynchronous, at most in_flight_max unacknowledged at a time; Publish returns
// the prefix of the batch whose PubAcks arrived within publish_timeout_ms.
//
// Source: a durable pull consumer `durable` of `stream` (explicit acks, filter_subject; "" for
// every subject). Cursor.a is the message's stream sequence, Cursor.b the running count of
// messages this Source handed out (Acknowledge and Reject act on every handed-out message up to
// it, in delivery order, which after a redelivery need not be stream order). The durable
// consumer remembers what was acknowledged, so Start ignores any stored position: the stream
// and consumer are the position. EncodePosition writes "stream_seq=N", N the stream sequence of
// the last message the batch decided, for the record only: after a redelivery it may be lower
// than an earlier batch's, and it is no resume point (the durable consumer's ack floor is).
//
// A server that goes away under a running publisher or source: the connection reconnects for
// as long as it lives (every 250 ms). The source's Fetch waits meanwhile (kWouldWait, no error);
// an ack it cannot send is kept and sent with the next batch's (at most 4096 kept), and
// FlushAcknowledgements, at the end of a run, says how many never reached the server (a
// redelivery after ack_wait, which the ledger answers duplicate); a nak it cannot send is lost. The
// publisher's Publish fails after publish_timeout_ms; the relay opens a new one with backoff. The
// first connect does not wait for a server that is not there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "evident/publisher.h"
#include "evident/source.h"
#include "evident/status.h"

namespace evident {

struct JetStreamOptions {
  // nats://host:port, or a seed list of a cluster's servers, comma-separated
  // (nats://127.0.0.1:4222,nats://127.0.0.1:4223): the client connects to one, learns the
  // others from it, and reconnects to any of them.
  std::string url;
  // Who the client is and how it is reached, each "KEY=VALUE" (--broker-config): user and
  // password or password_file (its first line); token or token_file; creds (a user's JWT and
  // nkey seed in one file, as nsc writes them); tls=true (TLS, the server's certificate
  // verified against the system's authorities), tls.ca (against this CA file instead),
  // tls.cert and tls.key (the client's certificate, for a server that verifies clients),
  // tls.hostname (the name the certificate must carry, when not the URL's host). A URL may
  // carry "user:password@" or "token@" itself; messages show it as "***@".
  std::vector<std::string> properties;
  std::string stream;  // the stream's name
  std::string subject_prefix = "evident";
  int64_t duplicate_window_ms = 120000;  // used when the publisher creates the stream
  int64_t publish_timeout_ms = 5000;     // for the PubAcks of one Publish call
  int64_t in_flight_max = 256;           // asynchronous publishes awaiting their PubAck
  // A stream the publisher creates gets `replicas` copies (1, or a cluster's 3 or 5: a PubAck
  // then means that a majority of them has the message). An existing stream with fewer, or kept
  // in memory, is said on `warn` (when set); one with fewer than `replicas_required` (> 0) is
  // refused (kFailedPrecondition).
  int replicas = 1;
  int replicas_required = 0;
  std::function<void(const std::string&)> warn;
  // The consumer: how long the server waits for an ack before redelivering, and how many
  // messages one pull asks for.
  int64_t ack_wait_ms = 30000;
  int fetch_batch = 64;
};

// Whether `prefix` can begin a subject: dot-separated tokens, none empty, without wildcards
// ('*', '>') or white space. kInvalidArgument naming what is wrong; the publisher and the
// sources check it when they open.
Status CheckSubjectPrefix(std::string_view prefix);

// Whether `properties` can be those of a connection (JetStreamOptions::properties): an unknown
// key, a key given twice, one way of saying who the client is too many, or a file that cannot be
// read now: kInvalidArgument saying which (never a value: it may be a secret).
Status CheckNatsProperties(const std::vector<std::string>& properties);

Result<std::unique_ptr<Publisher>> OpenJetStreamPublisher(const JetStreamOptions& options);

// Whether the server answers and has the stream, within `timeout_ms` (a readiness check: it
// connects, asks for the stream's info and closes).
Status ProbeJetStream(const JetStreamOptions& options, int64_t timeout_ms = 1000);

// A durable pull consumer of `options.stream`: of `filter_subject`; without one, of
// `<subject_prefix>.>`; and with neither (an empty subject_prefix too), of every subject of the
// stream (a stream of one subject pattern: that pattern; of several: a consumer without a
// filter, created here and bound to).
Result<std::unique_ptr<Source>> OpenJetStreamSource(const JetStreamOptions& options,
                                                    std::string durable,
                                                    std::string filter_subject);

// The source of one partition of a consumer group (group.h), whose position is the store's:
// Start creates an ephemeral pull consumer of `filter_subject` that begins at the stream
// sequence after the stored position ("stream_seq=N"; the whole stream when there is none). A
// member that takes a partition over thus goes on exactly where the last holder's last commit
// ended, in stream order. A message the server delivers again (unacknowledged past ack_wait)
// is one this source handed out already and is dropped, so positions only go up; a batch cannot
// be taken back (Reject: kFailedPrecondition; the member gives the partition up and starts
// again from the stored position). The server deletes the consumer once nobody has pulled
// from it for inactive_ms. `name` is the position's key in the store.
Result<std::unique_ptr<Source>> OpenJetStreamPartitionSource(const JetStreamOptions& options,
                                                             std::string name,
                                                             std::string filter_subject,
                                                             int64_t inactive_ms = 60'000);

}  // namespace evident
