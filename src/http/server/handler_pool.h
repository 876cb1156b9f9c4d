// HandlerPool: the bounded set of threads that run request handlers for the
// HTTP server's event loop. Threads start as work needs them, up to a bound;
// a request waits in the queue when all are busy (a handler may block: a
// store write, an agent's long-poll heartbeat).
#ifndef COHORT_HTTP_SERVER_HANDLER_POOL_H_
#define COHORT_HTTP_SERVER_HANDLER_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cohort::http {

class HandlerPool {
 public:
  explicit HandlerPool(int max_threads) : max_threads_(max_threads < 1 ? 1 : max_threads) {}
  ~HandlerPool() { Stop(); }
  HandlerPool(const HandlerPool&) = delete;
  HandlerPool& operator=(const HandlerPool&) = delete;

  void Submit(std::function<void()> task);
  // Drops the tasks not started, waits for the running ones, joins the threads.
  void Stop();

 private:
  void Work();

  const int max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> threads_;
  int idle_ = 0;
  bool stopping_ = false;
};

}  // namespace cohort::http

#endif  // COHORT_HTTP_SERVER_HANDLER_POOL_H_
