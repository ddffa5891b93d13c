// ballast::Error as a Python exception: each error code raises its own subclass of
// ballast.Error (defined in ballast/_errors.py) carrying the code and the error's context.
#pragma once

namespace ballast::python {

void register_error_translator();

}  // namespace ballast::python
