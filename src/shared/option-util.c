/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>

#include "alloc-util.h"
#include "log.h"
#include "option-util.h"
#include "string-util.h"

int parse_common_option(int c, const char *name, void (*help)(void)) {
        switch (c) {
        case 'h':
                help();
                return 0;
        case ARG_VERSION:
                printf("%s %s\n", name, PACKAGE_VERSION);
                return 0;
        case '?':
                return -EINVAL;
        default:
                return log_error_errno(EINVAL, "Unhandled option %i.", c);
        }
}

int refuse_positional_args(int argc, char *argv[]) {
        if (optind < argc)
                return log_error_errno(EINVAL, "%s takes no positional arguments, got '%s'.",
                                       program_invocation_short_name, argv[optind]);
        return 0;
}

int log_invalid_option_value(const char *option, const char *value, const char *expected) {
        _cleanup_free_ char *e = cescape(value);

        if (!e)
                return log_oom();
        return log_error_errno(EINVAL, "Invalid %s value '%s': expected %s.", option, e, expected);
}
