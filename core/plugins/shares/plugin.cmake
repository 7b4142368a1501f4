accelsched_plugin(shares SOURCES shares.cc)
