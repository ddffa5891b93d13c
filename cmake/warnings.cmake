# Compiler warnings and sanitizers shared by every ballast target.
add_library(ballast_warnings INTERFACE)
target_compile_options(ballast_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wimplicit-fallthrough
  # Designated initializers that leave fields at their defaults are deliberate.
  -Wno-missing-field-initializers
  $<$<BOOL:${BALLAST_WERROR}>:-Werror>)

if(BALLAST_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
