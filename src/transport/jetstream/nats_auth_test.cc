// A JetStream connection's credentials and TLS (JetStreamOptions::properties) against a real
// nats-server (scripts/nats.sh with NATS_CONFIG) that demands them: user and password, a token,
// operator mode with a user's creds (the committed fixtures of tests/fixtures/nats-auth, valid
// until 2100), and TLS with a CA made by openssl at test time, the client verified too. Never
// skipped: a server that cannot start fails the test.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "evident/jetstream.h"
#include "evident/redact.h"
#include "testing/shell.h"
#include "transport/jetstream/nats_client.h"

namespace evident {
namespace {

namespace fs = std::filesystem;
using test_support::Shell;

const std::string kFixtures = EVIDENT_SOURCE_DIR "/tests/fixtures/nats-auth";

class NatsAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/evident-nats-auth-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + dir_ + "/nats", &rc);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path);
    out << text;
    out.close();
    EXPECT_TRUE(out) << path;
    return path;
  }

  // Starts the server with `config`; url_ is its nats://127.0.0.1:PORT.
  void Start(const std::string& config) {
    const std::string file = Write("server.conf", config);
    int rc = 0;
    url_ = Shell("NATS_CONFIG=" + file + " bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " +
                     dir_ + "/nats",
                 &rc);
    ASSERT_EQ(rc, 0) << "nats-server did not start: " << url_;
    ASSERT_EQ(url_.rfind("nats://", 0), 0u) << url_;
  }

  // Makes the CA and certificates (make-tls.sh) and starts a server that speaks TLS only and
  // verifies its clients' certificates against that CA.
  void StartTls() {
    int rc = 0;
    const std::string out = Shell("bash " + kFixtures + "/make-tls.sh " + dir_ + "/tls 2>&1", &rc);
    ASSERT_EQ(rc, 0) << out;
    Start("tls {\n  cert_file: \"" + dir_ + "/tls/server.pem\"\n  key_file: \"" + dir_ +
          "/tls/server.key\"\n  ca_file: \"" + dir_ + "/tls/ca.pem\"\n  verify: true\n}\n");
  }

  JetStreamOptions Options(std::vector<std::string> properties, std::string url = "") const {
    JetStreamOptions o;
    o.url = url.empty() ? url_ : std::move(url);
    o.properties = std::move(properties);
    o.stream = "EVENTS";
    o.ack_wait_ms = 5000;
    return o;
  }

  // Publishes two events with `properties` and reads them back through a durable consumer with
  // the same: both arrive, in order.
  void ExpectRoundTrip(const std::vector<std::string>& properties, const std::string& url = "") {
    const JetStreamOptions o = Options(properties, url);
    auto p = OpenJetStreamPublisher(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    const std::string round = std::to_string(++rounds_);  // each round its own ids and reader
    const std::vector<std::string> bodies = {R"({"n":1,"round":)" + round + "}",
                                             R"({"n":2,"round":)" + round + "}"};
    const std::vector<OutgoingMessage> batch = {{"p0.order.created", "id-1-" + round, bodies[0]},
                                                {"p0.order.created", "id-2-" + round, bodies[1]}};
    auto published = (*p)->Publish(batch);
    ASSERT_TRUE(published.ok()) << published.status().ToString();
    EXPECT_EQ(*published, 2u);
    EXPECT_TRUE((*p)->Close().ok());
    auto s = OpenJetStreamSource(o, "reader-" + round, "");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Start(std::nullopt).ok());
    std::vector<std::string> got;
    for (int i = 0; i < 2 * rounds_; ++i) {  // every round's events are in the stream
      Message m;
      auto f = (*s)->Fetch(m, 3000);
      ASSERT_TRUE(f.ok()) << f.status().ToString();
      ASSERT_EQ(*f, Source::Fetched::kMessage);
      got.push_back(m.bytes);
    }
    EXPECT_EQ(std::vector<std::string>(got.end() - 2, got.end()), bodies);
  }
  // Opening a publisher with `properties` is refused as configuration (not retried), saying
  // `why`, and never shows `secret`.
  void ExpectRefused(const std::vector<std::string>& properties, const std::string& why,
                     const std::string& secret = "", const std::string& url = "") {
    auto p = OpenJetStreamPublisher(Options(properties, url));
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.status().code(), Code::kFailedPrecondition) << p.status().ToString();
    EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status().ToString();
    if (!secret.empty()) {
      EXPECT_EQ(p.status().message().find(secret), std::string::npos) << p.status().ToString();
    }
    auto probe = ProbeJetStream(Options(properties, url));
    EXPECT_FALSE(probe.ok());
  }

  std::string dir_, url_;
  int rounds_ = 0;
};

TEST_F(NatsAuthTest, UserAndPasswordFromAFileOrTheUrlAndNothingElse) {
  Start("authorization {\n  user: evident\n  password: \"s3cret-pw\"\n}\n");
  const std::string pw = Write("pw", "s3cret-pw\n");
  ExpectRoundTrip({"user=evident", "password_file=" + pw});
  ExpectRoundTrip({"user=evident", "password=s3cret-pw"});
  const std::string host = url_.substr(std::string("nats://").size());
  ExpectRoundTrip({}, "nats://evident:s3cret-pw@" + host);
  ExpectRefused({}, "refused the credentials");
  ExpectRefused({"user=evident", "password=wrong-pw-42"}, "refused the credentials", "wrong-pw-42");
  // In the URL, the wrong password is not shown either: the URL is, as ***@.
  auto p = OpenJetStreamPublisher(Options({}, "nats://evident:wrong-pw-43@" + host));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().find("wrong-pw-43"), std::string::npos) << p.status().ToString();
  EXPECT_NE(p.status().message().find("nats://***@" + host), std::string::npos)
      << p.status().ToString();
}

TEST_F(NatsAuthTest, ATokenFromAFileOrGivenAndNothingElse) {
  Start("authorization {\n  token: \"t0ken-abc\"\n}\n");
  ExpectRoundTrip({"token_file=" + Write("token", "t0ken-abc\n")});
  ExpectRoundTrip({"token=t0ken-abc"});
  ExpectRefused({}, "refused the credentials");
  ExpectRefused({"token=t0ken-xyz"}, "refused the credentials", "t0ken-xyz");
}

// Operator mode: the server trusts the committed operator, which signed the account; the user's
// creds (JWT and seed) are the committed ones.
TEST_F(NatsAuthTest, AUsersCredsInOperatorMode) {
  std::ifstream accounts(kFixtures + "/accounts.conf");
  const std::string preload((std::istreambuf_iterator<char>(accounts)), {});
  ASSERT_FALSE(preload.empty());
  Start("operator: \"" + kFixtures + "/operator.jwt\"\n" + preload);
  const std::string creds = dir_ + "/user.creds";  // libnats wants it readable by its user only
  fs::copy_file(kFixtures + "/user.creds", creds);
  fs::permissions(creds, fs::perms::owner_read | fs::perms::owner_write);
  ExpectRoundTrip({"creds=" + creds});
  ExpectRefused({}, "refused the credentials");
}

TEST_F(NatsAuthTest, TlsWithTheServersCaAndTheClientsCertificate) {
  StartTls();
  const std::string tls = dir_ + "/tls/";
  ExpectRoundTrip({"tls.ca=" + tls + "ca.pem", "tls.cert=" + tls + "client.pem",
                   "tls.key=" + tls + "client.key"});
  // The same name the certificate carries, given explicitly.
  ExpectRoundTrip({"tls.ca=" + tls + "ca.pem", "tls.cert=" + tls + "client.pem",
                   "tls.key=" + tls + "client.key", "tls.hostname=localhost"});
  // A server certificate signed by another CA, or by none the system trusts, or made out to
  // another name: refused, as is a client without a certificate of its own.
  const std::vector<std::string> client = {"tls.cert=" + tls + "client.pem",
                                           "tls.key=" + tls + "client.key"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.end(), client.begin(), client.end());
    return more;
  };
  EXPECT_FALSE(OpenJetStreamPublisher(Options(with({"tls.ca=" + tls + "other-ca.pem"}))).ok());
  EXPECT_FALSE(OpenJetStreamPublisher(Options(with({"tls=true"}))).ok());
  EXPECT_FALSE(OpenJetStreamPublisher(
                   Options(with({"tls.ca=" + tls + "ca.pem", "tls.hostname=evident.invalid"})))
                   .ok());
  EXPECT_FALSE(OpenJetStreamPublisher(Options({"tls.ca=" + tls + "ca.pem"})).ok());
  // Without TLS, the server that requires it is not reached.
  EXPECT_FALSE(OpenJetStreamPublisher(Options({})).ok());
}

TEST(NatsProperties, WhatCannotBeIsRefusedBeforeAnythingOpensWithoutItsValue) {
  const auto refused = [](const std::vector<std::string>& properties, const std::string& why) {
    const Status s = CheckNatsProperties(properties);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(why), std::string::npos) << s.ToString();
    for (const std::string& p : properties) {  // the secrets' values (a file's path is shown)
      if (p.rfind("password=", 0) != 0 && p.rfind("token=", 0) != 0) continue;
      const std::string value = p.substr(p.find('=') + 1);
      if (value.size() > 6) {
        EXPECT_EQ(s.message().find(value), std::string::npos) << s.ToString();
      }
    }
  };
  refused({"passwd=hunter2hunter2"}, "takes no 'passwd'");
  refused({"user"}, "KEY=VALUE");
  refused({"user="}, "has no value");
  refused({"user=a", "user=b"}, "given twice");
  refused({"password=hunter2hunter2"}, "needs its user");
  refused({"user=a", "token=hunter2hunter2"}, "one way");
  refused({"creds=/etc/hostname", "token=hunter2hunter2"}, "one way");
  refused({"password=hunter2hunter2", "password_file=/etc/hostname", "user=a"}, "not both");
  refused({"tls.cert=/etc/hostname"}, "go together");
  refused({"tls=yes"}, "true or false");
  refused({"creds=/nonexistent/user.creds"}, "cannot read /nonexistent/user.creds");
  refused({"user=a", "password_file=/nonexistent/pw"}, "cannot read");
  EXPECT_TRUE(CheckNatsProperties({}).ok());
  EXPECT_TRUE(CheckNatsProperties({"user=a", "password=b", "tls=true"}).ok());
}

// A seed list entry that cannot name a server is refused before anything connects (an
// unreachable one is only Unavailable, tried again): it is named, its password not shown.
TEST(NatsProperties, AMalformedSeedListEntryIsRefusedNotRetried) {
  for (const std::string url :
       {"nats://127.0.0.1:4222,amqp://127.0.0.1:5672", "nats://127.0.0.1:99999", "nats://:4222",
        "nats://127.0.0.1:42x2", "nats://u:pw-3e9d@a b:1", ",,", "nats://127.0.0.1:4222/path"}) {
    JetStreamOptions o;
    o.url = url;
    o.stream = "EVENTS";
    const auto p = OpenJetStreamPublisher(o);
    ASSERT_FALSE(p.ok()) << url;
    EXPECT_EQ(p.status().code(), Code::kInvalidArgument) << url << ": " << p.status().ToString();
    EXPECT_EQ(p.status().message().find("pw-3e9d"), std::string::npos) << p.status().ToString();
  }
  JetStreamOptions unreachable;
  unreachable.url = "nats://127.0.0.1:1, nats://[::1]:1,localhost:1";
  unreachable.stream = "EVENTS";
  EXPECT_EQ(OpenJetStreamPublisher(unreachable).status().code(), Code::kUnavailable);
}

// What a user hands in is bounded: the options, a secret file's first line (one endless line is
// refused, not read whole), and the servers of a seed list.
TEST(NatsProperties, WhatAUserHandsInIsBounded) {
  const std::vector<std::string> many(65, "tls=false");
  const Status options = CheckNatsProperties(many);
  EXPECT_EQ(options.code(), Code::kInvalidArgument);
  EXPECT_NE(options.message().find("at most 64"), std::string::npos) << options.ToString();
  EXPECT_TRUE(CheckNatsProperties(std::vector<std::string>(64, "tls=false")).ok());

  const auto dir =
      std::filesystem::temp_directory_path() / ("evident-secret-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string endless = (dir / "endless").string(), long_tail = (dir / "tail").string();
  {
    std::ofstream(endless) << std::string(70'000, 'x');
    std::ofstream(long_tail) << "hunter2hunter2\n" << std::string(1 << 20, 'y');
  }
  const Status refused = CheckNatsProperties({"user=a", "password_file=" + endless});
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_NE(refused.message().find("longer than 65536 bytes"), std::string::npos)
      << refused.ToString();
  EXPECT_TRUE(CheckNatsProperties({"user=a", "password_file=" + long_tail}).ok());
  std::filesystem::remove_all(dir);

  JetStreamOptions seeds;
  for (int i = 0; i < 65; ++i) seeds.url += (i > 0 ? "," : "") + std::string("nats://127.0.0.1:1");
  seeds.stream = "EVENTS";
  const auto publisher = OpenJetStreamPublisher(seeds);
  EXPECT_EQ(publisher.status().code(), Code::kInvalidArgument) << publisher.status().ToString();
  EXPECT_NE(publisher.status().message().find("names 65 servers; at most 64"), std::string::npos)
      << publisher.status().ToString();
}

TEST(NatsProperties, AUrlsUserInformationIsNeverShown) {
  EXPECT_EQ(RedactUri("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  EXPECT_EQ(RedactUri("nats://u:p@127.0.0.1:4222"), "nats://***@127.0.0.1:4222");
  EXPECT_EQ(RedactUri("nats://tok@a:1,nats://b:2,nats://u:p@c:3"),
            "nats://***@a:1,nats://b:2,nats://***@c:3");
  EXPECT_EQ(RedactUri(""), "");
}

}  // namespace
}  // namespace evident
