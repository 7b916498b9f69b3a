/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-names.h  names and addresses of an AF_BUS bus
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
#ifndef BUS_AFBUS_NAMES_H
#define BUS_AFBUS_NAMES_H

#include <dbus/dbus.h>
#include <dbus/dbus-string.h>
#include "connection.h"
#include "bus-afbus-state.h"

DBusConnection *bus_afbus_owner           (BusContext     *context,
                                           const char     *name);
DBusServer *bus_afbus_server              (BusContext     *context);
dbus_bool_t bus_afbus_stop_listening      (BusContext     *context,
                                           const char     *why,
                                           DBusError      *error);

dbus_bool_t bus_afbus_connection_fd       (DBusConnection *connection,
                                           int            *fd_p,
                                           dbus_uint64_t  *addr_p);
dbus_bool_t bus_afbus_connection_addr     (DBusConnection *connection,
                                           dbus_uint64_t  *addr_p);
dbus_bool_t bus_afbus_connection_is_afbus (DBusConnection *connection);
dbus_bool_t bus_afbus_unique_name         (DBusConnection *connection,
                                           DBusString     *name,
                                           DBusError      *error);
dbus_bool_t bus_afbus_connection_set_pair (DBusConnection *connection,
                                           int             fd);
void        bus_afbus_connection_drop_pair (DBusConnection *connection);
dbus_bool_t bus_afbus_connection_is_legacy (DBusConnection *connection);
dbus_bool_t bus_afbus_connection_set_joined (DBusConnection *connection);
unsigned long *bus_afbus_connection_forwarded_lost (DBusConnection *connection);

BusAfbusNames *bus_afbus_names_new         (void);
void        bus_afbus_names_free          (BusAfbusNames  *names);
dbus_bool_t bus_afbus_name_addr           (BusAfbusNames  *names,
                                           const char     *name,
                                           dbus_uint64_t  *addr);
dbus_bool_t bus_afbus_name_addr_pin       (BusAfbusNames  *names,
                                           const char     *name,
                                           dbus_uint64_t  *addr);
dbus_bool_t bus_afbus_name_addr_ref       (BusAfbusNames  *names,
                                           const char     *name,
                                           dbus_uint64_t  *addr);
void        bus_afbus_name_addr_unref     (BusAfbusNames  *names,
                                           const char     *name);
dbus_bool_t bus_afbus_names_move          (BusTransaction *transaction,
                                           const char     *name,
                                           DBusConnection *old_conn,
                                           DBusConnection *new_conn,
                                           DBusError      *error);

#endif /* BUS_AFBUS_NAMES_H */
