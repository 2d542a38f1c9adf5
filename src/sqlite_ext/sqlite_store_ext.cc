// The SQLite store (src/store/sqlite/sqlite_store.cc) compiled for the extension: its sqlite3_*
// calls through the extension API's table (sqlite3ext.h) instead of a linked libsqlite3. A unit
// of its own, so that the store's source keeps one compile command (clang-tidy checks it once,
// as the library's; scripts/run-clang-tidy.sh leaves this file out).
#define EVIDENT_SQLITE_EXTENSION 1
#include "store/sqlite/sqlite_store.cc"  // NOLINT(bugprone-suspicious-include)
