accelsched_plugin(spread SOURCES spread.cc)
