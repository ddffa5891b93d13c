# Compiler warnings and sanitizers shared by every ballast target.
add_library(ballast_warnings INTERFACE)
target_compile_options(ballast_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wimplicit-fallthrough
  # Designated initializers that leave fields at their defaults are deliberate.
  -Wno-missing-field-initializers
  # GCC 12 reports -Wrestrict false positives inside std::string at -O2 and above (GCC bug 105329).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>
  $<$<BOOL:${BALLAST_WERROR}>:-Werror>)
# Under -fsanitize=thread (the tsan preset) GCC 12 reports -Wmaybe-uninitialized false positives
# in std::variant's move constructor; every other build keeps the warning.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  target_compile_options(ballast_warnings INTERFACE -Wno-maybe-uninitialized)
endif()

if(BALLAST_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# Coverage instrumentation for libFuzzer everywhere; only fuzz targets link its main().
if(BALLAST_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "BALLAST_FUZZ needs clang (libFuzzer); configure with the asan preset")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
