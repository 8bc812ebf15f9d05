#include "report/html_tables.hpp"

#include <gtest/gtest.h>

#include "report_test_util.hpp"

namespace truepeak::report {
namespace {

TEST(HtmlTables, KeysAndValuesReadAsWords) {
  EXPECT_EQ(readable_key("closing_watch_s"), "closing watch");
  EXPECT_EQ(readable_key("peak_flops_per_s"), "peak");
  EXPECT_EQ(readable_key("bursts"), "bursts");  // a plural, not a unit
  EXPECT_EQ(readable_value("elapsed_s", 146.07), "146 s");
  EXPECT_EQ(readable_value("quiet_wait_s", 0.0), "0 s");
  EXPECT_EQ(readable_value("probe_min_s", 0.000251436), "251 us");
  EXPECT_EQ(readable_value("l2_bytes", 50.0 * 1024 * 1024), "50 MiB");
  EXPECT_EQ(readable_value("link_Bps", 55e9), "55 GB/s");
  EXPECT_EQ(readable_value("interrupted", false), "no");
  EXPECT_EQ(readable_value("probes", 769), "769");
  EXPECT_EQ(readable_value("probe_cv", 0.05186941049050722), "0.05187");
  EXPECT_EQ(readable_value("suite", "full"), "full");
  EXPECT_EQ(readable_value("x", nullptr), "-");
  EXPECT_EQ(readable_value("sizes_bytes", nlohmann::json::array({1024, 2048})), "1 KiB, 2 KiB");
  EXPECT_EQ(readable_value("x", nlohmann::json::array()), "-");
}

TEST(HtmlTables, NestedObjectsFlattenAndRecordListsBecomeTables) {
  const auto conditions = nlohmann::json::parse(R"({
    "suite": "full",
    "left_out_for_deadline": {"budgets_cut": 3, "quiet_wait_s": 0.5},
    "sentinel": {"kernels": [{"kernel": "gemm <f32>", "probes": 769},
                             {"kernel": "triad", "slow_probes": 2}]},
    "empty": {}
  })");
  const auto rows = json_rows(conditions);
  ASSERT_EQ(rows.size(), 5u);
  // nlohmann's object keeps its keys sorted.
  EXPECT_EQ(rows[0].key, "empty");
  EXPECT_EQ(rows[0].html, "-");
  EXPECT_EQ(rows[1].key, "left out for deadline › budgets cut");
  EXPECT_EQ(rows[1].html, "3");
  EXPECT_EQ(rows[2].key, "left out for deadline › quiet wait");
  EXPECT_EQ(rows[2].html, "500 ms");
  EXPECT_EQ(rows[3].key, "sentinel › kernels");
  const auto& records = rows[3].html;
  EXPECT_EQ(records.rfind("<table class=\"records\">", 0), 0u);
  // One column per field in the order first seen; a field a record lacks is "-".
  EXPECT_NE(records.find("<th>kernel</th><th>probes</th><th>slow probes</th>"), std::string::npos);
  EXPECT_NE(records.find("<td>gemm &lt;f32&gt;</td><td>769</td><td>-</td>"), std::string::npos);
  EXPECT_NE(records.find("<td>triad</td><td>-</td><td>2</td>"), std::string::npos);
  EXPECT_EQ(rows[4].key, "suite");
  const auto table = key_value_table(rows);
  EXPECT_EQ(table.find("{\""), std::string::npos);
  EXPECT_EQ(table.find("{&quot;"), std::string::npos);
  EXPECT_TRUE(key_value_table({}).empty());
}

TEST(HtmlTables, DeviceDetailsNameEachLibrary) {
  const auto gpu = test::gpu_fixture().devices.at(1);
  const auto html = device_details_table(gpu);
  EXPECT_NE(html.find("<tr><th colspan=\"2\">libraries</th></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>cublas</td><td>13.0</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>cuda runtime</td><td>13.0</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th colspan=\"2\">conditions</th></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>remeasured points</td><td>0</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<td>datasheet source</td>"), std::string::npos);
}

}  // namespace
}  // namespace truepeak::report
