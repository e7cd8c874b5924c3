/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc-status.h"

int rpc_status_from_errno(int r) {
        switch (-r) {
        case 0:
                return RPC_STATUS_OK;
        case ECANCELED:
                return RPC_STATUS_CANCELLED;
        case EINVAL:
        case EBADMSG:
        case ENOTDIR:
        case EISDIR:
        case ENAMETOOLONG:
        case EDOM:
                return RPC_STATUS_INVALID_ARGUMENT;
        case ETIMEDOUT:
                return RPC_STATUS_DEADLINE_EXCEEDED;
        case ENOENT:
        case ESRCH:
        case ENXIO:
                return RPC_STATUS_NOT_FOUND;
        case EEXIST:
                return RPC_STATUS_ALREADY_EXISTS;
        case EPERM:
        case EACCES:
                return RPC_STATUS_PERMISSION_DENIED;
        case EMSGSIZE:
        case ENOSPC:
        case E2BIG:
        case ENOMEM:
        case EMFILE:
        case ENFILE:
        case EDQUOT:
                return RPC_STATUS_RESOURCE_EXHAUSTED;
        case EBUSY:
        case ENOTEMPTY:
        case EPROTONOSUPPORT:
                return RPC_STATUS_FAILED_PRECONDITION;
        case EDEADLK:
                return RPC_STATUS_ABORTED;
        case ERANGE:
        case EOVERFLOW:
        case EFBIG:
                return RPC_STATUS_OUT_OF_RANGE;
        case EOPNOTSUPP:
        case ENOSYS:
                return RPC_STATUS_UNIMPLEMENTED;
        case EIO:
        case EPROTO:
                return RPC_STATUS_INTERNAL;
        case EAGAIN:
        case ECONNREFUSED:
        case ECONNRESET:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case ESHUTDOWN:
                return RPC_STATUS_UNAVAILABLE;
        case EUCLEAN:
                return RPC_STATUS_DATA_LOSS;
        default:
                return RPC_STATUS_UNKNOWN;
        }
}

int rpc_status_to_errno(int status) {
        static const int table[] = {
                [RPC_STATUS_OK] = 0,
                [RPC_STATUS_CANCELLED] = -ECANCELED,
                [RPC_STATUS_UNKNOWN] = -EIO,
                [RPC_STATUS_INVALID_ARGUMENT] = -EINVAL,
                [RPC_STATUS_DEADLINE_EXCEEDED] = -ETIMEDOUT,
                [RPC_STATUS_NOT_FOUND] = -ENOENT,
                [RPC_STATUS_ALREADY_EXISTS] = -EEXIST,
                [RPC_STATUS_PERMISSION_DENIED] = -EACCES,
                [RPC_STATUS_RESOURCE_EXHAUSTED] = -EMSGSIZE,
                [RPC_STATUS_FAILED_PRECONDITION] = -EBUSY,
                [RPC_STATUS_ABORTED] = -EDEADLK,
                [RPC_STATUS_OUT_OF_RANGE] = -ERANGE,
                [RPC_STATUS_UNIMPLEMENTED] = -EOPNOTSUPP,
                [RPC_STATUS_INTERNAL] = -EPROTO,
                [RPC_STATUS_UNAVAILABLE] = -EAGAIN,
                [RPC_STATUS_DATA_LOSS] = -EUCLEAN,
                [RPC_STATUS_UNAUTHENTICATED] = -EACCES,
        };

        if (status < 0 || status >= (int) (sizeof(table) / sizeof(table[0])))
                return -EIO;
        return table[status];
}

const char *rpc_status_to_string(int status, char buf[static 32]) {
        static const char *const names[] = {
                "OK",
                "CANCELLED",
                "UNKNOWN",
                "INVALID_ARGUMENT",
                "DEADLINE_EXCEEDED",
                "NOT_FOUND",
                "ALREADY_EXISTS",
                "PERMISSION_DENIED",
                "RESOURCE_EXHAUSTED",
                "FAILED_PRECONDITION",
                "ABORTED",
                "OUT_OF_RANGE",
                "UNIMPLEMENTED",
                "INTERNAL",
                "UNAVAILABLE",
                "DATA_LOSS",
                "UNAUTHENTICATED",
        };

        if (status >= 0 && status < (int) (sizeof(names) / sizeof(names[0])))
                return names[status];
        snprintf(buf, 32, "UNKNOWN(%d)", status);
        return buf;
}

static bool utf8_continuation(char c) {
        return ((unsigned char) c & 0xc0) == 0x80;
}

char *rpc_status_message_bound(const char *message, size_t max) {
        static const char ellipsis[] = "...";
        size_t n = strlen(message), head, tail;
        char *m;

        if (n <= max || max < sizeof(ellipsis) + 1)
                return n <= max ? strdup(message) : strndup(message, max);
        /* A third of the room for the beginning, the rest for the end. */
        head = (max - (sizeof(ellipsis) - 1)) / 3;
        tail = max - (sizeof(ellipsis) - 1) - head;
        while (head > 0 && utf8_continuation(message[head]))
                head--;
        while (tail > 0 && utf8_continuation(message[n - tail]))
                tail--;
        m = malloc(head + sizeof(ellipsis) - 1 + tail + 1);
        if (!m)
                return NULL;
        memcpy(m, message, head);
        memcpy(m + head, ellipsis, sizeof(ellipsis) - 1);
        memcpy(m + head + sizeof(ellipsis) - 1, message + n - tail, tail + 1);
        return m;
}
