// How evident's JetStream backends reach a server: the seed list, credentials and TLS of a
// connection (JetStreamOptions::properties), set on libnats's options; and a URL fit for a message.
#pragma once

#include <nats/nats.h>

#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident::jetstream {

// What the properties ("KEY=VALUE") of a connection say, files not read yet.
struct ClientSettings {
  std::string user, password, password_file;
  std::string token, token_file;
  std::string creds;  // a user's JWT and nkey seed in one file (nsc's .creds)
  bool tls = false;   // TLS required (implied by any tls.* key)
  std::string tls_ca, tls_cert, tls_key, tls_hostname;
};

// The settings `properties` give: kInvalidArgument for an unknown key (naming the known ones),
// a key given twice, a value missing, or a combination that cannot be (a password without a user,
// a user with a token, creds with either, a certificate without its key). A value is never
// repeated in a message: it may be a secret.
Result<ClientSettings> ParseClientSettings(const std::vector<std::string>& properties);

// Whether every file the settings name can be read now (kInvalidArgument naming the key and the
// path), and that a secret read from a file is not empty.
Status CheckClientFiles(const ClientSettings& settings);

// Sets the servers of `url` (one URL or a comma-separated seed list) and `settings` on `opts`;
// a secret file is read now, so a rotated one is taken at the next connect. kInvalidArgument
// for a file that cannot be read or a TLS this libnats was built without.
Status ApplyClientSettings(natsOptions* opts, const std::string& url,
                           const ClientSettings& settings);

}  // namespace evident::jetstream
