#include <catch2/catch.hpp>

#include "core/error.h"
#include "core/json_document.h"
#include "core/profile_json.h"
#include "core/sha256.h"
#include "tests/test_support.h"

using stagecut::sha256Hex;

// The oracle: FIPS 180-4's examples (NIST's "SHA256.pdf") and the empty message.
TEST_CASE("sha256Hex gives the published digests", "[core][fingerprint]") {
  CHECK(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 56 bytes: the length no longer fits the block, so padding takes a second one.
  CHECK(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrst"
                  "nopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  CHECK(sha256Hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Bytes above 0x7f and NULs count as bytes.
  CHECK(sha256Hex(std::string("\0\xff", 2)) != sha256Hex(std::string("\xff\0", 2)));
}

TEST_CASE("a profile's fingerprint follows its content, not its layout", "[core][fingerprint]") {
  const stagecut::Profile profile = stagecut::testing::makeProfile(3);
  const nlohmann::json document = stagecut::profileToJson(profile);
  const std::string fingerprint = stagecut::profileFingerprint(document);
  CHECK(fingerprint.rfind("sha256:", 0) == 0);
  CHECK(fingerprint.size() == 7u + 64u);
  // Re-read from text written with another indentation: the same.
  CHECK(stagecut::profileFingerprint(nlohmann::json::parse(document.dump(7))) == fingerprint);
  stagecut::Profile slower = profile;
  slower.layers[1].forward_ms.median += 0.001;
  CHECK(stagecut::profileFingerprint(stagecut::profileToJson(slower)) != fingerprint);
}

TEST_CASE("a profile's model fingerprint is read and written back", "[core][fingerprint]") {
  stagecut::Profile profile = stagecut::testing::makeProfile(2);
  profile.model.fingerprint = "sha256:" + std::string(64, 'a');
  const nlohmann::json document = stagecut::profileToJson(profile);
  CHECK(document["model"]["fingerprint"] == profile.model.fingerprint);
  const stagecut::Profile back = stagecut::profileFromJson(document, "p.json");
  CHECK(back.model.fingerprint == profile.model.fingerprint);
  CHECK(back.model.extra.empty());
  // Absent in older profiles: read as unknown.
  CHECK(stagecut::profileFromJson(stagecut::profileToJson(stagecut::testing::makeProfile(2)), "p.json")
            .model.fingerprint.empty());
}

TEST_CASE("requireMadeFromProfile refuses a document of another profile in one line", "[core][fingerprint]") {
  const std::string mine = "sha256:" + std::string(64, '1');
  CHECK_NOTHROW(stagecut::requireMadeFromProfile(mine, mine, "v.json", "p.json", "stagecut validate p.json"));
  CHECK_NOTHROW(stagecut::requireMadeFromProfile("", mine, "v.json", "p.json", "stagecut validate p.json"));
  CHECK(stagecut::testing::inputErrorOf([&] {
          stagecut::requireMadeFromProfile("sha256:" + std::string(64, '2'), mine, "v.json", "p.json",
                                           "stagecut validate p.json");
        }) == "v.json: was made from another profile than p.json (its profile_fingerprint differs); give the "
              "profile it was made from, or make it again with 'stagecut validate p.json'");
}
