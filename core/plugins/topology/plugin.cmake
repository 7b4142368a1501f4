accelsched_plugin(topology SOURCES topology.cc)
