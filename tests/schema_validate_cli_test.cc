// End-to-end tests of `evident schema validate`: the real binary, a real schema file, NDJSON
// instances on standard input, real exit codes.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "run_process.h"

namespace evident::testing {
namespace {

const std::string kSchema =
    SourcePath("examples/orders/contracts/order.status.changed/v1.schema.json");

struct Result {
  uint64_t index = 0;
  bool valid = false;
  std::vector<std::string> errors;  // "instanceLocation keywordLocation: error"
};

std::vector<Result> ParseOutput(const std::string& out) {
  std::vector<Result> results;
  simdjson::dom::parser parser;
  for (const std::string& text : Lines(out)) {
    simdjson::dom::element e;
    EXPECT_EQ(parser.parse(text).get(e), simdjson::SUCCESS) << text;
    Result r;
    r.index = e["index"].get_uint64().value();
    r.valid = e["valid"].get_bool().value();
    for (simdjson::dom::element error : e["errors"].get_array()) {
      r.errors.push_back(std::string(error["instanceLocation"].get_string().value()) + " " +
                         std::string(error["keywordLocation"].get_string().value()) + ": " +
                         std::string(error["error"].get_string().value()));
    }
    results.push_back(std::move(r));
  }
  return results;
}

TEST(CliSchemaValidate, OneLinePerInstanceWithErrorsAndExitOne) {
  const std::string input = R"({"schemaVersion":1,"orderId":"order-1","status":"paid"})"
                            "\n\n"  // a blank line gets no index
                            R"({"schemaVersion":1,"orderId":"order-2"})"
                            "\n"
                            R"({"schemaVersion":2,"orderId":"","status":"paid"})"
                            "\n"
                            "not json\n";
  const ProcessResult r = RunEvident({"schema", "validate", "--schema", kSchema, "-"}, input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<Result> results = ParseOutput(r.out);
  ASSERT_EQ(results.size(), 4u) << r.out;
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].index, i);
  EXPECT_TRUE(results[0].valid);
  EXPECT_TRUE(results[0].errors.empty());
  EXPECT_FALSE(results[1].valid);
  ASSERT_EQ(results[1].errors.size(), 1u) << r.out;
  EXPECT_NE(results[1].errors[0].find("/required"), std::string::npos) << results[1].errors[0];
  EXPECT_FALSE(results[2].valid);
  ASSERT_EQ(results[2].errors.size(), 2u) << r.out;  // const and minLength, each located
  EXPECT_NE(r.out.find("/properties/schemaVersion/const"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("/properties/orderId/minLength"), std::string::npos) << r.out;
  EXPECT_FALSE(results[3].valid);
  ASSERT_EQ(results[3].errors.size(), 1u);
  EXPECT_NE(results[3].errors[0].find("not JSON"), std::string::npos) << results[3].errors[0];
}

TEST(CliSchemaValidate, AllValidExitsZero) {
  const ProcessResult r =
      RunEvident({"schema", "validate", "--schema", kSchema, "-"},
                 R"({"schemaVersion":1,"orderId":"a","status":"b"})"
                 "\n"
                 R"({"schemaVersion":1,"orderId":"c","status":"d","extra":true})");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseOutput(r.out).size(), 2u);
}

// An instance that needs more than --validation-steps-max is invalid and says why.
TEST(CliSchemaValidate, StepBudgetRefusalIsReported) {
  const std::string instance = R"({"schemaVersion":1,"orderId":"a","status":"b"})";
  ProcessResult r = RunEvident(
      {"schema", "validate", "--schema", kSchema, "--validation-steps-max", "3", "-"}, instance);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find(R"("budgetExceeded":true)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("validation_steps_max (3 steps)"), std::string::npos) << r.out;
  r = RunEvident({"schema", "validate", "--schema", kSchema, "-"}, instance);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("budgetExceeded"), std::string::npos) << r.out;
}

// A line over the limit is one invalid instance; the lines after it are read as before.
TEST(CliSchemaValidate, OverlongLineIsAnInvalidInstanceAndReadingGoesOn) {
  const std::string valid = R"({"schemaVersion":1,"orderId":"a","status":"b"})";
  std::string input = valid + "\n";
  input += R"({"schemaVersion":1,"orderId":")" + std::string(300000, 'x') + R"(","status":"b"})";
  input += "\n" + valid + "\n";
  const ProcessResult r = RunEvident(
      {"schema", "validate", "--schema", kSchema, "--line-bytes-max", "1000", "-"}, input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<Result> results = ParseOutput(r.out);
  ASSERT_EQ(results.size(), 3u) << r.out;
  EXPECT_TRUE(results[0].valid);
  EXPECT_FALSE(results[1].valid);
  ASSERT_EQ(results[1].errors.size(), 1u);
  EXPECT_NE(results[1].errors[0].find("longer than 1000 bytes"), std::string::npos);
  EXPECT_TRUE(results[2].valid);
  EXPECT_EQ(results[2].index, 2u);
}

// Lines longer than the reader's 64 KiB chunks are put together whole, including one that ends
// exactly at a chunk boundary.
TEST(CliSchemaValidate, LongLinesWithinTheLimitAreReadWhole) {
  std::string input;
  for (const size_t size : {size_t{300000}, size_t{65535}, size_t{65536}, size_t{131071}}) {
    const std::string head = R"({"schemaVersion":1,"status":"b","orderId":")";
    input += head + std::string(size - head.size() - 2, 'x') + "\"}\n";
  }
  input += R"({"schemaVersion":1,"status":"b"})";  // the last line, without a newline: invalid
  const ProcessResult r = RunEvident({"schema", "validate", "--schema", kSchema, "-"}, input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const std::vector<Result> results = ParseOutput(r.out);
  ASSERT_EQ(results.size(), 5u) << r.out.substr(0, 2000);
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(results[i].valid) << i << ": " << r.out;
  EXPECT_FALSE(results[4].valid);
}

TEST(CliSchemaValidate, SchemaThatDoesNotCompileExitsTwo) {
  const ProcessResult missing =
      RunEvident({"schema", "validate", "--schema", "/nonexistent/schema.json", "-"}, "{}\n");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("evident schema validate"), std::string::npos) << missing.err;
  const ProcessResult bad_option =
      RunEvident({"schema", "validate", "--schema", kSchema, "--line-bytes-max", "0", "-"}, "{}\n");
  EXPECT_EQ(bad_option.exit_code, 2) << bad_option.err;
}

}  // namespace
}  // namespace evident::testing
