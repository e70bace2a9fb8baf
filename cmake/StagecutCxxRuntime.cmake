# The pip wheels' libtorch.so and libtorch_cpu.so carry private copies of parts of libstdc++
# (std::filesystem, std::chrono's time zones, stringstream::view) and export them. A call of
# ours that binds to libtorch.so's copy crashes: its remove_all jumps to recursive_directory_
# iterator::__erase, a weak reference that neither Debian 12's nor Ubuntu 24.04's libstdc++ exports,
# so to address 0 (tests/cxx_runtime_link_test.sh).
# Every executable must therefore take the C++ runtime from the C++ runtime:
# - with a shared libstdc++ (Debian's, Ubuntu's toolchains), naming it before every library
#   makes it the first NEEDED entry, so the loader searches it before LibTorch;
# - with a toolchain that has only a static libstdc++ (the GPU machine's /opt/gcc), the archive
#   is linked whole before any shared library, so no reference is left for LibTorch to answer.
# --whole-archive does nothing to a shared library, so one option serves both.
function(stagecut_cxx_runtime_first target)
  target_link_options(${target} PRIVATE "LINKER:--push-state,--no-as-needed,--whole-archive" "-lstdc++"
                      "LINKER:--pop-state")
endfunction()
