/* Status texts, generated from the one list in numacoll.h. */
#include "numacoll.h"

const char *numacoll_strerror(int status)
{
    switch (status) {
#define X(name, value, msg) case value: return msg;
        NUMACOLL_STATUS_LIST(X)
#undef X
    }
    return "unknown status";
}
