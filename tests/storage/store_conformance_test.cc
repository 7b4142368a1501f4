// The Store contract (tests/store_conformance.h) on SQLite and on the fake.
#include "tests/support/store_conformance.h"

#include "tests/support/store_factories.h"

namespace accelsched {
namespace {

INSTANTIATE_TYPED_TEST_SUITE_P(All, StoreConformanceTest, StoreFactories,
                               StoreFactoryNames);

}  // namespace
}  // namespace accelsched
