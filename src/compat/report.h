// compat/report.h — text and JSON renderings of the compat results, shared by the CLI and tests.
//
// JSON shapes (one object each, documented in docs/contracts.md):
//   schema check, one pair:  {"compatible","mode","strictness","changes":[{"code","pointer",
//                             "schema_pointer","compatible","backward","forward","message"}]}
//   schema check, directory: the same plus "type" and "checks":[{"old","new","compatible",
//                             "changes"}]; "changes" then lists every check's changes with
//                             "old" and "new".
//   contracts impact:        {"type","consumers":[{"consumer","verdict","reasons":[{"pointer",
//                             "code","message","accepted_version"}]}]}
//   contracts lint:          {"clean","findings":[{"code","file","message"}]}
#pragma once

#include <string>
#include <vector>

#include "evident/compat.h"

namespace evident::compat {

std::string DiffToJson(const SchemaDiff& diff, CompatMode mode, Strictness strictness);
std::string DiffToText(const SchemaDiff& diff, CompatMode mode, Strictness strictness);
std::string EvolutionToJson(const EvolutionReport& report, Strictness strictness);
std::string EvolutionToText(const EvolutionReport& report, Strictness strictness);
std::string ImpactToJson(const ImpactReport& report);
std::string ImpactToText(const ImpactReport& report);
std::string LintToJson(const std::vector<LintFinding>& findings);
std::string LintToText(const std::vector<LintFinding>& findings);

}  // namespace evident::compat
