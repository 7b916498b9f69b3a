/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-match.h  match rules of AF_BUS clients in the kernel (nfdbus)
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

#ifndef BUS_AFBUS_MATCH_H
#define BUS_AFBUS_MATCH_H

#include <dbus/dbus.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include "bus.h"
#include "connection.h"
#include "signals.h"
#include "bus-afbus-state.h"

BusAfbusMatch *bus_afbus_match_new (void);
void        bus_afbus_match_free   (BusAfbusMatch  *match);
dbus_bool_t bus_afbus_match_manage (DBusConnection *connection,
                                    DBusError      *error);
/* Once the daemon listens and knows its limits: the kernel takes charge
 * of the AF_BUS bus (the nfdbus socket opened now, before the daemon
 * drops its privileges), or the daemon logs why not and stops listening
 * on it (FALSE, with @error, only when no other address is left). */
dbus_bool_t bus_afbus_check_kernel (BusContext     *context,
                                    DBusError      *error);
/* ReloadConfig: the buses take the new reply limits. */
dbus_bool_t bus_afbus_match_reload (BusContext     *context,
                                    DBusError      *error);
#ifdef DBUS_HAVE_AFBUS
struct nfdbus;
struct nfdbus_bus;
struct nfdbus *bus_afbus_nfdbus         (BusContext        *context,
                                         DBusError         *error);
dbus_bool_t    bus_afbus_nfdbus_error   (BusContext        *context,
                                         DBusError         *error,
                                         int                err,
                                         const char        *what);
dbus_bool_t    bus_afbus_connection_bus (DBusConnection    *connection,
                                         struct nfdbus_bus *bus,
                                         dbus_uint64_t     *peer);
#endif
/* AddMatch: the kernel's copy of @rule; bus_afbus_remove_match() when
 * the rule is freed.  The rule's BUS_AFBUS_RULE_KERNEL and
 * BUS_AFBUS_RULE_NAME (bus-afbus-state.h) say what there is to undo. */
dbus_bool_t bus_afbus_add_match    (DBusConnection *connection,
                                    BusMatchRule   *rule,
                                    DBusError      *error);
void        bus_afbus_remove_match (DBusConnection *connection,
                                    BusMatchRule   *rule);
/* The connection becomes a monitor, or does not after all: the kernel
 * awaits no reply to the copies of calls the daemon sends it. */
dbus_bool_t bus_afbus_match_set_monitor (DBusConnection *connection,
                                         dbus_bool_t     monitor,
                                         DBusError      *error);

#endif /* BUS_AFBUS_MATCH_H */
