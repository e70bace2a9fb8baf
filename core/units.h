#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace stagecut {

/// Parses a memory size such as "80GiB", "80 GB", "1.5TiB" or "4096" (bytes). Decimal units
/// (KB, MB, GB, TB) are powers of 1000, binary ones (KiB, MiB, GiB, TiB) powers of 1024.
/// `what` names the input in messages (e.g. "--memory-cap"). Throws Error (input) with the
/// accepted forms for anything else, and for zero, negative, sub-byte or overflowing sizes.
std::uint64_t parseBytes(const std::string& text, const std::string& what);

/// Parses a bandwidth such as "25GB/s", "100 MiB/s" or "12.5e9" (bytes per second) into bytes
/// per second. Throws Error (input) with the accepted forms otherwise, or when it is not > 0 or
/// too large for a double.
double parseBandwidthBytesPerS(const std::string& text, const std::string& what);

/// Parses a duration such as "10us", "1.5ms", "2s", "500ns" or "0" into milliseconds.
/// Throws Error (input) with the accepted forms otherwise, or when it is negative or too large
/// for a double.
double parseDurationMs(const std::string& text, const std::string& what);

/// "1.50 GiB", "512 B", "37.0 MiB": binary units, three significant digits.
std::string formatBytes(std::uint64_t bytes);

/// Whole numbers joined by `separator`: "4,5,5,3" (layers per stage, sizes) for tables and messages.
std::string joinNumbers(const std::vector<int>& values, const std::string& separator = ",");

/// Splits "a,b,,c" at commas into {"a", "b", "", "c"}, keeping empty parts (a trailing comma
/// gives a last empty part) so that the flag's parser can name them. "" gives {}.
std::vector<std::string> splitCommaList(const std::string& text);

/// Parses a list of `noun`s such as `--microbatch 1,2,4,8` or `--tensor-parallel 1,2,4`: whole
/// numbers >= 1, each once. Returns them ascending. Throws Error (input) naming `what` and the
/// noun for an empty item, a zero, a non-number or a duplicate.
/// `unit` is the noun's short form ("size" of "microbatch size") the duplicate's message uses.
std::vector<int> parseWholeNumberList(const std::string& text, const std::string& what, const std::string& noun,
                                      const std::string& unit);

/// parseWholeNumberList of microbatch sizes (`--microbatch 4` or `--microbatch 1,2,4,8`).
std::vector<int> parseMicrobatchSizes(const std::string& text, const std::string& what);

/// "124.4M", "38.6K", "512": parameter counts and the like.
std::string formatCount(std::uint64_t count);

/// "27.3%" from a fraction 0.273.
std::string formatPercent(double fraction, int decimals = 1);

/// "+16.7%", "-3.0%": a relative difference (a split's step against the optimum's, a measured
/// step against its prediction) with its sign; "0.0%" when it rounds to zero either way.
std::string formatSignedPercent(double fraction);

/// A time in ms with a sensible number of decimals: "0.412", "41.0", "1234".
std::string formatMs(double ms);

/// A timeout as the errors print it, in seconds without the unit: "120", "1.5".
std::string timeoutSeconds(std::chrono::milliseconds timeout);

}  // namespace stagecut
