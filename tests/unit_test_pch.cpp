// The target that builds the unit-test programs' shared precompiled header (tests/CMakeLists.txt,
// fastnn_unit_test_pch): every test program reuses its header, so this file only gives it something
// to compile.
#include <gtest/gtest.h>
