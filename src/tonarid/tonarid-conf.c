/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stddef.h>

#include "alloc-util.h"
#include "string-util.h"

#include "conf-parser.h"
#include "strv.h"
#include "tonarid-conf.h"

static DEFINE_CONFIG_PARSE_ENUM(config_parse_slice_backend, SliceBackendType, slice_backend_type_from_string,
                                "auto, systemd or cgroupfs")

static const ConfigItem manager_config_table[] = {
        CONFIG_ITEM("Manager", "LogLevel", config_parse_log_level, ManagerConfig, log_level),
        CONFIG_ITEM("Manager", "LogTarget", config_parse_log_target, ManagerConfig, log_target),
        CONFIG_ITEM("Slices", "Backend", config_parse_slice_backend, ManagerConfig, slice_backend),
        CONFIG_ITEM("Slices", "CgroupRoot", config_parse_path, ManagerConfig, slice_cgroup_root),
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

        *ret = c;
        if (ret_files)
                *ret_files = TAKE_PTR(files);
        return 0;
}

void manager_config_dump(const ManagerConfig *c, FILE *f) {
        fprintf(f,
                "[Manager]\n"
                "LogLevel=%s\n"
                "LogTarget=%s\n"
                "\n"
                "[Slices]\n"
                "Backend=%s\n"
                "CgroupRoot=%s\n",
                log_level_to_string(c->log_level), log_target_to_string(c->log_target),
                slice_backend_type_to_string(c->slice_backend), c->slice_cgroup_root);
}
