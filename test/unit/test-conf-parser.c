/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "string-util.h"
#include "strv.h"
#include "tests.h"
#include "tonarid-conf.h"

static const char *dir;

static char *put(const char *name, const char *content) {
        char *p = strjoin(dir, "/", name);
        FILE *f;

        ck_assert_ptr_nonnull(p);
        f = fopen(p, "we");
        ck_assert_ptr_nonnull(f);
        fputs(content, f);
        fclose(f);
        return p;
}

static void setup(void) {
        dir = test_tmpdir();
}

START_TEST(test_defaults_without_files) {
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_free_ char *main_file = NULL;
        ManagerConfig c = { .log_level = -1 };

        setup();
        main_file = strjoin(dir, "/tonarid.conf");
        ck_assert_int_eq(manager_config_load(main_file, &c, &files), 0);
        ck_assert_int_eq(c.log_level, LOG_INFO);
        ck_assert_int_eq(c.log_target, LOG_TARGET_AUTO);
        ck_assert_uint_eq(strv_length(files), 0);
}
END_TEST

START_TEST(test_main_and_dropins) {
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_free_ char *main_file = NULL, *d = NULL;
        ManagerConfig c;

        setup();
        main_file = put("tonarid.conf", "# comment\n; other comment\n\n[Manager]\nLogLevel=warning\nLogTarget=console\n");
        d = strjoin(dir, "/tonarid.conf.d");
        ck_assert_int_eq(mkdir(d, 0755), 0);
        free(put("tonarid.conf.d/20-b.conf", "[Manager]\nLogLevel=debug\n"));
        free(put("tonarid.conf.d/10-a.conf", "[Manager]\nLogLevel=err\nLogTarget=journal\n"));
        free(put("tonarid.conf.d/30-ignored.txt", "[Manager]\nLogLevel=bogus\n"));
        free(put("tonarid.conf.d/.hidden.conf", "[Manager]\nLogLevel=bogus\n"));

        ck_assert_int_eq(manager_config_load(main_file, &c, &files), 0);
        /* 10-a then 20-b: the last assignment wins; 10-a's LogTarget stays. */
        ck_assert_int_eq(c.log_level, LOG_DEBUG);
        ck_assert_int_eq(c.log_target, LOG_TARGET_JOURNAL);
        ck_assert_uint_eq(strv_length(files), 3);
        ck_assert_str_eq(files[0], main_file);
        ck_assert_ptr_nonnull(endswith(files[1], "/10-a.conf"));
        ck_assert_ptr_nonnull(endswith(files[2], "/20-b.conf"));
}
END_TEST

START_TEST(test_unknown_is_ignored) {
        _cleanup_free_ char *main_file = NULL;
        ManagerConfig c;

        setup();
        main_file = put("tonarid.conf", "[Manager]\nFutureSetting=1\nLogLevel=notice\n[Future]\nX=y\n");
        ck_assert_int_eq(manager_config_load(main_file, &c, NULL), 0);
        ck_assert_int_eq(c.log_level, LOG_NOTICE);
}
END_TEST

START_TEST(test_borrow_settings) {
        _cleanup_free_ char *p = NULL;
        ManagerConfig c;

        setup();
        p = put("tonarid.conf", "[Borrow]\nRepayPerPeriod=100%\nMinQuotaSec=5ms\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_uint_eq(c.borrow_repay_percent, 100);
        ck_assert_uint_eq(c.borrow_min_quota_usec, 5 * USEC_PER_MSEC);
        free(p);
        p = put("tonarid.conf", "[Borrow]\nRepayPerPeriod=1%\nRepayPerPeriod=\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_uint_eq(c.borrow_repay_percent, BORROW_REPAY_DEFAULT_PERCENT);
}
END_TEST

START_TEST(test_hog_settings) {
        _cleanup_free_ char *p = NULL;
        ManagerConfig c;

        setup();
        p = put("tonarid.conf", "[HogLimiting]\nIdleLimitPercent=0%\nHoldOffSec=2min\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_uint_eq(c.hog_waste_percent, 0);
        ck_assert_uint_eq(c.hog_holdoff_usec, 120 * USEC_PER_SEC);
        free(p);
        p = put("tonarid.conf", "[HogLimiting]\nIdleLimitPercent=\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_uint_eq(c.hog_waste_percent, 25);
        ck_assert_uint_eq(c.hog_holdoff_usec, 30 * USEC_PER_SEC);
}
END_TEST

START_TEST(test_migration_settings) {
        _cleanup_free_ char *p = NULL, *d = NULL;
        ManagerConfig c;

        setup();
        p = put("tonarid.conf", "[Migration]\nMemoryMigration=severe\nMigrationBatchPages=1024\n");
        d = strjoin(dir, "/tonarid.conf.d");
        ck_assert_int_eq(mkdir(d, 0755), 0);
        free(put("tonarid.conf.d/50-local.conf",
                 "[Migration]\nMemoryMigration=periodical\nMigrationIntervalSec=500ms\nMigrationCPUBudget=10%\n"
                 "WorkerCPUs=any\n"));
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert(c.migrate.worker_any_cpu);
        ck_assert_int_eq(c.migrate.policy, MIGRATE_PERIODICAL);
        ck_assert_uint_eq(c.migrate.batch_pages, 1024);
        ck_assert_uint_eq(c.migrate.interval_usec, 500 * USEC_PER_MSEC);
        ck_assert_uint_eq(c.migrate.cpu_budget_percent, 10);

        /* The limits themselves, a bare number for the budget as tonarictl takes it, eager. */
        free(put("tonarid.conf.d/50-local.conf", "[Migration]\nMemoryMigration=eager\nMigrationBatchPages=16777216\n"
                                                  "MigrationIntervalSec=1ms\nMigrationCPUBudget=100\n"));
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_int_eq(c.migrate.policy, MIGRATE_EAGER);
        ck_assert_uint_eq(c.migrate.batch_pages, MIGRATE_BATCH_PAGES_MAX);
        ck_assert_uint_eq(c.migrate.interval_usec, MIGRATE_INTERVAL_USEC_MIN);
        ck_assert_uint_eq(c.migrate.cpu_budget_percent, 100);

        /* Empty assignments go back to the built-in defaults (the drop-in above is still read). */
        free(p);
        p = put("tonarid.conf", "[Migration]\n");
        free(put("tonarid.conf.d/50-local.conf", "[Migration]\nMigrationBatchPages=7\nMigrationBatchPages=\n"
                                                  "MemoryMigration=severe\nMemoryMigration=\nMigrationCPUBudget=\n"
                                                  "WorkerCPUs=any\nWorkerCPUs=\n"));
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert(!c.migrate.worker_any_cpu);
        ck_assert_int_eq(c.migrate.policy, MIGRATE_DEFAULTS.policy);
        ck_assert_uint_eq(c.migrate.batch_pages, MIGRATE_BATCH_PAGES_DEFAULT);
        ck_assert_uint_eq(c.migrate.interval_usec, MIGRATE_INTERVAL_USEC_DEFAULT);
        ck_assert_uint_eq(c.migrate.cpu_budget_percent, 0);
}
END_TEST

/* A refused [Migration] value is quoted, with migrate_tunables_validate()'s reason (the D-Bus path's). */
START_TEST(test_migration_errors_quote_value) {
        static const struct {
                const char *text, *expected;
        } cases[] = {
                { "[Migration]\nMigrationBatchPages=0\n",
                  ":2: Invalid MigrationBatchPages= value '0': Invalid MigrationBatchPages '0': must be 1..16777216 pages." },
                { "[Migration]\n\nMigrationIntervalSec=2h\n",
                  ":3: Invalid MigrationIntervalSec= value '2h': Invalid MigrationIntervalUSec '7200000000'" },
                { "[Migration]\nWorkerCPUs=node\n", ":2: Invalid WorkerCPUs= value 'node': expected slice or any." },
                { "[Migration]\nMigrationCPUBudget=150%\n",
                  ":2: Invalid MigrationCPUBudget= value '150%': Invalid MigrationCPUBudget '150': must be 1..100" },
                { "[Migration]\nMemoryMigration=lazy\n",
                  ":2: Invalid MemoryMigration= value 'lazy': expected eager, periodical, severe or mild." },
                { "[Migration]\nMigrationBatchPages=4k\n",
                  ":2: Invalid MigrationBatchPages= value '4k': expected a number of pages." },
        };
        _cleanup_free_ char *err = NULL;
        ManagerConfig c;
        int fd;

        setup();
        err = strjoin(dir, "/stderr");
        ck_assert_ptr_nonnull(err);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *p = put("tonarid.conf", cases[i].text), *out = NULL;

                fd = open(err, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
                safe_close(fd);
                ck_assert_int_eq(manager_config_load(p, &c, NULL), -EINVAL);
                ck_assert_int_eq(read_full_file(err, &out, NULL), 0);
                ck_assert_msg(strstr(out, cases[i].expected), "expected '%s' in: %s", cases[i].expected, out);
        }
}
END_TEST

START_TEST(test_invalid_values) {
        const char *bad[] = {
                "[Manager]\nLogLevel=verbose\n",
                "[Manager]\nLogLevel=8\n",
                "[Manager]\nLogTarget=syslog\n",
                "[Manager]\nLogLevel=info\x01\n",
                "[Manager\nLogLevel=info\n",   /* unclosed section */
                "[Manager]\nLogLevel info\n",  /* no '=' */
                "[Borrow]\nMinQuotaSec=999us\n",
                "[Borrow]\nMinQuotaSec=2s\nMaxDebtSec=1s\n",
                "[Borrow]\nRepayPerPeriod=0%\n",
                "[Borrow]\nRepayPerPeriod=101%\n",
                "[Borrow]\nRepayPerPeriod=50\n",
                "[Borrow]\nRepayPerPeriod=-5%\n",
                "[HogLimiting]\nIdleLimitPercent=101%\n",
                "[HogLimiting]\nHoldOffSec=soon\n",
                "[Migration]\nMemoryMigration=lazy\n",
                "[Migration]\nMemoryMigration=\x01\n",
                "[Migration]\nMigrationBatchPages=0\n",
                "[Migration]\nMigrationBatchPages=-1\n",
                "[Migration]\nMigrationBatchPages=16777217\n",
                "[Migration]\nMigrationBatchPages=18446744073709551616\n",
                "[Migration]\nMigrationBatchPages=4k\n",
                "[Migration]\nMigrationIntervalSec=0\n",
                "[Migration]\nMigrationIntervalSec=999us\n",
                "[Migration]\nMigrationIntervalSec=2h\n",
                "[Migration]\nMigrationIntervalSec=infinity\n",
                "[Migration]\nMigrationIntervalSec=-1s\n",
                "[Migration]\nMigrationCPUBudget=101%\n",
                "[Migration]\nMigrationCPUBudget=101\n",
                "[Migration]\nMigrationCPUBudget=-5%\n",
                "[Migration]\nMigrationCPUBudget=4294967296\n",
                "[Migration]\nMigrationCPUBudget=ten\n",
        };
        ManagerConfig c = MANAGER_CONFIG_DEFAULTS, before;

        setup();
        c.log_level = LOG_ALERT;
        before = c;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                _cleanup_free_ char *p = put("tonarid.conf", bad[i]);
                ck_assert_msg(manager_config_load(p, &c, NULL) == -EINVAL, "accepted: %s", bad[i]);
                ck_assert_int_eq(c.log_level, before.log_level); /* untouched */
        }
}
END_TEST

START_TEST(test_long_line) {
        _cleanup_free_ char *p = NULL, *text = malloc(1024);
        ManagerConfig c;

        setup();
        strcpy(text, "[Manager]\nLogLevel=");
        memset(text + strlen(text), 'x', 500);
        strcpy(text + strlen("[Manager]\nLogLevel=") + 500, "\n");
        p = put("tonarid.conf", text);
        ck_assert_int_eq(manager_config_load(p, &c, NULL), -E2BIG);
}
END_TEST

START_TEST(test_unreadable) {
        _cleanup_free_ char *p = NULL;
        ManagerConfig c;

        setup();
        /* A directory where the file should be: an error, not silently the defaults. */
        p = strjoin(dir, "/tonarid.conf");
        ck_assert_int_eq(mkdir(p, 0755), 0);
        ck_assert_int_lt(manager_config_load(p, &c, NULL), 0);
}
END_TEST

START_TEST(test_systemd_like_syntax) {
        _cleanup_strv_free_ char **files = NULL;
        _cleanup_free_ char *p = NULL, *d = NULL, *masked = NULL, *dangling = NULL;
        ManagerConfig c;

        setup();
        /* Indentation is insignificant (inih alone would make the second line a continuation of
         * LogLevel=), comments after " ;" are dropped, and "Key=" restores the default. */
        p = put("tonarid.conf", "[Manager]\n  LogLevel=debug ; comment\n\tLogTarget=console\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_int_eq(c.log_level, LOG_DEBUG);
        ck_assert_int_eq(c.log_target, LOG_TARGET_CONSOLE);
        free(p);

        p = put("tonarid.conf", "[Manager]\nLogLevel=debug\nLogLevel=\nLogTarget=console\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), 0);
        ck_assert_int_eq(c.log_level, LOG_INFO);
        ck_assert_int_eq(c.log_target, LOG_TARGET_CONSOLE);
        free(p);

        /* ':' is not a separator. */
        p = put("tonarid.conf", "[Manager]\nLogLevel: debug\n");
        ck_assert_int_eq(manager_config_load(p, &c, NULL), -EINVAL);
        free(p);

        /* A drop-in symlinked to /dev/null is masked, a dangling one is skipped with a warning. */
        p = put("tonarid.conf", "[Manager]\nLogLevel=err\n");
        d = strjoin(dir, "/tonarid.conf.d");
        ck_assert_int_eq(mkdir(d, 0755), 0);
        masked = strjoin(d, "/10-masked.conf");
        dangling = strjoin(d, "/20-dangling.conf");
        ck_assert_int_eq(symlink("/dev/null", masked), 0);
        ck_assert_int_eq(symlink("/nonexistent/x.conf", dangling), 0);
        ck_assert_int_eq(manager_config_load(p, &c, &files), 0);
        ck_assert_int_eq(c.log_level, LOG_ERR);
        ck_assert_uint_eq(strv_length(files), 1);
}
END_TEST

TEST_SUITE("conf-parser", test_systemd_like_syntax, test_defaults_without_files, test_main_and_dropins, test_unknown_is_ignored,
           test_borrow_settings, test_hog_settings, test_migration_settings,
           test_migration_errors_quote_value, test_invalid_values, test_long_line,
           test_unreadable)
