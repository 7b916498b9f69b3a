/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-legacy.c  legacy clients bridged through AF_BUS pairs
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
#include "bus-afbus-legacy.h"
#include "bus-afbus.h"

#include <stdint.h>
#include <string.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-hash.h>
#include <dbus/dbus-mainloop.h>
#include <dbus/dbus-server-afbus.h>
#include <dbus/dbus-transport-afbus.h>

#include "apparmor.h"
#include "bus.h"
#include "bus-afbus-names.h"
#include "selinux.h"
#include "services.h"
#include "utils.h"

/*
 * Legacy clients: clients on another transport than AF_BUS (unix:,
 * tcp:) of a daemon that also listens on afbus: (af_bus.txt, "legacy
 * clients", C4/A4 and C1/A1).
 *
 * At Hello the daemon connects a client socket of its own (C1) to its
 * AF_BUS bus and accepts it (A1), and ties the pair to the legacy
 * connection.  From then on the legacy connection is an AF_BUS client
 * like the others, through A1: its unique name is C1's address
 * (":0.ab", from the same address space as the native clients), A1 is
 * the accepted socket that bus-afbus.c joins, gives its well-known
 * names' addresses (BUS_ADD_ADDR/BUS_DEL_ADDR) and pushes its match
 * rules for (nfdbus), PeerGone is sent when it leaves, and native
 * clients get Forwarded with the addresses of the names it owns.
 *
 * Both sockets are DBusConnections the daemon owns, in the relay mode
 * of the AF_BUS transport (they start authenticated, and C1 sends each
 * message to the address the daemon resolved), not bus connections.
 *
 * What the legacy client receives comes out of C1, whatever its
 * origin, so it gets its messages in the kernel's order like any native
 * client:
 * - peers send to its address (or to its names' addresses) directly,
 *   and their signals reach C1 as kernel multicasts filtered by nfdbus
 *   with its match rules; C1 checks, as every client does, that the
 *   SENDER of a message from a peer is the name of the address the
 *   kernel reports;
 * - what the daemon sends it (its own messages, and those it forwards)
 *   goes out on A1, to C1.
 * The daemon writes everything C1 reads to the legacy connection, and
 * stops reading C1 while the legacy client has more than
 * max_outgoing_bytes of it not yet written (then C1's queue in the
 * kernel fills up and its peers wait, as for a native client that does
 * not read).  What the daemon sends the legacy client waits in A1 while
 * C1's queue is full, and what the legacy client sends to an AF_BUS
 * client waits in C1 while that client's queue is full: each of these
 * queues is held to max_outgoing_bytes (bus_afbus_legacy_queue()).  A
 * message with fds for a legacy client that did not negotiate fd
 * passing is not delivered: its sender gets NotSupported (refuse()).
 * The kernel's LSM checks of a peer's message to a legacy client see
 * C1's socket, which has the daemon's label: the daemon asks its LSM
 * about the legacy client's own label before delivering (lsm_allows()),
 * as dbus-daemon asks about every message it delivers.
 *
 * What the legacy client sends goes through the daemon's dispatch as on
 * any bus (policy, activation, the driver, monitors), and then out of C1
 * when it goes to an AF_BUS client (native or legacy): the kernel sees
 * the legacy client's own address as the source, so that its policy
 * (nfdbus), the receiver's anti-spoofing check and eavesdroppers see the
 * true sender.  A message goes to the unique address of the connection
 * the daemon resolved its destination to; a signal without a destination
 * is one kernel multicast from C1, which nfdbus delivers to every client
 * with a matching rule (the legacy client itself included, through its
 * own C1, as dbus-daemon delivers a signal to its sender when it
 * matches), and which the daemon does not deliver itself.  Monitors get
 * what a legacy client sends from the daemon, when it dispatches it:
 * the daemon's kernel eavesdropper for monitors (bus-afbus-monitor.c)
 * leaves out what C1 sends (bus_afbus_legacy_is_relay()).
 *
 * Since the daemon does not see the traffic between a legacy client and
 * its peers, it does the reply bookkeeping of that traffic when C1 reads
 * it: a call from a peer makes the legacy client's reply a requested
 * one (and the caller gets NoReply if the legacy client leaves), and a
 * peer's reply to a call the daemon forwarded ends that pending call.
 * A native caller also learns that the legacy client left through
 * PeerGone, and its library drops the second NoReply.
 *
 * A message C1 sends to an address that nobody has any more takes the
 * kernel's default route back to A1: its recipient has just left, and
 * the daemon answers a call the legacy client made with NoReply when it
 * sees the recipient leave; A1 drops such messages.
 */

#ifdef DBUS_HAVE_AFBUS

typedef struct
{
  BusContext     *context;
  DBusConnection *connection;   /**< the legacy client (owns us) */
  DBusConnection *client;       /**< C1: our client socket on the bus */
  DBusConnection *accepted;     /**< A1: its accepted socket */
  int accepted_fd;              /**< A1's socket */
  char *name;                   /**< C1's unique name, key in relays */
  dbus_bool_t client_filtered;  /**< C1 has client_filter (setup_relay()) */
  dbus_bool_t accepted_filtered; /**< A1 has accepted_filter */
  dbus_bool_t daemon_matches;   /**< the daemon, not the kernel, matches
                                 *   the multicasts C1 reads against the
                                 *   legacy client's rules
                                 *   (bus_afbus_legacy_match_in_daemon()) */
  dbus_uint64_t addr;           /**< C1's address, key in sources (when
                                 *   name is set) */
} LegacyPair;

/* How many of the messages the C1s sent the bridge remembers
 * (remember_sent()), and the largest it remembers: what it holds
 * beyond their delivery is at most SENT_MAX * SENT_MAX_BYTES, and at
 * most a quarter of a connection's limit on what it reads. */
#define SENT_MAX 64
#define SENT_MAX_BYTES 65536

typedef struct
{
  DBusMessage  *message;        /**< a reference, or NULL */
  dbus_uint64_t from;           /**< the address of the C1 that sent it */
  int           len;            /**< its header and body, in bytes */
  dbus_bool_t   multicast;      /**< sent to every subscriber, not one */
} SentMessage;

/* The legacy clients' pairs (bus-afbus-state.h). */
struct BusAfbusLegacy
{
  /* C1's unique name -> LegacyPair *, for bus_afbus_legacy_is_relay();
   * NULL until the first */
  DBusHashTable *relays;
  /* C1's address -> LegacyPair *, the same pairs, for trusted_source(),
   * which every datagram a C1 reads asks; NULL until the first */
  DBusHashTable *sources;
  /* The last messages the C1s sent, oldest first from sent_next on */
  SentMessage sent[SENT_MAX];
  unsigned int sent_next;
};

static dbus_int32_t legacy_slot = -1;

BusAfbusLegacy *
bus_afbus_legacy_new (void)
{
  BusAfbusLegacy *bridge = dbus_new0 (BusAfbusLegacy, 1);

  /* A legacy client's pair is in its connection's data, at this slot,
   * held as long as the bridge. */
  if (bridge != NULL && !dbus_connection_allocate_data_slot (&legacy_slot))
    {
      dbus_free (bridge);
      return NULL;
    }
  return bridge;
}

static void
forget_sent (SentMessage *sent)
{
  if (sent->message != NULL)
    dbus_message_unref (sent->message);
  sent->message = NULL;
}

/* Every legacy client has left by now, and its pair with it
 * (bus_afbus_legacy_detach()). */
void
bus_afbus_legacy_free (BusAfbusLegacy *bridge)
{
  unsigned int i;

  for (i = 0; i < SENT_MAX; i++)
    forget_sent (&bridge->sent[i]);
  if (bridge->relays != NULL)
    {
      _dbus_assert (_dbus_hash_table_get_n_entries (bridge->relays) == 0);
      _dbus_hash_table_unref (bridge->relays);
    }
  if (bridge->sources != NULL)
    {
      _dbus_assert (_dbus_hash_table_get_n_entries (bridge->sources) == 0);
      _dbus_hash_table_unref (bridge->sources);
    }
  dbus_connection_free_data_slot (&legacy_slot);
  dbus_free (bridge);
}

static BusAfbusLegacy *
bridge_of (BusContext *context)
{
  return bus_context_get_afbus (context)->legacy;
}

static LegacyPair *
legacy_get (DBusConnection *connection)
{
  if (connection == NULL || legacy_slot < 0)
    return NULL;

  return dbus_connection_get_data (connection, legacy_slot);
}

static dbus_bool_t
add_watch (DBusWatch *watch,
           void      *data)
{
  return _dbus_loop_add_watch (data, watch);
}

static void
remove_watch (DBusWatch *watch,
              void      *data)
{
  _dbus_loop_remove_watch (data, watch);
}

static void
toggle_watch (DBusWatch *watch,
              void      *data)
{
  _dbus_loop_toggle_watch (data, watch);
}

static dbus_bool_t
add_timeout (DBusTimeout *timeout,
             void        *data)
{
  return _dbus_loop_add_timeout (data, timeout);
}

static void
remove_timeout (DBusTimeout *timeout,
                void        *data)
{
  _dbus_loop_remove_timeout (data, timeout);
}

static void
dispatch_status (DBusConnection     *connection,
                 DBusDispatchStatus  new_status,
                 void               *data)
{
  if (new_status != DBUS_DISPATCH_COMPLETE)
    {
      while (!_dbus_loop_queue_dispatch (data, connection))
        _dbus_wait_for_memory ();
    }
}

/*
 * The reply bookkeeping of a message that came straight from a peer:
 * a call makes the legacy client's reply a requested one; a reply ends
 * the call the daemon forwarded.  Without memory a call's reply goes out
 * as an unrequested one, and a forwarded call waits for its timeout in
 * the daemon's books (the caller has its reply).
 */
/* The connection of @message's sender (by its unique name only, not a
 * well-known one it owns), or NULL if it has left. */
static DBusConnection *
peer_of (LegacyPair  *legacy,
         DBusMessage *message)
{
  const char *sender = dbus_message_get_sender (message);

  return sender != NULL && sender[0] == ':' ?
         bus_afbus_owner (legacy->context, sender) : NULL;
}

static void
peer_message (LegacyPair     *legacy,
              DBusConnection *peer,
              DBusMessage    *message)
{
  BusConnections *connections = bus_context_get_connections (legacy->context);
  BusTransaction *transaction;
  DBusError error = DBUS_ERROR_INIT;
  dbus_bool_t ok = FALSE;

  if (peer == NULL)
    return;     /* gone already: nobody to reply to */

  transaction = bus_transaction_new (legacy->context);
  if (transaction == NULL)
    return;

  if (dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL)
    ok = bus_connections_expect_reply (connections, transaction, peer,
                                       legacy->connection, message, &error);
  else if (dbus_message_get_reply_serial (message) != 0)
    ok = bus_connections_check_reply (connections, transaction, peer,
                                      legacy->connection, message, &error);

  if (dbus_error_is_set (&error))
    {
      _dbus_verbose ("AF_BUS legacy: reply bookkeeping for %s: %s\n",
                     bus_connection_get_name (legacy->connection),
                     error.message);
      dbus_error_free (&error);
    }

  if (ok)
    bus_transaction_execute_and_free (transaction);
  else
    bus_transaction_cancel_and_free (transaction);
}

/*
 * A peer sent the legacy client a message that is not delivered to it
 * (its fds, which the legacy client did not negotiate, or an LSM's
 * refusal): its sender gets @error, as dbus-daemon would give it
 * (bus/dispatch.c).  A call that awaits a reply is answered out of C1,
 * in the legacy client's name, as if it had answered: so the kernel
 * ends the caller's wait for that reply (nfdbus' reply tracking) and
 * the caller's library its watch of the callee; monitors get it from
 * the daemon, as the legacy client's own messages.  Other messages
 * addressed to the legacy client get the error from the daemon, as
 * from dbus-daemon; a signal without a destination gets none, as
 * dbus-daemon skips a subscriber its policy refuses.
 */
static DBusHandlerResult
refuse (LegacyPair      *legacy,
        DBusMessage     *message,
        const DBusError *error)
{
  BusTransaction *transaction;
  DBusConnection *peer;
  DBusMessage *reply = NULL;
  dbus_uint64_t addr;
  dbus_bool_t ok;

  _dbus_verbose ("AF_BUS legacy: a message for %s not delivered: %s\n",
                 bus_connection_get_name (legacy->connection), error->name);

  peer = peer_of (legacy, message);
  if (peer == NULL || legacy->name == NULL ||
      dbus_message_get_destination (message) == NULL ||
      !_dbus_afbus_message_get_addr (message, &addr))
    return DBUS_HANDLER_RESULT_HANDLED;   /* nobody to tell */

  transaction = bus_transaction_new (legacy->context);
  if (transaction == NULL)
    return DBUS_HANDLER_RESULT_NEED_MEMORY;

  if (dbus_message_get_type (message) != DBUS_MESSAGE_TYPE_METHOD_CALL ||
      dbus_message_get_no_reply (message))
    {
      /* bus_transaction_send_error_reply() takes a non-const error but
       * only reads it */
      ok = bus_transaction_send_error_reply (transaction, peer,
                                             (DBusError *) error, message);
    }
  else
    {
      reply = dbus_message_new_error (message, error->name, error->message);
      ok = reply != NULL &&
        dbus_message_set_sender (reply, legacy->name) &&
        _dbus_afbus_message_set_addr (reply, addr) &&
        bus_transaction_capture (transaction, legacy->connection, peer,
                                 reply) &&
        dbus_connection_send (legacy->client, reply, NULL);
    }

  if (reply != NULL)
    dbus_message_unref (reply);

  if (!ok)
    {
      bus_transaction_cancel_and_free (transaction);
      return DBUS_HANDLER_RESULT_NEED_MEMORY;
    }

  bus_transaction_execute_and_free (transaction);
  return DBUS_HANDLER_RESULT_HANDLED;
}

/* Whether the legacy client has a match rule for @message, a multicast
 * C1 read, by the daemon's own matchmaker, as dbus-daemon decides: only
 * once the kernel gives C1 every multicast
 * (bus_afbus_legacy_match_in_daemon()).  A signal whose sender left
 * already matches as dbus-daemon would match one from the bus (no rule
 * naming another sender).  TRUE without memory: the client may get a
 * signal it did not ask for, rather than lose one. */
static dbus_bool_t
legacy_matches (LegacyPair  *legacy,
                DBusMessage *message)
{
  DBusList *recipients = NULL;
  DBusConnection *peer = peer_of (legacy, message);
  dbus_bool_t found;

  if (!bus_matchmaker_get_recipients (bus_context_get_matchmaker (legacy->context),
                                      bus_context_get_connections (legacy->context),
                                      peer, NULL, message, &recipients))
    return TRUE;
  found = _dbus_list_remove (&recipients, legacy->connection);
  _dbus_list_clear (&recipients);
  return found;
}

/*
 * Whether the LSM the daemon runs under lets a peer's @message reach
 * the legacy client.  The kernel checked it between the peer's socket
 * and C1's, which carries the daemon's label, not the legacy client's:
 * so the daemon asks what dbus-daemon asks for every message it
 * delivers (bus_context_check_security_policy()), the SELinux dbus
 * permission and the AppArmor dbus rules of both ends (the sender's
 * send to the legacy client, the legacy client's receive), from the
 * sender's connection.  A reply reached C1 only if it was awaited
 * (nfdbus' reply tracking): it is a requested reply.  Without an LSM
 * nothing is asked.  A sender that left already cannot be asked
 * about: its message is delivered as the kernel let it through (what a
 * client sends just before it leaves, ExitClient2 in sd-bus's
 * test-bus-chat, must arrive; its label is gone with its connection),
 * a gap doc/security.md names.
 */
static dbus_bool_t
lsm_allows (LegacyPair     *legacy,
            DBusConnection *peer,
            DBusMessage    *message,
            DBusError      *error)
{
  const char *dest = dbus_message_get_destination (message);
  int type = dbus_message_get_type (message);

  if (peer == NULL ||
      (!bus_apparmor_enabled () && !bus_selinux_enabled ()))
    return TRUE;

  return bus_selinux_allows_send (peer, legacy->connection,
                                  dbus_message_type_to_string (type),
                                  dbus_message_get_interface (message),
                                  dbus_message_get_member (message),
                                  dbus_message_get_error_name (message),
                                  dest != NULL ? dest : DBUS_SERVICE_DBUS,
                                  NULL, error) &&
    bus_apparmor_allows_send (peer, legacy->connection,
                              dbus_message_get_reply_serial (message) != 0,
                              bus_context_get_type (legacy->context),
                              type,
                              dbus_message_get_path (message),
                              dbus_message_get_interface (message),
                              dbus_message_get_member (message),
                              dbus_message_get_error_name (message),
                              dest != NULL ? dest : DBUS_SERVICE_DBUS,
                              dbus_message_get_sender (message), NULL,
                              error);
}

/* Everything C1 reads goes to the legacy client (but multicasts its
 * rules do not match, when the daemon matches them, and what its LSM
 * refuses). */
static DBusHandlerResult
client_filter (DBusConnection *client,
               DBusMessage    *message,
               void           *data)
{
  LegacyPair *legacy = data;
  DBusPreallocatedSend *preallocated;
  DBusError error = DBUS_ERROR_INIT;
  DBusHandlerResult result;
  DBusConnection *peer_conn;
  dbus_bool_t from_peer;
  dbus_uint64_t peer;

  if (dbus_message_is_signal (message, DBUS_INTERFACE_LOCAL, "Disconnected"))
    {
      _dbus_verbose ("AF_BUS legacy: %s lost its AF_BUS socket\n",
                     bus_connection_get_name (legacy->connection));
      dbus_connection_close (legacy->connection);
      return DBUS_HANDLER_RESULT_HANDLED;
    }

  if (dbus_message_contains_unix_fds (message) &&
      !dbus_connection_can_send_type (legacy->connection, DBUS_TYPE_UNIX_FD))
    {
      dbus_set_error_const (&error, DBUS_ERROR_NOT_SUPPORTED,
                            "Tried to send message with Unix file descriptors"
                            "to a client that doesn't support that.");
      return refuse (legacy, message, &error);
    }

  /* From a peer, not through the daemon: the daemon checked the
   * messages it sent itself */
  from_peer = _dbus_afbus_message_get_addr (message, &peer);
  if (from_peer && legacy->daemon_matches &&
      dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_SIGNAL &&
      dbus_message_get_destination (message) == NULL &&
      !legacy_matches (legacy, message))
    return DBUS_HANDLER_RESULT_HANDLED;
  peer_conn = from_peer ? peer_of (legacy, message) : NULL;
  if (from_peer && !lsm_allows (legacy, peer_conn, message, &error))
    {
      result = refuse (legacy, message, &error);
      dbus_error_free (&error);
      return result;
    }

  preallocated = dbus_connection_preallocate_send (legacy->connection);
  if (preallocated == NULL)
    return DBUS_HANDLER_RESULT_NEED_MEMORY;

  if (from_peer)
    peer_message (legacy, peer_conn, message);

  dbus_connection_send_preallocated (legacy->connection, preallocated,
                                     message, NULL);
  return DBUS_HANDLER_RESULT_HANDLED;
}

/* Only messages of the legacy client to addresses that nobody has any
 * more reach A1 (the kernel's default route). */
static DBusHandlerResult
accepted_filter (DBusConnection *accepted,
                 DBusMessage    *message,
                 void           *data)
{
  LegacyPair *legacy = data;

  if (dbus_message_is_signal (message, DBUS_INTERFACE_LOCAL, "Disconnected"))
    {
      dbus_connection_close (legacy->connection);
      return DBUS_HANDLER_RESULT_HANDLED;
    }

  _dbus_verbose ("AF_BUS legacy: message from %s to %s came back:"
                 " its recipient left\n",
                 bus_connection_get_name (legacy->connection),
                 dbus_message_get_destination (message) ?
                 dbus_message_get_destination (message) : "(none)");
  return DBUS_HANDLER_RESULT_HANDLED;
}

/* (@filtered: its filter was added; it is not when setup_relay() ran out
 * of memory, and libdbus refuses to remove a filter it does not have) */
static void
close_relay (DBusConnection            *relay,
             DBusHandleMessageFunction  filter,
             LegacyPair                *legacy,
             dbus_bool_t                filtered)
{
  if (relay == NULL)
    return;

  if (filtered)
    dbus_connection_remove_filter (relay, filter, legacy);
  dbus_connection_close (relay);
  dbus_connection_set_watch_functions (relay, NULL, NULL, NULL, NULL, NULL);
  dbus_connection_set_timeout_functions (relay, NULL, NULL, NULL, NULL, NULL);
  dbus_connection_set_dispatch_status_function (relay, NULL, NULL, NULL);
  dbus_connection_unref (relay);
}

static void
legacy_free (void *data)
{
  LegacyPair *legacy = data;

  if (legacy->name != NULL)
    {
      BusAfbusLegacy *bridge = bridge_of (legacy->context);
      unsigned int i;

      for (i = 0; i < SENT_MAX; i++)
        if (bridge->sent[i].message != NULL &&
            bridge->sent[i].from == legacy->addr)
          forget_sent (&bridge->sent[i]);
      _dbus_hash_table_remove_string (bridge->relays, legacy->name);
      if ((uintptr_t) legacy->addr == legacy->addr)
        _dbus_hash_table_remove_uintptr (bridge->sources,
                                         (uintptr_t) legacy->addr);
    }
  close_relay (legacy->client, client_filter, legacy,
               legacy->client_filtered);
  close_relay (legacy->accepted, accepted_filter, legacy,
               legacy->accepted_filtered);
  dbus_free (legacy->name);
  dbus_free (legacy);
}

/* Knows the pair's C1 by its unique name from now on. */
static dbus_bool_t
relay_register (LegacyPair *legacy)
{
  BusAfbusLegacy *bridge = bridge_of (legacy->context);
  DBusString name;
  dbus_uint64_t addr;
  int fd;

  if (!bus_afbus_connection_fd (legacy->connection, &fd, &addr))
    return TRUE;        /* gone already: nothing to know */

  if (bridge->relays == NULL)
    {
      bridge->relays = _dbus_hash_table_new (DBUS_HASH_STRING, NULL, NULL);
      if (bridge->relays == NULL)
        return FALSE;
    }
  if (bridge->sources == NULL)
    {
      bridge->sources = _dbus_hash_table_new (DBUS_HASH_UINTPTR, NULL, NULL);
      if (bridge->sources == NULL)
        return FALSE;
    }

  if (!_dbus_string_init (&name))
    return FALSE;
  if (!_dbus_afbus_unique_name_from_addr (addr, &name) ||
      !_dbus_string_steal_data (&name, &legacy->name))
    {
      _dbus_string_free (&name);
      return FALSE;
    }
  _dbus_string_free (&name);

  /* An address a pointer-sized key cannot hold (32-bit systems) is
   * left out of sources: its datagrams are validated as before. */
  if (!_dbus_hash_table_insert_string (bridge->relays, legacy->name, legacy))
    goto oom;
  if ((uintptr_t) addr == addr &&
      !_dbus_hash_table_insert_uintptr (bridge->sources, (uintptr_t) addr,
                                        legacy))
    {
      _dbus_hash_table_remove_string (bridge->relays, legacy->name);
      goto oom;
    }
  legacy->addr = addr;
  return TRUE;

 oom:
  dbus_free (legacy->name);
  legacy->name = NULL;
  return FALSE;
}

/*
 * Whether @source, on the daemon's AF_BUS bus, is the address of a
 * legacy client's C1: its messages are what the daemon dispatched for
 * that client, validated when the daemon loaded them from the client's
 * own connection (and stripped of unknown header fields, bus/dispatch.c),
 * or built by the daemon (refuse()), and written by its libdbus.
 * The kernel sets the source address of every datagram from the socket
 * that sent it, so nobody else can send from it, and delivers its bytes
 * unchanged: the recipient's C1 loads it without validating it again
 * (_dbus_afbus_relay_pair_new(), doc/benchmarks.md).  The relays table
 * holds a C1 from the moment its address is known to legacy_free(),
 * before its socket closes and the address can be anybody else's; the
 * sources table, keyed by the address itself, the same C1s.
 *
 * A datagram that is byte for byte a message the daemon sent from that
 * C1 a moment before (remember_sent()) is that message: *@sent_p offers
 * it (a new reference), and the recipient's C1 takes it rather than
 * loading its bytes (take_sent() in the transport, which takes only a
 * message that was written, so no longer changes).  A unicast one has
 * no other recipient: forgotten once offered.
 */
static dbus_bool_t
trusted_source (dbus_uint64_t       source,
                const DBusString   *datagram,
                DBusMessage       **sent_p,
                void               *data)
{
  BusAfbusLegacy *bridge = data;
  LegacyPair *legacy;
  int len = _dbus_string_get_length (datagram);
  unsigned int i;

  *sent_p = NULL;
  if (bridge->sources == NULL || (uintptr_t) source != source)
    return FALSE;

  legacy = _dbus_hash_table_lookup_uintptr (bridge->sources,
                                            (uintptr_t) source);
  if (legacy == NULL || legacy->addr != source)
    return FALSE;

  for (i = 0; i < SENT_MAX; i++)
    {
      SentMessage *sent = &bridge->sent[(bridge->sent_next + i) % SENT_MAX];

      if (sent->message == NULL || sent->from != source || sent->len != len ||
          !_dbus_afbus_message_is_datagram (sent->message, datagram))
        continue;

      if (sent->multicast)
        {
          *sent_p = dbus_message_ref (sent->message);
        }
      else
        {
          *sent_p = sent->message;      /* the bridge's reference */
          sent->message = NULL;
        }
      break;
    }
  return TRUE;
}

/*
 * @message goes out of @legacy's C1 (to one AF_BUS client, or to every
 * subscriber): remembered, so that a C1 of the daemon that reads it
 * takes it as it is (trusted_source()).  The oldest remembered message
 * makes room; one with fds or over SENT_MAX_BYTES is not remembered
 * (its recipients load it).
 */
static void
remember_sent (LegacyPair  *legacy,
               DBusMessage *message,
               dbus_bool_t  multicast)
{
  BusAfbusLegacy *bridge = bridge_of (legacy->context);
  SentMessage *sent;
  long limit;
  int len;

  if (legacy->name == NULL || dbus_message_contains_unix_fds (message))
    return;

  /* A message counts against the limits of the connections that read
   * it (the sender's, and each C1's: max_received_size) for as long as
   * it lives: what the bridge holds stays under a quarter of them, so
   * that none stops reading for it. */
  limit = MIN (dbus_connection_get_max_received_size (legacy->connection),
               bus_context_get_max_outgoing_bytes (legacy->context));
  len = _dbus_afbus_message_network_size (message);
  if (len > SENT_MAX_BYTES || len > limit / (4 * SENT_MAX))
    return;

  sent = &bridge->sent[bridge->sent_next];
  bridge->sent_next = (bridge->sent_next + 1) % SENT_MAX;
  forget_sent (sent);
  sent->message = dbus_message_ref (message);
  sent->from = legacy->addr;
  sent->len = len;
  sent->multicast = multicast;
}

static dbus_bool_t
setup_relay (LegacyPair                *legacy,
             DBusConnection            *relay,
             DBusHandleMessageFunction  filter,
             dbus_bool_t               *filtered)
{
  DBusLoop *loop = bus_context_get_loop (legacy->context);

  dbus_connection_set_route_peer_messages (relay, TRUE);
  dbus_connection_set_dispatch_status_function (relay, dispatch_status,
                                                loop, NULL);

  if (!dbus_connection_add_filter (relay, filter, legacy, NULL))
    return FALSE;
  *filtered = TRUE;

  if (!dbus_connection_set_watch_functions (relay, add_watch, remove_watch,
                                            toggle_watch, loop, NULL) ||
      !dbus_connection_set_timeout_functions (relay, add_timeout,
                                              remove_timeout, NULL,
                                              loop, NULL))
    return FALSE;

  if (dbus_connection_get_dispatch_status (relay) != DBUS_DISPATCH_COMPLETE &&
      !_dbus_loop_queue_dispatch (loop, relay))
    return FALSE;

  return TRUE;
}

/**
 * Gives a legacy client (at Hello) an AF_BUS address of its own, through
 * a pair of sockets the daemon opens to its own bus.  Does nothing for
 * AF_BUS clients, and when the daemon has no AF_BUS bus: its legacy
 * clients then get dbus-daemon's usual unique names.
 */
dbus_bool_t
bus_afbus_legacy_attach (DBusConnection *connection,
                         DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  LegacyPair *legacy = NULL;
  DBusServer *server;
  DBusSocket client_fd = DBUS_SOCKET_INIT, accepted_fd = DBUS_SOCKET_INIT;
  DBusString guid;
  char *id = NULL;

  if (legacy_get (connection) != NULL ||
      bus_afbus_connection_is_afbus (connection))
    return TRUE;

  server = bus_afbus_server (context);
  if (server == NULL)
    return TRUE;

  legacy = dbus_new0 (LegacyPair, 1);
  id = dbus_server_get_id (server);
  if (legacy == NULL || id == NULL)
    goto oom;

  legacy->context = context;
  legacy->connection = connection;

  if (!_dbus_server_afbus_connect_self (server, &client_fd, &accepted_fd,
                                        error))
    goto failed;

  _dbus_string_init_const (&guid, id);
  if (!_dbus_afbus_relay_pair_new (client_fd, accepted_fd, &guid,
                                   trusted_source, bridge_of (context),
                                   &legacy->client, &legacy->accepted))
    goto oom;
  legacy->accepted_fd = accepted_fd.fd;
  _dbus_socket_invalidate (&client_fd);
  _dbus_socket_invalidate (&accepted_fd);

  /* What the daemon holds for the legacy client, at most, as for any
   * recipient (max_outgoing_bytes): then its peers wait. */
  dbus_connection_set_max_received_size (legacy->client,
                                         bus_context_get_max_outgoing_bytes (context));

  if (!setup_relay (legacy, legacy->client, client_filter,
                    &legacy->client_filtered) ||
      !setup_relay (legacy, legacy->accepted, accepted_filter,
                    &legacy->accepted_filtered) ||
      !dbus_connection_set_data (connection, legacy_slot, legacy, legacy_free))
    goto oom;

  /* From here on the connection owns the pair (legacy_free), and A1
   * stands for it on the bus. */
  if (!bus_afbus_connection_set_pair (connection, legacy->accepted_fd) ||
      !relay_register (legacy))
    {
      bus_afbus_connection_drop_pair (connection);
      dbus_connection_set_data (connection, legacy_slot, NULL, NULL);
      legacy = NULL;
      goto oom;
    }

  _dbus_verbose ("AF_BUS legacy: %p has its AF_BUS pair\n", connection);
  dbus_free (id);
  return TRUE;

 oom:
  BUS_SET_OOM (error);
 failed:
  if (legacy != NULL)
    {
      /* The filters go, and the relays close their sockets. */
      legacy_free (legacy);
      legacy = NULL;
    }
  if (_dbus_socket_is_valid (client_fd))
    _dbus_close_socket (client_fd, NULL);
  if (_dbus_socket_is_valid (accepted_fd))
    _dbus_close_socket (accepted_fd, NULL);
  dbus_free (id);
  return FALSE;
}

/** The legacy client is gone: so are its AF_BUS sockets. */
void
bus_afbus_legacy_detach (DBusConnection *connection)
{
  LegacyPair *legacy = legacy_get (connection);

  if (legacy == NULL)
    return;

  bus_afbus_connection_drop_pair (connection);
  dbus_connection_set_data (connection, legacy_slot, NULL, NULL);
}

/**
 * Whether @p name is the unique name of a legacy client's C1, whose
 * messages are those the daemon relays for the legacy client.
 */
dbus_bool_t
bus_afbus_legacy_is_relay (BusContext *context,
                           const char *name)
{
  DBusHashTable *relays = bridge_of (context)->relays;

  return relays != NULL && _dbus_hash_table_lookup_string (relays, name) != NULL;
}

/** Where the daemon's messages to @p connection wait to be written. */
/**
 * From now on the daemon matches the multicasts the legacy client's C1
 * reads against the client's match rules in its own matchmaker, as
 * dbus-daemon does, and the kernel gives C1 every multicast
 * (bus-afbus-match.c, once the kernel held NFDBUS_PEER_RULES_MAX of its
 * rules): so a legacy client may have as many rules as the
 * configuration's max_match_rules_per_connection, as on dbus-daemon.
 */
void
bus_afbus_legacy_match_in_daemon (DBusConnection *connection)
{
  LegacyPair *legacy = legacy_get (connection);

  if (legacy != NULL)
    legacy->daemon_matches = TRUE;
}

dbus_bool_t
bus_afbus_legacy_matches_in_daemon (DBusConnection *connection)
{
  LegacyPair *legacy = legacy_get (connection);

  return legacy != NULL && legacy->daemon_matches;
}

DBusConnection *
bus_afbus_legacy_outgoing (DBusConnection *connection)
{
  LegacyPair *legacy = legacy_get (connection);

  return legacy != NULL ? legacy->accepted : connection;
}

/* Whether @connection is the one @message is addressed to (by its
 * unique name or a name it owns), not an eavesdropper or monitor. */
static dbus_bool_t
is_addressed_recipient (DBusConnection *connection,
                        DBusMessage    *message)
{
  const char *dest = dbus_message_get_destination (message);
  const char *name = bus_connection_get_name (connection);
  BusService *service;
  DBusString str;

  if (dest == NULL || name == NULL)
    return FALSE;

  if (strcmp (dest, name) == 0)
    return TRUE;

  _dbus_string_init_const (&str, dest);
  service = bus_registry_lookup (bus_connection_get_registry (connection), &str);
  return service != NULL &&
    bus_service_get_primary_owners_connection (service) == connection;
}

/**
 * The connection on whose outgoing queue the daemon writes @p message
 * for @p destination: the sender's C1 when a legacy client sends to the
 * AF_BUS client it is addressed to, else the destination's A1 when the
 * destination is a legacy client, else the destination itself.  That
 * queue is where the message waits while its recipient does not read,
 * and what bus_context_check_security_policy() holds to
 * max_outgoing_bytes and max_outgoing_unix_fds, as dbus-daemon holds
 * the recipient's own; with @p addr_p, also the AF_BUS address C1
 * sends to (else 0, which no client has).
 */
DBusConnection *
bus_afbus_legacy_queue (DBusConnection *sender,
                        DBusConnection *destination,
                        DBusMessage    *message,
                        dbus_uint64_t  *addr_p)
{
  LegacyPair *from = legacy_get (sender);
  LegacyPair *to = legacy_get (destination);
  dbus_uint64_t addr = 0;
  int fd;

  if (addr_p != NULL)
    *addr_p = 0;

  /* the string comparison first: the other asks the kernel */
  if (from != NULL &&
      is_addressed_recipient (destination, message) &&
      bus_afbus_connection_fd (destination, &fd, &addr))
    {
      if (addr_p != NULL)
        *addr_p = addr;
      return from->client;
    }

  if (to != NULL)
    return to->accepted;

  return destination;
}

/**
 * The connection on which the daemon writes @p message for
 * @p destination (a new reference), or NULL if no memory
 * (bus_afbus_legacy_queue()); a message that C1 sends gets the address
 * it goes to.
 */
DBusConnection *
bus_afbus_legacy_relay (DBusConnection *sender,
                        DBusConnection *destination,
                        DBusMessage    *message)
{
  dbus_uint64_t addr;
  DBusConnection *queue = bus_afbus_legacy_queue (sender, destination,
                                                  message, &addr);

  if (addr != 0)
    {
      if (!_dbus_afbus_message_set_addr (message, addr))
        return NULL;
      /* a legacy recipient's C1 reads it */
      if (legacy_get (destination) != NULL)
        remember_sent (legacy_get (sender), message, FALSE);
    }

  return dbus_connection_ref (queue);
}

/**
 * Whether @p message from @p sender is a legacy client's signal without
 * a destination, which goes out as a kernel multicast
 * (bus_afbus_legacy_multicast()): AF_BUS subscribers and monitors get
 * it from the kernel, filtered by their rules, not from the daemon.
 */
dbus_bool_t
bus_afbus_legacy_multicasts (DBusConnection *sender,
                             DBusMessage    *message)
{
  return legacy_get (sender) != NULL &&
    dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_SIGNAL &&
    dbus_message_get_destination (message) == NULL;
}

/**
 * Sends a legacy client's signal without a destination as one kernel
 * multicast from its AF_BUS address, filtered by nfdbus.
 * #FALSE with @p error set if there was no memory.
 */
dbus_bool_t
bus_afbus_legacy_multicast (DBusConnection *sender,
                            DBusMessage    *message,
                            DBusError      *error)
{
  LegacyPair *legacy = legacy_get (sender);

  _dbus_assert (bus_afbus_legacy_multicasts (sender, message));

  if (!_dbus_afbus_message_set_addr (message, DBUS_AFBUS_MULTICAST (0)) ||
      !dbus_connection_send (legacy->client, message, NULL))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  remember_sent (legacy, message, TRUE);
  return TRUE;
}

#else /* !DBUS_HAVE_AFBUS */

struct BusAfbusLegacy
{
  int unused;
};

BusAfbusLegacy *
bus_afbus_legacy_new (void)
{
  return dbus_new0 (BusAfbusLegacy, 1);
}

void
bus_afbus_legacy_free (BusAfbusLegacy *bridge)
{
  dbus_free (bridge);
}

dbus_bool_t
bus_afbus_legacy_attach (DBusConnection *connection,
                         DBusError      *error)
{
  return TRUE;
}

void
bus_afbus_legacy_detach (DBusConnection *connection)
{
}

dbus_bool_t
bus_afbus_legacy_is_relay (BusContext *context,
                           const char *name)
{
  return FALSE;
}

void
bus_afbus_legacy_match_in_daemon (DBusConnection *connection)
{
}

dbus_bool_t
bus_afbus_legacy_matches_in_daemon (DBusConnection *connection)
{
  return FALSE;
}

DBusConnection *
bus_afbus_legacy_outgoing (DBusConnection *connection)
{
  return connection;
}

DBusConnection *
bus_afbus_legacy_queue (DBusConnection *sender,
                        DBusConnection *destination,
                        DBusMessage    *message,
                        dbus_uint64_t  *addr_p)
{
  if (addr_p != NULL)
    *addr_p = 0;
  return destination;
}

DBusConnection *
bus_afbus_legacy_relay (DBusConnection *sender,
                        DBusConnection *destination,
                        DBusMessage    *message)
{
  return dbus_connection_ref (destination);
}

dbus_bool_t
bus_afbus_legacy_multicasts (DBusConnection *sender,
                             DBusMessage    *message)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_legacy_multicast (DBusConnection *sender,
                            DBusMessage    *message,
                            DBusError      *error)
{
  _dbus_assert_not_reached ("no AF_BUS, no legacy multicast");
  return FALSE;
}

#endif /* DBUS_HAVE_AFBUS */
