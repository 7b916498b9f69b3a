/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-legacy.h  legacy clients bridged through AF_BUS pairs
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

#ifndef BUS_AFBUS_LEGACY_H
#define BUS_AFBUS_LEGACY_H

#include <dbus/dbus.h>
#include "connection.h"
#include "bus-afbus-state.h"

BusAfbusLegacy *bus_afbus_legacy_new          (void);
void            bus_afbus_legacy_free         (BusAfbusLegacy *bridge);
dbus_bool_t     bus_afbus_legacy_attach       (DBusConnection *connection,
                                               DBusError      *error);
void            bus_afbus_legacy_detach       (DBusConnection *connection);
dbus_bool_t     bus_afbus_legacy_is_relay     (BusContext     *context,
                                               const char     *name);
DBusConnection *bus_afbus_legacy_outgoing     (DBusConnection *connection);
void            bus_afbus_legacy_match_in_daemon (DBusConnection *connection);
dbus_bool_t     bus_afbus_legacy_matches_in_daemon (DBusConnection *connection);
DBusConnection *bus_afbus_legacy_queue        (DBusConnection *sender,
                                               DBusConnection *destination,
                                               DBusMessage    *message,
                                               dbus_uint64_t  *addr_p);
dbus_bool_t     bus_afbus_legacy_multicasts   (DBusConnection *sender,
                                               DBusMessage    *message);
dbus_bool_t     bus_afbus_legacy_multicast    (DBusConnection *sender,
                                               DBusMessage    *message,
                                               DBusError      *error);
/* (and bus_afbus_legacy_relay(), of bus-afbus.h) */

#endif /* BUS_AFBUS_LEGACY_H */
