#include "conform_coll.h"
void cf_test_alltoallw(const cf_comm_t *c) { (void) c; }
void cf_test_signatures(const cf_comm_t *c) { (void) c; }
