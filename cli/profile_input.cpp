// Every subcommand reads profiles through here, so that a figure derived by an older rule is
// shown as the current rule derives it, whichever command prints it.
#include "cli/commands.hpp"

#include "calibrate/datasheet.hpp"
#include "core/profile.hpp"

namespace truepeak::cli {

Profile with_current_datasheets(Profile profile) {
  // The datasheet is derived from the properties the profile stores, not measured: deriving it
  // again with the current rule corrects a profile written under an older one without touching
  // a measured figure.
  for (auto& device : profile.devices)
    if (auto sheet = rederived_cpu_datasheet(device)) device.datasheet = std::move(*sheet);
  return profile;
}

Profile load_profile_file(const std::string& path) { return with_current_datasheets(read_profile(path)); }

}  // namespace truepeak::cli
