// The Store contract (tests/support/store_conformance.h) on SQLite and on the
// fake, and the SQL stores' row cases on SQLite.
#include "tests/support/store_conformance.h"

#include "tests/support/store_factories.h"

namespace accelsched {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(All, StoreConformanceTest, StoreFactories,
                               StoreFactoryNames);
INSTANTIATE_TYPED_TEST_SUITE_P(All, SqlStoreConformanceTest,
                               ::testing::Types<SqliteFactory>,
                               StoreFactoryNames);

}  // namespace
}  // namespace accelsched
