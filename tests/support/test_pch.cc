// The one source of accelsched_test_pch, the target that compiles
// tests/support/test_pch.h for every test to reuse (CMake precompiles a
// target's headers only with a source to compile them for).
