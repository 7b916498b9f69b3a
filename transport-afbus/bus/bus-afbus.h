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
#include <dbus/dbus-sysdeps-afbus.h>
#include "connection.h"
#include "signals.h"
#include "bus-afbus-state.h"

/*
 * dbus-daemon as the master of an AF_BUS bus, as upstream's files call
 * it: the only header of the AF_BUS project they include, and these are
 * all the functions they call, grouped by the upstream file that calls
 * them.  bus-afbus.c defines them, but for those that belong to one
 * part (bus-afbus-peers.c, -legacy.c, -monitor.c, as said beside them);
 * what the AF_BUS files call of each other is in their own headers.  On
 * a system without AF_BUS, or for connections of other transports, they
 * do nothing.
 */

/* bus.c: the state the BusContext owns, listening, the configuration,
 * the security policy */
BusAfbus   *bus_afbus_new                 (void);
void        bus_afbus_free                (BusAfbus       *afbus);
dbus_bool_t bus_afbus_cmdline_addresses   (DBusList      **list,
                                           const char     *address,
                                           DBusList      **config);
dbus_bool_t bus_afbus_skip_listen         (BusContext     *context,
                                           const char     *address,
                                           DBusError      *error);
dbus_bool_t bus_afbus_config_loaded       (BusContext     *context,
                                           dbus_bool_t     is_reload,
                                           DBusError      *error);
/* bus.c: a configuration's policy, before the daemon takes it: one the
 * kernel cannot hold is refused (policy/bus-afbus-policy.c) */
dbus_bool_t bus_afbus_policy_fits         (BusContext     *context,
                                           BusPolicy      *policy,
                                           dbus_bool_t     is_reload,
                                           DBusError      *error);
/* bus.c: what bus_afbus_check_message() makes of a message, before
 * bus_context_check_security_policy() applies the policy to it */
typedef enum
{
  BUS_AFBUS_CHECK_POLICY,       /* the policy decides, as upstream */
  BUS_AFBUS_ALLOWED,            /* the bus protocol's own: allowed */
  BUS_AFBUS_DENIED              /* refused, the error set */
} BusAfbusVerdict;

BusAfbusVerdict bus_afbus_check_message   (BusContext     *context,
                                           DBusConnection *sender,
                                           DBusConnection *proposed_recipient,
                                           DBusMessage    *message,
                                           DBusConnection **queue,
                                           dbus_bool_t    *kernel_awaits_reply,
                                           DBusError      *error);

/* driver.c: a client's Hello, name owners, match rules */
dbus_bool_t bus_afbus_hello_name          (DBusConnection *connection,
                                           DBusString     *name,
                                           DBusError      *error);
dbus_bool_t bus_afbus_join                (DBusConnection *connection,
                                           BusTransaction *transaction,
                                           DBusError      *error);
dbus_bool_t bus_afbus_name_owner_changed  (BusTransaction *transaction,
                                           const char     *name,
                                           const char     *old_owner,
                                           const char     *new_owner,
                                           DBusError      *error);
dbus_bool_t bus_afbus_rule_added          (DBusConnection *connection,
                                           BusMatchRule   *rule,
                                           DBusError      *error);
/* driver.c: org.freedesktop.DBus.AF_BUS.WatchPeer (s name) and
 * UnwatchPeer (s name), handlers of the bus driver (bus-afbus-peers.c) */
dbus_bool_t bus_afbus_peers_handle_watch   (DBusConnection *connection,
                                            BusTransaction *transaction,
                                            DBusMessage    *message,
                                            DBusError      *error);
dbus_bool_t bus_afbus_peers_handle_unwatch (DBusConnection *connection,
                                            BusTransaction *transaction,
                                            DBusMessage    *message,
                                            DBusError      *error);

/* signals.c: a match rule that bus_afbus_rule_added() took is freed */
void        bus_afbus_rule_freed          (DBusConnection *connection,
                                           BusMatchRule   *rule);

/* connection.c: a connection leaves, becomes a monitor
 * (bus-afbus-monitor.c); the transaction's messages (the monitors':
 * bus-afbus-monitor.c; the legacy clients': bus-afbus-legacy.c) */
void        bus_afbus_connection_closed   (DBusConnection *connection);
dbus_bool_t bus_afbus_monitor_add         (DBusConnection *monitor,
                                           BusTransaction *transaction,
                                           DBusError      *error);
dbus_bool_t bus_afbus_monitor_before_capture (BusContext     *context,
                                           DBusConnection *sender,
                                           DBusMessage    *message);
DBusConnection *bus_afbus_legacy_relay    (DBusConnection *sender,
                                           DBusConnection *destination,
                                           DBusMessage    *message);

/* dispatch.c, activation.c: dispatching a message (the monitors first:
 * bus-afbus-monitor.c) */
void        bus_afbus_monitor_drain       (BusContext     *context);
dbus_bool_t bus_afbus_dispatch_matches    (BusContext     *context,
                                           DBusConnection *sender,
                                           DBusConnection *addressed_recipient,
                                           DBusMessage    *message,
                                           dbus_bool_t    *done,
                                           DBusError      *error);
void        bus_afbus_forwarded_after_dispatch (BusContext     *context,
                                           DBusConnection *sender,
                                           const char     *name,
                                           DBusMessage    *message);
dbus_bool_t bus_afbus_send_forwarded      (BusTransaction *transaction,
                                           DBusConnection *sender,
                                           const char     *name,
                                           dbus_bool_t     give_address,
                                           DBusMessage    *message,
                                           DBusError      *error);

#endif /* BUS_AFBUS_H */
