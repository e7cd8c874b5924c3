/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "../unit/tests.h"
#include "macro.h"
#include "rpc-status.h"

START_TEST(test_errno_to_status_and_back) {
        static const struct {
                int r, status, back;
        } table[] = {
                { 0, RPC_STATUS_OK, 0 },
                { -ECANCELED, RPC_STATUS_CANCELLED, -ECANCELED },
                { -ELOOP, RPC_STATUS_UNKNOWN, -EIO },
                { -EINVAL, RPC_STATUS_INVALID_ARGUMENT, -EINVAL },
                { -EBADMSG, RPC_STATUS_INVALID_ARGUMENT, -EINVAL },
                { -ENOTDIR, RPC_STATUS_INVALID_ARGUMENT, -EINVAL },
                { -EISDIR, RPC_STATUS_INVALID_ARGUMENT, -EINVAL },
                { -ENAMETOOLONG, RPC_STATUS_INVALID_ARGUMENT, -EINVAL },
                { -EDOM, RPC_STATUS_INVALID_ARGUMENT, -EINVAL },
                { -ETIMEDOUT, RPC_STATUS_DEADLINE_EXCEEDED, -ETIMEDOUT },
                { -ENOENT, RPC_STATUS_NOT_FOUND, -ENOENT },
                { -ESRCH, RPC_STATUS_NOT_FOUND, -ENOENT },
                { -ENXIO, RPC_STATUS_NOT_FOUND, -ENOENT },
                { -EEXIST, RPC_STATUS_ALREADY_EXISTS, -EEXIST },
                { -EPERM, RPC_STATUS_PERMISSION_DENIED, -EACCES },
                { -EACCES, RPC_STATUS_PERMISSION_DENIED, -EACCES },
                { -EMSGSIZE, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -ENOSPC, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -E2BIG, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -ENOMEM, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -EMFILE, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -ENFILE, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -EDQUOT, RPC_STATUS_RESOURCE_EXHAUSTED, -EMSGSIZE },
                { -EBUSY, RPC_STATUS_FAILED_PRECONDITION, -EBUSY },
                { -ENOTEMPTY, RPC_STATUS_FAILED_PRECONDITION, -EBUSY },
                { -EPROTONOSUPPORT, RPC_STATUS_FAILED_PRECONDITION, -EBUSY },
                { -EDEADLK, RPC_STATUS_ABORTED, -EDEADLK },
                { -ERANGE, RPC_STATUS_OUT_OF_RANGE, -ERANGE },
                { -EOVERFLOW, RPC_STATUS_OUT_OF_RANGE, -ERANGE },
                { -EFBIG, RPC_STATUS_OUT_OF_RANGE, -ERANGE },
                { -EOPNOTSUPP, RPC_STATUS_UNIMPLEMENTED, -EOPNOTSUPP },
                { -ENOSYS, RPC_STATUS_UNIMPLEMENTED, -EOPNOTSUPP },
                { -EIO, RPC_STATUS_INTERNAL, -EPROTO },
                { -EPROTO, RPC_STATUS_INTERNAL, -EPROTO },
                { -EAGAIN, RPC_STATUS_UNAVAILABLE, -EAGAIN },
                { -ECONNREFUSED, RPC_STATUS_UNAVAILABLE, -EAGAIN },
                { -ECONNRESET, RPC_STATUS_UNAVAILABLE, -EAGAIN },
                { -EHOSTUNREACH, RPC_STATUS_UNAVAILABLE, -EAGAIN },
                { -ENETUNREACH, RPC_STATUS_UNAVAILABLE, -EAGAIN },
                { -ESHUTDOWN, RPC_STATUS_UNAVAILABLE, -EAGAIN },
                { -EUCLEAN, RPC_STATUS_DATA_LOSS, -EUCLEAN },
        };
        FOREACH_ELEMENT(t, table) {
                ck_assert_msg(rpc_status_from_errno(t->r) == t->status, "errno %d", t->r);
                ck_assert_msg(rpc_status_to_errno(t->status) == t->back, "status %d", t->status);
        }
        /* Every status maps back to itself through its errno. */
        for (int s = RPC_STATUS_OK; s <= RPC_STATUS_DATA_LOSS; s++)
                if (s != RPC_STATUS_UNKNOWN)
                        ck_assert_int_eq(rpc_status_from_errno(rpc_status_to_errno(s)), s);
        ck_assert_int_eq(rpc_status_to_errno(RPC_STATUS_UNAUTHENTICATED), -EACCES);
        ck_assert_int_eq(rpc_status_to_errno(17), -EIO);
        ck_assert_int_eq(rpc_status_to_errno(-1), -EIO);
}
END_TEST

START_TEST(test_status_names) {
        char buf[32];

        ck_assert_str_eq(rpc_status_to_string(RPC_STATUS_NOT_FOUND, buf), "NOT_FOUND");
        ck_assert_str_eq(rpc_status_to_string(RPC_STATUS_UNAUTHENTICATED, buf), "UNAUTHENTICATED");
        ck_assert_str_eq(rpc_status_to_string(99, buf), "UNKNOWN(99)");
}
END_TEST

START_TEST(test_status_message_bound) {
        char *m, *long_path;
        size_t n = 5000 * 2 + 64;

        m = rpc_status_message_bound("short", 16);
        ck_assert_str_eq(m, "short");
        free(m);

        /* "layer entry "a/a/.../x": invalid path", 5000 directories deep. */
        long_path = malloc(n);
        ck_assert_ptr_nonnull(long_path);
        strcpy(long_path, "layer entry \"");
        for (int i = 0; i < 5000; i++)
                strcat(long_path, "a/");
        strcat(long_path, "x\": invalid path");
        m = rpc_status_message_bound(long_path, RPC_STATUS_MESSAGE_MAX);
        ck_assert_uint_eq(strlen(m), RPC_STATUS_MESSAGE_MAX);
        ck_assert(strncmp(m, "layer entry \"a/a/", 17) == 0);
        ck_assert_ptr_nonnull(strstr(m, "..."));
        ck_assert(strcmp(m + strlen(m) - 18, "a/x\": invalid path") == 0);
        free(m);
        free(long_path);

        /* Never between the bytes of a character: "é" is two. */
        m = rpc_status_message_bound("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 10);
        ck_assert_uint_le(strlen(m), 10);
        ck_assert_str_eq(m, "\xc3\xa9...\xc3\xa9\xc3\xa9");
        free(m);
}
END_TEST

TEST_SUITE("rpc-status", test_errno_to_status_and_back, test_status_names, test_status_message_bound)
