/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "tar-util.h"

int tar_locale_enter(locale_t *ret_old) {
        locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t) 0), old;

        if (c == (locale_t) 0)
                return -errno;
        old = uselocale(c);
        if (old == (locale_t) 0) {
                freelocale(c);
                return -errno;
        }
        *ret_old = old;
        return 0;
}

void tar_locale_leave(locale_t *old) {
        locale_t c;

        if (*old == (locale_t) 0)
                return;
        c = uselocale(*old);
        if (c != (locale_t) 0 && c != LC_GLOBAL_LOCALE)
                freelocale(c);
        *old = (locale_t) 0;
}

/*
 * The one warning that is not damage: libarchive's "<Pathname|Linkname|Uname|Gname> can't be
 * converted from UTF-8 to current locale", with its errno for file-format trouble (EILSEQ on
 * Linux). Every other warning of the tar reader (malformed pax records, sparse maps, ACLs) sets
 * another errno or another message.
 */
static bool warning_is_conversion(struct archive *a) {
        const char *m = archive_error_string(a);

        return archive_errno(a) == EILSEQ && m && strstr(m, " can't be converted from ");
}

int tar_next_header(struct archive *a, struct archive_entry **ret) {
        int k = archive_read_next_header(a, ret);

        return k == ARCHIVE_WARN && warning_is_conversion(a) ? ARCHIVE_OK : k;
}
