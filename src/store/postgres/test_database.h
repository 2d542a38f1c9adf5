// store/postgres/test_database.h — the tests' PostgreSQL databases (test-only): the server of
// scripts/postgres.sh that CTest starts (the `postgres` fixture), and a schema of its own per
// test, so that tests running at once never see each other's tables.
#pragma once

#include <string>

#include "evident/status.h"

namespace evident {

// The server's URL, read from the file EVIDENT_TEST_POSTGRES_URL_FILE names. A missing variable
// or file is an error (the test fails; it is never skipped).
Result<std::string> TestPostgresUrl();

// Creates a fresh, empty schema and returns a store URI whose connections use it
// ("...?options=-csearch_path%3D<schema>"). `hint` (letters, digits, underscores) helps a
// reader find the schema of a test.
Result<std::string> FreshPostgresSchema(const std::string& hint);

// A copy of the file at `path` (a module of evident's) where the tests' server can read it: the
// server's data directory (scripts/postgres.sh keeps its path beside the URL), so that it goes
// with the cluster. Returns the copy's path.
Result<std::string> CopyToTestServer(const std::string& path);

}  // namespace evident
