#include <filesystem>
#include <fstream>

// A folder with a subfolder and a file, as the tests' temporary folders hold.
std::filesystem::path makeTree(const std::filesystem::path& root) {
  std::filesystem::create_directories(root / "sub");
  std::ofstream(root / "sub" / "file") << "x";
  return root;
}
