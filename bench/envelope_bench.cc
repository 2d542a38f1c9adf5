// Envelope parse+validate throughput, against a bare simdjson DOM parse of the same bytes (the
// ceiling: evident cannot validate faster than it can parse). See docs/BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "evident/envelope.h"
#include "order_events.h"
#include "ratio_reporter.h"

namespace {

const std::vector<std::string>& Corpus() {
  static const std::vector<std::string> events = evident::bench::MakeOrderEvents(20000);
  return events;
}

int64_t CorpusBytes() {
  int64_t total = 0;
  for (const std::string& e : Corpus()) total += static_cast<int64_t>(e.size());
  return total;
}

// The ceiling: parse each event with simdjson's DOM parser, touch nothing.
void BM_BareSimdjsonParse(benchmark::State& state) {
  simdjson::dom::parser parser;
  for (auto _ : state) {
    for (const std::string& e : Corpus()) {
      simdjson::dom::element root;
      auto error = parser.parse(e.data(), e.size()).get(root);
      benchmark::DoNotOptimize(error);
      benchmark::DoNotOptimize(root);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(Corpus().size()));
  state.SetBytesProcessed(state.iterations() * CorpusBytes());
}

// evident: size, I-JSON (duplicate members), required attributes, types, boundary, version.
void BM_EnvelopeParseValidate(benchmark::State& state) {
  auto parser =
      evident::EnvelopeParser::Create({.source_boundary = {"https://example.test/order-service"},
                                       .require_schema_version = true})
          .value();
  size_t valid = 0;
  for (auto _ : state) {
    for (const std::string& e : Corpus()) {
      const auto outcome = parser->Parse(e);
      valid += outcome.ok();
      benchmark::DoNotOptimize(outcome.event.id);
    }
  }
  if (valid != state.iterations() * Corpus().size()) state.SkipWithError("an event was rejected");
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(Corpus().size()));
  state.SetBytesProcessed(state.iterations() * CorpusBytes());
}

// Nine runs each, interleaved at random (main), 0.3 s a run: on a shared machine a single pair of
// one-second runs moved the ratio between 0.42 and 0.66 for the same code.
BENCHMARK(BM_BareSimdjsonParse)->Unit(benchmark::kMillisecond)->MinTime(0.3)->Repetitions(9);
BENCHMARK(BM_EnvelopeParseValidate)->Unit(benchmark::kMillisecond)->MinTime(0.3)->Repetitions(9);

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  std::string interleave = "--benchmark_enable_random_interleaving=true";
  args.insert(args.begin() + 1, interleave.data());  // the caller's flags still win
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  evident::bench::RatioReporter reporter("BM_BareSimdjsonParse");
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
