accelsched_plugin(node_drain SOURCES node_drain.cc)
