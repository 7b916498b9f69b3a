/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-bus-afbus.h  the client side of the bus protocol on AF_BUS
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

#ifndef DBUS_BUS_AFBUS_H
#define DBUS_BUS_AFBUS_H

#include "dbus-afbus.h"

#ifdef DBUS_HAVE_AFBUS

#include <dbus/dbus-connection.h>
#include <dbus/dbus-message.h>
#include <dbus/dbus-marshal-header.h>

DBUS_BEGIN_DECLS

typedef struct DBusAfbusClient DBusAfbusClient;

DBusAfbusClient *_dbus_afbus_client_new         (dbus_uint64_t    own_addr);
void          _dbus_afbus_client_free           (DBusAfbusClient *client);
const char   *_dbus_afbus_client_get_name       (DBusAfbusClient *client);
dbus_uint64_t _dbus_afbus_client_route          (DBusAfbusClient *client,
                                                 DBusMessage     *message,
                                                 dbus_bool_t     *counted);
dbus_bool_t   _dbus_afbus_client_stamp_sender   (DBusAfbusClient *client,
                                                 DBusMessage     *message,
                                                 DBusHeader      *stamped,
                                                 dbus_bool_t     *stamped_used);
dbus_bool_t   _dbus_afbus_is_driver_call        (DBusMessage     *message);
void          _dbus_afbus_client_unreachable    (DBusAfbusClient *client,
                                                 DBusMessage     *message,
                                                 dbus_uint64_t    dest);
dbus_bool_t   _dbus_afbus_client_driver_call_waits (DBusAfbusClient *client);
void          _dbus_afbus_client_sent           (DBusAfbusClient *client,
                                                 DBusConnection  *connection,
                                                 DBusMessage     *message,
                                                 dbus_uint64_t    dest,
                                                 dbus_bool_t      counted);
dbus_bool_t   _dbus_afbus_client_from_master    (DBusAfbusClient *client,
                                                 DBusConnection  *connection,
                                                 DBusMessage     *message,
                                                 dbus_bool_t     *eaten);
void          _dbus_afbus_client_reply_received (DBusAfbusClient *client,
                                                 dbus_uint64_t    source,
                                                 dbus_uint32_t    reply_serial);
DBusMessage  *_dbus_afbus_client_next_internal  (DBusAfbusClient *client);
void          _dbus_afbus_client_internal_sent  (DBusAfbusClient *client);
int           _dbus_afbus_client_next_deadline  (DBusAfbusClient *client);
dbus_bool_t   _dbus_afbus_client_take_deadline_changed (DBusAfbusClient *client);
dbus_bool_t   _dbus_afbus_client_expire         (DBusAfbusClient *client,
                                                 DBusConnection  *connection);

DBUS_END_DECLS

#endif /* DBUS_HAVE_AFBUS */

#endif /* DBUS_BUS_AFBUS_H */
