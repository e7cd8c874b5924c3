/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * gRPC status codes and tonari's negative errno values, both ways. The numbers are the protocol's
 * own (they are on the wire, so they never change) and are spelled out here so that this table,
 * and everything that only needs it, does not include gRPC's headers.
 *
 *   errno                                  status                 back to errno
 *   0                                      OK (0)                 0
 *   ECANCELED                              CANCELLED (1)          ECANCELED
 *   (anything not below)                   UNKNOWN (2)            EIO
 *   EINVAL, EBADMSG, ENOTDIR, EISDIR,      INVALID_ARGUMENT (3)   EINVAL
 *     ENAMETOOLONG, EDOM
 *   ETIMEDOUT                              DEADLINE_EXCEEDED (4)  ETIMEDOUT
 *   ENOENT, ESRCH, ENXIO                   NOT_FOUND (5)          ENOENT
 *   EEXIST                                 ALREADY_EXISTS (6)     EEXIST
 *   EPERM, EACCES                          PERMISSION_DENIED (7)  EACCES
 *   EMSGSIZE, ENOSPC, E2BIG, ENOMEM,       RESOURCE_EXHAUSTED (8) EMSGSIZE
 *     EMFILE, ENFILE, EDQUOT
 *   EBUSY, ENOTEMPTY, EPROTONOSUPPORT      FAILED_PRECONDITION (9) EBUSY
 *   EDEADLK                                ABORTED (10)           EDEADLK
 *   ERANGE, EOVERFLOW, EFBIG               OUT_OF_RANGE (11)      ERANGE
 *   EOPNOTSUPP, ENOSYS                     UNIMPLEMENTED (12)     EOPNOTSUPP
 *   EIO, EPROTO                            INTERNAL (13)          EPROTO
 *   EAGAIN, ECONNREFUSED, ECONNRESET,      UNAVAILABLE (14)       EAGAIN
 *     EHOSTUNREACH, ENETUNREACH, ESHUTDOWN
 *   EUCLEAN                                DATA_LOSS (15)         EUCLEAN
 *   (none)                                 UNAUTHENTICATED (16)   EACCES
 *
 * EBADMSG is INVALID_ARGUMENT: tonari returns it for malformed input a client sent or named (a
 * manifest, a ToC), which a retry does not fix. DATA_LOSS is kept for damage found in the store
 * (content that no longer matches its digest): EUCLEAN, "structure needs cleaning".
 */

#define RPC_STATUS_OK 0
#define RPC_STATUS_CANCELLED 1
#define RPC_STATUS_UNKNOWN 2
#define RPC_STATUS_INVALID_ARGUMENT 3
#define RPC_STATUS_DEADLINE_EXCEEDED 4
#define RPC_STATUS_NOT_FOUND 5
#define RPC_STATUS_ALREADY_EXISTS 6
#define RPC_STATUS_PERMISSION_DENIED 7
#define RPC_STATUS_RESOURCE_EXHAUSTED 8
#define RPC_STATUS_FAILED_PRECONDITION 9
#define RPC_STATUS_ABORTED 10
#define RPC_STATUS_OUT_OF_RANGE 11
#define RPC_STATUS_UNIMPLEMENTED 12
#define RPC_STATUS_INTERNAL 13
#define RPC_STATUS_UNAVAILABLE 14
#define RPC_STATUS_DATA_LOSS 15
#define RPC_STATUS_UNAUTHENTICATED 16

/*
 * A status message travels in a trailer (grpc-message), percent-encoded (a byte may become three),
 * and gRPC clients refuse metadata beyond 8 KiB by default ("received initial metadata size exceeds
 * limit"), which would replace the server's words with that. So the server sends at most this many
 * bytes of a message.
 */
#define RPC_STATUS_MESSAGE_MAX 2048U

/*
 * The message as sent: unchanged if it fits in max bytes, else its beginning and its end (where
 * the message says what happened to what) joined by "...", max bytes in all, cut between UTF-8
 * characters. malloc'ed; NULL on allocation failure.
 */
char *rpc_status_message_bound(const char *message, size_t max);

/* r is 0 or a negative errno. */
int rpc_status_from_errno(int r) __attribute__((const));
/* 0 or a negative errno; an unknown code gives -EIO. */
int rpc_status_to_errno(int status) __attribute__((const));
/* "NOT_FOUND", or "UNKNOWN(99)" into buf for codes outside the table. */
const char *rpc_status_to_string(int status, char buf[static 32]);
