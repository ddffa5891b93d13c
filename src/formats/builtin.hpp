// Registration of the built-in format parsers (called once, before the first lookup).
#pragma once

namespace ballast {

void register_builtin_formats();

}  // namespace ballast
