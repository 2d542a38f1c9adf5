// config/problem.h — a configuration problem from the "FILE:LINE: what" message of a parser.
#pragma once

#include <string>

#include "evident/config.h"

namespace evident::config {

// Splits "ORIGIN:LINE: what" (or "ORIGIN: what", or yaml-cpp's "ORIGIN: yaml-cpp: error at line
// LINE, column C: what") into the problem's file, line and message; another text is the message
// whole, with no line.
ConfigProblem ProblemFromMessage(std::string code, const std::string& origin,
                                 const std::string& message);

}  // namespace evident::config
