/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * 'tonarictl image mount | unmount | mounts | status': tonari-imagefs's org.tonari.ImageFS1 over D-Bus. In
 * every tonarictl (no gRPC needed); tonarictl-relay's 'image' group has them too. argv[0] is
 * "image". Returns 0 or a negative errno.
 */
bool verb_imagefs_handles(int argc, char *argv[]);
int verb_imagefs(int argc, char *argv[]);

/* The commands, for a group that dispatches them itself (argv[0] is the command). */
int image_mount(int argc, char *argv[]);
int image_unmount(int argc, char *argv[]);
int image_mounts(int argc, char *argv[]);
int image_status(int argc, char *argv[]);
