accelsched_plugin(gpu_links SOURCES gpu_links.cc linked_set.cc)
