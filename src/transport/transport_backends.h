// transport/transport_backends.h — the Source and Publisher backends the two conformance suites
// run against (test-only).
//
// A backend joins a suite by adding itself to SourceBackends() or PublisherBackends()
// (transport_backends.cc) with what it claims it can do; every case of source_conformance_test.cc
// or publisher_conformance_test.cc then runs against it, the cases it claims checked and the
// others checked to be refused clearly. JetStream runs against a real nats-server
// (scripts/nats.sh), started on first use and stopped when the test process ends; a server that
// cannot start fails the test.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "evident/publisher.h"
#include "evident/source.h"

namespace evident {

// What a source backend claims.
struct SourceCapabilities {
  // Fetch says kEnd after the last message (a file); false: kWouldWait, more may come (a broker,
  // the HTTP intake).
  bool ends = true;
  // Start(EncodePosition(cursor)) continues after the cursor's message.
  bool resumes_from_position = false;
  // A new source of the same name starts after what an earlier one acknowledged (a broker's
  // durable consumer), whatever position Start is given.
  bool remembers_acknowledgements = false;
  // Reject: the messages after the last acknowledged are delivered again (in their order, or
  // in an order of the broker's), or the rejection is refused (kFailedPrecondition).
  enum class Redelivery : uint8_t { kNo, kInOrder, kAnyOrder };
  Redelivery redelivers = Redelivery::kNo;
  // What it reads from can go away and come back (a broker's server): while it is away the
  // source says unreachable() and Fetch waits; once back, what was not acknowledged comes.
  bool reports_outages = false;
};

struct SourceBackend {
  std::string name;  // part of the test names: letters, digits and underscores
  SourceCapabilities can;
  // A new source (a new connection) over `messages`, kept under `dir` when it needs files or a
  // stream; the same messages and dir give the same source again.
  std::function<std::unique_ptr<Source>(const std::filesystem::path& dir,
                                        const std::vector<std::string>& messages)>
      open;
  // With reports_outages: takes what the source reads from away (false) or brings it back
  // (true), keeping what it held.
  std::function<void(bool up)> outage;
};

// What a publisher backend claims.
struct PublisherCapabilities {
  // A second copy of a message id, offered within the window, is accepted and not stored again
  // (its ack says duplicate).
  bool deduplicates = false;
  // acks() numbers the accepted messages (a stream sequence).
  bool numbers_messages = false;
};

struct PublisherBackend {
  std::string name;
  PublisherCapabilities can;
  // A new publisher to the destination kept under `dir`: the same dir, the same destination.
  std::function<Result<std::unique_ptr<Publisher>>(const std::filesystem::path& dir)> open;
  // The bytes the destination holds, in its order.
  std::function<std::vector<std::string>(const std::filesystem::path& dir)> held;
  // A message this destination refuses for what it is (kInvalidArgument), whatever the others.
  std::function<OutgoingMessage()> unacceptable;
};

inline void PrintTo(const SourceBackend& backend, std::ostream* out) { *out << backend.name; }
inline void PrintTo(const PublisherBackend& backend, std::ostream* out) { *out << backend.name; }

std::vector<SourceBackend> SourceBackends();
std::vector<PublisherBackend> PublisherBackends();

}  // namespace evident
