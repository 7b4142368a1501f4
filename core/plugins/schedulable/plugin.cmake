accelsched_plugin(schedulable SOURCES schedulable.cc)
