accelsched_plugin(reclaim SOURCES reclaim.cc DEPS preemption quota)
