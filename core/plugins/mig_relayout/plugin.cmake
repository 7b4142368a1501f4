accelsched_plugin(mig_relayout SOURCES mig_relayout.cc relayout_planner.cc)
