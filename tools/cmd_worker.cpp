// tools/cmd_worker.cpp — `kforge worker --request FILE --response FILE`, the
// hidden command the generation sandbox starts in a child process to run one
// untrusted kernel through the gate (include/kforge/gen/sandbox.hpp). Not
// listed in --help: people never call it.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <kforge/gen.hpp>

namespace kforge::tool {

int cmd_worker(const std::map<std::string, std::string>& values) {
  const auto req = values.find("request"), resp = values.find("response");
  if (req == values.end() || resp == values.end()) {
    std::cerr << "kforge: worker needs --request FILE and --response FILE\n";
    return 2;
  }
  return gen::worker_main(req->second, resp->second);
}

}  // namespace kforge::tool
