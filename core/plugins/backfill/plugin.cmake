accelsched_plugin(backfill SOURCES backfill.cc)
