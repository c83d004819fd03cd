#include "conform_coll.h"
void cf_test_reduce(const cf_comm_t *c) { (void) c; }
void cf_test_outstanding(const cf_comm_t *c) { (void) c; }
