/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-policy.h  D-Bus policy for AF_BUS clients in the kernel (nfdbus)
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

#ifndef BUS_AFBUS_POLICY_H
#define BUS_AFBUS_POLICY_H

#include <dbus/dbus.h>
#include "bus.h"
#include "bus-afbus-state.h"

BusAfbusPolicy *bus_afbus_policy_new      (void);
void        bus_afbus_policy_free         (BusAfbusPolicy *policy);
/* Hello (bus_afbus_join()), and a monitor that is none after all */
dbus_bool_t bus_afbus_policy_join         (DBusConnection *connection,
                                           DBusError      *error);
dbus_bool_t bus_afbus_policy_monitor      (DBusConnection *connection,
                                           DBusError      *error);
/* ReloadConfig, once every connection has its new BusClientPolicy */
dbus_bool_t bus_afbus_policy_reload       (BusContext     *context,
                                           DBusError      *error);

#endif /* BUS_AFBUS_POLICY_H */
