/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-afbus.h  what an AF_BUS client keeps: its well-known names,
 *               the peers it called, the deadlines of its calls
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

#include <dbus/dbus-sysdeps-afbus.h>

#ifdef DBUS_HAVE_AFBUS

DBUS_BEGIN_DECLS

/** Number of well-known names a client remembers (least recently used go). */
#define DBUS_AFBUS_NAME_CACHE_SIZE   64

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
void          _dbus_afbus_name_cache_forwarded_lost (DBusAfbusNameCache *cache,
                                                     unsigned long       count);
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

#endif /* DBUS_HAVE_AFBUS */

#endif /* DBUS_AFBUS_H */
