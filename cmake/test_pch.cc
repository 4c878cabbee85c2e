// The translation unit that builds the test binaries' precompiled header (cmake/Targets.cmake,
// draplane_test_pch); it has no code of its own.
