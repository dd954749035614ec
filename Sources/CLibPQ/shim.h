#ifndef POSTGRES_DATA_CLIBPQ_SHIM_H
#define POSTGRES_DATA_CLIBPQ_SHIM_H

// The include path comes from pkg-config (libpq.pc), never from a hard-coded directory.
#include <libpq-fe.h>

#endif
