accelsched_plugin(first_fit SOURCES first_fit.cc)
