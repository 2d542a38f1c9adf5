// Tests for evident/adapter.h (parsing, every step kind, rounding) and GenerateInstances.
#include "evident/adapter.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <set>
#include <string>

#include "adapter/decimal.h"
#include "adapter/generate.h"
#include "evident/schema.h"

namespace evident {
namespace {

// An adapter of one or more steps for order.status.changed 4 -> 2; `steps` is YAML list text.
std::string AdapterYaml(std::string_view steps) {
  return "id: order-status-v4-to-v2\ntype: order.status.changed\nfrom: 4\nto: 2\nsteps:\n" +
         std::string(steps);
}

Adapter MustParse(std::string_view steps) {
  Result<Adapter> adapter = AdapterFromYaml(AdapterYaml(steps), "adapters/a.yaml");
  EXPECT_TRUE(adapter.ok()) << adapter.status().ToString();
  return adapter.ok() ? *adapter : Adapter{};
}

// Applies `steps` to `payload`; the adapted payload or "error: <message>".
std::string Apply(std::string_view steps, std::string_view payload) {
  Result<std::string> out = ApplyAdapter(MustParse(steps), payload);
  return out.ok() ? *out : "error: " + out.status().message();
}

// The refusal message of an adapter text, or "" when it parses.
std::string Refusal(std::string_view yaml_text) {
  Result<Adapter> adapter = AdapterFromYaml(yaml_text, "adapters/a.yaml");
  if (adapter.ok()) return "";
  EXPECT_EQ(adapter.status().code(), Code::kInvalidArgument);
  return adapter.status().message();
}

TEST(AdapterYaml, ParsesTheExample) {
  Result<Adapter> adapter = AdapterFromYaml(R"(# order.status.changed v4 renamed /status to /state
id: order-status-v4-to-v2
type: order.status.changed
from: 4
to: 2
description: orders-projection reads v2
steps:
  - move: {from: /state, to: /status}
  - set: {at: /schemaVersion, value: 2}
  - map: {at: /status, values: {shipped: packed, done: delivered}, unmapped: refuse}
  - convert: {at: /amount, factor: 0.01, round: half-even, digits: 2}
  - drop: /legacyField
)",
                                            "adapters/order-status-v4-to-v2.yaml");
  ASSERT_TRUE(adapter.ok()) << adapter.status().ToString();
  EXPECT_EQ(adapter->id, "order-status-v4-to-v2");
  EXPECT_EQ(adapter->type, "order.status.changed");
  EXPECT_EQ(adapter->from, 4);
  EXPECT_EQ(adapter->to, 2);
  EXPECT_EQ(adapter->description, "orders-projection reads v2");
  EXPECT_EQ(adapter->origin, "adapters/order-status-v4-to-v2.yaml");
  ASSERT_EQ(adapter->steps.size(), 5u);
  EXPECT_EQ(adapter->steps[0].kind, AdapterStepKind::kMove);
  EXPECT_EQ(adapter->steps[0].at, "/state");
  EXPECT_EQ(adapter->steps[0].to, "/status");
  EXPECT_FALSE(adapter->steps[0].required);
  EXPECT_EQ(adapter->steps[0].line, 8);
  EXPECT_EQ(adapter->steps[1].value_json, "2");
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(adapter->steps[2].values,
            (Pairs{{R"("shipped")", R"("packed")"}, {R"("done")", R"("delivered")"}}));
  EXPECT_FALSE(adapter->steps[2].keep_unmapped);
  EXPECT_EQ(adapter->steps[3].factor, 0.01);
  EXPECT_EQ(adapter->steps[3].rounding, Rounding::kHalfEven);
  EXPECT_EQ(adapter->steps[3].digits, 2);
  EXPECT_EQ(adapter->steps[4].kind, AdapterStepKind::kDrop);
  EXPECT_EQ(adapter->steps[4].at, "/legacyField");
  EXPECT_EQ(adapter->steps[4].line, 12);

  EXPECT_EQ(DescribeSteps(*adapter),
            "move /state -> /status\n"
            "set /schemaVersion = 2\n"
            "map /status: \"shipped\" -> \"packed\", \"done\" -> \"delivered\"; others refused\n"
            "convert /amount * 0.01, round half-even to 2 digits\n"
            "drop /legacyField\n");
  Result<std::string> out = ApplyAdapter(
      *adapter, R"({"orderId":"o-1","state":"shipped","amount":1234,"legacyField":true})");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, R"({"orderId":"o-1","amount":12.34,"status":"packed","schemaVersion":2})");
}

TEST(AdapterApply, MoveRenamesKeepsOrderAndAppends) {
  EXPECT_EQ(Apply("  - move: {from: /state, to: /status}\n", R"({"a":1,"state":"x","b":2})"),
            R"({"a":1,"b":2,"status":"x"})");
  // An existing destination is replaced where it stands.
  EXPECT_EQ(Apply("  - move: {from: /state, to: /b}\n", R"({"b":2,"state":"x","c":3})"),
            R"({"b":"x","c":3})");
  // Nested pointers, into an existing object; the moved value is a whole subtree.
  EXPECT_EQ(Apply("  - move: {from: /order/customer, to: /customer}\n",
                  R"({"order":{"id":7,"customer":{"name":"Ada","tags":[1,2]}}})"),
            R"({"order":{"id":7},"customer":{"name":"Ada","tags":[1,2]}})");
  // Hoisting a member over its own parent.
  EXPECT_EQ(Apply("  - move: {from: /wrapper/value, to: /wrapper}\n", R"({"wrapper":{"value":5}})"),
            R"({"wrapper":5})");
}

TEST(AdapterApply, UntouchedValuesKeepTheirValue) {
  EXPECT_EQ(
      Apply("  - drop: /x\n",
            R"({"i":-9223372036854775808,"d":1.10,"e":1e2,"s":"\u00e9\n","t":[true,null]})"),
      "{\"i\":-9223372036854775808,\"d\":1.1,\"e\":100,\"s\":\"\u00e9\\n\",\"t\":[true,null]}");
  EXPECT_EQ(Apply("  - drop: /x\n", R"({"u":18446744073709551615})"),
            R"({"u":18446744073709551615})");  // beyond int64, still exact
  EXPECT_EQ(Apply("  - drop: /x\n", R"([1,{"x":2}])"), R"([1,{"x":2}])");
  EXPECT_TRUE(Apply("  - drop: /x\n", "{")
                  .starts_with("error: adapter 'order-status-v4-to-v2': payload: not valid JSON"));
}

TEST(AdapterDescribe, OneLinePerStep) {
  const Adapter adapter = MustParse(
      "  - move: {from: /a, to: /b/c, required: true}\n"
      "  - map: {at: /s, values: {1: '1'}, unmapped: keep}\n"
      "  - convert: {at: /n, factor: 100}\n"
      "  - convert: {at: /n, factor: -0.5, round: floor, digits: 1}\n");
  EXPECT_EQ(DescribeSteps(adapter),
            "move /a -> /b/c (required)\n"
            "map /s: 1 -> \"1\"; others kept\n"
            "convert /n * 100\n"
            "convert /n * -0.5, round floor to 1 digit\n");
}

TEST(AdapterApply, MoveOfAnAbsentMemberDoesNothingUnlessRequired) {
  EXPECT_EQ(Apply("  - move: {from: /state, to: /status}\n", R"({"a":1})"), R"({"a":1})");
  EXPECT_EQ(Apply("  - move: {from: /missing/state, to: /status}\n", R"({"a":1})"), R"({"a":1})");
  EXPECT_EQ(Apply("  - move: {from: /state, to: /status, required: true}\n", R"({"a":1})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (move /state -> /status): /state is "
            "absent and the move is required");
}

TEST(AdapterApply, MoveIntoAMissingParentOrThroughANonObjectFails) {
  EXPECT_EQ(Apply("  - drop: /x\n  - move: {from: /state, to: /meta/status}\n", R"({"state":"x"})"),
            "error: adapter 'order-status-v4-to-v2' step 2 (move /state -> /meta/status): the "
            "parent of /meta/status does not exist");
  EXPECT_EQ(Apply("  - move: {from: /state, to: /meta/status}\n", R"({"state":"x","meta":3})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (move /state -> /meta/status): the "
            "path to /meta/status passes through a value that is not an object");
  EXPECT_EQ(Apply("  - move: {from: /state, to: /list/0}\n", R"({"state":"x","list":[1]})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (move /state -> /list/0): the parent "
            "of /list/0 is an array, not an object");
}

TEST(AdapterApply, SetWritesScalarsObjectsAndArrays) {
  EXPECT_EQ(Apply("  - set: {at: /schemaVersion, value: 2}\n", R"({"a":1})"),
            R"({"a":1,"schemaVersion":2})");
  EXPECT_EQ(Apply("  - set: {at: /a, value: '2'}\n", R"({"a":1})"), R"({"a":"2"})");
  EXPECT_EQ(Apply("  - set: {at: /meta, value: {source: legacy, retries: 0, ok: true, none: ~}}\n",
                  R"({"a":1})"),
            R"({"a":1,"meta":{"source":"legacy","retries":0,"ok":true,"none":null}})");
  EXPECT_EQ(Apply("  - set: {at: /tags, value: [a, 1, 2.5, [], {}]}\n", R"({})"),
            R"({"tags":["a",1,2.5,[],{}]})");
  EXPECT_EQ(Apply("  - set:\n      at: /meta/flag\n      value: false\n", R"({"meta":{}})"),
            R"({"meta":{"flag":false}})");
}

TEST(AdapterApply, SetIntoAMissingParentFails) {
  EXPECT_EQ(Apply("  - set: {at: /meta/flag, value: 1}\n", R"({"a":1})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (set /meta/flag): the parent of "
            "/meta/flag does not exist");
  EXPECT_EQ(Apply("  - set: {at: /a/flag, value: 1}\n", R"({"a":"text"})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (set /a/flag): the path to /a/flag "
            "passes through a value that is not an object");
}

TEST(AdapterApply, PointerEscapesAndArrayIndexes) {
  // ~1 is '/', ~0 is '~'.
  EXPECT_EQ(Apply("  - move: {from: /a~1b, to: /c~0d}\n", R"({"a/b":1})"), R"({"c~d":1})");
  EXPECT_EQ(Apply("  - set: {at: /x~01, value: 1}\n", R"({})"), R"({"x~1":1})");
  EXPECT_EQ(Apply("  - drop: /m~1n~0\n", R"({"m/n~":1,"k":2})"), R"({"k":2})");
  // Arrays are walked by index on the way.
  EXPECT_EQ(Apply("  - convert: {at: /items/1/price, factor: 2}\n",
                  R"({"items":[{"price":1},{"price":3}]})"),
            R"({"items":[{"price":1},{"price":6}]})");
  EXPECT_EQ(Apply("  - set: {at: /items/0/sku, value: A}\n", R"({"items":[{}]})"),
            R"({"items":[{"sku":"A"}]})");
  // Index out of range or not canonical: absent.
  EXPECT_EQ(Apply("  - convert: {at: /items/01/price, factor: 2}\n",
                  R"({"items":[{"price":1},{"price":3}]})"),
            R"({"items":[{"price":1},{"price":3}]})");
}

TEST(AdapterApply, DropRemovesAMemberAndIgnoresAnAbsentOne) {
  EXPECT_EQ(Apply("  - drop: /legacy\n", R"({"a":1,"legacy":{"x":1},"b":2})"), R"({"a":1,"b":2})");
  EXPECT_EQ(Apply("  - drop: /legacy\n", R"({"a":1})"), R"({"a":1})");
  EXPECT_EQ(Apply("  - drop: /deep/legacy\n", R"({"a":1})"), R"({"a":1})");
  EXPECT_EQ(Apply("  - drop: /a/b\n", R"({"a":"s"})"), R"({"a":"s"})");
  EXPECT_EQ(Apply("  - drop: /list/0\n", R"({"list":[1,2]})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (drop /list/0): the parent of /list/0 "
            "is an array: only object members can be removed");
}

TEST(AdapterApply, MapReplacesRefusesOrKeeps) {
  constexpr std::string_view kRefuse =
      "  - map: {at: /status, values: {shipped: packed, done: delivered}}\n";
  EXPECT_EQ(Apply(kRefuse, R"({"status":"done"})"), R"({"status":"delivered"})");
  EXPECT_EQ(Apply(kRefuse, R"({"other":1})"), R"({"other":1})");  // absent: nothing happens
  EXPECT_EQ(Apply(kRefuse, R"({"status":"lost"})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (map /status): value \"lost\" has no "
            "mapping (unmapped: refuse)");
  EXPECT_EQ(Apply(kRefuse, R"({"status":{"deep":1}})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (map /status): value {\"deep\":1} has "
            "no mapping (unmapped: refuse)");
  constexpr std::string_view kKeep =
      "  - map: {at: /status, values: {shipped: packed}, unmapped: keep}\n";
  EXPECT_EQ(Apply(kKeep, R"({"status":"lost"})"), R"({"status":"lost"})");
  EXPECT_EQ(Apply(kKeep, R"({"status":"shipped"})"), R"({"status":"packed"})");
}

TEST(AdapterApply, MapKeysAreTypedLikeYamlValues) {
  // A plain 1 is the number 1 (and matches 1.0); a quoted "1" is the string "1".
  constexpr std::string_view kNumbers =
      "  - map: {at: /code, values: {1: one, '2': two, 2.5: two-and-a-half, true: yes, ~: none}}\n";
  EXPECT_EQ(Apply(kNumbers, R"({"code":1})"), R"({"code":"one"})");
  EXPECT_EQ(Apply(kNumbers, R"({"code":1.0})"), R"({"code":"one"})");
  EXPECT_EQ(Apply(kNumbers, R"({"code":"2"})"), R"({"code":"two"})");
  EXPECT_EQ(Apply(kNumbers, R"({"code":2.5})"), R"({"code":"two-and-a-half"})");
  EXPECT_EQ(Apply(kNumbers, R"({"code":true})"), R"({"code":"yes"})");
  EXPECT_EQ(Apply(kNumbers, R"({"code":null})"), R"({"code":"none"})");
  EXPECT_EQ(Apply(kNumbers, R"({"code":"1"})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (map /code): value \"1\" has no "
            "mapping (unmapped: refuse)");
  EXPECT_EQ(Apply(kNumbers, R"({"code":2})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (map /code): value 2 has no mapping "
            "(unmapped: refuse)");
  // Replacements are typed the same way.
  EXPECT_EQ(Apply("  - map: {at: /s, values: {a: 1, b: '1', c: null, d: false}}\n", R"({"s":"a"})"),
            R"({"s":1})");
  EXPECT_EQ(Apply("  - map: {at: /s, values: {a: 1, b: '1', c: null, d: false}}\n", R"({"s":"b"})"),
            R"({"s":"1"})");
  EXPECT_EQ(Apply("  - map: {at: /s, values: {a: 1, b: '1', c: null, d: false}}\n", R"({"s":"c"})"),
            R"({"s":null})");
}

// Converts `value` by `factor`, rounding by `round` to `digits` places; the output number's text.
std::string Convert(std::string_view value, std::string_view factor, std::string_view round = "",
                    int digits = -1) {
  std::string step = "  - convert: {at: /n, factor: " + std::string(factor);
  if (!round.empty()) step += ", round: " + std::string(round);
  if (digits >= 0) step += ", digits: " + std::to_string(digits);
  step += "}\n";
  std::string out = Apply(step, "{\"n\":" + std::string(value) + "}");
  if (out.starts_with("{\"n\":")) return out.substr(5, out.size() - 6);
  return out;
}

TEST(AdapterConvert, ScalesAndWritesWholeResultsAsIntegers) {
  EXPECT_EQ(Convert("1234", "0.01"), "12.34");  // cents to units, exactly
  EXPECT_EQ(Convert("12.34", "100"), "1234");   // whole, digits 0: an integer
  EXPECT_EQ(Convert("0.1", "3"), "0.3");        // decimal product, not 0.30000000000000004
  EXPECT_EQ(Convert("7", "-1"), "-7");
  EXPECT_EQ(Convert("9007199254740993", "1"), "9007199254740993");  // integers stay exact
  EXPECT_EQ(Convert("1.5", "2", "half-even", 2), "3");  // whole, but digits 2: a double "3"
  EXPECT_EQ(Convert("1e300", "1e10"),
            "error: adapter 'order-status-v4-to-v2' step 1 (convert /n): the result 1e310 is out "
            "of range");
  // Absent member: nothing happens; a non-number fails the step.
  EXPECT_EQ(Apply("  - convert: {at: /amount, factor: 0.01}\n", R"({"a":"x"})"), R"({"a":"x"})");
  EXPECT_EQ(Apply("  - convert: {at: /amount, factor: 0.01}\n", R"({"amount":"12"})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (convert /amount): a string is not a "
            "number");
  EXPECT_EQ(Apply("  - convert: {at: /amount, factor: 0.01}\n", R"({"amount":null})"),
            "error: adapter 'order-status-v4-to-v2' step 1 (convert /amount): null is not a "
            "number");
}

TEST(AdapterConvert, HalfEvenRoundsHalvesToTheEvenNeighbour) {
  EXPECT_EQ(Convert("0.5", "1", "half-even"), "0");
  EXPECT_EQ(Convert("1.5", "1", "half-even"), "2");
  EXPECT_EQ(Convert("2.5", "1", "half-even"), "2");
  EXPECT_EQ(Convert("-2.5", "1", "half-even"), "-2");
  EXPECT_EQ(Convert("-0.5", "1", "half-even"), "0");  // never -0
  EXPECT_EQ(Convert("2.51", "1", "half-even"), "3");
  // The decimal 2.675 (binary 2.67499999999999982...) is a half: to the even 8.
  EXPECT_EQ(Convert("2.675", "1", "half-even", 2), "2.68");
  EXPECT_EQ(Convert("2.665", "1", "half-even", 2), "2.66");
  EXPECT_EQ(Convert("1234", "0.01", "half-even", 2), "12.34");
  EXPECT_EQ(Convert("12345", "0.001", "half-even", 2), "12.34");  // 12.345 -> 12.34
  EXPECT_EQ(Convert("12355", "0.001", "half-even", 2), "12.36");  // 12.355 -> 12.36
}

TEST(AdapterConvert, HalfUpRoundsHalvesAwayFromZero) {
  EXPECT_EQ(Convert("0.5", "1", "half-up"), "1");
  EXPECT_EQ(Convert("2.5", "1", "half-up"), "3");
  EXPECT_EQ(Convert("-2.5", "1", "half-up"), "-3");
  EXPECT_EQ(Convert("2.49", "1", "half-up"), "2");
  EXPECT_EQ(Convert("1.005", "1", "half-up", 2), "1.01");      // binary 1.00499999999999989...
  EXPECT_EQ(Convert("115", "0.0001", "half-up", 3), "0.012");  // 0.0115 exactly, a half
}

TEST(AdapterConvert, DirectedRoundings) {
  EXPECT_EQ(Convert("2.7", "1", "down"), "2");
  EXPECT_EQ(Convert("-2.7", "1", "down"), "-2");
  EXPECT_EQ(Convert("2.1", "1", "up"), "3");
  EXPECT_EQ(Convert("-2.1", "1", "up"), "-3");
  EXPECT_EQ(Convert("2.0", "1", "up"), "2");  // exact: no unit added
  EXPECT_EQ(Convert("2.7", "1", "floor"), "2");
  EXPECT_EQ(Convert("-2.1", "1", "floor"), "-3");
  EXPECT_EQ(Convert("2.1", "1", "ceiling"), "3");
  EXPECT_EQ(Convert("-2.7", "1", "ceiling"), "-2");
  EXPECT_EQ(Convert("1.239", "1", "down", 2), "1.23");
  EXPECT_EQ(Convert("1.231", "1", "ceiling", 2), "1.24");
  EXPECT_EQ(Convert("-1.231", "1", "floor", 2), "-1.24");
  EXPECT_EQ(Convert("0.0001", "1", "up", 2), "0.01");  // far below the kept place
  EXPECT_EQ(Convert("0.0001", "1", "half-up", 2), "0");
  EXPECT_EQ(Convert("9.99", "1", "up", 1), "10");  // the carry adds a digit
  EXPECT_EQ(Convert("2.5", "1", "none"), "2.5");
}

TEST(AdapterDecimal, ExactArithmetic) {
  using adapter::DecimalText;
  EXPECT_EQ(DecimalText(adapter::DecimalFromDouble(2.675)), "2675e-3");
  EXPECT_EQ(DecimalText(adapter::DecimalFromDouble(-0.0)), "0");
  EXPECT_EQ(DecimalText(adapter::DecimalFromDouble(1e300)), "1e300");
  EXPECT_EQ(DecimalText(adapter::DecimalFromInteger(INT64_MIN)), "-9223372036854775808");
  EXPECT_EQ(DecimalText(adapter::DecimalFromInteger(1200)), "12e2");
  const adapter::Decimal product =
      adapter::Multiply(adapter::DecimalFromDouble(0.1), adapter::DecimalFromDouble(0.2));
  EXPECT_EQ(DecimalText(product), "2e-2");
  EXPECT_EQ(adapter::ToInteger(adapter::DecimalFromInteger(INT64_MIN)), INT64_MIN);
  EXPECT_FALSE(adapter::ToInteger(
      adapter::Multiply(adapter::DecimalFromInteger(INT64_MIN), adapter::DecimalFromInteger(-1))));
  EXPECT_EQ(adapter::ToDouble(adapter::Multiply(adapter::DecimalFromDouble(1e-300),
                                                adapter::DecimalFromDouble(1e-300))),
            0.0);
}

TEST(AdapterYaml, RefusesWithOriginAndLine) {
  EXPECT_EQ(Refusal(AdapterYaml("  - move: {from: /a, to: /b, force: true}\n")),
            "adapters/a.yaml:6: unknown key 'force' in a move step");
  EXPECT_EQ(Refusal(AdapterYaml("  - move: {from: /a, to: /b}\n    drop: /c\n")),
            "adapters/a.yaml:6: a step is a mapping with exactly one key naming its kind (move, "
            "set, map, convert, drop), got 2 keys");
  EXPECT_EQ(Refusal(AdapterYaml("  - rename: {from: /a, to: /b}\n")),
            "adapters/a.yaml:6: unknown step kind 'rename' (move, set, map, convert or drop)");
  EXPECT_EQ(Refusal(AdapterYaml("  - drop: status\n")),
            "adapters/a.yaml:6: 'drop' must be a JSON Pointer to a member such as /status, got "
            "'status'");
  EXPECT_EQ(Refusal(AdapterYaml("  - drop: /a~2\n")),
            "adapters/a.yaml:6: 'drop' must be a JSON Pointer to a member such as /status, got "
            "'/a~2'");
  EXPECT_EQ(Refusal(AdapterYaml("  - set: {at: '', value: 1}\n")),
            "adapters/a.yaml:6: 'at' must be a JSON Pointer to a member such as /status, got ''");
  EXPECT_EQ(Refusal("id: a\ntype: t\nfrom: 2\nto: 2\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:4: 'from' and 'to' must differ (both are 2)");
  EXPECT_EQ(Refusal("id: a\ntype: t\nfrom: 2\nto: 3\nto: 4\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:5: duplicate key 'to' at line 5 (first at line 4)");
  EXPECT_EQ(Refusal("id: a\ntype: t\nfrom: 1\nto: 2\nsteps: []\n"),
            "adapters/a.yaml:5: 'steps' must list at least one step");
  EXPECT_EQ(Refusal("id: a\ntype: t\nfrom: 1\nto: 2\nversion: 3\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:5: unknown key 'version' in an adapter");
  EXPECT_EQ(Refusal("id: a\nfrom: 1\nto: 2\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:1: an adapter needs 'type'");
}

TEST(AdapterYaml, RefusesTooManySteps) {
  std::string steps;
  for (size_t i = 0; i <= kAdapterStepsMax; ++i) steps += "  - drop: /f" + std::to_string(i) + "\n";
  EXPECT_EQ(Refusal(AdapterYaml(steps)), "adapters/a.yaml:6: 'steps' lists 65 steps, more than 64");
  steps.resize(steps.rfind("  - drop"));
  EXPECT_EQ(Refusal(AdapterYaml(steps)), "");
  EXPECT_EQ(Refusal(std::string(kAdapterBytesMax + 1, '#')),
            "adapters/a.yaml: 65537 bytes, more than an adapter may hold (65536)");
}

TEST(AdapterYaml, RefusesBadValues) {
  const auto refused = [](std::string_view steps) { return Refusal(AdapterYaml(steps)); };
  EXPECT_EQ(Refusal("id: Order\ntype: t\nfrom: 1\nto: 2\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:1: 'id' must match [a-z0-9][a-z0-9._-]* (at most 128 characters), "
            "got 'Order'");
  EXPECT_NE(Refusal("id: -a\ntype: t\nfrom: 1\nto: 2\nsteps:\n  - drop: /x\n"), "");
  EXPECT_NE(Refusal("id: " + std::string(129, 'a') +
                    "\ntype: t\nfrom: 1\nto: 2\nsteps:\n"
                    "  - drop: /x\n"),
            "");
  EXPECT_EQ(Refusal("id: a\ntype: ''\nfrom: 1\nto: 2\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:2: 'type' must not be empty");
  EXPECT_EQ(Refusal("id: a\ntype: t\nfrom: 0\nto: 2\nsteps:\n  - drop: /x\n"),
            "adapters/a.yaml:3: 'from' must be a schema version from 1 to 999999999");
  EXPECT_NE(Refusal("id: a\ntype: t\nfrom: 1234567890\nto: 2\nsteps:\n  - drop: /x\n"), "");
  EXPECT_NE(Refusal("id: a\ntype: t\nfrom: 1.5\nto: 2\nsteps:\n  - drop: /x\n"), "");
  EXPECT_EQ(refused("  - move: {from: /a, to: /a}\n"),
            "adapters/a.yaml:6: a move step must move to another pointer");
  EXPECT_EQ(refused("  - move: {from: /a, to: /a/b}\n"),
            "adapters/a.yaml:6: a move step cannot move /a into itself (/a/b)");
  EXPECT_EQ(refused("  - move: {from: /a}\n"), "adapters/a.yaml:6: a move step needs 'to'");
  EXPECT_EQ(refused("  - move: {from: /a, to: /b, required: yes}\n"),
            "adapters/a.yaml:6: 'required' must be true or false");
  EXPECT_EQ(refused("  - set: {at: /a}\n"), "adapters/a.yaml:6: a set step needs 'value'");
  EXPECT_EQ(refused("  - set: {at: /a, value: .inf}\n"),
            "adapters/a.yaml:6: .inf has no JSON form");
  EXPECT_EQ(refused("  - map: {at: /a, values: {}}\n"),
            "adapters/a.yaml:6: 'values' must map at least one value to its replacement");
  EXPECT_EQ(refused("  - map: {at: /a, values: {1: a, 1.0: b}}\n"),
            "adapters/a.yaml:6: 'values' maps 1 twice");
  EXPECT_EQ(refused("  - map: {at: /a, values: {a: [b]}}\n"),
            "adapters/a.yaml:6: 'a mapped value' must be a scalar");
  EXPECT_EQ(refused("  - map: {at: /a, values: {a: b}, unmapped: drop}\n"),
            "adapters/a.yaml:6: 'unmapped' must be refuse or keep");
  EXPECT_EQ(refused("  - convert: {at: /a, factor: 0}\n"),
            "adapters/a.yaml:6: 'factor' must be a number other than 0");
  EXPECT_EQ(refused("  - convert: {at: /a, factor: '0.01'}\n"),
            "adapters/a.yaml:6: 'factor' must be a number other than 0");
  EXPECT_EQ(refused("  - convert: {at: /a, factor: 1e999}\n"),
            "adapters/a.yaml:6: number 1e999 is out of range");
  EXPECT_EQ(refused("  - convert: {at: /a, factor: 2, round: bankers}\n"),
            "adapters/a.yaml:6: 'round' must be none, half-up, half-even, down, up, floor or "
            "ceiling");
  EXPECT_EQ(refused("  - convert: {at: /a, factor: 2, round: up, digits: 16}\n"),
            "adapters/a.yaml:6: 'digits' must be an integer from 0 to 15");
  EXPECT_EQ(refused("  - convert: {at: /a, factor: 2, digits: 2}\n"),
            "adapters/a.yaml:6: 'digits' needs a 'round' mode");
  EXPECT_NE(refused("  - drop: [/a]\n"), "");
  EXPECT_NE(refused("  - move\n"), "");
  EXPECT_NE(Refusal("id: a\ntype: t\nfrom: 1\nto: 2\nsteps: [\n"), "");  // YAML syntax
}

constexpr std::string_view kOrderSchema = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["schemaVersion", "orderId", "status", "amount", "placedAt", "items"],
  "properties": {
    "schemaVersion": {"const": 4},
    "orderId": {"type": "string", "format": "uuid"},
    "status": {"$ref": "#/$defs/status"},
    "amount": {"type": "integer", "minimum": 0, "maximum": 1000000, "multipleOf": 5},
    "currency": {"type": "string", "minLength": 3, "maxLength": 3},
    "placedAt": {"type": "string", "format": "date-time"},
    "customer": {
      "type": "object",
      "required": ["email"],
      "properties": {"email": {"type": "string", "format": "email"}, "vip": {"type": "boolean"}}
    },
    "items": {
      "type": "array", "minItems": 1, "maxItems": 3,
      "items": {
        "type": "object", "additionalProperties": false, "required": ["sku", "quantity"],
        "properties": {
          "sku": {"type": "string", "maxLength": 8},
          "quantity": {"type": "integer", "exclusiveMinimum": 0, "maximum": 99},
          "price": {"type": "number", "minimum": 0, "exclusiveMaximum": 1000}
        }
      }
    },
    "note": {"type": ["string", "null"]},
    "discount": {"oneOf": [{"type": "null"}, {"type": "number", "minimum": 0, "maximum": 1}]}
  },
  "$defs": {"status": {"enum": ["created", "paid", "shipped", "delivered"]}}
})";

// The candidates the validator accepts, and how many it refused.
std::vector<std::string> Valid(std::string_view schema_json, const std::vector<std::string>& all,
                               size_t* refused = nullptr) {
  schema::Registry registry;
  schema::CompileOptions options;
  options.format_assertion = true;  // the generated formats must be real ones
  auto schema = schema::Schema::Compile(schema_json, registry, options);
  EXPECT_TRUE(schema.ok()) << schema.status().ToString();
  std::vector<std::string> valid;
  if (!schema.ok()) return valid;
  simdjson::dom::parser parser;
  for (const std::string& text : all) {
    simdjson::dom::element element;
    EXPECT_EQ(parser.parse(text).get(element), simdjson::SUCCESS) << text;
    if ((*schema)->IsValid(element)) valid.push_back(text);
  }
  if (refused != nullptr) *refused = all.size() - valid.size();
  return valid;
}

TEST(GenerateInstances, EveryCandidateOfAnOrderSchemaValidates) {
  Result<std::vector<std::string>> all = adapter::GenerateInstances(kOrderSchema, 40, 7);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->size(), 40u);
  EXPECT_EQ(std::set<std::string>(all->begin(), all->end()).size(), 40u);  // distinct
  size_t refused = 0;
  const std::vector<std::string> valid = Valid(kOrderSchema, *all, &refused);
  EXPECT_EQ(refused, 0u);
  for (const std::string& text : *all) {
    if (std::find(valid.begin(), valid.end(), text) == valid.end()) ADD_FAILURE() << text;
  }
  // Required members always; optional ones in some candidates and not in others.
  size_t with_customer = 0;
  for (const std::string& text : *all) {
    for (const char* name : {"\"schemaVersion\":4", "\"orderId\":", "\"status\":", "\"amount\":",
                             "\"placedAt\":", "\"items\":[{\"sku\":"}) {
      EXPECT_NE(text.find(name), std::string::npos) << name << " in " << text;
    }
    if (text.find("\"customer\":") != std::string::npos) ++with_customer;
  }
  EXPECT_GT(with_customer, 0u);
  EXPECT_LT(with_customer, all->size());
  EXPECT_EQ((*all)[0].find("\"customer\""), std::string::npos);  // the first: required only
  EXPECT_NE((*all)[1].find("\"customer\""), std::string::npos);  // the second: everything
  // Every enum value appears.
  for (const char* status : {"created", "paid", "shipped", "delivered"}) {
    const std::string member = "\"status\":\"" + std::string(status) + "\"";
    EXPECT_TRUE(std::any_of(all->begin(), all->end(), [&](const std::string& t) {
      return t.find(member) != std::string::npos;
    })) << status;
  }
}

TEST(GenerateInstances, DeterministicForASeed) {
  const auto first = adapter::GenerateInstances(kOrderSchema, 10, 42);
  const auto again = adapter::GenerateInstances(kOrderSchema, 10, 42);
  const auto other = adapter::GenerateInstances(kOrderSchema, 10, 43);
  ASSERT_TRUE(first.ok() && again.ok() && other.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_NE(*first, *other);
}

TEST(GenerateInstances, CombinatorsRefsAndDraft7) {
  constexpr std::string_view kDraft7 = R"({
    "$schema": "http://json-schema.org/draft-07/schema#",
    "definitions": {
      "money": {"type": "object", "required": ["units", "currency"],
                "properties": {"units": {"type": "integer", "minimum": 1},
                               "currency": {"enum": ["EUR", "USD"]}}},
      "node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/node"}}}
    },
    "allOf": [
      {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string"}}},
      {"required": ["price"], "properties": {"price": {"$ref": "#/definitions/money"}}}
    ],
    "properties": {
      "pair": {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}],
               "additionalItems": false},
      "payment": {"anyOf": [{"type": "string", "format": "date"}, {"type": "integer"}]},
      "chain": {"$ref": "#/definitions/node"}
    }
  })";
  const auto all = adapter::GenerateInstances(kDraft7, 24, 1);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_GE(all->size(), 12u);
  const std::vector<std::string> valid = Valid(kDraft7, *all);
  EXPECT_EQ(valid.size(), all->size());
  for (const std::string& text : *all) {
    if (std::find(valid.begin(), valid.end(), text) == valid.end()) ADD_FAILURE() << text;
  }
  for (const std::string& text : *all) {
    EXPECT_NE(text.find("\"kind\":"), std::string::npos) << text;
    EXPECT_NE(text.find("\"price\":{\"units\":"), std::string::npos) << text;
  }
}

TEST(GenerateInstances, ExoticSchemasAreFilteredByTheValidator) {
  // A pattern is not honoured: the candidates are plain strings, which the validator refuses.
  constexpr std::string_view kPattern =
      R"({"type":"object","required":["code","n"],"properties":{"code":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{2}$"},"n":{"type":"integer"}}})";
  const auto all = adapter::GenerateInstances(kPattern, 8, 3);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 8u);
  EXPECT_TRUE(Valid(kPattern, *all).empty());
  // Few distinct instances: the attempts stop, with what there is.
  const auto few = adapter::GenerateInstances(R"({"enum":["a","b",3]})", 100, 3);
  ASSERT_TRUE(few.ok());
  EXPECT_EQ(std::set<std::string>(few->begin(), few->end()),
            (std::set<std::string>{"\"a\"", "\"b\"", "3"}));
  // Recursion ends at the depth limits.
  constexpr std::string_view kRecursive =
      R"({"$defs":{"n":{"type":"object","required":["next"],"properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"})";
  const auto deep = adapter::GenerateInstances(kRecursive, 4, 3);
  ASSERT_TRUE(deep.ok());
  ASSERT_FALSE(deep->empty());
  EXPECT_LT((*deep)[0].size(), 200u);
  EXPECT_FALSE(adapter::GenerateInstances("[1]", 4, 3).ok());
  EXPECT_FALSE(adapter::GenerateInstances("{", 4, 3).ok());
}

}  // namespace
}  // namespace evident
