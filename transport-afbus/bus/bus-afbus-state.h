/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-state.h  the daemon's AF_BUS state, one per BusContext
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

#ifndef BUS_AFBUS_STATE_H
#define BUS_AFBUS_STATE_H

#include <dbus/dbus.h>
#include "bus.h"

/* A call the daemon relays that the kernel refused, with the errno it
 * refused it with, to be answered from the main loop (bus-afbus.c). */
typedef struct
{
  DBusMessage *message;
  int saved_errno;
} BusAfbusRefused;

/* Each part belongs to the file named beside it, which alone looks
 * inside it; the others reach it through the BusContext
 * (bus_context_get_afbus()), which owns the whole from bus_afbus_new()
 * to bus_afbus_free() (bus-afbus.c).  What the daemon keeps per
 * connection is in the connection's data (bus-afbus-names.c,
 * -legacy.c, -peers.c), under slots that, like dbus-daemon's own, are
 * allocated once per process. */
typedef struct BusAfbusNames BusAfbusNames;       /* bus-afbus-names.c */
typedef struct BusAfbusMatch BusAfbusMatch;       /* bus-afbus-match.c */
typedef struct BusAfbusPolicy BusAfbusPolicy;     /* bus-afbus-policy.c */
typedef struct BusAfbusPeers BusAfbusPeers;       /* bus-afbus-peers.c */
typedef struct BusAfbusLegacy BusAfbusLegacy;     /* bus-afbus-legacy.c */
typedef struct BusAfbusMonitor BusAfbusMonitor;   /* bus-afbus-monitor.c */

/* What the AF_BUS code made of a match rule an AF_BUS client added
 * (bus_match_rule_get_afbus()), which bus_afbus_rule_freed() undoes. */
#define BUS_AFBUS_RULE_KERNEL     (1u << 0)  /* a copy in the kernel
                                              * (bus-afbus-match.c) */
#define BUS_AFBUS_RULE_NAME       (1u << 1)  /* it holds the address of
                                              * its well-known sender
                                              * (bus-afbus-names.c) */
#define BUS_AFBUS_RULE_EAVESDROPS (1u << 2)  /* its connection counts as
                                              * an eavesdropper
                                              * (bus-afbus-monitor.c) */

struct BusAfbus
{
  BusAfbusNames *names;
  BusAfbusMatch *match;
  BusAfbusPolicy *policy;
  BusAfbusPeers *peers;
  BusAfbusLegacy *legacy;
  BusAfbusMonitor *monitor;
  char *skipped_listen;   /**< why an afbus: <listen> was skipped
                           *   (bus_afbus_skip_listen()), or NULL */
  int reply_timeout;      /**< the reply timeout the native clients
                           *   were told (ReplyTimeout, bus-afbus.c) */
  BusContext *context;    /**< the context it belongs to */
  DBusList *refused_calls;      /**< relayed calls the kernel refused
                                 *   (BusAfbusRefused), to be answered
                                 *   (bus-afbus.c) */
  DBusTimeout *refused_timeout; /**< answers them from the main loop */
  DBusLoop *refused_loop;       /**< the loop it is on (a reference:
                                 *   bus_context_unref() lets the
                                 *   context's go before the BusAfbus,
                                 *   and a timeout the loop still held
                                 *   then would never be freed) */
};

#endif /* BUS_AFBUS_STATE_H */
