/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reading tar headers with libarchive so that names come out as the bytes the archive holds,
 * whatever the process's locale.
 *
 * A name in a tar is bytes. libarchive converts the names of pax headers (UTF-8 by the pax
 * standard) to the locale of the calling thread: in a UTF-8 locale it normalizes them to Unicode
 * form C (an NFD name changes) and replaces invalid sequences; in the "C" locale every name with a
 * byte beyond ASCII fails to convert, and libarchive then keeps the bytes as they are and returns
 * ARCHIVE_WARN. ustar and GNU names are never converted. So tonari reads tars in the "C" locale,
 * where ASCII converts to itself and everything else is kept as it is, and takes that one warning
 * for what it is.
 */

#include <archive.h>
#include <archive_entry.h>
#include <locale.h>

#include "macro.h"

/* The one way a reader is freed: "_cleanup_archive_ struct archive *a = NULL;". */
DEFINE_TRIVIAL_CLEANUP_FUNC(struct archive *, archive_read_free);
#define _cleanup_archive_ _cleanup_(archive_read_freep)

/* Switches the calling thread to the "C" locale; *ret_old is what to restore. */
int tar_locale_enter(locale_t *ret_old);
/* Restores the thread's locale (cleanup-compatible; (locale_t) 0 does nothing). */
void tar_locale_leave(locale_t *old);

/*
 * archive_read_next_header(), with the warning about a name that could not be converted to the
 * locale folded into ARCHIVE_OK: the entry then has the archive's bytes as its names. Any other
 * warning stays ARCHIVE_WARN.
 */
int tar_next_header(struct archive *a, struct archive_entry **ret);
