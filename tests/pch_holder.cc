// The holder of the test executables' precompiled header (CMakeLists.txt: evident_test_pch),
// built with the tests' options so that the header it makes fits every test that reuses it.
// It holds no test and is never run (GoogleTest's main is linked in, as in every test).
