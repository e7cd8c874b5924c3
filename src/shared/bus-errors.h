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
