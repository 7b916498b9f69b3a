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

/**
 * Our SENDER in a message to a peer, as the transport writes it
 * (_dbus_afbus_client_stamp_sender()).
 */
typedef struct
{
  dbus_bool_t copied;           /**< write @c copy as the header */
  DBusHeader copy;              /**< a copy of the header with our SENDER
                                 *   in place of another one */
  int field_len;                /**< bytes of @c field to write after the
                                 *   header; 0: none */
  unsigned char prefix[16];     /**< the header's fixed part, with the
                                 *   length its fields have with @c field */
  unsigned char field[8 + DBUS_MAXIMUM_NAME_LENGTH + 1 + 7]; /**< our
                                 *   SENDER field, then the header's
                                 *   padding */
} DBusAfbusStamp;

DBusAfbusClient *_dbus_afbus_client_new         (dbus_uint64_t    own_addr);
void          _dbus_afbus_client_free           (DBusAfbusClient *client);
const char   *_dbus_afbus_client_get_name       (DBusAfbusClient *client);
dbus_uint64_t _dbus_afbus_client_route          (DBusAfbusClient *client,
                                                 DBusMessage     *message,
                                                 dbus_bool_t     *counted);
dbus_bool_t   _dbus_afbus_client_stamp_sender   (DBusAfbusClient *client,
                                                 DBusMessage     *message,
                                                 DBusAfbusStamp  *stamp);
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
