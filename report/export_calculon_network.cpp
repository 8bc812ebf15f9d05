// Calculon's networks (calculon/network.py): exactly the keys below, bandwidth in GB/s, latency in
// seconds, and per collective [scalar, offset]: an op of S bytes among n processors moves
// S x scalar x (1 + offset / n) bytes at bandwidth x efficiency.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "report/export.hpp"
#include "report/export_calculon.hpp"

namespace truepeak::report {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

const std::set<std::string> kNetworkKeys = {
    "bandwidth", "efficiency", "size", "latency", "ops", "must_be_filled", "processor_usage"};
const std::set<std::string> kCollectives = {"reduce_scatter", "all_gather", "all_reduce"};

// A ring's traffic per processor: (n - 1) / n of the buffer for a reduce-scatter or an
// all-gather, twice that for an all-reduce (NCCL's bus-bandwidth factors).
ordered_json ring_ops() {
  return {{"p2p", {1.0, nullptr}},
          {"reduce_scatter", {1.0, -1}},
          {"all_gather", {1.0, -1}},
          {"all_reduce", {2.0, -1}}};
}

ordered_json network(double bandwidth_GBps, std::int64_t size, double latency_s) {
  return {{"bandwidth", bandwidth_GBps}, {"efficiency", 1.0}, {"size", size},
          {"latency", latency_s},        {"ops", ring_ops()}, {"must_be_filled", false},
          {"processor_usage", 0.0}};
}

double number(const json& value, const std::string& where, const std::string& what) {
  if (!value.is_number())
    throw InputError(fmt::format("{}: {}: {} is not a number", where, what, value.dump()));
  return value.get<double>();
}

void check_range(bool ok, const json& value, const std::string& where, const std::string& what,
                 const char* range) {
  if (!ok) {
    throw InputError(fmt::format("{}: {}: {} is outside {} (Calculon's range)", where, what,
                                 value.dump(), range));
  }
}

void check_network(const json& n, const std::string& where, const std::string& path) {
  if (!n.is_object()) throw InputError(fmt::format("{}: {}: not an object", where, path));
  for (const auto& key : kNetworkKeys) {
    if (!n.contains(key)) throw InputError(fmt::format("{}: {}: no '{}'", where, path, key));
  }
  for (const auto& [key, value] : n.items()) {
    if (!kNetworkKeys.count(key)) {
      throw InputError(fmt::format("{}: {}: unknown key '{}' (Calculon takes exactly {})", where,
                                   path, key, fmt::join(kNetworkKeys, ", ")));
    }
  }
  const auto in = [&](const char* key, auto ok, const char* range) {
    const auto what = path + "." + key;
    check_range(ok(number(n[key], where, what)), n[key], where, what, range);
  };
  in(
      "bandwidth", [](double v) { return v > 0; }, "(0, inf)");
  in(
      "efficiency", [](double v) { return v > 0 && v <= 1; }, "(0, 1]");
  in(
      "latency", [](double v) { return v >= 0; }, "[0, inf)");
  in(
      "processor_usage", [](double v) { return v >= 0 && v < 1; }, "[0, 1)");
  if (!n["size"].is_number_integer() || n["size"].get<std::int64_t>() < 0)
    throw InputError(
        fmt::format("{}: {}.size: {} is not a count of processors", where, path, n["size"].dump()));
  if (!n["must_be_filled"].is_boolean())
    throw InputError(fmt::format("{}: {}.must_be_filled: {} is not true or false", where, path,
                                 n["must_be_filled"].dump()));
  const auto& ops = n["ops"];
  if (!ops.is_object() || ops.size() != 4 || !ops.contains("p2p"))
    throw InputError(fmt::format("{}: {}.ops: needs exactly p2p, {}", where, path,
                                 fmt::join(kCollectives, ", ")));
  for (const auto& [op, entry] : ops.items()) {
    const auto at = path + ".ops." + op;
    if (op != "p2p" && !kCollectives.count(op))
      throw InputError(fmt::format("{}: {}: unknown op", where, at));
    if (!entry.is_array() || entry.size() != 2)
      throw InputError(fmt::format("{}: {}: not [scalar, offset]", where, at));
    check_range(number(entry[0], where, at + "[0]") > 0, entry[0], where, at + "[0]", "(0, inf)");
    if (op == "p2p" ? !entry[1].is_null() : !entry[1].is_number()) {
      throw InputError(fmt::format("{}: {}[1]: {} (p2p takes null, a collective a number)", where,
                                   at, entry[1].dump()));
    }
  }
}

}  // namespace

CalculonNetworks parse_calculon_networks(const json& block, const std::string& where) {
  json list;
  if (block.is_array()) {
    list = block;
  } else if (block.is_object() && block.contains("networks")) {
    list = block["networks"];
  } else if (block.is_object()) {
    list = json::array({block});
  }
  if (!list.is_array() || list.empty()) {
    throw InputError(fmt::format(
        "{}: no network: give a network object, a list of them or {{\"networks\": [...]}}", where));
  }
  CalculonNetworks out{ordered_json::array(), where};
  for (std::size_t i = 0; i < list.size(); ++i) {
    check_network(list[i], where, fmt::format("networks[{}]", i));
    ordered_json n;
    for (const auto& key : {"bandwidth", "efficiency", "size", "latency", "ops", "must_be_filled",
                            "processor_usage"}) {
      n[key] = list[i][key];
    }
    out.networks.push_back(std::move(n));
  }
  return out;
}

namespace calculon {

std::optional<ordered_json> host_link_network(const Profile& profile, const Device& device) {
  const auto link = measured_host_link(device);
  if (!link) return std::nullopt;
  const auto gpus = std::count_if(profile.devices.begin(), profile.devices.end(),
                                  [](const Device& d) { return d.kind == "gpu"; });
  return network(link->Bps / 1e9, std::max<std::int64_t>(1, gpus), link->latency_s);
}

ordered_json placeholder_network() { return network(1.0, 1, 0.0); }

}  // namespace calculon
}  // namespace truepeak::report
