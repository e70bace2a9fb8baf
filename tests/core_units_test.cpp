#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/suggest.h"
#include "core/units.h"

using stagecut::Error;
using stagecut::parseBandwidthBytesPerS;
using stagecut::parseBytes;
using stagecut::parseDurationMs;

TEST_CASE("memory sizes parse in decimal and binary units", "[core][units]") {
  CHECK(parseBytes("80GiB", "--memory-cap") == 80ull * 1024 * 1024 * 1024);
  CHECK(parseBytes("80GB", "--memory-cap") == 80'000'000'000ull);
  CHECK(parseBytes("80 GB", "--memory-cap") == 80'000'000'000ull);
  CHECK(parseBytes("1.5KiB", "--memory-cap") == 1536u);
  CHECK(parseBytes("4096", "--memory-cap") == 4096u);
  CHECK(parseBytes("2TB", "--memory-cap") == 2'000'000'000'000ull);
}

TEST_CASE("a memory size in words is rejected with the accepted forms", "[core][units][errors]") {
  CHECK_THROWS_WITH(parseBytes("80 gigs", "--memory-cap"),
                    "--memory-cap \"80 gigs\": not a memory size; use a number with B, KB, MB, GB, "
                    "TB, KiB, MiB, GiB or TiB, e.g. 80GiB");
  CHECK_THROWS_AS(parseBytes("GiB", "--memory-cap"), Error);
  CHECK_THROWS_AS(parseBytes("", "--memory-cap"), Error);
  CHECK_THROWS_AS(parseBytes("80gib", "--memory-cap"), Error);
  CHECK_THROWS_AS(parseBytes("inf", "--memory-cap"), Error);
  CHECK_THROWS_AS(parseBytes("0x10", "--memory-cap"), Error);
  CHECK_THROWS_WITH(parseBytes("0GiB", "--memory-cap"), "--memory-cap \"0GiB\": must be more than 0 bytes");
  CHECK_THROWS_WITH(parseBytes("-1GB", "--memory-cap"), "--memory-cap \"-1GB\": must be more than 0 bytes");
  CHECK_THROWS_WITH(parseBytes("1e30", "--memory-cap"), "--memory-cap \"1e30\": too large; the most is 8EiB");
}

TEST_CASE("bandwidths parse into bytes per second", "[core][units]") {
  CHECK(parseBandwidthBytesPerS("25GB/s", "--bandwidth") == Approx(25e9));
  CHECK(parseBandwidthBytesPerS("100 MiB/s", "--bandwidth") == Approx(100.0 * 1024 * 1024));
  CHECK(parseBandwidthBytesPerS("12.5e9", "--bandwidth") == Approx(12.5e9));
  CHECK_THROWS_WITH(parseBandwidthBytesPerS("25Gbps", "--bandwidth"),
                    "--bandwidth \"25Gbps\": not a bandwidth; use bytes per second with B/s, KB/s, "
                    "MB/s, GB/s, TB/s, KiB/s, MiB/s or GiB/s, e.g. 25GB/s");
  CHECK_THROWS_WITH(parseBandwidthBytesPerS("0GB/s", "--bandwidth"),
                    "--bandwidth \"0GB/s\": must be more than 0");
}

TEST_CASE("durations parse into milliseconds", "[core][units]") {
  CHECK(parseDurationMs("10us", "--latency") == Approx(0.01));
  CHECK(parseDurationMs("1.5ms", "--latency") == Approx(1.5));
  CHECK(parseDurationMs("2s", "--latency") == Approx(2000));
  CHECK(parseDurationMs("500ns", "--latency") == Approx(0.0005));
  CHECK_THROWS_WITH(parseDurationMs("10", "--latency"),
                    "--latency \"10\": not a duration; use a number with ns, us, ms or s, e.g. 10us");
  CHECK_THROWS_WITH(parseDurationMs("-1ms", "--latency"), "--latency \"-1ms\": must not be negative");
}

TEST_CASE("sizes and counts format for people", "[core][units]") {
  CHECK(stagecut::formatBytes(512) == "512 B");
  CHECK(stagecut::formatBytes(6291456) == "6.00 MiB");
  CHECK(stagecut::formatBytes(154389504) == "147 MiB");
  CHECK(stagecut::formatCount(38597376) == "38.6M");
  CHECK(stagecut::formatCount(999) == "999");
  CHECK(stagecut::formatPercent(3.0 / 11.0) == "27.3%");
}

TEST_CASE("formatSignedPercent signs a relative difference, and not one that rounds to zero", "[core][units]") {
  CHECK(stagecut::formatSignedPercent(1.0 / 6.0) == "+16.7%");
  CHECK(stagecut::formatSignedPercent(-0.03) == "-3.0%");
  CHECK(stagecut::formatSignedPercent(0.0) == "0.0%");
  CHECK(stagecut::formatSignedPercent(-0.0) == "0.0%");
  CHECK(stagecut::formatSignedPercent(0.0004) == "0.0%");
  CHECK(stagecut::formatSignedPercent(-0.0004) == "0.0%");
  CHECK(stagecut::formatSignedPercent(0.0006) == "+0.1%");
  CHECK(stagecut::formatSignedPercent(-0.0006) == "-0.1%");
  CHECK(stagecut::formatSignedPercent(2.5) == "+250.0%");
}

TEST_CASE("a mistyped name gets the nearest known one", "[core][suggest]") {
  const std::vector<std::string> schedules = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1"};
  CHECK(stagecut::closestName("1f1", schedules) == "1f1b");
  CHECK(stagecut::closestName("gpip", schedules) == "gpipe");
  CHECK(stagecut::closestName("pipedream", schedules).empty());
  CHECK(stagecut::unknownNameHint("zbh1", schedules) == ", did you mean 'zb-h1'?");
  CHECK(stagecut::unknownNameHint("xyz", schedules) ==
        "; use one of: gpipe, 1f1b, interleaved-1f1b, zb-h1");
}

TEST_CASE("parseMicrobatchSizes reads one size or a list, ascending", "[core][units]") {
  CHECK(stagecut::parseMicrobatchSizes("4", "--microbatch") == std::vector<int>{4});
  CHECK(stagecut::parseMicrobatchSizes("8,1,2,4", "--microbatch") == std::vector<int>{1, 2, 4, 8});
  const auto rejection = [](const std::string& text) {
    try {
      stagecut::parseMicrobatchSizes(text, "--microbatch");
    } catch (const stagecut::Error& e) {
      CHECK(e.exitCode() == 2);
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(rejection("1,2,2") == "--microbatch 1,2,2: size 2 is listed twice; give each size once");
  CHECK(rejection("0,4") == "--microbatch 0,4: a microbatch size must be 1 or more, got 0");
  CHECK(rejection("1,,4") ==
        "--microbatch 1,,4: \"\" is not a microbatch size; give whole numbers from 1, e.g. 4 or 1,2,4,8");
  CHECK(rejection("2,-4") ==
        "--microbatch 2,-4: \"-4\" is not a microbatch size; give whole numbers from 1, e.g. 4 or 1,2,4,8");
  CHECK(rejection("99999999999") == "--microbatch 99999999999: \"99999999999\" is not a microbatch size; "
                                    "give whole numbers from 1, e.g. 4 or 1,2,4,8");
}

TEST_CASE("joinNumbers joins whole numbers with a separator", "[core][units]") {
  CHECK(stagecut::joinNumbers({4, 5, 5, 3}) == "4,5,5,3");
  CHECK(stagecut::joinNumbers({1, 2}, ", ") == "1, 2");
  CHECK(stagecut::joinNumbers({7}) == "7");
  CHECK(stagecut::joinNumbers({}).empty());
}
