accelsched_plugin(fair_share SOURCES fair_share.cc)
