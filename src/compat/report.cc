#include "compat/report.h"

#include "json/writer.h"

namespace evident::compat {
namespace {

void WriteChange(json::Writer& out, const Change& change, CompatMode mode) {
  out.Field("code", ChangeCodeName(change.code))
      .Field("pointer", change.pointer)
      .Field("schema_pointer", change.schema_pointer)
      .Field("compatible", change.CompatibleUnder(mode))
      .Field("backward", change.backward)
      .Field("forward", change.forward)
      .Field("message", change.message);
  if (!change.suggestion.empty()) out.Field("suggestion", change.suggestion);
}

void AppendChangeText(std::string& out, const Change& change, CompatMode mode) {
  out += change.CompatibleUnder(mode) ? "  compatible    " : "  INCOMPATIBLE  ";
  out += ChangeCodeName(change.code);
  out += "  ";
  out += change.pointer.empty() ? "(payload)" : change.pointer;
  out += "  [schema ";
  out += change.schema_pointer.empty() ? "(root)" : change.schema_pointer;
  out += "]\n      ";
  out += change.message;
  out += "\n";
  if (!change.suggestion.empty()) out += "      suggestion: " + change.suggestion + "\n";
}

size_t IncompatibleCount(const SchemaDiff& diff, CompatMode mode) {
  size_t count = 0;
  for (const Change& change : diff.changes) count += change.CompatibleUnder(mode) ? 0 : 1;
  return count;
}

std::string Heading(CompatMode mode, Strictness strictness) {
  return std::string(CompatModeName(mode)) + ", " + std::string(StrictnessName(strictness));
}

}  // namespace

std::string DiffToJson(const SchemaDiff& diff, CompatMode mode, Strictness strictness) {
  std::string text;
  json::Writer out(text);
  out.BeginObject()
      .Field("compatible", diff.CompatibleUnder(mode))
      .Field("mode", CompatModeName(mode))
      .Field("strictness", StrictnessName(strictness));
  out.Key("changes").BeginArray();
  for (const Change& change : diff.changes) {
    out.BeginObject();
    WriteChange(out, change, mode);
    out.EndObject();
  }
  out.EndArray().EndObject();
  text += "\n";
  return text;
}

std::string DiffToText(const SchemaDiff& diff, CompatMode mode, Strictness strictness) {
  const size_t incompatible = IncompatibleCount(diff, mode);
  std::string out = incompatible == 0 ? "compatible" : "INCOMPATIBLE";
  out += " (" + Heading(mode, strictness) + "): " + std::to_string(diff.changes.size()) +
         " change(s), " + std::to_string(incompatible) + " incompatible\n";
  for (const Change& change : diff.changes) AppendChangeText(out, change, mode);
  return out;
}

std::string EvolutionToJson(const EvolutionReport& report, Strictness strictness) {
  std::string text;
  json::Writer out(text);
  out.BeginObject()
      .Field("compatible", report.compatible)
      .Field("type", report.type)
      .Field("mode", CompatModeName(report.mode))
      .Field("strictness", StrictnessName(strictness));
  out.Key("checks").BeginArray();
  for (const VersionCheck& check : report.checks) {
    out.BeginObject().Field("old", check.old_version).Field("new", check.new_version);
    out.Field("compatible", check.compatible).Key("changes").BeginArray();
    for (const Change& change : check.diff.changes) {
      out.BeginObject();
      WriteChange(out, change, report.mode);
      out.EndObject();
    }
    out.EndArray().EndObject();
  }
  out.EndArray().Key("changes").BeginArray();
  for (const VersionCheck& check : report.checks) {
    for (const Change& change : check.diff.changes) {
      out.BeginObject().Field("old", check.old_version).Field("new", check.new_version);
      WriteChange(out, change, report.mode);
      out.EndObject();
    }
  }
  out.EndArray().EndObject();
  text += "\n";
  return text;
}

std::string EvolutionToText(const EvolutionReport& report, Strictness strictness) {
  std::string out = report.type + ": " + (report.compatible ? "compatible" : "INCOMPATIBLE") +
                    " (" + Heading(report.mode, strictness) + ")\n";
  if (report.checks.empty()) out += "  only one version: nothing to compare\n";
  for (const VersionCheck& check : report.checks) {
    // Appended piecewise: GCC 12 warns falsely (-Wrestrict) about "v" + std::to_string(...).
    out += 'v';
    out += std::to_string(check.old_version);
    out += " -> v";
    out += std::to_string(check.new_version);
    out += check.compatible ? ": compatible, " : ": INCOMPATIBLE, ";
    out += std::to_string(check.diff.changes.size());
    out += " change(s)\n";
    for (const Change& change : check.diff.changes) AppendChangeText(out, change, report.mode);
  }
  return out;
}

std::string ImpactToJson(const ImpactReport& report) {
  std::string text;
  json::Writer out(text);
  out.BeginObject().Field("type", report.type).Key("consumers").BeginArray();
  for (const ConsumerImpact& consumer : report.consumers) {
    out.BeginObject()
        .Field("consumer", consumer.consumer)
        .Field("verdict", !consumer.through_adapter.empty() ? "safe-through-adapter"
                          : consumer.safe                   ? "safe"
                                                            : "contract-update-required");
    if (!consumer.through_adapter.empty()) out.Field("adapter", consumer.through_adapter);
    out.Key("reasons").BeginArray();
    for (const ImpactReason& reason : consumer.reasons) {
      out.BeginObject()
          .Field("pointer", reason.pointer)
          .Field("code", reason.code)
          .Field("message", reason.message)
          .Field("accepted_version", reason.accepted_version)
          .EndObject();
    }
    out.EndArray().EndObject();
  }
  out.EndArray().EndObject();
  text += "\n";
  return text;
}

std::string ImpactToText(const ImpactReport& report) {
  std::string out;
  if (report.consumers.empty()) out = "no consumer subscribes to " + report.type + "\n";
  for (const ConsumerImpact& consumer : report.consumers) {
    out += consumer.consumer + ": " +
           (!consumer.through_adapter.empty()
                ? "safe through adapter " + consumer.through_adapter +
                      " (its output for the new schema's payloads passes the accepted schema)"
            : consumer.safe ? std::string("safe")
                            : std::string("contract-update-required")) +
           "\n";
    for (const ImpactReason& reason : consumer.reasons) {
      out += "  " + (reason.pointer.empty() ? std::string("(contract)") : reason.pointer) + "  " +
             reason.code + "  (vs accepted v" + std::to_string(reason.accepted_version) +
             ")\n      " + reason.message + "\n";
    }
  }
  return out;
}

std::string LintToJson(const std::vector<LintFinding>& findings) {
  std::string text;
  json::Writer out(text);
  out.BeginObject().Field("clean", findings.empty()).Key("findings").BeginArray();
  for (const LintFinding& finding : findings) {
    out.BeginObject()
        .Field("code", finding.code)
        .Field("file", finding.file)
        .Field("message", finding.message)
        .EndObject();
  }
  out.EndArray().EndObject();
  text += "\n";
  return text;
}

std::string LintToText(const std::vector<LintFinding>& findings) {
  if (findings.empty()) return "clean: no findings\n";
  std::string out;
  for (const LintFinding& finding : findings) {
    out += finding.file + ": " + finding.code + ": " + finding.message + "\n";
  }
  out += std::to_string(findings.size()) + " finding(s)\n";
  return out;
}

}  // namespace evident::compat
