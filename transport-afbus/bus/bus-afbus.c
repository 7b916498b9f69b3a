/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus.c  dbus-daemon as the AF_BUS bus master
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
#include "bus-afbus.h"
#include "bus-afbus-legacy.h"
#include "bus-afbus-match.h"
#include "bus-afbus-monitor.h"
#include "bus-afbus-names.h"
#include "bus-afbus-peers.h"
#include "bus-afbus-policy.h"
#include "bus-afbus-state.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-server-afbus.h>
#include <dbus/dbus-transport-afbus.h>
#include <dbus/dbus-mainloop.h>
#include <dbus/dbus-timeout.h>

#include "bus.h"
#include "services.h"
#include "utils.h"

/*
 * The daemon's side of AF_BUS (see the D-Bus section of af_bus.txt):
 *
 * - A client authenticates and sends Hello over its point-to-point link
 *   to the daemon; the daemon names it after its kernel address
 *   (0000/00000000beef is ":0.beef"), joins it to the bus with
 *   BUS_JOIN_BUS, then replies, so the client knows it may talk to its
 *   peers once it has the reply.
 *
 * - Each well-known name has an address of prefix 0001 while an AF_BUS
 *   client owns it, which moves with the name (bus-afbus-names.c).
 *
 * - Every message an AF_BUS client sends the daemon for another
 *   connection, by well-known or unique name (not the daemon's own), is
 *   answered, once it is dispatched, with the signal
 *   org.freedesktop.DBus.AF_BUS.Forwarded (s name, t address, u serial,
 *   s callee, s owner), address 0 meaning "keep sending through the
 *   daemon".  The client library counts them to keep its messages in
 *   order (DBusAfbusNameCache).  The address (a unique name's own, for a
 *   unique name) is given only once the forwarded message is in the
 *   kernel (the daemon's queue for the owner is empty after the
 *   transaction): the kernel orders the client's direct messages after
 *   it.  While the owner's queue is backed up, or while an activation is
 *   pending or failed, Forwarded says 0.  @owner is the unique name of
 *   the AF_BUS client the message went to, or "": with address 0 it
 *   tells the client that this owner is slow, and that its messages to
 *   it, by any name, must go through the daemon for now.  Forwarded
 *   also says, for a method call the daemon forwarded to an AF_BUS
 *   client (not a legacy one), which client is to answer call @serial
 *   through the kernel (serial 0 and "" otherwise): the daemon keeps no
 *   pending reply for it (kernel_awaits_reply()), and the caller's
 *   library watches the callee, as for its direct calls, to answer
 *   NoReply if the callee leaves first.
 *
 * - When an AF_BUS client leaves, the signal
 *   org.freedesktop.DBus.AF_BUS.PeerGone (s unique-name) goes to the
 *   connections that watch it (bus-afbus-peers.c): the client library of
 *   a peer that called it directly, through the kernel, answers its
 *   calls still waiting for a reply with NoReply, as the daemon answers
 *   the calls it forwarded.  So does PeerGone (s well-known-name) for
 *   each name it owned, sent before its unique name's, for the calls
 *   made to the name's address.
 *
 * The daemon's AF_BUS code depends on itself one way only:
 * bus-afbus-names.c (names, addresses, what the daemon knows of each
 * connection) uses none of the others; bus-afbus-match.c (the kernel's
 * nfdbus family, match rules), bus-afbus-peers.c and bus-afbus-legacy.c
 * use the names; bus-afbus-policy.c uses the names and the nfdbus
 * handle of bus-afbus-match.c; bus-afbus-monitor.c uses all of these;
 * and this file, which ties them together around a client's life on
 * the bus (Hello, owner changes, Forwarded, its leaving), uses them all.
 *
 * What they keep for the whole bus is one BusAfbus, which the BusContext
 * owns (bus_context_get_afbus()): a part for each file, which only that
 * file looks inside (bus-afbus-state.h).  What they keep for one
 * connection is in its data.  A connection that leaves takes what the
 * daemon kept for it along (bus_afbus_connection_closed()), so nothing
 * is left of it when the context goes.
 */

static void
refused_free (BusAfbusRefused *refused)
{
  dbus_message_unref (refused->message);
  dbus_free (refused);
}

/**
 * The daemon's AF_BUS state, empty: bus_context_new() makes it before
 * it reads the configuration.  NULL if no memory.
 */
BusAfbus *
bus_afbus_new (void)
{
  BusAfbus *afbus = dbus_new0 (BusAfbus, 1);

  if (afbus == NULL)
    return NULL;

  afbus->names = bus_afbus_names_new ();
  afbus->match = bus_afbus_match_new ();
  afbus->policy = bus_afbus_policy_new ();
  afbus->peers = bus_afbus_peers_new ();
  afbus->legacy = bus_afbus_legacy_new ();
  afbus->monitor = bus_afbus_monitor_new ();
  if (afbus->names == NULL || afbus->match == NULL ||
      afbus->policy == NULL || afbus->peers == NULL ||
      afbus->legacy == NULL || afbus->monitor == NULL)
    {
      bus_afbus_free (afbus);
      return NULL;
    }

  return afbus;
}

/**
 * Frees the daemon's AF_BUS state, once its connections have left and
 * its match rules are gone (bus_context_unref()): the netlink socket
 * closes; the kernel keeps the bus's policies and flags as long as the
 * bus, which the daemon's listening socket holds.
 */
void
bus_afbus_free (BusAfbus *afbus)
{
  /* First, since bus_context_unref() lets go of the loop before us:
   * the loop may go with our reference, and what it still holds
   * (connections waiting for dispatch) with it, while the parts below
   * are all still here. */
  if (afbus->refused_timeout != NULL)
    {
      _dbus_transport_afbus_set_relay_refused_function (NULL, NULL);
      _dbus_timeout_disable (afbus->refused_timeout);
      /* off the loop, which frees no timeout it still has */
      if (afbus->refused_loop != NULL)
        {
          _dbus_loop_remove_timeout (afbus->refused_loop,
                                     afbus->refused_timeout);
          _dbus_loop_unref (afbus->refused_loop);
        }
      _dbus_timeout_unref (afbus->refused_timeout);
    }
  while (afbus->refused_calls != NULL)
    refused_free (_dbus_list_pop_first (&afbus->refused_calls));
  if (afbus->monitor != NULL)
    bus_afbus_monitor_free (afbus->monitor);
  if (afbus->legacy != NULL)
    bus_afbus_legacy_free (afbus->legacy);
  if (afbus->peers != NULL)
    bus_afbus_peers_free (afbus->peers);
  if (afbus->policy != NULL)
    bus_afbus_policy_free (afbus->policy);
  if (afbus->match != NULL)
    bus_afbus_match_free (afbus->match);
  if (afbus->names != NULL)
    bus_afbus_names_free (afbus->names);
  dbus_free (afbus->skipped_listen);
  dbus_free (afbus);
}

/**
 * The addresses the daemon listens on when it is given --address: that
 * address alone, as upstream's --address replaces the configuration's
 * <listen> addresses; but under --address=systemd: (systemd's socket
 * activation: the system bus's dbus.service, the user bus of
 * dbus-user-session) also the afbus: <listen> addresses of the
 * configuration, since systemd, which passes the daemon its unix
 * sockets, cannot make AF_BUS buses: the daemon makes them itself.  So
 * a daemon started by hand with --address (a test bus inside a desktop
 * session, say) never touches the user bus's AF_BUS address.
 *
 * A bare "afbus:" makes a fresh bus that only --print-address tells
 * anybody about.  Under --address=systemd: it becomes
 * "afbus:runtime=yes", as systemd's $XDG_RUNTIME_DIR/bus socket takes
 * the place of the session configuration's unix:tmpdir=: the user bus
 * of dbus-user-session is then found at $XDG_RUNTIME_DIR/bus.afbus (a
 * daemon without $XDG_RUNTIME_DIR logs that it does not listen on it).
 *
 * Appends to @list the strings, which stay @address's and @config's or
 * are static; FALSE if out of memory.
 */
dbus_bool_t
bus_afbus_cmdline_addresses (DBusList  **list,
                             const char *address,
                             DBusList  **config)
{
  DBusList *link;

  if (!_dbus_list_append (list, (char *) address))
    return FALSE;
  if (strcmp (address, "systemd:") != 0)
    return TRUE;

  for (link = _dbus_list_get_first_link (config); link != NULL;
       link = _dbus_list_get_next_link (config, link))
    {
      const char *listen = link->data;

      if (strcmp (listen, "afbus:") == 0)
        listen = "afbus:runtime=yes";
      else if (strncmp (listen, "afbus:", strlen ("afbus:")) != 0)
        continue;
      if (!_dbus_list_append (list, (char *) listen))
        return FALSE;
    }
  return TRUE;
}

/**
 * AddMatch: an AF_BUS client's @rule goes to the kernel too (its
 * signals come from its peers through the kernel, bus-afbus-match.c),
 * and an eavesdropping rule has the kernel copy the bus for it
 * (bus-afbus-monitor.c).  The rule says so (bus_match_rule_set_afbus()),
 * and bus_afbus_rule_freed() undoes it when the rule goes: RemoveMatch,
 * AddMatch failing after all, the connection becoming a monitor or
 * leaving.
 */
dbus_bool_t
bus_afbus_rule_added (DBusConnection *connection,
                      BusMatchRule   *rule,
                      DBusError      *error)
{
  if (!bus_afbus_add_match (connection, rule, error))
    return FALSE;

  if (!bus_afbus_monitor_add_eavesdropper (connection, rule, error))
    {
      bus_afbus_remove_match (connection, rule);
      return FALSE;
    }

  return TRUE;
}

static dbus_bool_t check_listen        (BusContext     *context,
                                        DBusError      *error);
static dbus_bool_t kernel_awaits_reply (DBusConnection *sender,
                                        DBusConnection *recipient);

/* A match rule that bus_afbus_rule_added() took is freed (signals.c). */
void
bus_afbus_rule_freed (DBusConnection *connection,
                      BusMatchRule   *rule)
{
  bus_afbus_monitor_remove_eavesdropper (connection, rule);
  bus_afbus_remove_match (connection, rule);
}

static dbus_bool_t send_reply_timeout (DBusConnection *connection,
                                       BusTransaction *transaction,
                                       dbus_bool_t     always);

/* A native AF_BUS client gets the bus's new reply timeout (-1 too). */
static dbus_bool_t
tell_client_reply_timeout (DBusConnection *connection,
                           void           *data)
{
  if (!bus_afbus_connection_is_afbus (connection) ||
      bus_afbus_connection_is_legacy (connection) ||
      bus_connection_is_monitor (connection))
    return TRUE;

  return send_reply_timeout (connection, data, TRUE);
}

/*
 * ReloadConfig changed the bus's reply timeout: every native AF_BUS
 * client's library learns it (ReplyTimeout), in one transaction, as the
 * kernel did (bus_afbus_match_reload()), for the calls it makes from
 * then on.  FALSE with @error set if no memory.
 */
static dbus_bool_t
tell_reply_timeout (BusContext *context,
                    DBusError  *error)
{
  BusTransaction *transaction;

  if (bus_context_get_reply_timeout (context) ==
      bus_context_get_afbus (context)->reply_timeout)
    return TRUE;

  transaction = bus_transaction_new (context);
  if (transaction == NULL ||
      !bus_connections_foreach_active (bus_context_get_connections (context),
                                       tell_client_reply_timeout,
                                       transaction))
    {
      if (transaction != NULL)
        bus_transaction_cancel_and_free (transaction);
      BUS_SET_OOM (error);
      return FALSE;
    }

  bus_transaction_execute_and_free (transaction);
  return TRUE;
}

static dbus_bool_t watch_refused_relays (BusContext *context,
                                         DBusError  *error);

/**
 * The configuration is loaded (@is_reload: ReloadConfig), once the
 * daemon listens and every connection has its new BusClientPolicy, and
 * before the bus's address is made from its servers'.  The first time:
 * one AF_BUS address at most, and the kernel takes charge of the bus
 * (or the daemon stops listening on it, bus-afbus-match.c).  On reload:
 * the AF_BUS clients get their new policies in the kernel
 * (bus-afbus-policy.c).  Each time: the bus takes the largest message
 * the configuration allows, and receive buffers for what the daemon
 * would queue for its connections; without them the bus still works
 * for smaller messages and slower bursts (a warning says so).  FALSE
 * with @error set on failure.
 */
dbus_bool_t
bus_afbus_config_loaded (BusContext  *context,
                         dbus_bool_t  is_reload,
                         DBusError   *error)
{
  DBusList **servers = bus_context_get_servers (context);
  long max_message_size = bus_context_get_max_message_size (context);
  long max_outgoing_bytes = bus_context_get_max_outgoing_bytes (context);
  DBusList *link;

  if (!is_reload)
    {
      if (!check_listen (context, error) ||
          !bus_afbus_check_kernel (context, error) ||
          !watch_refused_relays (context, error))
        return FALSE;
    }
  else if (!bus_afbus_policy_reload (context, error) ||
           !bus_afbus_match_reload (context, error) ||
           !tell_reply_timeout (context, error))
    {
      return FALSE;
    }
  bus_context_get_afbus (context)->reply_timeout =
    bus_context_get_reply_timeout (context);

  for (link = _dbus_list_get_last_link (servers); link != NULL;
       link = _dbus_list_get_prev_link (servers, link))
    {
      DBusError tmp_error = DBUS_ERROR_INIT;

      if (!_dbus_server_afbus_set_limits (link->data, max_message_size,
                                          max_outgoing_bytes, &tmp_error))
        {
          bus_context_log (context, DBUS_SYSTEM_LOG_WARNING, "%s",
                           tmp_error.message);
          dbus_error_free (&tmp_error);
        }
    }

  return TRUE;
}

/**
 * bus_context_check_security_policy(), before the policy: what the
 * AF_BUS bus makes of @message from @sender (NULL: the bus driver) to
 * @proposed_recipient (NULL: the bus driver).
 *
 * - The interface org.freedesktop.DBus.AF_BUS is the bus's own
 *   protocol between the daemon and its clients' libraries
 *   (doc/afbus-transport.md, section 7), as Hello is the bus's own:
 *   the driver's WatchPeer and UnwatchPeer, which an AF_BUS client's
 *   library calls for its NoReply, and the daemon's signals (Forwarded,
 *   PeerGone, ReplyTimeout, ForwardedLost), which the libraries act on.
 *   They are allowed whatever the configuration denies (Debian's
 *   system.conf denies method calls by default), the daemon's signals
 *   within the recipient's queue limit.  Any other message on that
 *   interface from a client (to another client, or to the driver but
 *   not a method call) is refused with AccessDenied, as a bus name
 *   reserved for the daemon is: a client must not pose as the daemon to
 *   another client's library.  (Between AF_BUS clients the kernel
 *   refuses such signals: bus-afbus-policy.c.)
 * - *@queue: the connection whose outgoing queue @message waits in on
 *   its way to @proposed_recipient, for the limits on that queue:
 *   @proposed_recipient's own, but a legacy client's is one of its
 *   AF_BUS pair's (bus-afbus-legacy.c); NULL for the driver.
 * - *@kernel_awaits: whether the kernel, not the daemon, awaits the
 *   reply if @message is a method call @sender makes of
 *   @proposed_recipient (kernel_awaits_reply()).
 */
BusAfbusVerdict
bus_afbus_check_message (BusContext      *context,
                         DBusConnection  *sender,
                         DBusConnection  *proposed_recipient,
                         DBusMessage     *message,
                         DBusConnection **queue,
                         dbus_bool_t     *kernel_awaits,
                         DBusError       *error)
{
  int type = dbus_message_get_type (message);

  *queue = NULL;
  *kernel_awaits = FALSE;
  if (proposed_recipient != NULL)
    {
      *queue = bus_afbus_legacy_queue (sender, proposed_recipient, message,
                                       NULL);
      *kernel_awaits = sender != NULL &&
        type == DBUS_MESSAGE_TYPE_METHOD_CALL &&
        !dbus_message_get_no_reply (message) &&
        kernel_awaits_reply (sender, proposed_recipient);
    }

  if (!dbus_message_has_interface (message, DBUS_INTERFACE_AFBUS))
    return BUS_AFBUS_CHECK_POLICY;

  if (sender == NULL)
    {
      /* The daemon's own signals to its clients' libraries. */
      if (*queue != NULL &&
          (dbus_connection_get_outgoing_size (*queue) >
           bus_context_get_max_outgoing_bytes (context)))
        {
          dbus_set_error (error, DBUS_ERROR_LIMITS_EXCEEDED,
                          "Rejected: destination has a full message queue");
          return BUS_AFBUS_DENIED;
        }
      return BUS_AFBUS_ALLOWED;
    }

  /* An AF_BUS client's library calling the driver (WatchPeer,
   * UnwatchPeer), as a client says Hello. */
  if (proposed_recipient == NULL && type == DBUS_MESSAGE_TYPE_METHOD_CALL &&
      bus_connection_is_active (sender))
    return BUS_AFBUS_ALLOWED;

  dbus_set_error (error, DBUS_ERROR_ACCESS_DENIED,
                  "Rejected message: the interface \"%s\" is reserved for"
                  " the message bus (%s, member \"%s\", from %s)",
                  DBUS_INTERFACE_AFBUS,
                  dbus_message_type_to_string (type),
                  dbus_message_get_member (message) != NULL ?
                  dbus_message_get_member (message) : "(unset)",
                  bus_connection_is_active (sender) ?
                  bus_connection_get_name (sender) : "(inactive)");
  return BUS_AFBUS_DENIED;
}

/**
 * bus_dispatch_matches(), once @message went to its addressed recipient
 * (if any): whether the kernel delivers it to the connections whose
 * match rules it matches (*@done), which the daemon then leaves alone.
 * A legacy client's signal for everybody is a kernel multicast from its
 * AF_BUS address, which nfdbus filters by the match rules
 * (bus-afbus-legacy.c); an AF_BUS client's message to a destination
 * reaches eavesdroppers from the kernel's copy of the bus
 * (bus-afbus-monitor.c), its broadcasts being kernel multicasts.  FALSE
 * with @error set if the multicast failed.
 */
dbus_bool_t
bus_afbus_dispatch_matches (BusContext     *context,
                            DBusConnection *sender,
                            DBusConnection *addressed_recipient,
                            DBusMessage    *message,
                            dbus_bool_t    *done,
                            DBusError      *error)
{
  if (addressed_recipient == NULL &&
      bus_afbus_legacy_multicasts (sender, message))
    {
      *done = TRUE;
      return bus_afbus_legacy_multicast (sender, message, error);
    }

  *done = bus_afbus_monitor_eavesdrop_from_tap (context, sender, message);
  return TRUE;
}

#ifdef DBUS_HAVE_AFBUS

/**
 * Whether the daemon goes on without a <listen> address it could not
 * listen on: an afbus: address on a kernel without AF_BUS (socket()
 * fails with EAFNOSUPPORT, which the AF_BUS server reports as
 * NotSupported), or whose bus or file is a live bus's (AddressInUse:
 * another daemon runs there).  The daemon then logs one warning and
 * serves its other addresses, as dbus-daemon would; the fork's clients
 * fall back to the next address of their list.  Clears @error when it
 * returns TRUE.
 */
dbus_bool_t
bus_afbus_skip_listen (BusContext *context,
                       const char *address,
                       DBusError  *error)
{
  BusAfbus *afbus;

  if (strncmp (address, "afbus:", strlen ("afbus:")) != 0 ||
      !(dbus_error_has_name (error, DBUS_ERROR_NOT_SUPPORTED) ||
        dbus_error_has_name (error, DBUS_ERROR_ADDRESS_IN_USE)))
    return FALSE;

  bus_context_log (context, DBUS_SYSTEM_LOG_WARNING,
                   "Not listening on %s: %s; clients use the bus's other"
                   " addresses", address, error->message);
  afbus = bus_context_get_afbus (context);
  dbus_free (afbus->skipped_listen);
  afbus->skipped_listen = _dbus_strdup (error->message);
  dbus_error_free (error);
  return TRUE;
}

/*
 * Refuses a configuration that listens on more than one AF_BUS address.
 * The daemon names its AF_BUS clients after their kernel addresses
 * (":0.<hex>", which the kernel's SENDER check knows), and each bus
 * gives out the same addresses: two buses would give two clients one
 * unique name.  Called once the daemon listens on all its addresses.
 */
static dbus_bool_t
check_listen (BusContext *context,
              DBusError  *error)
{
  const char *skipped_listen = bus_context_get_afbus (context)->skipped_listen;
  DBusList **servers = bus_context_get_servers (context);
  DBusServer *first = bus_afbus_server (context);
  DBusList *link;

  /* Every address was an afbus: one that the kernel cannot have. */
  if (_dbus_list_get_first_link (servers) == NULL)
    {
      dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED,
                      "No address to listen on: %s",
                      skipped_listen != NULL ? skipped_listen : "none listed");
      return FALSE;
    }

  for (link = _dbus_list_get_first_link (servers); link != NULL;
       link = _dbus_list_get_next_link (servers, link))
    {
      char *a, *b;

      if (link->data == first || !_dbus_server_is_afbus (link->data))
        continue;

      a = dbus_server_get_address (first);
      b = dbus_server_get_address (link->data);
      if (a != NULL && b != NULL)
        dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED,
                        "dbus-daemon listens on one AF_BUS address at most"
                        " (its AF_BUS clients are named after their"
                        " addresses on that bus), not on both %s and %s",
                        a, b);
      else
        BUS_SET_OOM (error);
      dbus_free (a);
      dbus_free (b);
      return FALSE;
    }

  return TRUE;
}

/* Tells a native client the bus's reply timeout, before the reply to
 * its Hello: org.freedesktop.DBus.AF_BUS.ReplyTimeout (i milliseconds),
 * if the bus has one (reply_timeout, -1 by default: none); @always: even
 * -1 (a ReloadConfig changed it). */
static dbus_bool_t
send_reply_timeout (DBusConnection *connection,
                    BusTransaction *transaction,
                    dbus_bool_t     always)
{
  dbus_int32_t timeout =
    bus_context_get_reply_timeout (bus_connection_get_context (connection));
  DBusMessage *message;
  dbus_bool_t ok;

  if (timeout < 0 && !always)
    return TRUE;
  if (timeout < 0)
    timeout = -1;

  message = dbus_message_new_signal (DBUS_PATH_DBUS, DBUS_INTERFACE_AFBUS,
                                     "ReplyTimeout");
  if (message == NULL)
    return FALSE;

  ok = dbus_message_append_args (message, DBUS_TYPE_INT32, &timeout,
                                 DBUS_TYPE_INVALID) &&
       bus_transaction_send_from_driver (transaction, connection, message);
  dbus_message_unref (message);
  return ok;
}

/**
 * Hello: appends to @name the unique name of an AF_BUS client, which is
 * its kernel address, and of a legacy client, which gets an AF_BUS
 * address of its own first (bus-afbus-legacy.c) when the daemon has an
 * AF_BUS bus.  Leaves @name empty for any other client: dbus-daemon's
 * usual name is then made.  FALSE with @error set on failure.
 */
dbus_bool_t
bus_afbus_hello_name (DBusConnection *connection,
                      DBusString     *name,
                      DBusError      *error)
{
  if (!bus_afbus_legacy_attach (connection, error))
    return FALSE;

  if (!bus_afbus_connection_is_afbus (connection))
    return TRUE;

  return bus_afbus_unique_name (connection, name, error);
}

dbus_bool_t
bus_afbus_join (DBusConnection *connection,
                BusTransaction *transaction,
                DBusError      *error)
{
  int fd;

  if (!bus_afbus_connection_fd (connection, &fd, NULL))
    return TRUE;

  if (!bus_afbus_connection_is_legacy (connection) &&
      !bus_afbus_connection_set_joined (connection))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  /* Its peers' signals must be filtered by its match rules from the
   * moment it can receive them. */
  if (!bus_afbus_match_manage (connection, error))
    return FALSE;

  /* Its messages to its peers and theirs to it must be checked against
   * the bus policy from the moment it can send and receive them. */
  if (!bus_afbus_policy_join (connection, error))
    return FALSE;

  if (setsockopt (fd, SOL_BUS, BUS_JOIN_BUS, NULL, 0) < 0 && errno != EALREADY)
    {
      dbus_set_error (error, _dbus_error_from_errno (errno),
                      "Could not join the client to the bus: %s",
                      _dbus_strerror (errno));
      return FALSE;
    }

  _dbus_verbose ("joined %s to the bus\n", bus_connection_get_name (connection));

  /* The kernel awaits the answers to its direct calls, and forgets them
   * after the bus's reply timeout without telling anybody: its library
   * answers them NoReply then, as the daemon answers the calls it
   * forwarded (ReplyTimeout; doc/afbus-transport.md). */
  if (!bus_afbus_connection_is_legacy (connection) &&
      !send_reply_timeout (connection, transaction, FALSE))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  return TRUE;
}

/* @connection is gone.  A legacy client's AF_BUS pair goes with it: the
 * monitors are shown first what the kernel copied of its pair's
 * messages, which the daemon tells from the others by the pair's name
 * until it closes (bus-afbus-monitor.c).  Then it is no eavesdropper
 * or monitor any more (its match rules are gone): with the last, the
 * kernel stops copying the bus.  Its peer watches end. */
void
bus_afbus_connection_closed (DBusConnection *connection)
{
  if (bus_afbus_connection_is_legacy (connection))
    {
      bus_afbus_monitor_drain (bus_connection_get_context (connection));
      bus_afbus_legacy_detach (connection);
    }

  bus_afbus_monitor_drop_eavesdropper (connection);
  bus_afbus_monitor_remove (connection);
  bus_afbus_peers_drop (connection);
}

dbus_bool_t
bus_afbus_name_owner_changed (BusTransaction *transaction,
                              const char     *name,
                              const char     *old_owner,
                              const char     *new_owner,
                              DBusError      *error)
{
  BusContext *context = bus_transaction_get_context (transaction);
  DBusConnection *old_conn, *new_conn;
  dbus_uint64_t addr;

  if (name[0] == ':')
    {
      if ((new_owner == NULL || new_owner[0] == '\0') &&
          _dbus_afbus_addr_from_unique_name (name, &addr))
        return bus_afbus_peers_gone (transaction, name, error);
      return TRUE;
    }

  old_conn = bus_afbus_owner (context, old_owner);
  new_conn = bus_afbus_owner (context, new_owner);

  /* An AF_BUS owner of @name leaves the bus: PeerGone (name), as for its
   * unique name, so that the libraries of the clients that called it
   * straight through the name's address answer their calls NoReply. */
  /* (Its socket may be closed already: the name's AF_BUS address says
   * that AF_BUS clients may have called it directly.) */
  if (old_conn != NULL && !dbus_connection_get_is_connected (old_conn) &&
      bus_afbus_name_addr (bus_context_get_afbus (context)->names, name,
                           &addr) &&
      !bus_afbus_peers_gone (transaction, name, error))
    return FALSE;

  return bus_afbus_names_move (transaction, name, old_conn, new_conn, error);
}

/*
 * A call the daemon forwards from one AF_BUS client to another is
 * answered through the kernel, which awaits the reply (nfdbus's
 * NFDBUS_BUS_REPLIES: the master's call with the caller's SENDER); the
 * daemon never sees that reply, so it keeps no pending reply of its own
 * (bus_connections_expect_reply()), which would last until the callee
 * leaves and then give the caller a NoReply for a call long answered,
 * and count against max_replies_per_connection for ever.  The caller's
 * libdbus learns of the callee from Forwarded and watches it, as for
 * its direct calls.  Calls to and from legacy clients keep the daemon's
 * record: the daemon sees their replies (through the legacy bridge).
 */
static dbus_bool_t
kernel_awaits_reply (DBusConnection *sender,
                     DBusConnection *recipient)
{
  return bus_afbus_connection_is_afbus (sender) &&
         bus_afbus_connection_is_afbus (recipient) &&
         !bus_afbus_connection_is_legacy (sender) &&
         !bus_afbus_connection_is_legacy (recipient);
}

dbus_bool_t
bus_afbus_send_forwarded (BusTransaction *transaction,
                          DBusConnection *sender,
                          const char     *name,
                          dbus_bool_t     give_address,
                          DBusMessage    *forwarded,
                          DBusError      *error)
{
  BusContext *context = bus_transaction_get_context (transaction);
  BusRegistry *registry;
  BusService *service;
  DBusConnection *owner = NULL;
  DBusMessage *message;
  DBusString str;
  dbus_uint64_t addr = 0;
  dbus_uint32_t serial = 0;
  const char *callee = "";
  const char *owner_name = NULL;
  unsigned long *lost;
  dbus_bool_t ok;

  /* Legacy clients send everything through the daemon. */
  if (name == NULL || strcmp (name, DBUS_SERVICE_DBUS) == 0 ||
      !bus_afbus_connection_is_afbus (sender) ||
      bus_afbus_connection_is_legacy (sender))
    return TRUE;

  registry = bus_context_get_registry (context);
  _dbus_string_init_const (&str, name);
  service = bus_registry_lookup (registry, &str);
  if (service != NULL)
    owner = bus_service_get_primary_owners_connection (service);
  if (owner != NULL && bus_afbus_connection_is_afbus (owner))
    owner_name = bus_connection_get_name (owner);
  if (owner_name == NULL)
    owner_name = "";

  /* A message still queued in the daemon for the owner could be
   * overtaken by the sender's direct ones: address 0 until it is gone.
   * (A legacy owner's queue is the one for its A1.)  A unique name's
   * address is its own. */
  if (!give_address || owner_name[0] == '\0' ||
      dbus_connection_has_messages_to_send (bus_afbus_legacy_outgoing (owner)) ||
      !(name[0] == ':' ?
        _dbus_afbus_addr_from_unique_name (name, &addr) :
        bus_afbus_name_addr (bus_context_get_afbus (context)->names, name,
                             &addr)))
    addr = 0;

  /* The call @forwarded went to @owner, which answers it through the
   * kernel: the sender watches @owner for it
   * (kernel_awaits_reply()). */
  if (forwarded != NULL && owner_name[0] != '\0' &&
      dbus_message_get_type (forwarded) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
      !dbus_message_get_no_reply (forwarded) &&
      kernel_awaits_reply (sender, owner))
    {
      serial = dbus_message_get_serial (forwarded);
      callee = owner_name;
    }

  /* A sender whose queue is over max_outgoing_bytes (it does not read)
   * gets no more, as from dbus-daemon; but its library counts the
   * messages it sent us until their Forwarded comes, and would send
   * everything through us for ever.  So the Forwarded signals that did
   * not fit are counted, and the next one that fits comes after a
   * ForwardedLost (u count): every message it sends through us while it
   * waits for them brings one (doc/afbus-transport.md). */
  lost = bus_afbus_connection_forwarded_lost (sender);
  if (dbus_connection_get_outgoing_size (sender) >
      bus_context_get_max_outgoing_bytes (context))
    {
      if (lost != NULL && *lost < 0xffffffffUL)
        (*lost)++;
      return TRUE;
    }
  if (lost != NULL && *lost > 0)
    {
      dbus_uint32_t count = *lost;

      message = dbus_message_new_signal (DBUS_PATH_DBUS, DBUS_INTERFACE_AFBUS,
                                         "ForwardedLost");
      ok = message != NULL &&
        dbus_message_append_args (message, DBUS_TYPE_UINT32, &count,
                                  DBUS_TYPE_INVALID) &&
        bus_transaction_send_from_driver (transaction, sender, message);
      if (message != NULL)
        dbus_message_unref (message);
      if (!ok)
        {
          BUS_SET_OOM (error);
          return FALSE;
        }
      *lost = 0;
    }

  message = dbus_message_new_signal (DBUS_PATH_DBUS, DBUS_INTERFACE_AFBUS,
                                     "Forwarded");
  if (message == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  ok = dbus_message_append_args (message,
                                 DBUS_TYPE_STRING, &name,
                                 DBUS_TYPE_UINT64, &addr,
                                 DBUS_TYPE_UINT32, &serial,
                                 DBUS_TYPE_STRING, &callee,
                                 DBUS_TYPE_STRING, &owner_name,
                                 DBUS_TYPE_INVALID) &&
       bus_transaction_send_from_driver (transaction, sender, message);
  dbus_message_unref (message);

  if (!ok)
    BUS_SET_OOM (error);

  return ok;
}

void
bus_afbus_forwarded_after_dispatch (BusContext     *context,
                                    DBusConnection *sender,
                                    const char     *name,
                                    DBusMessage    *message)
{
  BusTransaction *transaction;

  if (!bus_afbus_connection_is_afbus (sender) ||
      bus_afbus_connection_is_legacy (sender))
    return;

  /* Without memory the sender stays on the daemon's path for @name. */
  transaction = bus_transaction_new (context);
  if (transaction == NULL)
    return;

  if (!bus_afbus_send_forwarded (transaction, sender, name, TRUE, message,
                                 NULL))
    {
      bus_transaction_cancel_and_free (transaction);
      return;
    }

  bus_transaction_execute_and_free (transaction);
}

/* The connection that owns @name (unique or well-known), or NULL. */
static DBusConnection *
owner_of (BusContext *context,
          const char *name)
{
  BusService *service;
  DBusString str;

  if (name == NULL)
    return NULL;
  _dbus_string_init_const (&str, name);
  service = bus_registry_lookup (bus_context_get_registry (context), &str);
  return service != NULL ?
    bus_service_get_primary_owners_connection (service) : NULL;
}

/* Answers @message, a call the kernel refused to relay with
 * @saved_errno, with the error dbus-daemon sends for that cause: over
 * its caller's max_replies_per_connection (EDQUOT), dbus-daemon's
 * LimitsExceeded and log line (bus_connections_expect_reply()); for the
 * other causes, _dbus_afbus_error_for_errno(), as the caller's library
 * answers a direct call the kernel refuses (doc/afbus-transport.md,
 * 4.8). */
static void
answer_refused_call (BusContext  *context,
                     DBusMessage *message,
                     int          saved_errno)
{
  DBusError error = DBUS_ERROR_INIT;
  BusTransaction *transaction;
  DBusConnection *caller, *callee;
  DBusMessage *reply;

  caller = owner_of (context, dbus_message_get_sender (message));
  if (caller == NULL || !bus_connection_is_active (caller))
    return;   /* it left */

  transaction = bus_transaction_new (context);
  if (saved_errno == EDQUOT)
    {
      bus_context_log (context, DBUS_SYSTEM_LOG_WARNING,
                       "The maximum number of pending replies for "
                       "\"%s\" (%s) has been reached "
                       "(max_replies_per_connection=%d)",
                       bus_connection_get_name (caller),
                       bus_connection_get_loginfo (caller),
                       bus_context_get_max_replies_per_connection (context));
      reply = dbus_message_new_error (message, DBUS_ERROR_LIMITS_EXCEEDED,
                                      "The maximum number of pending replies per connection has been reached");
    }
  else
    {
      reply = dbus_message_new_error_printf (message,
                                             _dbus_afbus_error_for_errno (saved_errno),
                                             "The kernel refused to deliver the message to %s: %s",
                                             dbus_message_get_destination (message),
                                             _dbus_strerror (saved_errno));
    }
  if (transaction == NULL || reply == NULL)
    goto oom;

  /* A legacy caller's call, whose reply the daemon awaits (not the
   * kernel): that wait ends with this answer. */
  callee = owner_of (context, dbus_message_get_destination (message));
  if (callee != NULL &&
      !bus_connections_check_reply (bus_context_get_connections (context),
                                    transaction, callee, caller, reply,
                                    &error) &&
      dbus_error_is_set (&error))
    goto oom;

  if (!bus_transaction_send_from_driver (transaction, caller, reply))
    goto oom;

  dbus_message_unref (reply);
  bus_transaction_execute_and_free (transaction);
  return;

 oom:
  /* The caller's own timeout ends the call. */
  dbus_error_free (&error);
  if (reply != NULL)
    dbus_message_unref (reply);
  if (transaction != NULL)
    bus_transaction_cancel_and_free (transaction);
}

static dbus_bool_t
answer_refused_calls (void *data)
{
  BusAfbus *afbus = data;
  BusAfbusRefused *refused;

  _dbus_timeout_disable (afbus->refused_timeout);
  while ((refused = _dbus_list_pop_first (&afbus->refused_calls)) != NULL)
    {
      answer_refused_call (afbus->context, refused->message,
                           refused->saved_errno);
      refused_free (refused);
    }
  return TRUE;
}

/*
 * The kernel refused a call the daemon relays (the transport of the
 * callee's connection tells us in the middle of a write, with that
 * connection's lock held): the call is kept, and answered from the main
 * loop, at once, not by the caller's timeout.  Over the caller's
 * max_replies_per_connection (EDQUOT: the kernel counts the calls the
 * daemon relays with those the caller makes directly) it gets
 * LimitsExceeded, as from dbus-daemon; refused by the kernel's policy
 * or an LSM, AccessDenied; a callee that shut down reading or left,
 * NoReply (answer_refused_call()).  Without memory it is dropped (the
 * caller's timeout ends it).
 */
static void
relay_refused (DBusMessage *message,
               int          saved_errno,
               void        *data)
{
  BusAfbus *afbus = data;
  BusAfbusRefused *refused;

  if (dbus_message_get_sender (message) == NULL)
    return;
  refused = dbus_new0 (BusAfbusRefused, 1);
  if (refused == NULL)
    return;
  refused->message = dbus_message_ref (message);
  refused->saved_errno = saved_errno;
  if (!_dbus_list_append (&afbus->refused_calls, refused))
    {
      refused_free (refused);
      return;
    }
  _dbus_timeout_restart (afbus->refused_timeout, 0);
}

static dbus_bool_t
watch_refused_relays (BusContext *context,
                      DBusError  *error)
{
  BusAfbus *afbus = bus_context_get_afbus (context);

  afbus->context = context;
  afbus->refused_timeout = _dbus_timeout_new (0, answer_refused_calls,
                                              afbus, NULL);
  if (afbus->refused_timeout == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  _dbus_timeout_disable (afbus->refused_timeout);
  if (!_dbus_loop_add_timeout (bus_context_get_loop (context),
                               afbus->refused_timeout))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  /* bus_afbus_free() takes it off the loop, which may be unreferenced
   * by then (bus_context_unref()) */
  afbus->refused_loop = _dbus_loop_ref (bus_context_get_loop (context));
  _dbus_transport_afbus_set_relay_refused_function (relay_refused, afbus);
  return TRUE;
}

#else /* !DBUS_HAVE_AFBUS */

static dbus_bool_t
watch_refused_relays (BusContext *context,
                      DBusError  *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_hello_name (DBusConnection *connection,
                      DBusString     *name,
                      DBusError      *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_skip_listen (BusContext *context,
                       const char *address,
                       DBusError  *error)
{
  return FALSE;
}

static dbus_bool_t
check_listen (BusContext *context,
              DBusError  *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_join (DBusConnection *connection,
                BusTransaction *transaction,
                DBusError      *error)
{
  return TRUE;
}

void
bus_afbus_connection_closed (DBusConnection *connection)
{
}

dbus_bool_t
bus_afbus_name_owner_changed (BusTransaction *transaction,
                              const char     *name,
                              const char     *old_owner,
                              const char     *new_owner,
                              DBusError      *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_send_forwarded (BusTransaction *transaction,
                          DBusConnection *sender,
                          const char     *name,
                          dbus_bool_t     give_address,
                          DBusMessage    *forwarded,
                          DBusError      *error)
{
  return TRUE;
}

void
bus_afbus_forwarded_after_dispatch (BusContext     *context,
                                    DBusConnection *sender,
                                    const char     *name,
                                    DBusMessage    *message)
{
}

static dbus_bool_t
kernel_awaits_reply (DBusConnection *sender,
                     DBusConnection *recipient)
{
  return FALSE;
}

#endif /* DBUS_HAVE_AFBUS */
