// serve/assets.h — the operator page's files (src/serve/page), compiled into the binary by
// cmake/embed.cmake: nothing is loaded from the internet or from disk at run time.
#pragma once

#include <optional>
#include <string_view>

namespace evident::serve {

// The bytes of the page file `name` ("/index.html", "/app.js", "/app.css"), or nullopt.
std::optional<std::string_view> FindAsset(std::string_view name);

}  // namespace evident::serve
