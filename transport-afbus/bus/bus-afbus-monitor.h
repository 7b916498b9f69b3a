/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-monitor.h  monitors and eavesdroppers see the direct traffic
 *                       of AF_BUS clients
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

#ifndef BUS_AFBUS_MONITOR_H
#define BUS_AFBUS_MONITOR_H

#include <dbus/dbus.h>
#include "connection.h"
#include "signals.h"
#include "bus-afbus-state.h"

BusAfbusMonitor *bus_afbus_monitor_new           (void);
void        bus_afbus_monitor_free                (BusAfbusMonitor *m);
/* (and the monitors' functions of bus-afbus.h) */
void        bus_afbus_monitor_remove              (DBusConnection *monitor);
dbus_bool_t bus_afbus_monitor_eavesdrop_from_tap  (BusContext     *context,
                                                   DBusConnection *sender,
                                                   DBusMessage    *message);
/* AddMatch and the match rule's end (BUS_AFBUS_RULE_EAVESDROPS) */
dbus_bool_t bus_afbus_monitor_add_eavesdropper    (DBusConnection *connection,
                                                   BusMatchRule   *rule,
                                                   DBusError      *error);
void        bus_afbus_monitor_remove_eavesdropper (DBusConnection *connection,
                                                   BusMatchRule   *rule);
void        bus_afbus_monitor_drop_eavesdropper   (DBusConnection *connection);

#endif /* BUS_AFBUS_MONITOR_H */
