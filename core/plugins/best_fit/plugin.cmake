accelsched_plugin(best_fit SOURCES best_fit.cc)
