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

DBusServer *bus_afbus_server              (BusContext     *context);
dbus_bool_t bus_afbus_check_listen        (BusContext     *context,
                                           DBusError      *error);
dbus_bool_t bus_afbus_skip_listen         (BusContext     *context,
                                           const char     *address,
                                           DBusError      *error);
dbus_bool_t bus_afbus_cmdline_addresses   (DBusList      **list,
                                           const char     *address,
                                           DBusList      **config);
DBusConnection *bus_afbus_owner           (BusContext     *context,
                                           const char     *name);
dbus_bool_t bus_afbus_connection_is_afbus (DBusConnection *connection);
dbus_bool_t bus_afbus_connection_fd       (DBusConnection *connection,
                                           int            *fd_p,
                                           dbus_uint64_t  *addr_p);
dbus_bool_t bus_afbus_connection_addr     (DBusConnection *connection,
                                           dbus_uint64_t  *addr_p);
dbus_bool_t bus_afbus_unique_name         (DBusConnection *connection,
                                           DBusString     *name,
                                           DBusError      *error);
dbus_bool_t bus_afbus_join                (DBusConnection *connection,
                                           DBusError      *error);
dbus_bool_t bus_afbus_name_addr           (const char     *name,
                                           dbus_uint64_t  *addr);
dbus_bool_t bus_afbus_name_addr_pin       (const char     *name,
                                           dbus_uint64_t  *addr);
dbus_bool_t bus_afbus_name_addr_ref       (const char     *name,
                                           dbus_uint64_t  *addr);
void        bus_afbus_name_addr_unref     (const char     *name);
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
