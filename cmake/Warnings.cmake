# Project-wide compile flags: strict warnings as errors, optional sanitizers.
add_compile_options(-Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
                    -Wmissing-prototypes -Wpointer-arith -Wvla -fno-common)
if(UA_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
