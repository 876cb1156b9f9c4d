// Text that came from elsewhere (a job's command, a user name, a server's
// message) as a terminal may show it: a control character in it could move
// the cursor, clear the screen or set the window title, so none is printed
// raw.
#ifndef COHORT_CLI_TERMINAL_TEXT_H_
#define COHORT_CLI_TERMINAL_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace cohort::cli {

// `text` with control characters escaped: \n, \r and \t as such, other C0
// characters, DEL and bytes that are not UTF-8 as \xNN, C1 characters
// (U+0080-U+009F) as \u00NN; other UTF-8 kept. Longer than `max_bytes`, it
// is cut (never inside an escape or a character) and ends with "...".
std::string TerminalText(std::string_view text, size_t max_bytes = std::string::npos);

// JSON text (nlohmann's dump, which escapes C0 characters) with DEL and C1
// characters escaped too (\u007f, \u0080-\u009f): the same JSON, safe to
// print.
std::string TerminalJson(std::string_view json);

}  // namespace cohort::cli

#endif  // COHORT_CLI_TERMINAL_TEXT_H_
