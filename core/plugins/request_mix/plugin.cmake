accelsched_plugin(request_mix SOURCES request_mix.cc)
