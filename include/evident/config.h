// evident/config.h — the consumer runtime's configuration file (evident.yaml).
//
//   contracts: contracts            # payload schemas + consumer contracts (docs/contracts.md)
//   profile: cloudevents            # envelope profile of the input (cloudevents | flat | contract)
//   profile_file: my-profile.json   # .. or one from a JSON file (envelope.md), not both
//   batch_count_max: 1000           # events per store transaction (group commit)
//   linger_ms: 5                    # commit a partial batch when input pauses this long
//   batch_ms_max: 50                # .. and at the latest this long after its first event
//   consumers:
//     - id: fulfillment             # contract from contracts/consumers/fulfillment.yaml, or
//       projection: {...}           #   written inline here in the same format
//       guards: {...}
//
// Each consumers entry is a consumer contract (same format as contracts/consumers/*.yaml; when
// it has no `accepts`, the contract of that id is taken from the contracts directory) plus:
//   projection: per event type, the state it sets (`state: cancelled`) or the payload field it
//               takes the state from (`state_from: /status`), payload fields it copies
//               (`copy: [/orderId]`) and named evidence it records (`evidence: [payment]`);
//   guards:     per action, `in_sync` (projection version equals the highest owner version seen
//               and no gap is open), allowed `states`, required `evidence`;
//   effects:    external effects an applied event triggers (effects.h): a name, the event types
//               (`on`), optionally the states after the event and payload conditions (`when`),
//               a key template, an HTTP target and a retry policy;
//   compensations: the owner's decisions that require a compensation, keyed by the decision.
// Full reference with examples: docs/consume.md.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "evident/adapter.h"
#include "evident/contract.h"
#include "evident/profile.h"
#include "evident/retained_kind.h"
#include "evident/retry.h"
#include "evident/status.h"

namespace evident {

// What a member a projection step reads becomes when the payload lacks it (seed 000's "explicit
// default rule: return a bounded null, or refuse"). Without one, an absent member is left out.
struct MemberDefault {
  enum class Kind : uint8_t {
    kNull,      // `null`: the member is written as null
    kConstant,  // `{value: X}`: the member is written as X
    kRefuse,    // `refuse`: the event is payload-invalid, reason missing-member
  };
  Kind kind = Kind::kNull;
  std::string value_json;  // kConstant: the value as JSON text ("\"EUR\"", "0", "true")
};

struct ProjectionStep {
  std::string state;                  // constant state, or empty
  std::string state_from;             // JSON Pointer into data, or empty
  std::vector<std::string> copy;      // JSON Pointers into data
  std::vector<std::string> evidence;  // names recorded when the event applies
  // By pointer: a `copy` entry or `state_from` (whose default is a constant or a refusal).
  std::map<std::string, MemberDefault> defaults;
};

struct Guard {
  std::string action;
  bool in_sync = true;
  std::vector<std::string> states;    // empty: any state
  std::vector<std::string> evidence;  // names that must have been recorded
};

// A key template ("reserve:{subject}:v{subject_version}"), parsed: literal text and
// placeholders. Placeholders: {subject}, {subject_version}, {previous_version} (the subject
// version minus one), {source}, {id}, {type}, {consumer}, and a JSON Pointer into the payload
// ({/orderId}: a string, number or boolean member). A key names one intent in the whole store.
struct KeyTemplate {
  enum class Part : uint8_t {
    kLiteral,
    kSubject,
    kSubjectVersion,
    kPreviousVersion,
    kSource,
    kId,
    kType,
    kConsumer,
    kData,
  };
  std::string text;                                 // as written
  std::vector<std::pair<Part, std::string>> parts;  // literal text, or the pointer of kData
};

// A payload condition: the member at `pointer` (into the payload) equals `value`: a string
// member compares as text, another scalar by its JSON text ("3", "true").
struct PayloadCondition {
  std::string pointer;
  std::string value;
};

// Where an effect is performed: an HTTP endpoint that receives a POST of the event (CloudEvents
// structured JSON) with the header `Idempotency-Key: <key>`.
struct EffectTarget {
  std::string url;  // http:// or https://
  int64_t timeout_ms = 5000;
  // The target performs a key once, however often it is called with it: an unknown outcome may
  // then be retried automatically, with the same key. Otherwise it waits for reconciliation.
  bool idempotent_target = false;
};
inline constexpr int64_t kEffectTimeoutMsLimit = 600'000;

struct EffectConfig {
  std::string name;  // also the name of the evidence a `done` records
  // Event types that trigger it; empty for an effect only a compensation intends
  // (CompensationConfig::compensate_with).
  std::vector<std::string> on;
  // The projection's state that permits it; empty: any. Checked when an event triggers it and,
  // by the runner, right before each attempt: an intent whose subject's state no longer permits
  // it is withdrawn, never sent.
  std::vector<std::string> states;
  std::vector<PayloadCondition> when;  // all must hold
  // Event types whose application after the intent withdraws it before an attempt (an ordered
  // consumer: applied at a subject version above the intent's; an unordered one: applied after
  // it was written).
  std::vector<std::string> withdrawn_by;
  // Names the business operation ("reserve:{subject}"), never a delivery: a second trigger of a
  // key already intended is a no-op recorded on that intent.
  KeyTemplate key;
  EffectTarget target;
  // Attempts in all (the first included) and the backoff between them, for an unknown outcome
  // on an idempotent target and for a request that never reached the target.
  RetryPolicy retry{.attempts_max = 5, .backoff_initial_ms = 1000, .backoff_max_ms = 60'000};
};

// A compensation the owner's decision requires (seed 002): recorded once per key. It may name
// the effect it compensates (the subject's latest intent of that effect for the same consumer)
// and, opt-in, a compensating effect of the same consumer, intended only when the compensated
// effect is done (docs/effects.md).
struct CompensationConfig {
  std::vector<std::string> on;
  std::vector<PayloadCondition> when;
  KeyTemplate key;
  std::string compensates;      // an effect's name; empty: the record only
  std::string compensate_with;  // an effect's name; empty: none (needs `compensates`)
};

struct ConsumerConfig {
  ConsumerContract contract;
  std::map<std::string, ProjectionStep> projection;  // by event type
  std::map<std::string, Guard> guards;               // by action
  std::vector<EffectConfig> effects;
  std::vector<CompensationConfig> compensations;
  // Where the contract was read: its file in the contracts directory, or "inline in F".
  std::string contract_origin;

  const EffectConfig* FindEffect(std::string_view name) const;
};

// Parses a key template; kInvalidArgument names what is wrong ("unknown placeholder {x}").
Result<KeyTemplate> ParseKeyTemplate(std::string_view text);

// The ranges of the batch settings, in the file and on the command line alike.
inline constexpr int64_t kBatchCountMaxLimit = 1'000'000;  // batch_count_max: 1 ..
inline constexpr int64_t kLingerMsLimit = 60'000;          // linger_ms: 0 ..
inline constexpr int64_t kBatchMsMaxLimit = 600'000;       // batch_ms_max: 1 ..
inline constexpr int64_t kEventBytesFloor = 65'536;        // event_bytes_max: CloudEvents' minimum
inline constexpr int64_t kEventBytesLimit = int64_t{64} << 20;  // .. to 64 MiB

// The daemon's HTTP settings (`http:` in evident.yaml; serve.h).
struct WebhookSecretConfig {
  std::string source;       // the CloudEvents source whose requests must be signed
  std::string secret_file;  // a file holding "whsec_<base64>" (resolved against the config's dir)
  std::string secret_env;   // or an environment variable holding it
};
struct HttpConfig {
  std::vector<std::string> webhook_origins;  // the handshake's allowed origins; "*" any
  std::vector<WebhookSecretConfig> webhook_secrets;
  int64_t signature_tolerance_s = 300;
};

// `tracing:` in evident.yaml: where spans of evident's work go (evident/tracing.h).
struct TracingConfig {
  std::string otlp_endpoint;  // an OTLP/HTTP collector's base URL; empty: no spans
  std::string service_name = "evident";
};

// `retention:` in evident.yaml: what long-running `consume`, `serve` and `relay` remove, and
// how often (retention.h RetentionTimer; `evident store retain` is the same work by hand).
struct RetentionConfig {
  int64_t every_ms = 0;  // between two runs; 0: no `retention:` section, nothing runs
  // The horizon per kind (RetainedKind's order): settled records older than this go; 0: that
  // kind is kept. `older_than: 30d` sets every kind; a mapping sets the kinds it names.
  std::array<int64_t, kRetainedKindCount> older_than_ms{};
  std::string archive;            // a file every removed record is appended to first; empty: none
  int64_t batch_count_max = 500;  // records per transaction (and per archive sync)
  int64_t yield_percent = 100;    // a pause after each transaction (RetainOptions)
  // > 0: ledger digests of receipts committed longer ago than this are dropped after each run
  // (RetainOptions::forget_ledger_after_ms); at least the ledger's horizon.
  int64_t forget_ledger_after_ms = 0;
};

struct Config {
  std::string path;           // the file it was read from
  std::string contracts_dir;  // resolved against the file's directory
  std::string profile_file;   // the profile's file when the config names one (resolved), else empty
  ContractsDir contracts;
  std::vector<Adapter> adapters;  // the contracts directory's (adapter.h)
  Profile profile = Profile::CloudEvents();
  size_t batch_count_max = 1000;  // events per transaction
  int64_t linger_ms = 5;          // a partial batch commits after this long without input
  // A batch commits at the latest this long after its first event was decided, however steadily
  // events keep coming: a steady trickle that never pauses for linger_ms would otherwise hold
  // decided events until batch_count_max of them gathered.
  int64_t batch_ms_max = 50;
  size_t event_bytes_max = size_t{1} << 20;
  std::vector<ConsumerConfig> consumers;
  HttpConfig http;
  TracingConfig tracing;
  RetentionConfig retention;

  const ConsumerConfig* Find(std::string_view consumer_id) const;
};

// A payload member a consumer's configuration reads that its contract does not declare: a
// projection step's `state_from`, `copy` or `defaults`, an effect's or compensation's `when` or
// key template ({/p}), or the last adapter of a `via_adapter` chain (a move's destination, a
// map's or convert's member). `contracts impact` judges a change by the contract's `reads`
// alone, so a pointer read outside them would let it call a breaking change safe.
struct UndeclaredRead {
  std::string consumer;
  std::string contract;  // ConsumerConfig::contract_origin
  std::string type;      // the event type whose payload it reads
  std::string what;      // "the projection step's copy", "effect 'reserve-stock''s key", ...
  std::string pointer;   // into `data`
};
// Every undeclared read of `config`, in consumer order. A pointer is declared when it is one of
// the type's `reads` or lies under one (/customer covers /customer/name).
std::vector<UndeclaredRead> UndeclaredReads(const Config& config);
std::string DescribeUndeclaredRead(const UndeclaredRead& read);

// One problem of a configuration (`evident config check`).
struct ConfigProblem {
  // CONFIG_UNREADABLE, CONFIG_SYNTAX (not YAML, or a key twice), CONFIG_SCHEMA (against
  // ConfigSchemaJson), CONFIG_INVALID (what consume and serve refuse), UNDECLARED_READ, or a code
  // of `contracts lint` for the contracts directory it reads (docs/contracts.md).
  std::string code;
  std::string file;
  int64_t line = 0;  // 1-based; 0 when the problem has no one line (a file, a directory)
  std::string message;
};

struct ConfigOptions {
  // Refuse a configuration with an undeclared read (the default). `contracts lint --config`
  // loads without it to report every one.
  bool check_reads = true;
  // Without it the first problem ends the load (its status says it). With it every problem the
  // parse meets goes here and the parse goes on with the next part (a consumer, an effect, a
  // projection step, a setting); the load then fails if any was recorded.
  std::vector<ConfigProblem>* problems = nullptr;
  // Read the contracts directory and the profile file from these paths instead of the ones the
  // file names (a stored consumer set rebuilt in a directory of its own: stored_consumers.h);
  // empty: where the file names them.
  std::string contracts_dir;
  std::string profile_file;
  // Every file (the configuration, its contracts directory, profile, schemas and adapters) is
  // read through this Env, which must outlive the pipeline's creation (Pipeline::Create reads
  // the schemas); the real file system when null.
  Env* env = nullptr;
};

// Reads and checks a configuration file: every consumer has a contract, every accepted
// (type, version) has a schema file, every projection type is accepted, pointers are valid and
// declared in the contract's `reads` (UndeclaredReads).
Result<Config> LoadConfig(const std::string& path, const ConfigOptions& options = {});
// The same from text; relative paths resolve against `base_dir`.
Result<Config> ConfigFromYaml(std::string_view yaml_text, const std::string& base_dir,
                              const std::string& origin = "evident.yaml",
                              const ConfigOptions& options = {});

// The JSON Schema (2020-12) of evident.yaml: its keys, their types and ranges, for editors
// (yaml-language-server) and `config check`. Also in schemas/evident-config.schema.json.
std::string_view ConfigSchemaJson();

// Every problem of the configuration at `path` at once, sorted by file and line: its YAML, the
// schema, everything consume and serve would refuse (ConfigOptions::problems), its undeclared
// reads, and `contracts lint` of the contracts directory it reads. Empty: consume and serve
// accept it. Bounded: a document whose aliases expand beyond a million nodes, or nested deeper
// than 64, is one problem, never unbounded work.
std::vector<ConfigProblem> CheckConfig(const std::string& path);
// The same of text read from `path`; relative paths resolve against `base_dir`.
std::vector<ConfigProblem> CheckConfigText(std::string_view yaml_text, const std::string& base_dir,
                                           const std::string& path);

}  // namespace evident
