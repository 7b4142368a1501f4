# cmake -DIN=<text file> -DOUT=<.cc> -P embed_text.cmake: writes a C++ source that
# defines kBuiltinAcceleratorTypes, the text of IN, so that the server binary carries
# its built-in accelerator types and needs no data file at run time.
file(READ "${IN}" text)
string(FIND "${text}" ")accelsched_data\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter")
endif()
file(WRITE "${OUT}.tmp"
  "// Generated from ${IN} by config/embed_text.cmake; do not edit.\n"
  "extern const char kBuiltinAcceleratorTypes[];\n"
  "const char kBuiltinAcceleratorTypes[] = R\"accelsched_data(${text})accelsched_data\";\n")
file(RENAME "${OUT}.tmp" "${OUT}")
