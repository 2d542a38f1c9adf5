// evident/redact.h — URIs as a message or a log line may show them.
//
// A URI option may hold one URI or a comma-separated list of them (a NATS seed list, Kafka
// bootstrap servers), and any of them may carry user information with a secret
// ("nats://user:secret@host", "postgresql://app:secret@db/evident"). RedactUri is what every
// refusal, annotation and log line that names such an option prints.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace evident {

// The entries of a comma-separated list of URIs, as written (an empty one included: "a,,b" has
// three). The one reading of a list for the servers set and for the text shown.
std::vector<std::string_view> UriListEntries(std::string_view uri);

// `uri` with the user information of each URI in it replaced by "***":
// "nats://u:p@a:1,nats://b:2" -> "nats://***@a:1,nats://b:2".
std::string RedactUri(std::string_view uri);

}  // namespace evident
