/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tonari-logflood: a container that logs the way real services do, for bench/borrow-logflood
 * (seed 000): RATE times a second (on a fixed grid of CLOCK_MONOTONIC) it writes lines to
 * standard output, each with its own write() as an unbuffered logger does, either for BURST of
 * wall-clock time (--burst=, a burst of log lines) or LINES lines (--lines=, a steady trickle).
 * A tick it missed (its slice was throttled) is skipped, not made up for, as a real logger
 * whose events passed would. Ends on EPIPE or SIGPIPE.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "log.h"
#include "option-util.h"
#include "macro.h"
#include "parse-util.h"
#include "string-util.h"
#include "time-util.h"

#define EXIT_USAGE 2

/* Hz: the most ticks per second; above it a tick is shorter than a wake-up on the test bed. */
#define RATE_MAX 10000U
/* Bytes: a line as a service's log line, about 80 characters. */
#define LINE_BYTES_DEFAULT 80U
#define LINE_BYTES_MAX 4096U

static unsigned arg_rate = 20;
static usec_t arg_burst_usec = 3 * USEC_PER_MSEC;
static uint64_t arg_lines = 0; /* 0: bursts of arg_burst_usec */
static size_t arg_line_bytes = LINE_BYTES_DEFAULT;

static int write_line(const char *line, size_t size) {
        for (;;) {
                ssize_t n = write(STDOUT_FILENO, line, size);
                if (n >= 0)
                        return 0; /* a pipe takes a write of at most PIPE_BUF bytes at once */
                if (errno != EINTR)
                        return -errno;
        }
}

static void sleep_until(usec_t when) {
        struct timespec ts = { .tv_sec = (time_t) (when / USEC_PER_SEC),
                               .tv_nsec = (long) (when % USEC_PER_SEC * NSEC_PER_USEC) };

        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
                ;
}

static int run(void) {
        char line[LINE_BYTES_MAX];
        usec_t tick_usec = USEC_PER_SEC / arg_rate, next = now(CLOCK_MONOTONIC);
        uint64_t seq = 0;

        memset(line, 'x', arg_line_bytes);
        line[arg_line_bytes - 1] = '\n';

        for (;;) {
                usec_t t;
                int r;

                sleep_until(next);
                t = now(CLOCK_MONOTONIC);
                for (uint64_t i = 0;; i++) {
                        if (arg_lines > 0 ? i >= arg_lines : now(CLOCK_MONOTONIC) >= t + arg_burst_usec)
                                break;
                        /* A sequence number at the start, as log lines carry a time stamp. */
                        char prefix[21];
                        int k = snprintf(prefix, sizeof(prefix), "%020" PRIu64, seq++);
                        memcpy(line, prefix, MIN((size_t) k, arg_line_bytes - 1));
                        r = write_line(line, arg_line_bytes);
                        if (r == -EPIPE)
                                return 0;
                        if (r < 0)
                                return log_error_errno(r, "Failed to write to standard output: %m");
                }
                next += tick_usec;
                t = now(CLOCK_MONOTONIC);
                if (next < t)
                        /* Missed ticks are skipped: the next one on the grid after now. */
                        next += (t - next) / tick_usec * tick_usec + tick_usec;
        }
}

static void help(void) {
        printf("%s [OPTIONS...]\n"
               "\n"
               "Write log lines to standard output in bursts or at a steady rate, like a\n"
               "service's logging, until the reader goes away.\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help and exit\n"
               "     --version         Show the version and exit\n"
               "     --rate=HZ         Ticks per second, 1 to %u (default: 20)\n"
               "     --burst=DURATION  At each tick, write lines for this long (default: 3ms)\n"
               "     --lines=N         At each tick, write N lines instead\n"
               "     --line=BYTES      Bytes per line, newline included, 2 to %u (default: %u)\n",
               program_invocation_short_name, RATE_MAX, LINE_BYTES_MAX, LINE_BYTES_DEFAULT);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_RATE = ARG_COMMON_MAX,
                ARG_BURST,
                ARG_LINES,
                ARG_LINE,
        };
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "rate", required_argument, NULL, ARG_RATE },
                { "burst", required_argument, NULL, ARG_BURST },
                { "lines", required_argument, NULL, ARG_LINES },
                { "line", required_argument, NULL, ARG_LINE },
                {},
        };
        uint64_t u;
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_RATE:
                        if (safe_atou(optarg, &arg_rate) < 0 || arg_rate == 0 || arg_rate > RATE_MAX)
                                return log_invalid_option_value("--rate=", optarg, "a number of ticks per second, 1 to 10000");
                        break;
                case ARG_BURST:
                        if (parse_time(optarg, USEC_PER_SEC, &arg_burst_usec) < 0 || arg_burst_usec == 0 ||
                            arg_burst_usec > USEC_PER_SEC)
                                return log_invalid_option_value("--burst=", optarg, "a duration from 1us to 1s");
                        arg_lines = 0;
                        break;
                case ARG_LINES:
                        if (safe_atou64(optarg, &arg_lines) < 0 || arg_lines == 0 || arg_lines > 1000000)
                                return log_invalid_option_value("--lines=", optarg, "a number of lines, 1 to 1000000");
                        break;
                case ARG_LINE:
                        if (safe_atou64(optarg, &u) < 0 || u < 2 || u > LINE_BYTES_MAX)
                                return log_invalid_option_value("--line=", optarg, "a size from 2 to 4096 bytes");
                        arg_line_bytes = (size_t) u;
                        break;
                default:
                        return parse_common_option(c, program_invocation_short_name, help);
                }

        r = refuse_positional_args(argc, argv);
        if (r < 0)
                return r;
        return 1;
}

int main(int argc, char *argv[]) {
        int r;

        log_open();

        r = parse_argv(argc, argv);
        if (r < 0)
                return EXIT_USAGE;
        if (r == 0)
                return EXIT_SUCCESS;

        return run() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
