accelsched_plugin(lease_term SOURCES lease_term.cc)
