/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-monitor.c  monitors and eavesdroppers see the direct traffic
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

#include <config.h>
#include "bus-afbus-monitor.h"
#include "bus-afbus.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-list.h>
#include <dbus/dbus-mainloop.h>
#include <dbus/dbus-message-internal.h>
#include <dbus/dbus-server-afbus.h>
#include <dbus/dbus-watch.h>

#include "bus.h"
#include "bus-afbus-names.h"
#include "bus-afbus-legacy.h"
#include "bus-afbus-match.h"
#include "bus-afbus-peers.h"
#include "bus-afbus-policy.h"
#include "dispatch.h"
#include "services.h"
#include "signals.h"
#include "utils.h"

/*
 * Monitors (BecomeMonitor) on a bus with AF_BUS clients: AF_BUS clients
 * send most of their messages to each other through the kernel, which
 * the daemon never sees.  So while there is a monitor, the daemon has
 * the kernel copy the whole bus to it: it connects a socket of its own to
 * its bus (the "tap", which never joins), and makes it an eavesdropper
 * with BUS_SET_EAVESDROP on its accepted side (af_bus.rst,
 * "Eavesdropping").  The kernel queues the tap a copy of every message on
 * the bus, under the bus lock, so in the bus's total order, with the
 * sender's address.  The tap closes when the last monitor leaves: then
 * the bus costs nothing more than without monitors.
 *
 * Each message then reaches the monitors once, through the monitors'
 * match rules (bus_transaction_capture(), as upstream):
 * - What an AF_BUS client sends (to a peer, as a multicast, or to the
 *   daemon) comes from the tap, with its SENDER set to the client's
 *   unique name (the name of the address the kernel gives, as the
 *   daemon names AF_BUS clients), attributed to the client's connection.
 *   The daemon does not capture what it receives from AF_BUS clients
 *   itself (bus_afbus_monitor_before_capture()).
 * - What the daemon sends (its replies, errors and signals, messages it
 *   forwards to AF_BUS clients, the copies of a signal it sends each
 *   recipient) and what legacy clients send (bus-afbus-legacy.c: through
 *   the daemon, which then writes it out of the legacy client's own
 *   AF_BUS socket, C1) is captured by the daemon as upstream does, once,
 *   when it sends or dispatches it; the tap leaves out messages from the
 *   master (address 0) and from C1 sockets.
 *
 * Order: the tap's messages keep the kernel's order.  Before the daemon
 * dispatches a message, and before it captures one, it reads everything
 * the tap has (bus_afbus_monitor_drain()), so what it captures comes
 * after every message the kernel carried before: its reply to a call
 * after the call, NameOwnerChanged after the RequestName, a legacy
 * client's message after what the kernel carried before the daemon
 * dispatched it.  A message the daemon sends is captured when it is
 * queued, before it is written to the kernel: messages the kernel
 * carries in between come after it.
 *
 * Eavesdroppers: a connection with an eavesdrop='true' match rule
 * (AddMatch; dbus-monitor falls back to that when BecomeMonitor is
 * refused) gets, as from dbus-daemon, the messages with a destination
 * that its rule matches, addressed to others.  The tap is open while
 * there is such a rule too, and the eavesdroppers get what AF_BUS
 * clients send to a destination from there, through the daemon's own
 * code (bus_dispatch_match_recipients(): the same matching and policy
 * checks, eavesdrop='true' receive rules included), right after the
 * monitors.  So that nobody gets such a message twice, the daemon then
 * leaves the eavesdroppers out when it dispatches a message an AF_BUS
 * client sent it (to the daemon itself, or to forward)
 * (bus_afbus_monitor_eavesdrop_from_tap()); what the daemon and legacy
 * clients send reaches eavesdroppers through the daemon, as upstream.
 * What has no destination (signals for everybody) needs no tap: the
 * kernel multicasts it to AF_BUS eavesdroppers and legacy clients' C1
 * by their match rules, eavesdropping or not.  A message whose sender
 * has no unique name yet when the daemon reads its copy (its Hello) or
 * has left already goes to the monitors only.
 *
 * Loss: the tap's queue is as long as the limit max_afbus_monitor_queue
 * says (BUS_SET_MAXQLEN; by default 1048576 messages, the longest the
 * kernel allows).  The kernel never holds up the bus for an
 * eavesdropper: when the queue is full it drops the copy and counts it,
 * and with SO_RXQ_OVFL set every later message the tap reads says how
 * many were dropped so far.  Monitors that missed messages are told so
 * by being disconnected (and the daemon logs a warning), as are the
 * eavesdroppers; so is every monitor and eavesdropper if the tap fails.
 * A new monitor or eavesdropping rule gets a new tap.
 */

#ifdef DBUS_HAVE_AFBUS

#include <sys/socket.h>

/* Messages read from the tap per main loop wakeup: then the loop's other
 * sources get their turn. */
#define TAP_READS_PER_WAKEUP 256

typedef struct
{
  BusContext        *context;
  DBusSocket         client;      /**< the eavesdropper */
  DBusSocket         accepted;    /**< its accepted socket */
  DBusWatch         *watch;
  DBusMessageLoader *loader;
  DBusString         name;        /**< the sender's unique name */
  dbus_uint64_t      source;      /**< and its address */
  dbus_uint32_t      drops;       /**< SO_RXQ_OVFL: copies dropped so far */
} BusAfbusTap;

/* The monitors and eavesdroppers, and the tap (bus-afbus-state.h). */
struct BusAfbusMonitor
{
  BusAfbusTap *tap;             /**< NULL while nobody needs it */
  DBusList *monitors;           /**< DBusConnection *: each once */
  DBusList *eavesdroppers;      /**< DBusConnection *: once per
                                 *   eavesdropping rule */
  dbus_bool_t replaying;        /**< the tap's own captures are under way */
};

static void tap_close (BusAfbusMonitor *m);

BusAfbusMonitor *
bus_afbus_monitor_new (void)
{
  return dbus_new0 (BusAfbusMonitor, 1);
}

/* Every monitor and eavesdropper has left by now, and the tap closed
 * with the last (bus_afbus_connection_closed()). */
void
bus_afbus_monitor_free (BusAfbusMonitor *m)
{
  _dbus_assert (m->monitors == NULL && m->eavesdroppers == NULL);
  _dbus_list_clear (&m->monitors);
  _dbus_list_clear (&m->eavesdroppers);
  tap_close (m);
  dbus_free (m);
}

static BusAfbusMonitor *
monitor_of (BusContext *context)
{
  return bus_context_get_afbus (context)->monitor;
}

/* Closes each connection of @list that is still connected (an
 * eavesdropper is on it once per rule); returns how many it closed.
 * Connections leave the list only when their disconnection is handled,
 * later. */
static int
close_all (DBusList **list)
{
  DBusList *link;
  int n = 0;

  for (link = _dbus_list_get_first_link (list); link != NULL;
       link = _dbus_list_get_next_link (list, link))
    {
      if (dbus_connection_get_is_connected (link->data))
        {
          dbus_connection_close (link->data);
          n++;
        }
    }

  return n;
}

/* The monitors and eavesdroppers missed messages, or will: they learn it
 * by being disconnected.  The warning is logged once for them, not again
 * for the copies dropped while they were leaving. */
static void
monitors_lost (BusContext *context,
               const char *why)
{
  BusAfbusMonitor *m = monitor_of (context);
  int n = close_all (&m->monitors);

  n += close_all (&m->eavesdroppers);
  if (n > 0)
    bus_context_log (context, DBUS_SYSTEM_LOG_WARNING,
                     "Disconnected the monitors and eavesdroppers of the"
                     " AF_BUS bus: %s", why);
}

/* Whether @sender's messages reach monitors and eavesdroppers from the
 * tap: it is an AF_BUS client, not a legacy one. */
static dbus_bool_t
sends_through_kernel (DBusConnection *sender)
{
  return sender != NULL && !bus_afbus_connection_is_legacy (sender) &&
    bus_afbus_connection_is_afbus (sender);
}

/* The AF_BUS library's own traffic with the daemon, which monitors do
 * not see (dbus-daemon's clients have none). */

/* The daemon's signals to a client's library: Forwarded, PeerGone,
 * ReplyTimeout. */
static dbus_bool_t
is_daemon_afbus_signal (DBusMessage *message)
{
  return dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_SIGNAL &&
    dbus_message_has_interface (message, DBUS_INTERFACE_AFBUS);
}

/* A client's WatchPeer or UnwatchPeer (bus-afbus-peers.c), or any other
 * call to the driver on org.freedesktop.DBus.AF_BUS; it comes from the
 * tap, which then shows it to no eavesdropper either. */
static dbus_bool_t
is_peer_watch_call (DBusMessage *message)
{
  return dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
    dbus_message_has_interface (message, DBUS_INTERFACE_AFBUS) &&
    dbus_message_has_destination (message, DBUS_SERVICE_DBUS);
}

/* Whether the library of an AF_BUS client sends @message to the daemon
 * (a call to the bus driver), rather than to its peers. */
static dbus_bool_t
is_to_daemon (DBusMessage *message)
{
  const char *dest = dbus_message_get_destination (message);

  if (dest != NULL)
    return strcmp (dest, DBUS_SERVICE_DBUS) == 0;
  return dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL;
}

/* The monitor at @addr, or NULL. */
static DBusConnection *
monitor_at (BusAfbusMonitor *m,
            dbus_uint64_t    addr)
{
  DBusList *link;
  dbus_uint64_t a;

  for (link = _dbus_list_get_first_link (&m->monitors); link != NULL;
       link = _dbus_list_get_next_link (&m->monitors, link))
    if (bus_afbus_connection_addr (link->data, &a) && a == addr)
      return link->data;

  return NULL;
}

/* A copy of an AF_BUS client's message, for the monitors and, when it
 * has a destination, the eavesdroppers.  Without memory they miss it. */
static void
replay (BusAfbusTap *t,
        DBusMessage *message)
{
  const char *name = _dbus_string_get_const_data (&t->name);
  BusAfbusMonitor *m = monitor_of (t->context);
  DBusError error = DBUS_ERROR_INIT;
  BusTransaction *transaction;
  DBusConnection *monitor, *sender, *recipient;

  /* As bus_dispatch() does; the sender is who the kernel says.  A
   * client not yet named (its Hello) counts as no connection. */
  if (!_dbus_message_remove_unknown_fields (message) ||
      !dbus_message_set_container_instance (message, NULL) ||
      !dbus_message_set_sender (message, name))
    goto oom;

  /* (Whether or not its sender is still on the bus: one that left
   * before the daemon read its calls is no longer known here.) */
  if (is_peer_watch_call (message))
    return;
  /* A monitor may send nothing, and no monitor sees what it sent.  What
   * it sends the daemon closes it there (bus_dispatch()); the kernel
   * refused anything else (it has no policy: bus_afbus_policy_monitor()),
   * and the daemon closes it here, as dbus-daemon would have.  (A
   * monitor has lost even its unique name.) */
  monitor = monitor_at (m, t->source);
  if (monitor != NULL)
    {
      if (!is_to_daemon (message) && dbus_connection_get_is_connected (monitor))
        {
          bus_context_log (t->context, DBUS_SYSTEM_LOG_SECURITY,
                           "Monitoring connection %s sent a message to its"
                           " peers (type=\"%s\" interface=\"%s\""
                           " member=\"%s\"), which monitors may not do;"
                           " closing it", name,
                           dbus_message_type_to_string (dbus_message_get_type (message)),
                           dbus_message_get_interface (message) != NULL ?
                           dbus_message_get_interface (message) : "(unset)",
                           dbus_message_get_member (message) != NULL ?
                           dbus_message_get_member (message) : "(unset)");
          dbus_connection_close (monitor);
        }
      return;
    }

  sender = bus_afbus_owner (t->context, name);
  recipient = bus_afbus_owner (t->context,
                               dbus_message_get_destination (message));

  transaction = bus_transaction_new (t->context);
  if (transaction == NULL)
    goto oom;

  m->replaying = TRUE;
  if (!bus_transaction_capture (transaction, sender, recipient, message))
    {
      m->replaying = FALSE;
      bus_transaction_cancel_and_free (transaction);
      goto oom;
    }

  /* The kernel gave it to its recipient; the eavesdroppers get it from
   * here.  What was queued for some before a failure still goes. */
  if (bus_afbus_monitor_eavesdrop_from_tap (t->context, sender, message) &&
      !bus_dispatch_match_recipients (transaction, sender, recipient,
                                      message, &error))
    {
      bus_context_log (t->context, DBUS_SYSTEM_LOG_WARNING,
                       "Cannot show eavesdroppers a message from %s: %s",
                       name, error.message);
      dbus_error_free (&error);
    }
  m->replaying = FALSE;

  bus_transaction_execute_and_free (transaction);
  return;

 oom:
  bus_context_log (t->context, DBUS_SYSTEM_LOG_WARNING,
                   "No memory to show monitors a message from %s", name);
}

/* Reads the next message, @len bytes long, into the loader, with its
 * fds; *ok is FALSE if it was not read whole (it is lost).  Returns FALSE
 * on OOM (the message stays in the kernel). */
static dbus_bool_t
read_message (BusAfbusTap *t,
              int          len,
              dbus_bool_t *ok)
{
  DBusString *buffer;
  dbus_uint64_t source;
  int *fds = NULL;
  unsigned int n_fds = 0;
  int bytes, saved_errno;

  _dbus_message_loader_get_buffer (t->loader, &buffer, NULL, NULL);
#ifdef HAVE_UNIX_FD_PASSING
  if (!_dbus_message_loader_get_unix_fds (t->loader, &fds, &n_fds))
    {
      _dbus_message_loader_return_buffer (t->loader, buffer);
      return FALSE;
    }
#endif

  /* (No fds come back on failure.) */
  bytes = _dbus_afbus_recv_datagram (t->client.fd, len, buffer, fds, &n_fds,
                                     &source, NULL);
  saved_errno = errno;

#ifdef HAVE_UNIX_FD_PASSING
  _dbus_message_loader_return_unix_fds (t->loader, fds, n_fds);
#endif
  _dbus_message_loader_return_buffer (t->loader, buffer);

  if (bytes < 0 && saved_errno == ENOMEM)
    return FALSE;
  *ok = (bytes == len);
  return TRUE;
}

/* The loader after a datagram that was not one whole message. */
static dbus_bool_t
reset_loader (BusAfbusTap *t)
{
  _dbus_message_loader_unref (t->loader);
  t->loader = _dbus_message_loader_new ();
  return t->loader != NULL;
}

/* Handles the next message of the tap: 1 if there was one, 0 if none
 * is left, -1 if the tap failed (it is closed then). */
static int
tap_read_one (BusAfbusMonitor *m)
{
  union {
    struct cmsghdr hdr;
    char buf[CMSG_SPACE (sizeof (dbus_uint32_t))];
  } cmsgbuf;
  struct sockaddr_bus sa;
  struct cmsghdr *cm;
  struct msghdr msg;
  BusAfbusTap *t = m->tap;
  DBusMessage *message, *extra;
  dbus_uint64_t source;
  dbus_bool_t whole;
  int len, bytes;

  /* Who sent the next message, its size and the drop count, without
   * taking it. */
  _DBUS_ZERO (msg);
  _DBUS_ZERO (sa);
  _DBUS_ZERO (cmsgbuf);
  msg.msg_name = &sa;
  msg.msg_namelen = sizeof (sa);
  msg.msg_control = cmsgbuf.buf;
  msg.msg_controllen = sizeof (cmsgbuf.buf);
  do
    len = recvmsg (t->client.fd, &msg, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  while (len < 0 && errno == EINTR);

  if (len < 0 && errno == EAGAIN)
    return 0;
  if (len < 0 || msg.msg_namelen == 0)
    {
      DBusServer *server = bus_afbus_server (t->context);
      char why[128];

      /* The daemon closing its bus as it exits (bus_context_shutdown())
       * ends the tap too; the monitors lose nothing they could get. */
      if (server == NULL || !dbus_server_get_is_connected (server))
        {
          tap_close (m);
          return -1;
        }

      snprintf (why, sizeof (why), "the kernel's copy of the bus failed: %s",
                len < 0 ? _dbus_strerror (errno) : "end of file");
      monitors_lost (t->context, why);
      tap_close (m);
      return -1;
    }

  for (cm = CMSG_FIRSTHDR (&msg); cm != NULL; cm = CMSG_NXTHDR (&msg, cm))
    {
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL)
        {
          dbus_uint32_t drops;

          memcpy (&drops, CMSG_DATA (cm), sizeof (drops));
          if (drops != t->drops)
            {
              char why[128];

              snprintf (why, sizeof (why),
                        "they missed %u messages (the kernel's queue of"
                        " copies for them was full)", drops - t->drops);
              t->drops = drops;
              monitors_lost (t->context, why);
            }
        }
    }

  source = sa.sbus_addr.s_addr;
  t->source = source;
  _dbus_string_set_length (&t->name, 0);
  if (source == DBUS_AFBUS_MASTER ||
      !_dbus_afbus_unique_name_from_addr (source, &t->name) ||
      bus_afbus_legacy_is_relay (t->context,
                                 _dbus_string_get_const_data (&t->name)))
    {
      /* The daemon's and legacy clients' messages: it captured them
       * itself.  (Without memory for the name, a client's is lost.)  The
       * kernel closes the fds of a message read without room for them. */
      do
        bytes = recv (t->client.fd, NULL, 0, MSG_DONTWAIT | MSG_TRUNC);
      while (bytes < 0 && errno == EINTR);
      return 1;
    }

  if (!read_message (t, len, &whole))
    {
      /* Without memory: the message stays in the kernel; the watch
       * calls again. */
      _dbus_wait_for_memory ();
      return 1;
    }

  if (!whole || !_dbus_message_loader_queue_messages (t->loader) ||
      _dbus_message_loader_get_is_corrupted (t->loader))
    {
      /* Not one D-Bus message (the authentication of a client, say),
       * or no memory to look at it. */
      _dbus_verbose ("AF_BUS monitors: not a message from %s\n",
                     _dbus_string_get_const_data (&t->name));
      if (!reset_loader (t))
        {
          monitors_lost (t->context, "no memory");
          tap_close (m);
          return -1;
        }
      return 1;
    }

  message = _dbus_message_loader_pop_message (t->loader);
  extra = _dbus_message_loader_pop_message (t->loader);
  if (message == NULL || extra != NULL)
    {
      /* Part of a message, or more than one: not a client's datagram. */
      if (message != NULL)
        dbus_message_unref (message);
      if (extra != NULL)
        dbus_message_unref (extra);
      if (!reset_loader (t))
        {
          monitors_lost (t->context, "no memory");
          tap_close (m);
          return -1;
        }
      return 1;
    }

  replay (t, message);
  dbus_message_unref (message);
  return 1;
}

/**
 * Shows the monitors every message the kernel copied to the tap so far.
 */
void
bus_afbus_monitor_drain (BusContext *context)
{
  BusAfbusMonitor *m = monitor_of (context);

  if (m->replaying)
    return;

  while (m->tap != NULL && tap_read_one (m) > 0)
    ;
}

static dbus_bool_t
tap_watch (DBusWatch    *watch,
           unsigned int  flags,
           void         *data)
{
  BusAfbusMonitor *m = data;
  int i;

  for (i = 0; i < TAP_READS_PER_WAKEUP && m->tap != NULL; i++)
    if (tap_read_one (m) <= 0)
      break;

  return TRUE;
}

/* With neither monitors nor eavesdroppers left, nobody needs the tap. */
static void
tap_close_if_unused (BusAfbusMonitor *m)
{
  if (m->monitors == NULL && m->eavesdroppers == NULL)
    tap_close (m);
}

static void
tap_close (BusAfbusMonitor *m)
{
  BusAfbusTap *t = m->tap;
  DBusLoop *loop;

  if (t == NULL)
    return;
  m->tap = NULL;

  if (t->watch != NULL)
    {
      /* (none once the daemon is finalizing its context) */
      loop = bus_context_get_loop (t->context);
      if (loop != NULL)
        _dbus_loop_remove_watch (loop, t->watch);
      _dbus_watch_invalidate (t->watch);
      _dbus_watch_unref (t->watch);
    }
  if (t->loader != NULL)
    _dbus_message_loader_unref (t->loader);
  _dbus_string_free (&t->name);
  if (_dbus_socket_is_valid (t->client))
    _dbus_close_socket (t->client, NULL);
  if (_dbus_socket_is_valid (t->accepted))
    _dbus_close_socket (t->accepted, NULL);
  dbus_free (t);
  _dbus_verbose ("AF_BUS monitors: the tap is closed\n");
}

static dbus_bool_t
tap_open (BusContext *context,
          DBusError  *error)
{
  BusAfbusMonitor *m = monitor_of (context);
  DBusServer *server = bus_afbus_server (context);
  BusAfbusTap *t;
  int qlen = bus_context_get_max_afbus_monitor_queue (context), one = 1;

  if (m->tap != NULL || server == NULL)
    return TRUE;

  t = dbus_new0 (BusAfbusTap, 1);
  if (t == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  t->context = context;
  _dbus_socket_invalidate (&t->client);
  _dbus_socket_invalidate (&t->accepted);
  if (!_dbus_string_init (&t->name))
    {
      dbus_free (t);
      BUS_SET_OOM (error);
      return FALSE;
    }
  m->tap = t;

  if (!_dbus_server_afbus_connect_self (server, &t->client, &t->accepted,
                                        error))
    goto failed;

  if (setsockopt (t->accepted.fd, SOL_BUS, BUS_SET_MAXQLEN,
                  &qlen, sizeof (qlen)) < 0 ||
      setsockopt (t->client.fd, SOL_SOCKET, SO_RXQ_OVFL,
                  &one, sizeof (one)) < 0 ||
      setsockopt (t->accepted.fd, SOL_BUS, BUS_SET_EAVESDROP, NULL, 0) < 0)
    {
      dbus_set_error (error, _dbus_error_from_errno (errno),
                      "Cannot have the kernel copy the AF_BUS bus"
                      " for monitors: %s", _dbus_strerror (errno));
      goto failed;
    }

  t->loader = _dbus_message_loader_new ();
  t->watch = _dbus_watch_new (t->client.fd, DBUS_WATCH_READABLE, TRUE,
                              tap_watch, m, NULL);
  if (t->loader == NULL || t->watch == NULL ||
      !_dbus_loop_add_watch (bus_context_get_loop (context), t->watch))
    {
      if (t->watch != NULL)
        {
          _dbus_watch_invalidate (t->watch);
          _dbus_watch_unref (t->watch);
          t->watch = NULL;
        }
      BUS_SET_OOM (error);
      goto failed;
    }

  _dbus_verbose ("AF_BUS monitors: the tap is open\n");
  return TRUE;

 failed:
  tap_close (m);
  return FALSE;
}

/* The transaction of BecomeMonitor is over (executed, or cancelled): a
 * connection that did not become a monitor after all (no memory to give
 * up its names, or the kernel refused a move of their addresses) is no
 * monitor for the kernel either. */
static void
monitor_add_over (void *data)
{
  DBusConnection *connection = data;

  if (!bus_connection_is_monitor (connection))
    bus_afbus_monitor_remove (connection);
  dbus_connection_unref (connection);
}

/**
 * A connection becomes a monitor (BecomeMonitor, within @transaction):
 * on an AF_BUS bus the kernel copies the bus for the monitors from now
 * on.  Undone when @transaction is over if the connection did not become
 * a monitor after all.  Its match rules, freed when it becomes one,
 * leave the kernel and the eavesdroppers with it (bus_afbus_rule_freed()):
 * a monitor gets the signals it wants from the daemon's copies.
 */
dbus_bool_t
bus_afbus_monitor_add (DBusConnection *monitor,
                       BusTransaction *transaction,
                       DBusError      *error)
{
  BusContext *context = bus_connection_get_context (monitor);
  BusAfbusMonitor *m = monitor_of (context);

  if (!_dbus_list_append (&m->monitors, monitor))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  if (!tap_open (context, error))
    {
      _dbus_list_remove_last (&m->monitors, monitor);
      return FALSE;
    }

  /* Before its first copy of a call: the kernel awaits no reply to it
   * (bus-afbus-match.c); and it sends nothing to its peers
   * (bus-afbus-policy.c). */
  if (!bus_afbus_match_set_monitor (monitor, TRUE, error) ||
      !bus_afbus_policy_monitor (monitor, error))
    {
      bus_afbus_monitor_remove (monitor);
      return FALSE;
    }

  /* Its library's peer watches end: their PeerGone would have it answer
   * UnwatchPeer, which a monitor may not send (its calls get no
   * NoReply, as dbus-daemon drops a new monitor's pending replies).  A
   * monitor that does not become one after all (no memory) has lost
   * them: its calls to peers that leave wait for their own timeouts. */
  bus_afbus_peers_drop (monitor);

  if (!bus_transaction_add_cancel_hook (transaction, NULL,
                                        dbus_connection_ref (monitor),
                                        monitor_add_over))
    {
      dbus_connection_unref (monitor);
      bus_afbus_monitor_remove (monitor);
      BUS_SET_OOM (error);
      return FALSE;
    }

  return TRUE;
}

/**
 * A monitor leaves (or did not become one after all); with the last
 * monitor and eavesdropping rule the tap closes.
 */
void
bus_afbus_monitor_remove (DBusConnection *monitor)
{
  BusAfbusMonitor *m = monitor_of (bus_connection_get_context (monitor));

  /* A monitor that leaves takes its mark along; one that did not become
   * a monitor after all (no memory) loses it. */
  if (_dbus_list_remove_last (&m->monitors, monitor) &&
      dbus_connection_get_is_connected (monitor))
    {
      bus_afbus_match_set_monitor (monitor, FALSE, NULL);
      bus_afbus_policy_join (monitor, NULL);
    }
  tap_close_if_unused (m);
}

/**
 * AddMatch: an eavesdropping @rule makes @connection an eavesdropper,
 * and has the kernel copy the bus for it.  Other rules: nothing to do.
 */
dbus_bool_t
bus_afbus_monitor_add_eavesdropper (DBusConnection *connection,
                                    BusMatchRule   *rule,
                                    DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  BusAfbusMonitor *m = monitor_of (context);

  if (!bus_match_rule_get_client_is_eavesdropping (rule))
    return TRUE;

  if (!_dbus_list_append (&m->eavesdroppers, connection))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  bus_match_rule_set_afbus (rule, bus_match_rule_get_afbus (rule) |
                                  BUS_AFBUS_RULE_EAVESDROPS);

  if (!tap_open (context, error))
    {
      bus_afbus_monitor_remove_eavesdropper (connection, rule);
      return FALSE;
    }

  return TRUE;
}

/**
 * An eavesdropping rule of @connection is gone (RemoveMatch, AddMatch
 * failed after all, the connection became a monitor: the rule was
 * freed).  A connection that left stays an eavesdropper until
 * bus_afbus_connection_closed(), as it was before.
 */
void
bus_afbus_monitor_remove_eavesdropper (DBusConnection *connection,
                                       BusMatchRule   *rule)
{
  BusAfbusMonitor *m = monitor_of (bus_connection_get_context (connection));
  unsigned int state = bus_match_rule_get_afbus (rule);

  if (!(state & BUS_AFBUS_RULE_EAVESDROPS))
    return;
  bus_match_rule_set_afbus (rule, state & ~BUS_AFBUS_RULE_EAVESDROPS);

  if (!dbus_connection_get_is_connected (connection))
    return;
  _dbus_list_remove_last (&m->eavesdroppers, connection);
  tap_close_if_unused (m);
}

/**
 * All match rules of @connection are gone: it left, or became a monitor.
 */
void
bus_afbus_monitor_drop_eavesdropper (DBusConnection *connection)
{
  BusAfbusMonitor *m = monitor_of (bus_connection_get_context (connection));

  while (_dbus_list_remove (&m->eavesdroppers, connection))
    ;
  tap_close_if_unused (m);
}

/**
 * Whether the eavesdroppers get @message, which @sender sent, from the
 * tap: then replay() gives it to them, and the daemon leaves them out if
 * it dispatches the message itself (sent to it, or to forward).
 */
dbus_bool_t
bus_afbus_monitor_eavesdrop_from_tap (BusContext     *context,
                                      DBusConnection *sender,
                                      DBusMessage    *message)
{
  BusAfbusMonitor *m = monitor_of (context);

  return m->tap != NULL && m->eavesdroppers != NULL &&
    dbus_message_get_destination (message) != NULL &&
    sends_through_kernel (sender);
}

/**
 * Whether the daemon captures @p message from @p sender for monitors
 * (#FALSE: it reaches them from the kernel, being an AF_BUS client's,
 * or it is the AF_BUS library's own traffic).  When it does, what the
 * kernel carried until now goes first.
 */
dbus_bool_t
bus_afbus_monitor_before_capture (BusContext     *context,
                                  DBusConnection *sender,
                                  DBusMessage    *message)
{
  BusAfbusMonitor *m = monitor_of (context);

  if (m->replaying)
    return TRUE;

  if (sender == NULL && is_daemon_afbus_signal (message))
    return FALSE;

  if (m->tap == NULL)
    return TRUE;

  if (sends_through_kernel (sender))
    return FALSE;

  bus_afbus_monitor_drain (context);
  return TRUE;
}

#else /* !DBUS_HAVE_AFBUS */

struct BusAfbusMonitor
{
  int unused;
};

BusAfbusMonitor *
bus_afbus_monitor_new (void)
{
  return dbus_new0 (BusAfbusMonitor, 1);
}

void
bus_afbus_monitor_free (BusAfbusMonitor *m)
{
  dbus_free (m);
}

dbus_bool_t
bus_afbus_monitor_add (DBusConnection *monitor,
                       BusTransaction *transaction,
                       DBusError      *error)
{
  return TRUE;
}

void
bus_afbus_monitor_remove (DBusConnection *monitor)
{
}

dbus_bool_t
bus_afbus_monitor_add_eavesdropper (DBusConnection *connection,
                                    BusMatchRule   *rule,
                                    DBusError      *error)
{
  return TRUE;
}

void
bus_afbus_monitor_remove_eavesdropper (DBusConnection *connection,
                                       BusMatchRule   *rule)
{
}

void
bus_afbus_monitor_drop_eavesdropper (DBusConnection *connection)
{
}

dbus_bool_t
bus_afbus_monitor_eavesdrop_from_tap (BusContext     *context,
                                      DBusConnection *sender,
                                      DBusMessage    *message)
{
  return FALSE;
}

void
bus_afbus_monitor_drain (BusContext *context)
{
}

dbus_bool_t
bus_afbus_monitor_before_capture (BusContext     *context,
                                  DBusConnection *sender,
                                  DBusMessage    *message)
{
  return TRUE;
}

#endif /* DBUS_HAVE_AFBUS */
