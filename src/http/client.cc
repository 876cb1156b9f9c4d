// HttpClient over libcurl's multi interface. One call drives all its
// transfers from the calling thread: it starts up to max_in_flight, waits in
// curl_multi_poll, collects finished ones and reschedules retryable failures
// at their backoff time. Idle multi handles are pooled so that connections
// stay open between calls (curl keeps a connection cache per multi handle).
#include "http/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <deque>

#include "common/deadline.h"

namespace cohort::http {

namespace {

// curl_global_init is thread-safe in the libcurl Debian 12 ships (7.88), so
// running it once per process from whichever client comes first is safe.
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool RetryableStatus(long status) { return status >= 500 || status == 408 || status == 429; }

bool RetryableCurlError(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

// One request's state across its attempts.
struct Transfer {
  size_t index = 0;
  int attempt = 0;
  Clock::time_point not_before;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  HttpResponse response;
  std::string last_failure;  // what went wrong on the previous attempt
  char error[CURL_ERROR_SIZE] = {0};

  void Release() {
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
    easy = nullptr;
    headers = nullptr;
  }
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<Transfer*>(user)->response.body.append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new status line (after 100 Continue or a redirect)
    t->response.headers.clear();
    return size * n;
  }
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t b = line.find_first_not_of(" \t", colon + 1);
  size_t e = line.find_last_not_of(" \t\r\n");
  t->response.headers[name] = b == std::string::npos || e < b ? "" : line.substr(b, e - b + 1);
  return size * n;
}

std::string AttemptsText(int attempts) {
  return std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
}

}  // namespace

std::string HttpResponse::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

std::string Printable(std::string_view text, size_t max_chars) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_chars) return out + "...";
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string XmlErrorField(const HttpResponse& response, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t at = response.body.find(open);
  if (at == std::string::npos) return "";
  const size_t end = response.body.find(close, at);
  if (end == std::string::npos) return "";
  return Printable(std::string_view(response.body).substr(at + open.size(), end - at - open.size()),
                   200);
}

std::string DescribeAnswer(const HttpRequest& request, const HttpResponse& response) {
  std::string text =
      request.method + " " + request.url + ": HTTP " + std::to_string(response.status);
  // S3 and most servers explain an error in the body: its <Code> and
  // <Message>, escaped and cut short, since a body can be any bytes.
  const std::string code = XmlErrorField(response, "Code");
  if (!code.empty()) {
    text += " (" + code;
    const std::string message = XmlErrorField(response, "Message");
    if (!message.empty()) text += ": " + message;
    text += ")";
  }
  return text;
}

class HttpClient::MultiHandle {
 public:
  MultiHandle() : multi_(curl_multi_init()) {}
  ~MultiHandle() { curl_multi_cleanup(multi_); }
  CURLM* get() const { return multi_; }

 private:
  CURLM* multi_;
};

HttpClient::HttpClient(RetryPolicy retry, int max_in_flight)
    : retry_(retry), max_in_flight_(std::max(1, max_in_flight)) {
  InitCurlOnce();
}

HttpClient::~HttpClient() = default;

std::unique_ptr<HttpClient::MultiHandle> HttpClient::TakeMulti() {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.empty()) return std::make_unique<MultiHandle>();
  std::unique_ptr<MultiHandle> m = std::move(idle_.back());
  idle_.pop_back();
  return m;
}

void HttpClient::ReturnMulti(std::unique_ptr<MultiHandle> multi) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(std::move(multi));
}

Result<HttpResponse> HttpClient::Perform(const HttpRequest& request) {
  return std::move(PerformMany({request})[0]);
}

std::vector<Result<HttpResponse>> HttpClient::PerformMany(
    const std::vector<HttpRequest>& requests) {
  std::vector<Result<HttpResponse>> results(requests.size(),
                                            Status::Internal("request not performed"));
  std::vector<Transfer> transfers(requests.size());
  std::deque<size_t> waiting;  // not started, or waiting for a retry
  for (size_t i = 0; i < requests.size(); ++i) {
    transfers[i].index = i;
    waiting.push_back(i);
  }
  std::unique_ptr<MultiHandle> multi = TakeMulti();
  CURLM* m = multi->get();
  int active = 0;
  size_t finished = 0;

  auto start = [&](Transfer& t) {
    const HttpRequest& r = requests[t.index];
    t.response = HttpResponse();
    t.error[0] = '\0';
    ++t.attempt;
    t.easy = curl_easy_init();
    CURL* e = t.easy;
    curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t.error);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, OnHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(retry_.request_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(retry_.connect_timeout_s * 1000));
    for (const std::string& h : r.headers) t.headers = curl_slist_append(t.headers, h.c_str());
    if (r.method == "HEAD") {
      curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (r.method == "PUT" || r.method == "POST") {
      // The body is sent from memory; no "Expect: 100-continue" round trip.
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
      curl_easy_setopt(e, CURLOPT_POSTFIELDS, r.body.data());
      curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      t.headers = curl_slist_append(t.headers, "Expect:");
      if (r.method == "PUT") {
        t.headers = curl_slist_append(t.headers, "Content-Type: application/octet-stream");
      }
    } else if (r.method != "GET") {
      curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headers);
    curl_multi_add_handle(m, e);
    ++active;
  };

  auto backoff = [&](int attempt) {
    double s = retry_.initial_backoff_s;
    for (int i = 1; i < attempt && s < retry_.max_backoff_s; ++i) s *= 2;
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(std::min(s, retry_.max_backoff_s)));
  };

  auto complete = [&](Transfer& t, CURLcode code) {
    const HttpRequest& r = requests[t.index];
    long status = 0;
    curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(m, t.easy);
    t.Release();
    --active;
    t.response.status = status;
    bool retry = false;
    if (code != CURLE_OK) {
      t.last_failure = r.method + " " + r.url + ": " +
                       (t.error[0] != '\0' ? std::string(t.error) : curl_easy_strerror(code));
      retry = RetryableCurlError(code);
    } else if (RetryableStatus(status)) {
      t.last_failure = DescribeAnswer(r, t.response);
      retry = true;
    } else {
      results[t.index] = std::move(t.response);
      ++finished;
      return;
    }
    if (retry && t.attempt < retry_.max_attempts) {
      t.not_before = Clock::now() + backoff(t.attempt);
      waiting.push_back(t.index);
      return;
    }
    results[t.index] =
        Status::IoError(t.last_failure + " (gave up after " + AttemptsText(t.attempt) + ")");
    ++finished;
  };

  while (finished < requests.size()) {
    // Start what may start: up to max_in_flight, retries only after their backoff.
    const Clock::time_point now = Clock::now();
    Clock::time_point next_due = Clock::time_point::max();
    for (size_t n = waiting.size(); n > 0 && active < max_in_flight_; --n) {
      size_t i = waiting.front();
      waiting.pop_front();
      if (transfers[i].not_before <= now) {
        start(transfers[i]);
      } else {
        next_due = std::min(next_due, transfers[i].not_before);
        waiting.push_back(i);
      }
    }
    int running = 0;
    curl_multi_perform(m, &running);
    int left = 0;
    bool completed = false;
    while (CURLMsg* msg = curl_multi_info_read(m, &left)) {
      if (msg->msg != CURLMSG_DONE) continue;
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char**>(&t));
      complete(*t, msg->data.result);
      completed = true;
    }
    if (finished == requests.size()) break;
    if (completed) continue;  // a slot is free: start the next request before waiting
    // Wait for socket activity, or until the next retry is due (at most 100 ms,
    // so a retry that became due while transfers run starts promptly).
    int wait_ms = 100;
    if (next_due != Clock::time_point::max()) {
      wait_ms = static_cast<int>(std::clamp<long long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(next_due - Clock::now()).count(), 0,
          100));
    }
    if (active > 0 || wait_ms > 0) curl_multi_poll(m, nullptr, 0, wait_ms, nullptr);
  }
  ReturnMulti(std::move(multi));
  return results;
}

}  // namespace cohort::http
