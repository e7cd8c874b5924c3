/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tonari-logcopy: a container log copier for benchmarks and VM tests (seed 000, §6.3.1). Like a
 * container runtime's log driver it reads the pipe a container's stdout and stderr are connected
 * to and appends everything to a file; with --charge=SLICE all its CPU time from the first wait on
 * (each wait, read and write, and the loop in between) is charged to SLICE through libtonari, as
 * the paper's collector does for its worker thread. Not its start-up: the process clock counts what
 * the PID ran before exec() too (systemd-run starting the scope: 0.2-1 s of CPU in the test bed),
 * which is not the container's work.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tonari/charge.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "log.h"
#include "option-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"

#define EXIT_USAGE 2

/* Bytes. The default is the capacity of a pipe on Linux (16 pages), so one read empties a full
 * pipe; the maximum keeps a typo from allocating gigabytes. */
#define BUFFER_BYTES_DEFAULT (64U * 1024U)
#define BUFFER_BYTES_MAX (16U * 1024U * 1024U)

static const char *arg_charge = NULL;
static size_t arg_buffer_bytes = BUFFER_BYTES_DEFAULT;
static uint64_t arg_max_size = UINT64_MAX;
static const char *arg_output = NULL;

/* Bytes in the output file, for --max-size=. */
static uint64_t output_size = 0;

/* The last charging error printed: each kind of error is reported once, copying goes on. */
static int charge_error_reported = 0;

static int charge_result(int r) {
        if (r >= 0 || r == charge_error_reported)
                return r;
        charge_error_reported = r;
        return log_warning_errno(r, "Failed to charge CPU time to slice '%s', continuing to copy: %m",
                                 arg_charge);
}

static int write_all(int fd, const char *buf, size_t size) {
        while (size > 0) {
                ssize_t n = write(fd, buf, size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                size -= (size_t) n;
        }
        return 0;
}

/* One read from stdin and its write to out. Returns 1 if data was copied, 0 at EOF. */
static int copy_once(int out, char *buf) {
        ssize_t n;
        int r;

        n = read(STDIN_FILENO, buf, arg_buffer_bytes);
        if (n < 0) {
                if (errno == EINTR || errno == EAGAIN)
                        return 1;
                return log_error_errno(errno, "Failed to read from standard input: %m");
        }
        if (n == 0)
                return 0;

        r = write_all(out, buf, (size_t) n);
        if (r < 0)
                return log_error_errno(r, "Failed to write to '%s': %m", arg_output);
        output_size += (uint64_t) n;
        if (output_size >= arg_max_size) {
                /* Rotation without keeping the old part, as a size-capped log driver does. */
                if (ftruncate(out, 0) < 0)
                        return log_error_errno(errno, "Failed to truncate '%s': %m", arg_output);
                output_size = 0;
        }
        return 1;
}

static int run(void) {
        _cleanup_close_ int out = -EBADF, sfd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        sigset_t mask;
        int r = 0;

        /* SIGTERM and SIGINT end the copy between two iterations, never in the middle of one. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block SIGTERM and SIGINT: %m");
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                return log_error_errno(errno, "Failed to create signalfd: %m");

        out = open(arg_output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0640);
        if (out < 0)
                return log_error_errno(errno, "Failed to open '%s': %m", arg_output);
        if (fstat(out, &st) < 0)
                return log_error_errno(errno, "Failed to stat '%s': %m", arg_output);
        output_size = (uint64_t) st.st_size;

        buf = malloc(arg_buffer_bytes);
        if (!buf)
                return log_oom();

        for (;;) {
                struct pollfd p[] = {
                        { .fd = STDIN_FILENO, .events = POLLIN },
                        { .fd = sfd, .events = POLLIN },
                };

                /* The thread works for the one stream only, so everything it runs is charged:
                 * the wait (poll() and the wake-up, not the time asleep, which is no CPU time),
                 * the copy and the loop. tonari_charge_switch() ends the previous iteration's
                 * measurement and starts this one's at the same clock reading. */
                if (arg_charge)
                        (void) charge_result(tonari_charge_switch(arg_charge));
                if (poll(p, ELEMENTSOF(p), -1) < 0) {
                        r = errno == EINTR ? 1 : log_error_errno(errno, "Failed to wait for input: %m");
                } else if (p[1].revents != 0) {
                        log_debug("Got a termination signal, stopping.");
                        r = 0;
                } else
                        r = p[0].revents == 0 ? 1 : copy_once(out, buf);
                if (r <= 0)
                        break;
        }

        if (arg_charge) {
                int k = tonari_charge_end();

                /* -EALREADY: the last switch could not open a measurement (reported then). */
                if (k != -EALREADY)
                        (void) charge_result(k);
                (void) charge_result(tonari_charge_flush());
        }
        return r;
}

static void help(void) {
        printf("%s [OPTIONS...] OUTFILE\n"
               "\n"
               "Copy standard input to OUTFILE (appending) until end of file, like a container\n"
               "runtime's log copier; optionally charge the CPU time spent to a tonari slice.\n"
               "\n"
               "Options:\n"
               "  -h --help            Show this help and exit\n"
               "     --charge=SLICE    Charge all CPU time spent copying (waits, reads, writes)\n"
               "                       to SLICE through libtonari (errors are reported once,\n"
               "                       copying goes on)\n"
               "     --buffer=BYTES    Read at most this much at once (default: 64K)\n"
               "     --max-size=BYTES  Empty OUTFILE whenever it reaches this size, like a\n"
               "                       size-capped log driver (default: no limit)\n"
               "\n"
               "SIGTERM and SIGINT stop the copy; what is pending is charged before exiting.\n"
               "Exit status: 0 end of input or signal, 1 read or write error, 2 invalid usage.\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_CHARGE = 0x100,
                ARG_BUFFER,
                ARG_MAX_SIZE,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "charge", required_argument, NULL, ARG_CHARGE },
                { "buffer", required_argument, NULL, ARG_BUFFER },
                { "max-size", required_argument, NULL, ARG_MAX_SIZE },
                {},
        };
        uint64_t bytes;
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_CHARGE:
                        if (!name_is_valid(optarg, NAME_MAX_LEN))
                                return log_invalid_option_value("--charge=", optarg, "a slice name");
                        arg_charge = optarg;
                        break;
                case ARG_BUFFER:
                        if (parse_size(optarg, 1024, &bytes) < 0 || bytes == 0 || bytes > BUFFER_BYTES_MAX)
                                return log_invalid_option_value("--buffer=", optarg, "a size from 1 byte to 16M");
                        arg_buffer_bytes = (size_t) bytes;
                        break;
                case ARG_MAX_SIZE:
                        if (parse_size(optarg, 1024, &bytes) < 0 || bytes == 0)
                                return log_invalid_option_value("--max-size=", optarg, "a size of at least 1 byte");
                        arg_max_size = bytes;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return log_error_errno(EINVAL, "Unhandled option %i.", c);
                }

        if (argc - optind != 1) {
                log_error("Expected exactly one argument, the output file. See '%s --help'.",
                          program_invocation_short_name);
                return -EINVAL;
        }
        arg_output = argv[optind];
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
