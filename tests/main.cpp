// doctest's main, shared by every doctest binary under tests/.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
