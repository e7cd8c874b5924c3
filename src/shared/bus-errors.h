/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* tonari's own D-Bus errors; each is explained in org.tonari.Manager1(5). */
#define TONARI_ERROR_NO_SUCH_SLICE "org.tonari.Error.NoSuchSlice"
#define TONARI_ERROR_SLICE_EXISTS "org.tonari.Error.SliceExists"
#define TONARI_ERROR_SLICE_BUSY "org.tonari.Error.SliceBusy"
#define TONARI_ERROR_NOT_SUPPORTED "org.tonari.Error.NotSupported"
#define TONARI_ERROR_NO_SUCH_PROCESS "org.tonari.Error.NoSuchProcess"
#define TONARI_ERROR_JOB_FAILED "org.tonari.Error.JobFailed"
#define TONARI_ERROR_NO_SUCH_PROXY "org.tonari.Error.NoSuchProxy"
#define TONARI_ERROR_PROXY_EXISTS "org.tonari.Error.ProxyExists"
#define TONARI_ERROR_KERNEL_CHARGE_REFUSED "org.tonari.Error.KernelChargeRefused"

/* tonari-imagefs's errors; each is explained in org.tonari.ImageFS1(5). */
#define TONARI_ERROR_NO_SUCH_IMAGE "org.tonari.Error.NoSuchImage"
#define TONARI_ERROR_RELAY_UNREACHABLE "org.tonari.Error.RelayUnreachable"
#define TONARI_ERROR_BAD_TOC "org.tonari.Error.BadToC"
#define TONARI_ERROR_NO_SUCH_DIRECTORY "org.tonari.Error.NoSuchDirectory"
#define TONARI_ERROR_NOT_A_DIRECTORY "org.tonari.Error.NotADirectory"
#define TONARI_ERROR_ALREADY_MOUNTED "org.tonari.Error.AlreadyMounted"
#define TONARI_ERROR_NOT_MOUNTED "org.tonari.Error.NotMounted"
#define TONARI_ERROR_MOUNT_BUSY "org.tonari.Error.MountBusy"
#define TONARI_ERROR_MOUNT_FAILED "org.tonari.Error.MountFailed"

/* Hog limiting (RegisterProcesses, UnregisterProcesses, SetHogLimiting). */
#define TONARI_ERROR_KERNEL_THREAD "org.tonari.Error.KernelThread"
#define TONARI_ERROR_PROTECTED_PROCESS "org.tonari.Error.ProtectedProcess"
#define TONARI_ERROR_NOT_YOUR_PROCESS "org.tonari.Error.NotYourProcess"
#define TONARI_ERROR_ALREADY_REGISTERED "org.tonari.Error.AlreadyRegistered"
#define TONARI_ERROR_NOT_REGISTERED "org.tonari.Error.NotRegistered"
#define TONARI_ERROR_NO_TASKSTATS "org.tonari.Error.NoTaskstats"
#define TONARI_ERROR_HOG_LIMITING_OFF "org.tonari.Error.HogLimitingOff"
