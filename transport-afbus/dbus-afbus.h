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

/** Number of well-known names a client remembers (least recently used go). */
#define DBUS_AFBUS_NAME_CACHE_SIZE   64

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

typedef struct DBusAfbusNameCache DBusAfbusNameCache;

DBusAfbusNameCache *_dbus_afbus_name_cache_new    (void);
void          _dbus_afbus_name_cache_free       (DBusAfbusNameCache *cache);
dbus_bool_t   _dbus_afbus_name_cache_lookup     (DBusAfbusNameCache *cache,
                                                 const char         *name,
                                                 dbus_uint64_t      *addr);
dbus_bool_t   _dbus_afbus_name_cache_direct     (DBusAfbusNameCache *cache,
                                                 dbus_uint64_t       owner);
void          _dbus_afbus_name_cache_sent_to_master (DBusAfbusNameCache *cache);
void          _dbus_afbus_name_cache_forget     (DBusAfbusNameCache *cache,
                                                 const char         *name);
dbus_bool_t   _dbus_afbus_name_cache_forwarded  (DBusAfbusNameCache *cache,
                                                 const char         *name,
                                                 dbus_uint64_t       addr,
                                                 dbus_uint64_t       owner);
void          _dbus_afbus_name_cache_peer_gone  (DBusAfbusNameCache *cache,
                                                 dbus_uint64_t       owner);

typedef struct DBusAfbusPeers DBusAfbusPeers;

DBusAfbusPeers *_dbus_afbus_peers_new           (void);
void          _dbus_afbus_peers_free            (DBusAfbusPeers     *peers);
dbus_bool_t   _dbus_afbus_peers_call_sent       (DBusAfbusPeers     *peers,
                                                 dbus_uint64_t       addr,
                                                 const char         *name,
                                                 dbus_uint32_t       serial,
                                                 dbus_bool_t        *watch,
                                                 dbus_uint64_t      *unwatch,
                                                 char              **unwatch_name);
void          _dbus_afbus_peers_reply_received  (DBusAfbusPeers     *peers,
                                                 dbus_uint64_t       addr,
                                                 dbus_uint32_t       reply_serial);
dbus_bool_t   _dbus_afbus_peers_addr_of_name    (DBusAfbusPeers     *peers,
                                                 const char         *name,
                                                 dbus_uint64_t      *addr);
dbus_bool_t   _dbus_afbus_peers_gone            (DBusAfbusPeers     *peers,
                                                 dbus_uint64_t       addr,
                                                 DBusList          **serials,
                                                 char              **name);

typedef struct DBusAfbusDeadlines DBusAfbusDeadlines;

DBusAfbusDeadlines *_dbus_afbus_deadlines_new   (void);
void          _dbus_afbus_deadlines_free        (DBusAfbusDeadlines *deadlines);
void          _dbus_afbus_deadlines_set_timeout (DBusAfbusDeadlines *deadlines,
                                                 int                 timeout);
dbus_bool_t   _dbus_afbus_deadlines_add         (DBusAfbusDeadlines *deadlines,
                                                 dbus_uint32_t       serial,
                                                 dbus_int64_t        now);
void          _dbus_afbus_deadlines_remove      (DBusAfbusDeadlines *deadlines,
                                                 dbus_uint32_t       serial);
int           _dbus_afbus_deadlines_next        (DBusAfbusDeadlines *deadlines,
                                                 dbus_int64_t        now);
dbus_bool_t   _dbus_afbus_deadlines_pop_expired (DBusAfbusDeadlines *deadlines,
                                                 dbus_int64_t        now,
                                                 dbus_uint32_t      *serial);
dbus_int64_t  _dbus_afbus_deadlines_now         (void);

DBUS_END_DECLS

#endif /* __linux__ */

#endif /* DBUS_AFBUS_H */
