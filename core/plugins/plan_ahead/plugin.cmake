accelsched_plugin(plan_ahead SOURCES plan_ahead.cc DEPS mig_relayout)
