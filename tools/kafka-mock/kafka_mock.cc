// evident-kafka-mock: librdkafka's mock Kafka cluster (rdkafka_mock.h) as a process of its own,
// for the tests, the benchmarks and scripts/demo-kafka.sh (no Kafka broker can be installed on
// these machines; docs/kafka.md says what the mock cannot prove).
//
//   evident-kafka-mock --brokers N --port-file F [--topic NAME:PARTITIONS]... [--control SOCKET]
//       Starts N in-process brokers listening on 127.0.0.1 (ports the kernel picks), creates the
//       topics, writes the bootstrap address ("127.0.0.1:P1,127.0.0.1:P2,...") to F (atomically:
//       the file appears whole), and runs until SIGTERM or SIGINT. The cluster's data lives in
//       this process: tests never restart it, they inject faults instead, by lines on standard
//       input or on the control socket, each answered by one line, "ok" or "error: why":
//         down B | up B              broker B refuses (then accepts) connections (-1: every broker)
//         leader TOPIC PARTITION B   moves the partition's leadership to broker B
//         errors API CODE...         the next requests of API (a name or a number: Produce,
//                                    OffsetCommit, 8) fail with these codes, one each
//                                    (names as librdkafka's: NOT_LEADER_FOR_PARTITION, or numbers)
//         clear API                  forgets the errors pushed for API
//         rtt B MS                   broker B answers MS milliseconds late (-1: every broker)
//         topic NAME PARTITIONS      creates a topic
//         coordinator group|transaction KEY B   moves a group's or a transaction's coordinator
//         bootstrap                  answers the bootstrap address
//   evident-kafka-mock --control SOCKET --send 'COMMAND'
//       Sends one command to a running mock and prints its answer; exit 1 when it says error.
//
// Written by hand because it is the one place the mock cluster's C API becomes a process: the
// library offers it only inside a client's own process.
#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  const char byte = 's';
  (void)!write(g_signal_pipe[1], &byte, 1);
}

struct Options {
  int brokers = 3;
  std::string port_file, control, send;
  std::vector<std::pair<std::string, int>> topics;
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "evident-kafka-mock: %s\nusage: evident-kafka-mock --brokers N --port-file F "
               "[--topic NAME:PARTITIONS]... [--control SOCKET]\n"
               "       evident-kafka-mock --control SOCKET --send 'COMMAND'\n",
               why.c_str());
  std::exit(2);
}

std::optional<long> Number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return value;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) Usage(arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--brokers") {
      const std::optional<long> n = Number(value);
      if (!n || *n < 1 || *n > 16) Usage("--brokers takes 1 to 16");
      o.brokers = static_cast<int>(*n);
    } else if (arg == "--port-file") {
      o.port_file = value;
    } else if (arg == "--control") {
      o.control = value;
    } else if (arg == "--send") {
      o.send = value;
    } else if (arg == "--topic") {
      const size_t colon = value.rfind(':');
      const std::optional<long> n =
          colon == std::string::npos ? std::nullopt : Number(value.substr(colon + 1));
      if (!n || *n < 1 || *n > 1024 || colon == 0) Usage("--topic takes NAME:PARTITIONS");
      o.topics.emplace_back(value.substr(0, colon), static_cast<int>(*n));
    } else {
      Usage("unknown option " + arg);
    }
  }
  if (o.send.empty() && o.port_file.empty()) Usage("--port-file is required");
  if (!o.send.empty() && o.control.empty()) Usage("--send needs --control");
  return o;
}

// The Kafka protocol's request types by name (the ones worth failing in a test).
const std::map<std::string, int16_t> kApis = {
    {"Produce", 0},
    {"Fetch", 1},
    {"ListOffsets", 2},
    {"Metadata", 3},
    {"OffsetCommit", 8},
    {"OffsetFetch", 9},
    {"FindCoordinator", 10},
    {"JoinGroup", 11},
    {"Heartbeat", 12},
    {"LeaveGroup", 13},
    {"SyncGroup", 14},
    {"InitProducerId", 22},
    {"AddPartitionsToTxn", 24},
    {"EndTxn", 26},
};

std::optional<int16_t> ApiKey(const std::string& word) {
  const auto it = kApis.find(word);
  if (it != kApis.end()) return it->second;
  const std::optional<long> n = Number(word);
  if (!n || *n < 0 || *n > 100) return std::nullopt;
  return static_cast<int16_t>(*n);
}

std::optional<rd_kafka_resp_err_t> ErrorCode(const std::string& word) {
  if (const std::optional<long> n = Number(word)) return static_cast<rd_kafka_resp_err_t>(*n);
  const rd_kafka_err_desc* descs = nullptr;
  size_t count = 0;
  rd_kafka_get_err_descs(&descs, &count);
  for (size_t i = 0; i < count; ++i) {
    if (descs[i].name != nullptr && word == descs[i].name) return descs[i].code;
  }
  return std::nullopt;
}

class Mock {
 public:
  bool Start(int brokers, std::string& why) {
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    // The handle only keeps the cluster's books; it never connects anywhere.
    if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      why = errstr;
      rd_kafka_conf_destroy(conf);
      return false;
    }
    handle_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (handle_ == nullptr) {
      why = errstr;
      return false;
    }
    cluster_ = rd_kafka_mock_cluster_new(handle_, brokers);
    if (cluster_ == nullptr) why = "the mock cluster did not start";
    return cluster_ != nullptr;
  }

  ~Mock() {
    if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
    if (handle_ != nullptr) rd_kafka_destroy(handle_);
  }

  std::string Bootstrap() const { return rd_kafka_mock_cluster_bootstraps(cluster_); }

  std::string CreateTopic(const std::string& name, int partitions) {
    return Answer(rd_kafka_mock_topic_create(cluster_, name.c_str(), partitions, 1));
  }

  // One command line, answered "ok", "error: why" or (bootstrap) the address.
  std::string Run(const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> w;
    for (std::string word; in >> word;) w.push_back(word);
    if (w.empty()) return "error: empty command";
    if (w[0] == "bootstrap" && w.size() == 1) return Bootstrap();
    if (w[0] == "errors" && w.size() >= 3) return PushErrors(w);
    if (w[0] == "clear" && w.size() == 2) return Clear(w[1]);
    if (w[0] == "topic" && w.size() == 3) {
      const std::optional<long> n = Number(w[2]);
      if (!n || *n < 1) return "error: topic NAME PARTITIONS";
      return CreateTopic(w[1], static_cast<int>(*n));
    }
    if (w[0] == "coordinator" && w.size() == 4) return Coordinator(w);
    return BrokerCommand(w);
  }

 private:
  static std::string Answer(rd_kafka_resp_err_t err) {
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return "ok";
    return std::string("error: ") + rd_kafka_err2str(err);
  }

  std::string BrokerCommand(const std::vector<std::string>& w) {
    if ((w[0] == "down" || w[0] == "up") && w.size() == 2) {
      const std::optional<long> b = Number(w[1]);
      if (!b) return "error: " + w[0] + " BROKER";
      const auto id = static_cast<int32_t>(*b);
      return Answer(w[0] == "down" ? rd_kafka_mock_broker_set_down(cluster_, id)
                                   : rd_kafka_mock_broker_set_up(cluster_, id));
    }
    if (w[0] == "rtt" && w.size() == 3) {
      const std::optional<long> b = Number(w[1]), ms = Number(w[2]);
      if (!b || !ms || *ms < 0) return "error: rtt BROKER MS";
      return Answer(
          rd_kafka_mock_broker_set_rtt(cluster_, static_cast<int32_t>(*b), static_cast<int>(*ms)));
    }
    if (w[0] == "leader" && w.size() == 4) {
      const std::optional<long> p = Number(w[2]), b = Number(w[3]);
      if (!p || !b) return "error: leader TOPIC PARTITION BROKER";
      return Answer(rd_kafka_mock_partition_set_leader(
          cluster_, w[1].c_str(), static_cast<int32_t>(*p), static_cast<int32_t>(*b)));
    }
    return "error: unknown command '" + w[0] +
           "' (down, up, leader, errors, clear, rtt, topic, "
           "coordinator, bootstrap)";
  }

  std::string PushErrors(const std::vector<std::string>& w) {
    const std::optional<int16_t> api = ApiKey(w[1]);
    if (!api) return "error: unknown API '" + w[1] + "'";
    std::vector<rd_kafka_resp_err_t> codes;
    for (size_t i = 2; i < w.size(); ++i) {
      const std::optional<rd_kafka_resp_err_t> code = ErrorCode(w[i]);
      if (!code) return "error: unknown error code '" + w[i] + "'";
      codes.push_back(*code);
    }
    rd_kafka_mock_push_request_errors_array(cluster_, *api, codes.size(), codes.data());
    return "ok";
  }

  std::string Clear(const std::string& word) {
    const std::optional<int16_t> api = ApiKey(word);
    if (!api) return "error: unknown API '" + word + "'";
    rd_kafka_mock_clear_request_errors(cluster_, *api);
    return "ok";
  }

  std::string Coordinator(const std::vector<std::string>& w) {
    const std::optional<long> b = Number(w[3]);
    if ((w[1] != "group" && w[1] != "transaction") || !b) {
      return "error: coordinator group|transaction KEY BROKER";
    }
    return Answer(rd_kafka_mock_coordinator_set(cluster_, w[1].c_str(), w[2].c_str(),
                                                static_cast<int32_t>(*b)));
  }

  rd_kafka_t* handle_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

bool WriteWhole(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text << '\n';
    out.close();
    if (!out) return false;
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0;
}

int Listen(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) return -1;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  (void)unlink(path.c_str());
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(fd, 8) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Reads one line from `fd` (at most 4 KiB); false at its end.
bool ReadLine(int fd, std::string& line) {
  line.clear();
  char c = 0;
  while (line.size() < 4096) {
    const ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return !line.empty();
    if (c == '\n') return true;
    line.push_back(c);
  }
  return true;
}

bool WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Sets TCP_NODELAY on every TCP connection of this process that lacks it. A Kafka broker sets it
// on each connection it accepts; librdkafka's mock does not, and its answers then wait for the
// client's delayed ACK (Nagle's algorithm): about 40 ms per produce round trip on loopback,
// which no real cluster has. The mock's sockets are this process's own descriptors, so they are
// found in /proc/self/fd, a few milliseconds after they are accepted.
constexpr int kNoDelayScanMs = 5;

void SetNoDelay() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (const dirent* entry = readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2 || fd == dirfd(dir)) continue;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    int domain = 0, type = 0, listening = 0, nodelay = 0;
    socklen_t size = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0 ||
        (domain != AF_INET && domain != AF_INET6)) {
      continue;
    }
    size = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) continue;
    size = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening != 0) {
      continue;
    }
    size = sizeof(int);
    if (getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &size) == 0 && nodelay == 0) {
      nodelay = 1;
      (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
    }
  }
  closedir(dir);
}

void Serve(Mock& mock, int control) {
  bool stdin_open = true;
  for (;;) {
    SetNoDelay();
    pollfd fds[3] = {{g_signal_pipe[0], POLLIN, 0}, {control, POLLIN, 0}, {0, POLLIN, 0}};
    const nfds_t count = stdin_open ? 3 : 2;
    const int ready = poll(fds, count, kNoDelayScanMs);
    if (ready == 0) continue;
    if (ready < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[0].revents != 0) return;
    std::string line;
    if (control >= 0 && (fds[1].revents & POLLIN) != 0) {
      const int client = accept4(control, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        if (ReadLine(client, line)) (void)WriteAll(client, mock.Run(line) + "\n");
        close(client);
      }
    }
    if (stdin_open && fds[2].revents != 0) {
      if (ReadLine(0, line)) {
        std::printf("%s\n", mock.Run(line).c_str());
        std::fflush(stdout);
      } else {
        stdin_open = false;  // the end of standard input is not the end of the cluster
      }
    }
  }
}

int Send(const Options& o) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (o.control.size() >= sizeof address.sun_path) Usage("control socket path too long");
  std::memcpy(address.sun_path, o.control.c_str(), o.control.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    std::fprintf(stderr, "evident-kafka-mock: cannot reach %s: %s\n", o.control.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::string answer;
  const bool answered = WriteAll(fd, o.send + "\n") && ReadLine(fd, answer);
  close(fd);
  if (!answered) {
    std::fprintf(stderr, "evident-kafka-mock: no answer from %s\n", o.control.c_str());
    return 1;
  }
  std::printf("%s\n", answer.c_str());
  return answer.rfind("error", 0) == 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  if (!o.send.empty()) return Send(o);
  if (pipe(g_signal_pipe) != 0) return 1;
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  Mock mock;
  std::string why;
  if (!mock.Start(o.brokers, why)) {
    std::fprintf(stderr, "evident-kafka-mock: %s\n", why.c_str());
    return 1;
  }
  for (const auto& [name, partitions] : o.topics) {
    const std::string answer = mock.CreateTopic(name, partitions);
    if (answer != "ok") {
      std::fprintf(stderr, "evident-kafka-mock: topic %s: %s\n", name.c_str(), answer.c_str());
      return 1;
    }
  }
  const int control = o.control.empty() ? -1 : Listen(o.control);
  if (!o.control.empty() && control < 0) {
    std::fprintf(stderr, "evident-kafka-mock: cannot listen on %s: %s\n", o.control.c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (!WriteWhole(o.port_file, mock.Bootstrap())) {
    std::fprintf(stderr, "evident-kafka-mock: cannot write %s\n", o.port_file.c_str());
    return 1;
  }
  Serve(mock, control);
  if (control >= 0) (void)unlink(o.control.c_str());
  return 0;
}
