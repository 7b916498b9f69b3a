/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-sysdeps-afbus.h  AF_BUS sockets: addresses and unique names,
 *                       afbus: locations, receiving a datagram
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
#ifndef DBUS_SYSDEPS_AFBUS_H
#define DBUS_SYSDEPS_AFBUS_H

#include <dbus/dbus-internals.h>
#include <dbus/dbus-string.h>
#include <dbus/dbus-list.h>
#include <dbus/dbus-message.h>
#include <dbus/dbus-address.h>

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

/** Interface of the AF_BUS-specific methods and signals of the bus driver. */
#define DBUS_INTERFACE_AFBUS         "org.freedesktop.DBus.AF_BUS"

/** Number of peers a client watches for its direct calls (idle ones go),
 * and the most the daemon lets one connection watch. */
#define DBUS_AFBUS_PEER_WATCH_SIZE   64

DBUS_PRIVATE_EXPORT
dbus_bool_t   _dbus_afbus_unique_name_from_addr (dbus_uint64_t     addr,
                                                 DBusString       *name);
DBUS_PRIVATE_EXPORT
dbus_bool_t   _dbus_afbus_addr_from_unique_name (const char        *name,
                                                 dbus_uint64_t     *addr);
/**
 * Where an afbus: address says the bus is (_dbus_afbus_address_location()).
 * At most one member is set.
 */
typedef struct
{
  const char *name;      /**< path= or abstract=: the bus's filesystem
                              path or its abstract name, or #NULL */
  dbus_bool_t abstract;  /**< whether @p name is an abstract name */
  const char *dir;       /**< dir= or tmpdir= (listening only): the
                              directory of a fresh bus, or #NULL */
  DBusString file;       /**< file=, or $XDG_RUNTIME_DIR/bus.afbus for
                              runtime=yes: a file holding the bus's path;
                              empty if neither */
} DBusAfbusLocation;

dbus_bool_t   _dbus_afbus_sockaddr_for_path     (const char        *path,
                                                 dbus_bool_t        abstract,
                                                 struct sockaddr_bus *sa,
                                                 socklen_t         *len,
                                                 DBusError         *error);
dbus_bool_t   _dbus_afbus_bus_is_live           (const char        *path,
                                                 dbus_bool_t        abstract);
dbus_bool_t   _dbus_afbus_read_path_file        (const char        *file,
                                                 DBusString        *path,
                                                 DBusError         *error);
dbus_bool_t   _dbus_afbus_address_location      (DBusAddressEntry  *entry,
                                                 dbus_bool_t        listening,
                                                 DBusAfbusLocation *location,
                                                 DBusError         *error);
void          _dbus_afbus_location_free         (DBusAfbusLocation *location);

DBUS_PRIVATE_EXPORT
dbus_bool_t   _dbus_afbus_message_set_addr      (DBusMessage       *message,
                                                 dbus_uint64_t      addr);
DBUS_PRIVATE_EXPORT
dbus_bool_t   _dbus_afbus_message_get_addr      (DBusMessage       *message,
                                                 dbus_uint64_t     *addr);

DBUS_PRIVATE_EXPORT
int           _dbus_afbus_recv_datagram         (int                fd,
                                                 int                len,
                                                 DBusString        *buffer,
                                                 int               *fds,
                                                 unsigned int      *n_fds,
                                                 dbus_uint64_t     *source,
                                                 dbus_bool_t       *fds_lost);

DBUS_END_DECLS

#endif /* __linux__ */

#endif /* DBUS_SYSDEPS_AFBUS_H */
