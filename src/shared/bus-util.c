/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-event.h>
#include <systemd/sd-id128.h>

#include "alloc-util.h"
#include "bus-util.h"
#include "fd-util.h"
#include "log.h"
#include "strv.h"
#include "string-util.h"

int bus_open(const char *address, const char *description, sd_bus **ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        if (!address) {
                r = sd_bus_open_system_with_description(&bus, description);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(bus);
                return 0;
        }

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        if (description) {
                r = sd_bus_set_description(bus, description);
                if (r < 0)
                        return r;
        }
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                return r;
        r = sd_bus_set_bus_client(bus, true);
        if (r < 0)
                return r;
        /* Same rules as on the system bus: callers are not trusted merely for being connected. */
        r = sd_bus_set_trusted(bus, false);
        if (r < 0)
                return r;
        r = sd_bus_start(bus);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(bus);
        return 0;
}

static bool bus_address_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("-_/\\.*%", c);
}

bool bus_address_is_valid(const char *address) {
        const char *p = address;

        if (!address || !*address)
                return false;

        /* transport:key=value,key=value;transport:... */
        for (;;) {
                size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz-");
                if (n == 0 || p[n] != ':')
                        return false;
                p += n + 1;
                while (*p && *p != ';') {
                        size_t k = 0;
                        while (p[k] && p[k] != '=' && p[k] != ',' && p[k] != ';') {
                                if (!bus_address_char_ok(p[k]))
                                        return false;
                                k++;
                        }
                        if (k == 0 || p[k] != '=')
                                return false;
                        p += k + 1;
                        while (*p && *p != ',' && *p != ';') {
                                if (!bus_address_char_ok(*p) && *p != ':' && *p != '=')
                                        return false;
                                p++;
                        }
                        if (*p == ',')
                                p++;
                }
                if (*p == '\0')
                        return true;
                p++; /* ';' */
                if (*p == '\0')
                        return true;
        }
}

int bus_address_from_option(const char *value, const char **ret) {
        if (!bus_address_is_valid(value)) {
                _cleanup_free_ char *e = cescape(strempty(value));
                return log_error_errno(EINVAL,
                                       "Invalid --bus-address= value '%s': expected a D-Bus address such as "
                                       "unix:path=/run/dbus/system_bus_socket.",
                                       strna(e));
        }
        *ret = value;
        return 0;
}

int bus_verify_privileged(sd_bus_message *m, sd_bus_error *error) {
        int r;

        /* Negative capability: the sender must be root, or the same user as we are. */
        r = sd_bus_query_sender_privilege(m, -1);
        if (r < 0)
                return r;
        if (r == 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Access denied: %s() changes system state and requires root privileges.",
                                         sd_bus_message_get_member(m));
        return 0;
}

uid_t bus_sender_uid(sd_bus_message *m) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid = (uid_t) -1;

        if (sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds) >= 0)
                (void) sd_bus_creds_get_euid(creds, &uid);
        return uid;
}

int bus_message_append_container(sd_bus_message *reply, char type, const char *contents,
                                 int (*append)(sd_bus_message *reply, void *userdata), void *userdata) {
        int r;

        r = sd_bus_message_open_container(reply, type, contents);
        if (r >= 0)
                r = append(reply, userdata);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        return r;
}

int bus_reply_array(sd_bus_message *m, const char *contents, int (*append)(sd_bus_message *reply, void *userdata),
                    void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r < 0)
                return r;
        r = bus_message_append_container(reply, 'a', contents, append, userdata);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

int bus_message_read_bitmask(sd_bus_message *m, uint8_t **mask, size_t *size) {
        const void *p;
        uint8_t *n = NULL;
        size_t k;
        int r;

        r = sd_bus_message_read_array(m, 'y', &p, &k);
        if (r < 0)
                return r;
        if (k > 0) {
                n = memdup(p, k);
                if (!n)
                        return -ENOMEM;
        }
        free(*mask);
        *mask = n;
        *size = k;
        return 0;
}

const char *bus_error_message(const sd_bus_error *e, int error) {
        if (e && e->message)
                return e->message;
        return strerror(ERRNO_VALUE(error));
}

typedef struct IntrospectReply {
        char *xml;
        int error;
} IntrospectReply;

static int introspect_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        IntrospectReply *reply = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        const char *xml;
        int r;

        if (e)
                reply->error = -sd_bus_error_get_errno(e) ?: -EIO;
        else {
                r = sd_bus_message_read(m, "s", &xml);
                if (r < 0)
                        reply->error = r;
                else if (!(reply->xml = strdup(xml)))
                        reply->error = -ENOMEM;
        }
        return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), 0);
}

int bus_introspect(int (*add_objects)(sd_bus *bus, void *userdata), void *userdata, const char *object_path,
                   char **ret_xml) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *server = NULL, *client = NULL;
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_close_ int fd_server = -EBADF, fd_client = -EBADF;
        IntrospectReply reply = {};
        sd_id128_t id;
        int fds[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
                return -errno;
        fd_server = fds[0];
        fd_client = fds[1];

        r = sd_event_new(&event);
        if (r < 0)
                return r;

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        r = sd_bus_new(&server);
        if (r < 0)
                return r;
        r = sd_bus_set_fd(server, fd_server, fd_server);
        if (r < 0)
                return r;
        TAKE_FD(fd_server);
        r = sd_bus_set_server(server, true, id);
        if (r < 0)
                return r;
        r = add_objects(server, userdata);
        if (r < 0)
                return r;
        r = sd_bus_start(server);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(server, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;

        r = sd_bus_new(&client);
        if (r < 0)
                return r;
        r = sd_bus_set_fd(client, fd_client, fd_client);
        if (r < 0)
                return r;
        TAKE_FD(fd_client);
        r = sd_bus_start(client);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(client, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;

        r = sd_bus_call_method_async(client, NULL, NULL, object_path, "org.freedesktop.DBus.Introspectable",
                                     "Introspect", introspect_reply, &reply, NULL);
        if (r < 0)
                return r;
        r = sd_event_loop(event);
        if (r < 0)
                return r;
        if (reply.error < 0)
                return reply.error;

        *ret_xml = reply.xml;
        return 0;
}

int bus_introspect_add_interface(char **xml, const char *other_xml, const char *interface) {
        _cleanup_free_ char *open_tag = strjoin(" <interface name=\"", interface, "\">");
        const char *start, *end, *node_end;
        char *merged;
        size_t head;

        if (!open_tag)
                return -ENOMEM;
        start = strstr(other_xml, open_tag);
        if (!start)
                return -ENOENT;
        end = strstr(start, " </interface>\n");
        node_end = strstr(*xml, "</node>");
        if (!end || !node_end)
                return -EBADMSG;
        end += STRLEN(" </interface>\n");

        head = node_end - *xml;
        merged = new(char, strlen(*xml) + (end - start) + 1);
        if (!merged)
                return -ENOMEM;
        memcpy(merged, *xml, head);
        memcpy(merged + head, start, end - start);
        strcpy(merged + head + (end - start), node_end);
        free_and_replace(*xml, merged);
        return 0;
}

int bus_introspect_write(const char *xml, const char *path) {
        _cleanup_fclose_ FILE *f = NULL;

        if (streq(path, "-")) {
                fputs(xml, stdout);
                return fflush(stdout) == 0 ? 0 : log_error_errno(errno, "Failed to write to stdout: %m");
        }
        f = fopen(path, "we");
        if (!f)
                return log_error_errno(errno, "Failed to open '%s' for writing: %m", path);
        if (fputs(xml, f) < 0 || fflush(f) != 0)
                return log_error_errno(errno, "Failed to write '%s': %m", path);
        return 0;
}
