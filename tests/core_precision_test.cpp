#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/precision.h"

using stagecut::canonicalPrecision;

TEST_CASE("a precision is read in the spellings frameworks use and recorded by one name", "[core][precision]") {
  CHECK(canonicalPrecision("float32") == "float32");
  CHECK(canonicalPrecision("fp32") == "float32");
  CHECK(canonicalPrecision("bf16") == "bfloat16");
  CHECK(canonicalPrecision("bfloat16") == "bfloat16");
  CHECK(canonicalPrecision("fp16") == "float16");
  CHECK(canonicalPrecision("half") == "float16");
  for (const auto& name : stagecut::precisionNames()) CHECK(canonicalPrecision(name) == name);
}

TEST_CASE("an unknown precision is one line naming the flag and the names", "[core][precision][errors]") {
  CHECK_THROWS_WITH(canonicalPrecision("fp8"),
                    "--dtype fp8: not a precision stagecut profiles in; use float32, bfloat16 or float16");
  CHECK_THROWS_WITH(canonicalPrecision("", "--x"),
                    "--x '': not a precision stagecut profiles in; use float32, bfloat16 or float16");
  CHECK_THROWS_WITH(canonicalPrecision("BF16"), Catch::Matchers::StartsWith("--dtype BF16: "));
}
