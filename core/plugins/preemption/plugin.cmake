accelsched_plugin(preemption SOURCES preemption.cc victim_search.cc DEPS quota)
