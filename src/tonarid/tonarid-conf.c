/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>

#include "alloc-util.h"
#include "parse-util.h"
#include "string-util.h"

#include "conf-parser.h"
#include "strv.h"
#include "tonarid-conf.h"

static DEFINE_CONFIG_PARSE_ENUM(config_parse_slice_backend, SliceBackendType, slice_backend_type_from_string,
                                "auto, systemd or cgroupfs")

static DEFINE_CONFIG_PARSE_ENUM(config_parse_borrow_enforcement, BorrowEnforcementMode,
                                borrow_enforcement_mode_from_string, "auto, kernel-paper or userspace")

static DEFINE_CONFIG_PARSE_ENUM(config_parse_memory_migration, MigratePolicy, migrate_policy_from_string,
                                "eager, periodical, severe or mild")

/* [Migration]'s numbers are checked by migrate_tunables_validate(), as MigrateMemory()'s options are. */
static int check_migration(const char *file, unsigned line, const char *key, const char *value, uint64_t batch_pages,
                           uint64_t interval_usec, uint64_t budget_percent) {
        char msg[256];

        if (migrate_tunables_validate(batch_pages, interval_usec, budget_percent, msg, sizeof(msg)) >= 0)
                return 0;
        _cleanup_free_ char *e = cescape(value);
        return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': %s", file, line, key, strna(e), msg);
}

static int config_parse_migration_batch_pages(const char *file, unsigned line, const char *section, const char *key,
                                              const char *value, void *data) {
        uint64_t *u = data, v;

        (void) section;
        if (safe_atou64(value, &v) < 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected a number of pages.", file, line,
                                       key, strna(e));
        }
        if (check_migration(file, line, key, value, v, MIGRATE_INTERVAL_USEC_DEFAULT, 0) < 0)
                return -EINVAL;
        *u = v;
        return 0;
}

static int config_parse_migration_interval(const char *file, unsigned line, const char *section, const char *key,
                                           const char *value, void *data) {
        usec_t v;
        int r;

        r = config_parse_sec(file, line, section, key, value, &v);
        if (r < 0)
                return r;
        if (check_migration(file, line, key, value, MIGRATE_BATCH_PAGES_DEFAULT, v, 0) < 0)
                return -EINVAL;
        *(usec_t *) data = v;
        return 0;
}

/* "10%" as RepayPerPeriod= takes it, or "10" as tonarictl's MigrationCPUBudget= does; 0: no budget. */
static int config_parse_migration_cpu_budget(const char *file, unsigned line, const char *section, const char *key,
                                             const char *value, void *data) {
        unsigned *u = data, v;
        int r;

        (void) section;
        r = parse_percent_unbounded(value);
        if (r >= 0)
                v = (unsigned) r;
        else if (safe_atou(value, &v) < 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected a percentage such as 10%%.",
                                       file, line, key, strna(e));
        }
        if (check_migration(file, line, key, value, MIGRATE_BATCH_PAGES_DEFAULT, MIGRATE_INTERVAL_USEC_DEFAULT, v) < 0)
                return -EINVAL;
        *u = v;
        return 0;
}

/* WorkerCPUs=slice (the default) or any; stored as MigrateDefaults.worker_any_cpu. */
static int config_parse_migration_worker_cpus(const char *file, unsigned line, const char *section, const char *key,
                                              const char *value, void *data) {
        bool *any = data;

        (void) section;
        if (streq(value, "slice"))
                *any = false;
        else if (streq(value, "any"))
                *any = true;
        else {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected slice or any.", file, line,
                                       key, strna(e));
        }
        return 0;
}

static const ConfigItem manager_config_table[] = {
        CONFIG_ITEM("Manager", "LogLevel", config_parse_log_level, ManagerConfig, log_level),
        CONFIG_ITEM("Manager", "LogTarget", config_parse_log_target, ManagerConfig, log_target),
        CONFIG_ITEM("Manager", "RuntimeDirectory", config_parse_path, ManagerConfig, runtime_directory),
        CONFIG_ITEM("Slices", "Backend", config_parse_slice_backend, ManagerConfig, slice_backend),
        CONFIG_ITEM("Slices", "CgroupRoot", config_parse_path, ManagerConfig, slice_cgroup_root),
        CONFIG_ITEM("Borrow", "MinQuotaSec", config_parse_sec, ManagerConfig, borrow_min_quota_usec),
        CONFIG_ITEM("Borrow", "MaxDebtSec", config_parse_sec, ManagerConfig, borrow_max_debt_usec),
        CONFIG_ITEM("Borrow", "RepayPerPeriod", config_parse_percent, ManagerConfig, borrow_repay_percent),
        CONFIG_ITEM("Borrow", "Enforcement", config_parse_borrow_enforcement, ManagerConfig, borrow_enforcement),
        CONFIG_ITEM("Borrow", "AllowUsers", config_parse_user_list, ManagerConfig, borrow_allow_users),
        CONFIG_ITEM("Borrow", "AllowGroups", config_parse_group_list, ManagerConfig, borrow_allow_groups),
        CONFIG_ITEM("HogLimiting", "MonitorIntervalSec", config_parse_sec, ManagerConfig, hog_interval_usec),
        CONFIG_ITEM("HogLimiting", "WindowSec", config_parse_sec, ManagerConfig, hog_window_usec),
        CONFIG_ITEM("HogLimiting", "IOLimitBytesPerSec", config_parse_size, ManagerConfig,
                    hog_io_limit_bytes_per_sec),
        CONFIG_ITEM("HogLimiting", "CPUWeight", config_parse_unsigned, ManagerConfig, hog_cpu_weight),
        CONFIG_ITEM("HogLimiting", "IdleLimitPercent", config_parse_percent, ManagerConfig, hog_waste_percent),
        CONFIG_ITEM("HogLimiting", "HoldOffSec", config_parse_sec, ManagerConfig, hog_holdoff_usec),
        CONFIG_ITEM("Migration", "MemoryMigration", config_parse_memory_migration, ManagerConfig, migrate.policy),
        CONFIG_ITEM("Migration", "MigrationBatchPages", config_parse_migration_batch_pages, ManagerConfig,
                    migrate.batch_pages),
        CONFIG_ITEM("Migration", "MigrationIntervalSec", config_parse_migration_interval, ManagerConfig,
                    migrate.interval_usec),
        CONFIG_ITEM("Migration", "MigrationCPUBudget", config_parse_migration_cpu_budget, ManagerConfig,
                    migrate.cpu_budget_percent),
        CONFIG_ITEM("Migration", "WorkerCPUs", config_parse_migration_worker_cpus, ManagerConfig,
                    migrate.worker_any_cpu),
        {},
};

int manager_config_load(const char *path, ManagerConfig *ret, char ***ret_files) {
        const ManagerConfig defaults = MANAGER_CONFIG_DEFAULTS;
        ManagerConfig c = defaults;
        _cleanup_strv_free_ char **files = NULL;
        int r;

        r = config_parse(path, manager_config_table, &c, &defaults, &files);
        if (r < 0)
                return r;

        if (c.borrow_min_quota_usec < BORROW_FLOOR_MIN_USEC || c.borrow_max_debt_usec < c.borrow_min_quota_usec) {
                char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX];
                return log_error_errno(EINVAL,
                                       "%s: [Borrow] MinQuotaSec=%s and MaxDebtSec=%s: expected MinQuotaSec= of at "
                                       "least 1ms (the kernel's smallest quota) and MaxDebtSec= no smaller.",
                                       path, format_timespan(a, sizeof(a), c.borrow_min_quota_usec, 1),
                                       format_timespan(b, sizeof(b), c.borrow_max_debt_usec, 1));
        }

        if (c.borrow_repay_percent < 1)
                return log_error_errno(EINVAL,
                                       "%s: [Borrow] RepayPerPeriod=0%%: expected 1%% to 100%% (0%% would never repay "
                                       "a debt).",
                                       path);

        if (c.hog_interval_usec < 100 * USEC_PER_MSEC || c.hog_window_usec < c.hog_interval_usec ||
            c.hog_window_usec > (LIMITER_HISTORY_MAX - 2) * c.hog_interval_usec || c.hog_cpu_weight > 10000 ||
            c.hog_io_limit_bytes_per_sec < 1000) {
                char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX];
                return log_error_errno(EINVAL,
                                       "%s: [HogLimiting] MonitorIntervalSec=%s, WindowSec=%s, CPUWeight=%u, "
                                       "IOLimitBytesPerSec=%" PRIu64 ": expected an interval of at least 100ms, a "
                                       "window of 1 to %d intervals, a weight of 1 to 10000 and at least 1000 B/s.",
                                       path, format_timespan(a, sizeof(a), c.hog_interval_usec, 1),
                                       format_timespan(b, sizeof(b), c.hog_window_usec, 1), c.hog_cpu_weight,
                                       c.hog_io_limit_bytes_per_sec, LIMITER_HISTORY_MAX - 2);
        }

        *ret = c;
        if (ret_files)
                *ret_files = TAKE_PTR(files);
        return 0;
}

static void dump_ids(FILE *f, const char *key, const ConfigIdList *l) {
        fprintf(f, "%s=", key);
        for (size_t i = 0; i < l->n; i++)
                fprintf(f, "%s%" PRIu32, i > 0 ? " " : "", l->ids[i]);
        fputc('\n', f);
}

void manager_config_dump(const ManagerConfig *c, FILE *f) {
        char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX];

        fprintf(f,
                "[Manager]\n"
                "LogLevel=%s\n"
                "LogTarget=%s\n"
                "RuntimeDirectory=%s\n"
                "\n"
                "[Slices]\n"
                "Backend=%s\n"
                "CgroupRoot=%s\n"
                "\n"
                "[Borrow]\n"
                "MinQuotaSec=%s\n"
                "MaxDebtSec=%s\n"
                "RepayPerPeriod=%u%%\n"
                "Enforcement=%s\n",
                log_level_to_string(c->log_level), log_target_to_string(c->log_target), c->runtime_directory,
                slice_backend_type_to_string(c->slice_backend), c->slice_cgroup_root,
                format_timespan(a, sizeof(a), c->borrow_min_quota_usec, 1),
                format_timespan(b, sizeof(b), c->borrow_max_debt_usec, 1), c->borrow_repay_percent,
                borrow_enforcement_mode_to_string(c->borrow_enforcement));
        dump_ids(f, "AllowUsers", &c->borrow_allow_users);
        dump_ids(f, "AllowGroups", &c->borrow_allow_groups);
        fprintf(f,
                "\n"
                "[HogLimiting]\n"
                "MonitorIntervalSec=%s\n"
                "WindowSec=%s\n"
                "IOLimitBytesPerSec=%" PRIu64 "\n"
                "CPUWeight=%u\n",
                format_timespan(a, sizeof(a), c->hog_interval_usec, 1), format_timespan(b, sizeof(b), c->hog_window_usec, 1),
                c->hog_io_limit_bytes_per_sec, c->hog_cpu_weight);
        fprintf(f, "IdleLimitPercent=%u%%\nHoldOffSec=%s\n", c->hog_waste_percent,
                format_timespan(a, sizeof(a), c->hog_holdoff_usec, 1));
        fprintf(f,
                "\n"
                "[Migration]\n"
                "MemoryMigration=%s\n"
                "MigrationBatchPages=%" PRIu64 "\n"
                "MigrationIntervalSec=%s\n"
                "MigrationCPUBudget=%u%%\n"
                "WorkerCPUs=%s\n",
                migrate_policy_to_string(c->migrate.policy), c->migrate.batch_pages,
                format_timespan(a, sizeof(a), c->migrate.interval_usec, 1), c->migrate.cpu_budget_percent,
                c->migrate.worker_any_cpu ? "any" : "slice");
}
