accelsched_plugin(reservations SOURCES reservations.cc)
