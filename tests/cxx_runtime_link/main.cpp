#include <cstdio>
#include <filesystem>
#include <system_error>

std::filesystem::path makeTree(const std::filesystem::path& root);

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  std::error_code error;
  const auto removed = std::filesystem::remove_all(makeTree(argv[1]), error);
  std::printf("removed %ju entries%s\n", static_cast<std::uintmax_t>(removed), error ? " with an error" : "");
  return removed == 3 && !error ? 0 : 1;
}
