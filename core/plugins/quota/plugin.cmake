accelsched_plugin(quota SOURCES quota.cc)
