/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-peers.h  peer watches: PeerGone for the peers a client
 *                    calls straight through the kernel
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

#ifndef BUS_AFBUS_PEERS_H
#define BUS_AFBUS_PEERS_H

#include <dbus/dbus.h>
#include "connection.h"
#include "bus-afbus-state.h"

BusAfbusPeers *bus_afbus_peers_new         (void);
void        bus_afbus_peers_free           (BusAfbusPeers  *peers);
/* (and the hooks of bus-afbus.h) */

/* @connection's watches end: it left, or became a monitor. */
void        bus_afbus_peers_drop           (DBusConnection *connection);
/* An owner of @name (a unique name, or a well-known name an AF_BUS
 * client owned) left the bus: PeerGone (name) to each of its watchers. */
dbus_bool_t bus_afbus_peers_gone           (BusTransaction *transaction,
                                            const char     *name,
                                            DBusError      *error);

#endif /* BUS_AFBUS_PEERS_H */
