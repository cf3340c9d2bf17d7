#include "harness/memory/site.hpp"

#include <utility>
#include <vector>

namespace oomlab::memory {
namespace {

std::vector<std::string>& open_sites() {
  thread_local std::vector<std::string> sites;
  return sites;
}

}  // namespace

std::string current_site() {
  std::string path;
  for (const std::string& site : open_sites()) path += (path.empty() ? "" : " \xE2\x80\xBA ") + site;
  return path;
}

void push_site(std::string name) { open_sites().push_back(std::move(name)); }

void pop_site() {
  if (!open_sites().empty()) open_sites().pop_back();
}

SiteScope::SiteScope(std::string name) { push_site(std::move(name)); }

SiteScope::~SiteScope() { pop_site(); }

}  // namespace oomlab::memory
