accelsched_plugin(fragmentation SOURCES fragmentation.cc)
