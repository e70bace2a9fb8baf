#include <catch2/catch.hpp>

#include <sys/stat.h>

#include "core/output_path.h"
#include "core/error.h"
#include "core/json_document.h"
#include "tests/test_support.h"

using stagecut::testing::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("an atomic write creates the file and leaves no temporary behind", "[core][atomic]") {
  const TempDir dir;
  stagecut::writeOutputFile(dir.file("out.json"), "{}\n");
  CHECK(stagecut::readTextFile(dir.file("out.json")) == "{}\n");
  CHECK(dir.list() == std::vector<std::string>{"out.json"});
  struct stat info {};
  REQUIRE(::stat(dir.file("out.json").c_str(), &info) == 0);
  CHECK((info.st_mode & 0044) != 0);  // readable by others under a usual umask, not mkstemp's 0600
}

TEST_CASE("an atomic write replaces an existing file whole", "[core][atomic]") {
  const TempDir dir;
  dir.write("out.json", std::string(10000, 'x'));
  stagecut::writeOutputFile(dir.file("out.json"), "short");
  CHECK(stagecut::readTextFile(dir.file("out.json")) == "short");
  CHECK(dir.list() == std::vector<std::string>{"out.json"});
}

TEST_CASE("a write into a missing folder fails naming the path and leaves nothing",
          "[core][atomic][errors]") {
  const TempDir dir;
  const std::string path = dir.file("no/such/folder/out.json");
  CHECK_THROWS_WITH(stagecut::writeOutputFile(path, "x"),
                    "cannot write " + path +
                        " (No such file or directory); check that its folder exists and is writable");
  CHECK(dir.list().empty());
}

TEST_CASE("a failed rename keeps what was at the path and removes the temporary",
          "[core][atomic][errors]") {
  const TempDir dir;
  REQUIRE(::mkdir(dir.file("taken").c_str(), 0755) == 0);
  dir.write("taken/keep", "old");
  CHECK_THROWS_WITH(stagecut::writeOutputFile(dir.file("taken"), "new"),
                    StartsWith("cannot write " + dir.file("taken") + " (") &&
                        Contains("directory"));
  CHECK(dir.list() == std::vector<std::string>{"taken"});
  CHECK(stagecut::readTextFile(dir.file("taken/keep")) == "old");
}

TEST_CASE("an output path is checked for writability before the work", "[core][atomic][errors]") {
  const TempDir dir;
  CHECK_NOTHROW(stagecut::checkOutputPath(dir.file("new.json")));
  CHECK_THROWS_WITH(stagecut::checkOutputPath(dir.file("no/such/out.json")),
                    "cannot write " + dir.file("no/such/out.json") +
                        " (No such file or directory); check that its folder exists and is writable");
  CHECK_THROWS_WITH(stagecut::checkOutputPath(dir.path()), StartsWith("cannot write " + dir.path() + " (Is a directory)"));
  CHECK(dir.list().empty());
}
