// Parsing -H and --hostfile, and placing ranks on hosts.
#include "launch/host_list.h"

#include "rendezvous/local_address.h"

#include <fstream>
#include <sstream>

namespace cohort {

namespace {

// A slot count of 1..100000 ("0", "-1", "2x" and huge numbers are errors).
bool ParseSlots(const std::string& text, int* slots) {
  if (text.empty() || text.size() > 6 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *slots = std::stoi(text);
  return *slots >= 1 && *slots <= 100000;
}

bool ValidHostName(const std::string& host) {
  if (host.empty() || host[0] == '-') return false;  // would read as an ssh option
  for (char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_' || c == '@';
    if (!ok) return false;
  }
  return true;
}

void AddHost(std::vector<HostSlots>* hosts, const std::string& host, int slots) {
  for (HostSlots& h : *hosts) {
    if (h.host == host) {
      h.slots += slots;
      return;
    }
  }
  hosts->push_back({host, slots});
}

}  // namespace

Result<std::vector<HostSlots>> ParseHostList(const std::string& list) {
  std::vector<HostSlots> hosts;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.rfind(':');
    const std::string host = item.substr(0, colon);
    int slots = 1;
    if (colon != std::string::npos && !ParseSlots(item.substr(colon + 1), &slots)) {
      return Status::InvalidArgument("-H '" + list + "': '" + item +
                                     "' has a bad slot count (expected host:N with N >= 1)");
    }
    if (!ValidHostName(host)) {
      return Status::InvalidArgument("-H '" + list + "': '" + host + "' is not a host name");
    }
    AddHost(&hosts, host, slots);
  }
  if (hosts.empty() || list.back() == ',') {
    return Status::InvalidArgument("-H '" + list + "': empty host name");
  }
  return hosts;
}

Result<std::vector<HostSlots>> ParseHostfileText(const std::string& text,
                                                 const std::string& label) {
  std::vector<HostSlots> hosts;
  std::stringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = label + ":" + std::to_string(number) + ": ";
    line = line.substr(0, line.find('#'));
    std::stringstream words(line);
    std::string host, word;
    if (!(words >> host)) continue;
    if (!ValidHostName(host)) {
      return Status::InvalidArgument(where + "'" + host + "' is not a host name");
    }
    int slots = 1;
    while (words >> word) {
      if (word.rfind("slots=", 0) == 0) {
        if (!ParseSlots(word.substr(6), &slots)) {
          return Status::InvalidArgument(where + "'" + word + "' needs a count of at least 1");
        }
      } else if (word.rfind("max_slots=", 0) != 0) {  // Open MPI's, accepted and unused
        return Status::InvalidArgument(where + "unknown field '" + word +
                                       "' (expected: host slots=N)");
      }
    }
    AddHost(&hosts, host, slots);
  }
  if (hosts.empty()) return Status::InvalidArgument(label + ": no hosts listed");
  return hosts;
}

Result<std::vector<HostSlots>> ParseHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument("--hostfile '" + path + "' cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return ParseHostfileText(text.str(), path);
}

Result<JobPlacement> PlaceRanks(const std::vector<HostSlots>& hosts, int np) {
  int total = 0;
  for (const HostSlots& h : hosts) total += h.slots;
  if (np > total) {
    return Status::InvalidArgument("-np " + std::to_string(np) + " is more than the " +
                                   std::to_string(total) + " slots the hosts offer");
  }
  JobPlacement placement;
  for (const HostSlots& h : hosts) {
    const int rank0 = static_cast<int>(placement.ranks.size());
    const int here = std::min(h.slots, np - rank0);
    if (here <= 0) break;
    for (int l = 0; l < here; ++l) {
      placement.ranks.push_back({h.host, l, here, placement.cross_size});
    }
    ++placement.cross_size;
  }
  return placement;
}

bool IsLocalHost(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || IsThisHost(host);
}

}  // namespace cohort
