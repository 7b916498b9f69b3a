/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-afbus.h  AF_BUS addresses, names and the well-known name cache
 *
 * SPDX-License-Identifier: AFL-2.1 OR GPL-2.0-or-later
 *
 * Licensed under the Academic Free License version 2.1
 *
 * This program is free software; you can redistribute it and/or modify
 * it under the terms of the GNU General Public License as published by
 * the Free Software Foundation; either version 2 of the License, or
 * (at your option) any later version.
 *
 * This program is distributed in the hope that it will be useful,
 * but WITHOUT ANY WARRANTY; without even the implied warranty of
 * MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the
 * GNU General Public License for more details.
 */
#ifndef DBUS_AFBUS_H
#define DBUS_AFBUS_H

#include <dbus/dbus-internals.h>
#include <dbus/dbus-string.h>

#ifdef __linux__
#define DBUS_HAVE_AFBUS 1

#include <stddef.h>
#include <sys/socket.h>
#include <linux/bus.h>

/* The C library does not know the family yet (kernel-patches/README). */
#ifndef AF_BUS
#define AF_BUS 46
#endif
#ifndef SOL_BUS
#define SOL_BUS 288
#endif

DBUS_BEGIN_DECLS

/** Length of a struct sockaddr_bus that names no path: "the sender's bus". */
#define DBUS_AFBUS_SOCKADDR_NO_PATH  offsetof (struct sockaddr_bus, sbus_path)

/** The bus master (dbus-daemon) is address 0. */
#define DBUS_AFBUS_MASTER            ((dbus_uint64_t) 0)

/** Well-known names get addresses in this prefix. */
#define DBUS_AFBUS_NAME_PREFIX       ((dbus_uint64_t) 1)

/** Multicast to every client of prefix @p p. */
#define DBUS_AFBUS_MULTICAST(p)      (((dbus_uint64_t) (p) << BUS_PREFIX_SHIFT) | BUS_CLIENT_MASK)

/** Interface of the AF_BUS-specific signals of the bus driver. */
#define DBUS_INTERFACE_AFBUS         "org.freedesktop.DBus.AF_BUS"

/** Number of well-known names a client remembers (least recently used go). */
#define DBUS_AFBUS_NAME_CACHE_SIZE   64

DBUS_PRIVATE_EXPORT
dbus_bool_t   _dbus_afbus_unique_name_from_addr (dbus_uint64_t     addr,
                                                 DBusString       *name);
dbus_bool_t   _dbus_afbus_addr_from_unique_name (const char        *name,
                                                 dbus_uint64_t     *addr);
dbus_bool_t   _dbus_afbus_sockaddr_for_path     (const char        *path,
                                                 struct sockaddr_bus *sa,
                                                 socklen_t         *len,
                                                 DBusError         *error);
dbus_bool_t   _dbus_afbus_read_path_file        (const char        *file,
                                                 DBusString        *path,
                                                 DBusError         *error);

typedef struct DBusAfbusNameCache DBusAfbusNameCache;

DBusAfbusNameCache *_dbus_afbus_name_cache_new    (void);
void          _dbus_afbus_name_cache_free       (DBusAfbusNameCache *cache);
dbus_bool_t   _dbus_afbus_name_cache_lookup     (DBusAfbusNameCache *cache,
                                                 const char         *name,
                                                 dbus_uint64_t      *addr);
dbus_bool_t   _dbus_afbus_name_cache_sent_to_master (DBusAfbusNameCache *cache,
                                                 const char         *name);
dbus_bool_t   _dbus_afbus_name_cache_forwarded  (DBusAfbusNameCache *cache,
                                                 const char         *name,
                                                 dbus_uint64_t       addr);

DBUS_END_DECLS

#endif /* __linux__ */

#endif /* DBUS_AFBUS_H */
