// Catch2's main, compiled once: it is the slowest file of the test binaries to build.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
