// env/path.h — the directory part of a path, as the Envs compare it.
#pragma once

#include <string>
#include <string_view>

namespace evident {

// "a/b/c" -> "a/b"; "/c" -> "/"; "c" -> "."; trailing slashes of the directory are dropped
// ("a/b//c" -> "a/b"). Purely textual: "a/./b" and "a/b" are different directories.
std::string DirectoryOf(std::string_view path);

// `dir` without its trailing slashes ("a/b/" -> "a/b"), "/" kept; "" -> ".".
std::string NormalizeDirectory(std::string_view dir);

}  // namespace evident
