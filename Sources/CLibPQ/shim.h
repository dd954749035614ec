#ifndef POSTGRES_DATA_CLIBPQ_SHIM_H
#define POSTGRES_DATA_CLIBPQ_SHIM_H

// The include path comes from pkg-config (libpq.pc), never from a hard-coded directory.
#include <libpq-fe.h>

/// Asks the processor to start loading the cache line at `address` for reading, and returns
/// at once: a hint, which never faults (Swift has no such instruction of its own).
static inline void postgres_data_prefetch(const void *address) {
    __builtin_prefetch(address, 0, 3);
}

#endif
