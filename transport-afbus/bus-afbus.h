/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus.h  dbus-daemon as the AF_BUS bus master
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
#ifndef BUS_AFBUS_H
#define BUS_AFBUS_H

#include <dbus/dbus.h>
#include <dbus/dbus-list.h>
#include <dbus/dbus-string.h>
#include "connection.h"
#include "bus-afbus-names.h"

BusAfbus   *bus_afbus_new                 (void);
void        bus_afbus_free                (BusAfbus       *afbus);
dbus_bool_t bus_afbus_check_listen        (BusContext     *context,
                                           DBusError      *error);
dbus_bool_t bus_afbus_skip_listen         (BusContext     *context,
                                           const char     *address,
                                           DBusError      *error);
dbus_bool_t bus_afbus_cmdline_addresses   (DBusList      **list,
                                           const char     *address,
                                           DBusList      **config);
dbus_bool_t bus_afbus_join                (DBusConnection *connection,
                                           BusTransaction *transaction,
                                           DBusError      *error);
void        bus_afbus_connection_closed   (DBusConnection *connection);
dbus_bool_t bus_afbus_rule_added          (DBusConnection *connection,
                                           BusMatchRule   *rule,
                                           DBusError      *error);
void        bus_afbus_rule_removed        (DBusConnection *connection,
                                           BusMatchRule   *rule);
dbus_bool_t bus_afbus_name_owner_changed  (BusTransaction *transaction,
                                           const char     *name,
                                           const char     *old_owner,
                                           const char     *new_owner,
                                           DBusError      *error);
dbus_bool_t bus_afbus_send_forwarded      (BusTransaction *transaction,
                                           DBusConnection *sender,
                                           const char     *name,
                                           dbus_bool_t     give_address,
                                           DBusMessage    *message,
                                           DBusError      *error);
void        bus_afbus_forwarded_after_dispatch (BusContext     *context,
                                           DBusConnection *sender,
                                           const char     *name,
                                           DBusMessage    *message);
/* Whether the kernel, not the daemon, awaits the reply to a call the
 * daemon forwards from @sender to @recipient (both AF_BUS clients, not
 * legacy ones, on a kernel that tracks replies): the callee answers
 * through the kernel, and the daemon would never see the reply. */
dbus_bool_t bus_afbus_kernel_awaits_reply (DBusConnection *sender,
                                           DBusConnection *recipient);

#endif /* BUS_AFBUS_H */
