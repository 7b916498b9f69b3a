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
#include "bus-afbus-state.h"

/*
 * The daemon's AF_BUS code as upstream's files call it: this header is
 * the only one of the AF_BUS project that they include.  The functions
 * are grouped by the file that defines them; what those files call of
 * each other is in their own headers.
 */

/* bus-afbus.c: the state, listening, a client's life on the bus */
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
dbus_bool_t bus_afbus_hello_name          (DBusConnection *connection,
                                           DBusString     *name,
                                           DBusError      *error);
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

/* bus-afbus-names.c: a match rule gives back the address of the name it
 * held (bus_match_rule_set_afbus_holds_name()) */
void        bus_afbus_name_addr_unref     (BusAfbusNames  *names,
                                           const char     *name);

/* bus-afbus-match.c: the kernel's nfdbus family */
/* Opens the netlink socket to the kernel's match rules and policy now if
 * the daemon listens on AF_BUS: call it before dropping privileges.
 * Logs a failure; the first Hello tries again. */
void        bus_afbus_nfdbus_open_early   (BusContext     *context);
/* Once the daemon listens and knows its limits: the kernel takes charge
 * of the AF_BUS bus, or the daemon logs why not and stops listening on
 * it (FALSE, with @error, only when no other address is left). */
dbus_bool_t bus_afbus_check_kernel        (BusContext     *context,
                                           DBusError      *error);

/* policy/bus-afbus-policy.c: the bus policy of AF_BUS clients in the
 * kernel */
dbus_bool_t bus_afbus_policy_join         (DBusConnection *connection,
                                           DBusError      *error);
void        bus_afbus_policy_reload_begin (BusContext     *context);
void        bus_afbus_policy_reload_end   (BusContext     *context);

/* bus-afbus-peers.c: org.freedesktop.DBus.AF_BUS.WatchPeer (s name) and
 * UnwatchPeer (s name), handlers of the bus driver */
dbus_bool_t bus_afbus_peers_handle_watch   (DBusConnection *connection,
                                            BusTransaction *transaction,
                                            DBusMessage    *message,
                                            DBusError      *error);
dbus_bool_t bus_afbus_peers_handle_unwatch (DBusConnection *connection,
                                            BusTransaction *transaction,
                                            DBusMessage    *message,
                                            DBusError      *error);

/* bus-afbus-legacy.c: legacy clients bridged onto the AF_BUS bus */
DBusConnection *bus_afbus_legacy_queue    (DBusConnection *sender,
                                           DBusConnection *destination,
                                           DBusMessage    *message,
                                           dbus_uint64_t  *addr_p);
DBusConnection *bus_afbus_legacy_relay    (DBusConnection *sender,
                                           DBusConnection *destination,
                                           DBusMessage    *message);
dbus_bool_t bus_afbus_legacy_multicasts   (DBusConnection *sender,
                                           DBusMessage    *message);
dbus_bool_t bus_afbus_legacy_multicast    (DBusConnection *sender,
                                           DBusMessage    *message,
                                           DBusError      *error);

/* bus-afbus-monitor.c: monitors and eavesdroppers see the direct
 * traffic */
dbus_bool_t bus_afbus_monitor_add         (DBusConnection *monitor,
                                           DBusError      *error);
void        bus_afbus_monitor_remove      (DBusConnection *monitor);
void        bus_afbus_monitor_committed   (DBusConnection *monitor);
dbus_bool_t bus_afbus_monitor_eavesdrop_from_tap (BusContext     *context,
                                           DBusConnection *sender,
                                           DBusMessage    *message);
void        bus_afbus_monitor_drain       (BusContext     *context);
dbus_bool_t bus_afbus_monitor_before_capture (BusContext     *context,
                                           DBusConnection *sender,
                                           DBusMessage    *message);

#endif /* BUS_AFBUS_H */
