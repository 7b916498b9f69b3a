/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-bus-afbus.c  the client side of the bus protocol on AF_BUS
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
#include "dbus-bus-afbus.h"

#ifdef DBUS_HAVE_AFBUS

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "dbus-connection-internal.h"
#include "dbus-hash.h"
#include "dbus-marshal-basic.h"
#include "dbus-message-private.h"

/**
 * @defgroup DBusAfbusClient The client side of the bus protocol on AF_BUS
 * @ingroup  DBusInternals
 * @brief What a bus client's library does on an AF_BUS bus besides
 * sending and receiving datagrams
 *
 * dbus-transport-afbus.c moves the datagrams; this file decides what a
 * bus client's messages and the daemon's signals to it mean
 * (doc/afbus-transport.md in the AF_BUS project says it for other
 * implementations):
 *
 * - where each message goes (_dbus_afbus_client_route()), with the
 *   well-known name cache the daemon's Forwarded signals fill, and the
 *   SENDER it carries (_dbus_afbus_client_stamp_sender());
 * - the calls the kernel awaits the answers to (direct ones, and those
 *   the daemon forwarded to another AF_BUS client): the peers watched
 *   for them (WatchPeer, PeerGone), and NoReply when a peer leaves or at
 *   the bus's reply timeout (ReplyTimeout), as the daemon answers the
 *   calls it awaits the answers to;
 * - the library's own calls to the daemon (WatchPeer, UnwatchPeer),
 *   which the transport writes before the application's messages
 *   (_dbus_afbus_client_next_internal()), and whose answers nobody sees.
 *
 * Everything here is called by the transport with the connection
 * locked.
 *
 * @{
 */

struct DBusAfbusClient
{
  DBusString own_name;                  /**< our unique name */
  DBusAfbusNameCache *names;            /**< well-known name cache */
  DBusAfbusPeers *peers;                /**< peers we called directly */
  DBusAfbusDeadlines *deadlines;        /**< when our calls that the
                                         *   kernel awaits get NoReply
                                         *   (the bus's reply timeout);
                                         *   NULL without one */
  dbus_bool_t deadline_changed;         /**< the first deadline is new */
  DBusHashTable *master_calls;          /**< serials of our calls to
                                         *   well-known names sent through
                                         *   the daemon, not yet answered
                                         *   nor told of by Forwarded */
  DBusList *internal;                   /**< our own messages to the
                                         *   daemon (peer watches) not yet
                                         *   written */
  dbus_uint32_t internal_serials[16];   /**< serials of the last ones,
                                         *   whose error replies we eat */
  unsigned int next_internal;           /**< next slot of internal_serials */
  dbus_uint32_t driver_call;            /**< serial of our last call to
                                         *   the driver that changes match
                                         *   rules or names, not yet
                                         *   answered; 0: none */
  dbus_bool_t show_forwarded;           /**< pass the daemon's Forwarded
                                         *   signals on to the application
                                         *   (for tests and debugging) */
};

/**
 * The client side of the bus protocol for the client at @p own_addr.
 *
 * @returns #NULL if no memory
 */
DBusAfbusClient *
_dbus_afbus_client_new (dbus_uint64_t own_addr)
{
  DBusAfbusClient *client;
  const char *show;

  client = dbus_new0 (DBusAfbusClient, 1);
  if (client == NULL)
    return NULL;

  if (!_dbus_string_init (&client->own_name))
    {
      dbus_free (client);
      return NULL;
    }

  show = _dbus_getenv ("DBUS_AFBUS_SHOW_INTERNAL");
  client->show_forwarded = show != NULL && strcmp (show, "1") == 0;

  if (!_dbus_afbus_unique_name_from_addr (own_addr, &client->own_name) ||
      (client->names = _dbus_afbus_name_cache_new ()) == NULL ||
      (client->peers = _dbus_afbus_peers_new ()) == NULL ||
      (client->master_calls = _dbus_hash_table_new (DBUS_HASH_UINTPTR,
                                                    NULL, NULL)) == NULL)
    {
      _dbus_afbus_client_free (client);
      return NULL;
    }

  return client;
}

void
_dbus_afbus_client_free (DBusAfbusClient *client)
{
  if (client == NULL)
    return;

  _dbus_string_free (&client->own_name);
  _dbus_afbus_name_cache_free (client->names);
  _dbus_afbus_peers_free (client->peers);
  _dbus_afbus_deadlines_free (client->deadlines);
  if (client->master_calls != NULL)
    _dbus_hash_table_unref (client->master_calls);
  _dbus_list_clear_full (&client->internal,
                         (DBusFreeFunction) dbus_message_unref);
  dbus_free (client);
}

/** Our unique name. */
const char *
_dbus_afbus_client_get_name (DBusAfbusClient *client)
{
  return _dbus_string_get_const_data (&client->own_name);
}

/*
 * Where a client sends @message: the address of its destination when
 * the kernel can take it there, else the master (address 0).
 * *counted is set when it goes to the master for another client: the
 * daemon answers it with Forwarded (DBusAfbusNameCache).
 *
 * A message to a well-known name goes to the name's address once the
 * daemon has said where it lives (Forwarded); one to a unique name
 * goes to that client's address.  Either goes through the daemon while
 * messages of ours still wait there (or wait in its queue for that
 * client), so that it reaches its receiver after them, as from
 * dbus-daemon.  Replies do not: the daemon does not know of the calls
 * made through the kernel, so it would refuse their replies as
 * unrequested (on the system bus); a reply may then reach its
 * receiver before a message of ours that waits in the daemon.
 *
 * While one of our calls to the driver that changes what the kernel
 * routes (match rules, names: _dbus_afbus_client_driver_call_waits())
 * is unanswered, messages to other clients go through the daemon too,
 * which handles that call first, as dbus-daemon does.
 *
 * Signals without a destination are multicast to every client (all
 * have an address of prefix 0): the kernel delivers them to those whose
 * match rules they match, which the daemon gave it (nfdbus; see
 * bus-afbus-match.c).  They too may overtake our messages that wait
 * in the daemon.  Other messages without a destination go to the
 * master, as to dbus-daemon.
 */
dbus_uint64_t
_dbus_afbus_client_route (DBusAfbusClient *client,
                          DBusMessage     *message,
                          dbus_bool_t     *counted)
{
  const char *dest = dbus_message_get_destination (message);
  int type = dbus_message_get_type (message);
  dbus_uint64_t addr;

  *counted = FALSE;

  if (dest == NULL && type == DBUS_MESSAGE_TYPE_SIGNAL)
    return DBUS_AFBUS_MULTICAST (0);

  if (dest == NULL || strcmp (dest, DBUS_SERVICE_DBUS) == 0)
    return DBUS_AFBUS_MASTER;

  if (dest[0] == ':')
    {
      /* (One that is not an AF_BUS name: the daemon routes it.) */
      if (_dbus_afbus_addr_from_unique_name (dest, &addr) &&
          (type == DBUS_MESSAGE_TYPE_METHOD_RETURN ||
           type == DBUS_MESSAGE_TYPE_ERROR ||
           (client->driver_call == 0 &&
            _dbus_afbus_name_cache_direct (client->names, addr))))
        return addr;
    }
  else if (client->driver_call == 0 &&
           _dbus_afbus_name_cache_lookup (client->names, dest, &addr))
    {
      return addr;
    }

  *counted = TRUE;
  return DBUS_AFBUS_MASTER;
}

/**
 * How to write @p message to a peer, which must carry our own unique
 * name as SENDER (the kernel and the receiver check it).  The message
 * itself is locked, and may be the application's, shared with another
 * thread or connection: libdbus never edits a locked message, and
 * neither does this.  (Messages to the daemon need no SENDER: it writes
 * it.)
 *
 * - A message that carries our name already is written as it is
 *   (@p stamp's @c copied is #FALSE and its @c field_len 0).
 * - A message without SENDER (the usual case) is written as
 *   _dbus_header_set_field_basic() would append the field, byte for
 *   byte, without copying or editing the header: @p stamp holds the
 *   header's first 16 bytes with the fields' new length (@c prefix)
 *   and the field with the header's padding (@c field, @c field_len
 *   bytes); the transport writes the prefix, the rest of the header,
 *   the field and the body.
 * - A message with another SENDER is written with a copy of its header
 *   that has ours instead (@c copied is #TRUE; the caller frees
 *   @c copy with _dbus_header_free()).
 *
 * @returns #FALSE if no memory
 */
dbus_bool_t
_dbus_afbus_client_stamp_sender (DBusAfbusClient *client,
                                 DBusMessage     *message,
                                 DBusAfbusStamp  *stamp)
{
  const char *own = _dbus_string_get_const_data (&client->own_name);
  int own_len = _dbus_string_get_length (&client->own_name);
  const char *sender = dbus_message_get_sender (message);
  const DBusString *header, *body;
  const unsigned char *data;
  dbus_uint32_t fields_len;
  int header_len, len;
  char byte_order;

  stamp->copied = FALSE;
  stamp->field_len = 0;
  if (sender != NULL && strcmp (sender, own) == 0)
    return TRUE;

  _dbus_message_get_network_data (message, &header, &body);
  header_len = _dbus_string_get_length (header);
  data = (const unsigned char *) _dbus_string_get_const_data (header);
  byte_order = data[0];
  fields_len = _dbus_unpack_uint32 (byte_order, data + 12);

  /* The field goes where the header's padding begins (the fields end
   * at 16 + fields_len, the header at the next multiple of 8), 8-aligned
   * as every field: code, signature "s", then the string, 4-aligned. */
  if (sender == NULL && own_len <= DBUS_MAXIMUM_NAME_LENGTH &&
      header_len >= 16 &&
      (uintptr_t) header_len == _DBUS_ALIGN_VALUE (16 + (uintptr_t) fields_len, 8))
    {
      len = 0;
      stamp->field[len++] = DBUS_HEADER_FIELD_SENDER;
      stamp->field[len++] = 1;
      stamp->field[len++] = DBUS_TYPE_STRING;
      stamp->field[len++] = '\0';
      _dbus_pack_uint32 (own_len, byte_order, stamp->field + len);
      len += 4;
      memcpy (stamp->field + len, own, own_len + 1);
      len += own_len + 1;
      fields_len = header_len - 16 + len;
      while (len % 8 != 0)
        stamp->field[len++] = '\0';

      memcpy (stamp->prefix, data, 16);
      _dbus_pack_uint32 (fields_len, byte_order, stamp->prefix + 12);
      stamp->field_len = len;
      return TRUE;
    }

  /* (A copy's serial is 0: the message's goes back in.) */
  if (!_dbus_header_copy (&message->header, &stamp->copy))
    return FALSE;
  _dbus_header_set_serial (&stamp->copy, dbus_message_get_serial (message));
  if (!_dbus_header_set_field_basic (&stamp->copy, DBUS_HEADER_FIELD_SENDER,
                                     DBUS_TYPE_STRING, &own))
    {
      _dbus_header_free (&stamp->copy);
      return FALSE;
    }

  stamp->copied = TRUE;
  return TRUE;
}

/* Is @message a call to the bus driver (org.freedesktop.DBus, or no
 * destination), which the daemon answers itself? */
dbus_bool_t
_dbus_afbus_is_driver_call (DBusMessage *message)
{
  const char *dest = dbus_message_get_destination (message);

  return dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
    (dest == NULL || strcmp (dest, DBUS_SERVICE_DBUS) == 0);
}

/* Is @message a call to the driver after which dbus-daemon routes our
 * later messages differently: it changes our match rules (which
 * signals reach us) or our names (which match rules our signals
 * match, what the policy lets us send and receive)? */
static dbus_bool_t
changes_routing (DBusMessage *message)
{
  static const char * const members[] = {
    "AddMatch", "RemoveMatch", "RequestName", "ReleaseName"
  };
  const char *iface = dbus_message_get_interface (message);
  unsigned int i;

  if (!_dbus_afbus_is_driver_call (message) ||
      (iface != NULL && strcmp (iface, DBUS_INTERFACE_DBUS) != 0))
    return FALSE;

  for (i = 0; i < _DBUS_N_ELEMENTS (members); i++)
    if (dbus_message_has_member (message, members[i]))
      return TRUE;
  return FALSE;
}

/**
 * Whether one of our calls to the driver that changes match rules or
 * names (AddMatch, RemoveMatch, RequestName, ReleaseName) is not
 * answered yet.  dbus-daemon handles a client's messages in the order
 * it sent them, so what it sent after such a call is routed by what the
 * call did.  Here the daemon tells the kernel before it answers; until
 * then our messages to other clients go through the daemon
 * (_dbus_afbus_client_route()) and our signals for everybody, which the
 * kernel multicasts, wait in the queue (dbus-transport-afbus.c).  The
 * daemon answers a client's calls in order, so the answer to the last
 * one ends the wait for all.
 */
dbus_bool_t
_dbus_afbus_client_driver_call_waits (DBusAfbusClient *client)
{
  return client->driver_call != 0;
}

/*
 * Peer watches (see DBusAfbusPeers in dbus-afbus.c): our own messages to
 * the daemon, which the application never sees.  They are written before
 * the application's messages, straight from their own queue; their
 * serials come from the connection, so no reply can be taken for
 * another's.
 */


/* Queues the driver method @iface.@method for the daemon, with the
 * argument (s arg) asking for no reply, or without argument asking for
 * one if @arg is NULL (whose answer nobody sees either); returns its
 * serial, or 0 if no memory. */
static dbus_uint32_t
queue_internal_call (DBusAfbusClient    *client,
                     DBusConnection     *connection,
                     const char         *iface,
                     const char         *method,
                     const char         *arg)
{
  DBusMessage *message;
  dbus_uint32_t serial;

  message = dbus_message_new_method_call (DBUS_SERVICE_DBUS, DBUS_PATH_DBUS,
                                          iface, method);
  if (message == NULL)
    return 0;

  serial = _dbus_connection_get_next_client_serial (connection);
  dbus_message_set_serial (message, serial);
  dbus_message_set_no_reply (message, arg != NULL);

  if ((arg != NULL &&
       !dbus_message_append_args (message, DBUS_TYPE_STRING, &arg,
                                  DBUS_TYPE_INVALID)) ||
      !dbus_message_set_sender (message,
                                _dbus_string_get_const_data (&client->own_name)) ||
      !_dbus_list_append (&client->internal, message))
    {
      dbus_message_unref (message);
      return 0;
    }

  dbus_message_lock (message);
  client->internal_serials[client->next_internal++ %
                           _DBUS_N_ELEMENTS (client->internal_serials)] = serial;
  return serial;
}

/* Asks the daemon for PeerGone about @addr (@add) or no longer (!@add):
 * a client's unique address, or the address of the well-known name
 * @well_known (NULL for a unique address), about which the daemon sends
 * PeerGone (name) when an owner of the name leaves the bus, and at once
 * when the name has no owner as it starts the watch (the peer left
 * before).  FALSE if no memory. */
static dbus_bool_t
watch_peer (DBusAfbusClient    *client,
            DBusConnection     *connection,
            dbus_uint64_t       addr,
            const char         *well_known,
            dbus_bool_t         add)
{
  DBusString name;
  dbus_bool_t ok = FALSE;

  if (!_dbus_string_init (&name))
    return FALSE;

  if (well_known != NULL ? _dbus_string_append (&name, well_known) :
      _dbus_afbus_unique_name_from_addr (addr, &name))
    ok = queue_internal_call (client, connection, DBUS_INTERFACE_AFBUS,
                              add ? "WatchPeer" : "UnwatchPeer",
                              _dbus_string_get_const_data (&name)) != 0;

  _dbus_verbose ("AF_BUS: %s watching %s\n", add ? "start" : "stop",
                 _dbus_string_get_const_data (&name));
  _dbus_string_free (&name);
  return ok;
}

/* Records our call @serial, which the peer at @dest (the owner of the
 * well-known name @well_known at that address, or NULL) is to answer
 * straight through the kernel, and watches the peer. */
static void
watch_call (DBusAfbusClient    *client,
            DBusConnection     *connection,
            dbus_uint64_t       dest,
            const char         *well_known,
            dbus_uint32_t       serial)
{
  dbus_bool_t watch;
  dbus_uint64_t unwatch;
  char *unwatch_name;

  /* Without memory the call is not watched: it may wait for its timeout. */
  if (!_dbus_afbus_peers_call_sent (client->peers, dest, well_known,
                                    serial, &watch, &unwatch, &unwatch_name))
    return;

  if (unwatch != 0)
    watch_peer (client, connection, unwatch, unwatch_name, FALSE);
  dbus_free (unwatch_name);
  if (watch && !watch_peer (client, connection, dest, well_known, TRUE))
    {
      DBusList *serials;
      char *name;

      /* Not watched after all: forget it, to try again next time. */
      _dbus_afbus_peers_gone (client->peers, dest, &serials, &name);
      _dbus_list_clear (&serials);
      dbus_free (name);
    }
}

/* Our call @serial, whose answer the kernel awaits, gets NoReply from
 * _dbus_afbus_client_expire() at the bus's reply timeout if no answer
 * came by then, as the daemon answers the calls it awaits the answers
 * to.  Nothing to do unless the daemon gave us a reply timeout
 * (ReplyTimeout). */
static void
await_reply (DBusAfbusClient    *client,
             dbus_uint32_t       serial)
{
  dbus_int64_t now;
  dbus_bool_t first;

  if (client->deadlines == NULL)
    return;

  now = _dbus_afbus_deadlines_now ();
  first = _dbus_afbus_deadlines_next (client->deadlines, now) < 0;
  /* Without memory the call waits for its own timeout. */
  if (_dbus_afbus_deadlines_add (client->deadlines, serial, now) &&
      first)
    client->deadline_changed = TRUE;
}

/* Records a method call sent straight to a peer, by its unique name or
 * by a well-known name's address, and watches the peer (or the name:
 * the daemon says when an owner of it leaves). */
static void
direct_call_sent (DBusAfbusClient    *client,
                  DBusConnection     *connection,
                  DBusMessage        *message,
                  dbus_uint64_t       dest)
{
  const char *well_known = NULL;

  if (dbus_message_get_type (message) != DBUS_MESSAGE_TYPE_METHOD_CALL ||
      dbus_message_get_no_reply (message))
    return;

  if ((dest >> BUS_PREFIX_SHIFT) == DBUS_AFBUS_NAME_PREFIX)
    {
      well_known = dbus_message_get_destination (message);
      if (well_known == NULL || well_known[0] == ':')
        return;
    }
  else if ((dest >> BUS_PREFIX_SHIFT) != 0)
    {
      return;
    }

  watch_call (client, connection, dest, well_known,
              dbus_message_get_serial (message));
  await_reply (client, dbus_message_get_serial (message));
}

/* At most this many of our calls through the daemon wait for their
 * Forwarded (which comes right after the daemon dispatched them); past
 * it a call whose callee leaves without answering waits for its own
 * timeout. */
#define AFBUS_MASTER_CALLS_MAX 4096

/* A method call to a well-known name sent to the daemon: if the daemon
 * forwards it to an AF_BUS client, the callee answers through the
 * kernel, and the daemon's Forwarded names it (handle_forwarded()). */
static void
master_call_sent (DBusAfbusClient    *client,
                  DBusMessage        *message)
{
  if (dbus_message_get_type (message) != DBUS_MESSAGE_TYPE_METHOD_CALL ||
      dbus_message_get_no_reply (message) ||
      _dbus_hash_table_get_n_entries (client->master_calls) >=
      AFBUS_MASTER_CALLS_MAX)
    return;

  /* Without memory: no NoReply if the callee leaves. */
  _dbus_hash_table_insert_uintptr (client->master_calls,
                                   dbus_message_get_serial (message),
                                   client);
}

/*
 * Answers our call @serial with NoReply (@text) from the daemon, as the
 * daemon would: a message the connection receives next.  FALSE if no
 * memory.
 */
static dbus_bool_t
queue_no_reply (DBusAfbusClient    *client,
                DBusConnection     *connection,
                dbus_uint32_t       serial,
                const char         *text)
{
  DBusMessage *reply;
  DBusList *reply_link;

  reply = dbus_message_new (DBUS_MESSAGE_TYPE_ERROR);
  if (reply == NULL ||
      !dbus_message_set_error_name (reply, DBUS_ERROR_NO_REPLY) ||
      !dbus_message_set_reply_serial (reply, serial) ||
      !dbus_message_set_sender (reply, DBUS_SERVICE_DBUS) ||
      !dbus_message_set_destination (reply,
                                     _dbus_string_get_const_data (&client->own_name)) ||
      !dbus_message_append_args (reply, DBUS_TYPE_STRING, &text,
                                 DBUS_TYPE_INVALID) ||
      (reply_link = _dbus_list_alloc_link (reply)) == NULL)
    {
      if (reply != NULL)
        dbus_message_unref (reply);
      return FALSE;
    }

  dbus_message_set_no_reply (reply, TRUE);
  /* As if received: the pending call's own timeout goes at once, or
   * it could fire before this is dispatched, and the caller get
   * libdbus's NoReply and then this as a stray message. */
  _dbus_connection_queue_received_message_link (connection, reply_link);
  return TRUE;
}

/*
 * The peer at @addr is gone: every call to it that waits for a reply
 * gets NoReply, as the daemon answers the calls it forwarded.  FALSE if
 * no memory.
 */
static dbus_bool_t
peer_gone (DBusAfbusClient    *client,
           DBusConnection     *connection,
           dbus_uint64_t       addr)
{
  DBusList *serials = NULL;
  DBusList *link;
  dbus_bool_t ok = TRUE;
  char *well_known;

  /* Nothing of ours can wait in the daemon for it any more. */
  _dbus_afbus_name_cache_peer_gone (client->names, addr);

  if (!_dbus_afbus_peers_gone (client->peers, addr, &serials,
                               &well_known))
    return TRUE;

  /* The daemon keeps our rule after the peer left: remove it. */
  watch_peer (client, connection, addr, well_known, FALSE);
  dbus_free (well_known);

  for (link = serials; link != NULL; link = _dbus_list_get_next_link (&serials, link))
    {
      dbus_uint32_t serial = (dbus_uint32_t) _DBUS_POINTER_TO_INT (link->data);

      if (!queue_no_reply (client, connection, serial,
                           "Message recipient disconnected from message bus"
                           " without replying"))
        {
          ok = FALSE;
          continue;
        }

      _dbus_verbose ("AF_BUS: NoReply for call %u to %016" PRIx64 "\n",
                     serial, addr);
      if (client->deadlines != NULL)
        _dbus_afbus_deadlines_remove (client->deadlines, serial);
      /* The daemon answers the calls it knew of too: eat its NoReply. */
      client->internal_serials[client->next_internal++ %
                               _DBUS_N_ELEMENTS (client->internal_serials)] = serial;
    }

  _dbus_list_clear (&serials);
  return ok;
}

/*
 * The arguments of the daemon's signal @message, as for
 * dbus_message_get_args().  FALSE if it does not have them: then
 * *@handled is what its handler returns, FALSE if no memory (the
 * connection tries again), TRUE for a bad signal (dropped).
 */
static dbus_bool_t
get_args (DBusMessage *message,
          dbus_bool_t *handled,
          int          first_type,
          ...)
{
  DBusError error = DBUS_ERROR_INIT;
  va_list args;
  dbus_bool_t ok;

  va_start (args, first_type);
  ok = dbus_message_get_args_valist (message, &error, first_type, args);
  va_end (args);
  if (ok)
    return TRUE;

  *handled = !dbus_error_has_name (&error, DBUS_ERROR_NO_MEMORY);
  _dbus_verbose ("bad %s signal from the daemon: %s\n",
                 dbus_message_get_member (message), error.message);
  dbus_error_free (&error);
  return FALSE;
}

/*
 * Handles (and eats) the daemon's answers to our own messages and its
 * PeerGone and ReplyTimeout signals.  *eaten is set when the application must not see
 * @message.  FALSE if no memory.
 */
static dbus_bool_t
handle_internal (DBusAfbusClient    *client,
                 DBusConnection     *connection,
                 DBusMessage        *message,
                 dbus_bool_t        *eaten)
{
  dbus_uint32_t reply_serial = dbus_message_get_reply_serial (message);
  dbus_uint64_t addr;
  dbus_bool_t from_daemon, handled;
  unsigned int i;

  *eaten = FALSE;

  /* Address 0 also carries what the daemon forwards from other clients,
   * with their own SENDER: only the daemon's own messages are ours.
   * (The daemon refuses to forward a message on its AF_BUS interface,
   * and the kernel to deliver such a signal between clients; this is
   * the library's own check.)  Replies from the others end our calls'
   * waits, as below. */
  from_daemon = dbus_message_has_sender (message, DBUS_SERVICE_DBUS);

  if (from_daemon &&
      dbus_message_is_signal (message, DBUS_INTERFACE_AFBUS, "PeerGone"))
    {
      const char *name;

      *eaten = TRUE;
      if (!get_args (message, &handled, DBUS_TYPE_STRING, &name,
                     DBUS_TYPE_INVALID))
        return handled;
      if (name[0] == ':' ?
          _dbus_afbus_addr_from_unique_name (name, &addr) :
          _dbus_afbus_peers_addr_of_name (client->peers, name, &addr))
        return peer_gone (client, connection, addr);
      return TRUE;
    }

  if (from_daemon &&
      dbus_message_is_signal (message, DBUS_INTERFACE_AFBUS, "ReplyTimeout"))
    {
      dbus_int32_t timeout;

      *eaten = TRUE;
      if (!get_args (message, &handled, DBUS_TYPE_INT32, &timeout,
                     DBUS_TYPE_INVALID))
        return handled;
      if (client->deadlines == NULL && timeout >= 0)
        {
          client->deadlines = _dbus_afbus_deadlines_new ();
          if (client->deadlines == NULL)
            return FALSE;
        }
      if (client->deadlines != NULL)
        _dbus_afbus_deadlines_set_timeout (client->deadlines, timeout);
      return TRUE;
    }

  if (reply_serial == 0)
    return TRUE;

  for (i = 0; from_daemon && i < _DBUS_N_ELEMENTS (client->internal_serials);
       i++)
    if (client->internal_serials[i] == reply_serial)
      *eaten = TRUE;

  if (!*eaten && client->deadlines != NULL)
    _dbus_afbus_deadlines_remove (client->deadlines, reply_serial);

  /* A direct call that the kernel routed to the daemon, because its
   * peer had left, is answered by the daemon. */
  if (!*eaten)
    _dbus_afbus_peers_reply_received (client->peers,
                                      DBUS_AFBUS_MASTER, reply_serial);

  return TRUE;
}

/*
 * The client side of org.freedesktop.DBus.AF_BUS.Forwarded: the daemon
 * tells us where a well-known name lives; and of ForwardedLost.  *eaten
 * is set when @message is one of them: it is ours, and the application
 * sees it only with DBUS_AFBUS_SHOW_INTERNAL=1 in the environment (tests
 * use it to count the messages that went through the daemon).  FALSE if
 * no memory.
 */
static dbus_bool_t
handle_forwarded (DBusAfbusClient    *client,
                  DBusConnection     *connection,
                  DBusMessage        *message,
                  dbus_bool_t        *eaten)
{
  const char *name, *callee = NULL, *owner = NULL;
  dbus_uint64_t addr, callee_addr, owner_addr;
  dbus_uint32_t serial = 0;
  DBusMessageIter iter;
  dbus_bool_t handled;

  *eaten = FALSE;
  if (!dbus_message_has_sender (message, DBUS_SERVICE_DBUS))
    return TRUE;

  /* ForwardedLost (u count): the daemon could not queue the Forwarded
   * of @count of our messages (our queue in it was full); they are no
   * longer in it. */
  if (dbus_message_is_signal (message, DBUS_INTERFACE_AFBUS, "ForwardedLost"))
    {
      dbus_uint32_t count;

      *eaten = !client->show_forwarded;
      if (!get_args (message, &handled, DBUS_TYPE_UINT32, &count,
                     DBUS_TYPE_INVALID))
        return handled;
      _dbus_afbus_name_cache_forwarded_lost (client->names, count);
      return TRUE;
    }

  if (!dbus_message_is_signal (message, DBUS_INTERFACE_AFBUS, "Forwarded"))
    return TRUE;

  *eaten = !client->show_forwarded;

  if (!get_args (message, &handled, DBUS_TYPE_STRING, &name,
                 DBUS_TYPE_UINT64, &addr, DBUS_TYPE_INVALID))
    return handled;

  /* A well-known name's address has prefix 1; for a unique name, any
   * address but 0 says the message is handed on. */
  if (addr != 0 && name[0] != ':' &&
      (addr >> BUS_PREFIX_SHIFT) != DBUS_AFBUS_NAME_PREFIX)
    {
      _dbus_verbose ("Forwarded signal with a bad address: taken as 0\n");
      addr = 0;
    }

  /* (u serial, s callee, s owner): the daemon forwarded our call
   * @serial to the AF_BUS client @callee, which answers through the
   * kernel; the daemon keeps no record of it, so we watch the callee as
   * for a direct call, unless its answer came first.  @owner: the
   * client the message went to (see DBusAfbusNameCache). */
  dbus_message_iter_init (message, &iter);
  if (dbus_message_iter_next (&iter) && dbus_message_iter_next (&iter) &&
      dbus_message_iter_get_arg_type (&iter) == DBUS_TYPE_UINT32)
    {
      dbus_message_iter_get_basic (&iter, &serial);
      if (dbus_message_iter_next (&iter) &&
          dbus_message_iter_get_arg_type (&iter) == DBUS_TYPE_STRING)
        dbus_message_iter_get_basic (&iter, &callee);
      if (dbus_message_iter_next (&iter) &&
          dbus_message_iter_get_arg_type (&iter) == DBUS_TYPE_STRING)
        dbus_message_iter_get_basic (&iter, &owner);
    }

  if (serial != 0 && callee != NULL &&
      _dbus_hash_table_remove_uintptr (client->master_calls, serial) &&
      _dbus_afbus_addr_from_unique_name (callee, &callee_addr))
    {
      /* (The transport writes the watch's WatchPeer at once, not with
       * our next message: the application may be blocked waiting for
       * this call's reply.) */
      watch_call (client, connection, callee_addr, NULL, serial);
      await_reply (client, serial);
    }

  if (owner == NULL || !_dbus_afbus_addr_from_unique_name (owner, &owner_addr))
    owner_addr = 0;

  return _dbus_afbus_name_cache_forwarded (client->names, name, addr,
                                           owner_addr);
}

/**
 * @p message was written: to the peer or name's address @p dest, or to
 * the daemon (#DBUS_AFBUS_MASTER) with @p counted set when the daemon is
 * to answer it with Forwarded (_dbus_afbus_client_route()).  A method
 * call expecting a reply is watched for its answer.
 */
void
_dbus_afbus_client_sent (DBusAfbusClient *client,
                         DBusConnection  *connection,
                         DBusMessage     *message,
                         dbus_uint64_t    dest,
                         dbus_bool_t      counted)
{
  if (dest != DBUS_AFBUS_MASTER)
    direct_call_sent (client, connection, message, dest);
  else if (changes_routing (message) && !dbus_message_get_no_reply (message))
    client->driver_call = dbus_message_get_serial (message);
  else if (changes_routing (message))
    {
      /* Asked without a reply (dbus_bus_add_match() without an error,
       * the classic idiom): the answer to a GetId of ours right behind
       * it tells when the daemon handled it.  (The transport writes it
       * next.)  Without memory our later messages are not held for it. */
      dbus_uint32_t serial = queue_internal_call (client, connection,
                                                  DBUS_INTERFACE_DBUS,
                                                  "GetId", NULL);

      if (serial != 0)
        client->driver_call = serial;
    }

  if (counted)
    {
      master_call_sent (client, message);
      _dbus_afbus_name_cache_sent_to_master (client->names);
    }
}

/**
 * Nobody has the address @p dest that @p message was sent to (a peer
 * that left, or a name that is moving; BUS_NO_DEFAULT_ROUTE): the
 * transport sends it to the daemon instead, counted, and a name's
 * address is forgotten until the daemon says where the name lives.
 */
void
_dbus_afbus_client_unreachable (DBusAfbusClient *client,
                                DBusMessage     *message,
                                dbus_uint64_t    dest)
{
  if ((dest >> BUS_PREFIX_SHIFT) == DBUS_AFBUS_NAME_PREFIX)
    _dbus_afbus_name_cache_forget (client->names,
                                   dbus_message_get_destination (message));
}

/**
 * A message from the daemon: its answers to our own calls, PeerGone,
 * ReplyTimeout and Forwarded are ours, and *@p eaten is set for those
 * the application must not see.  A reply ends its call's wait.
 *
 * @returns #FALSE if no memory
 */
dbus_bool_t
_dbus_afbus_client_from_master (DBusAfbusClient *client,
                                DBusConnection  *connection,
                                DBusMessage     *message,
                                dbus_bool_t     *eaten)
{
  if (client->driver_call != 0 &&
      dbus_message_get_reply_serial (message) == client->driver_call &&
      dbus_message_has_sender (message, DBUS_SERVICE_DBUS))
    client->driver_call = 0;

  if (dbus_message_get_reply_serial (message) != 0)
    _dbus_hash_table_remove_uintptr (client->master_calls,
                                     dbus_message_get_reply_serial (message));

  if (!handle_internal (client, connection, message, eaten))
    return FALSE;

  if (!*eaten && !handle_forwarded (client, connection, message, eaten))
    return FALSE;

  return TRUE;
}

/** A reply (or error) from the peer at @p source to our call @p reply_serial. */
void
_dbus_afbus_client_reply_received (DBusAfbusClient *client,
                                   dbus_uint64_t    source,
                                   dbus_uint32_t    reply_serial)
{
  _dbus_afbus_peers_reply_received (client->peers, source, reply_serial);
  _dbus_hash_table_remove_uintptr (client->master_calls, reply_serial);
  if (client->deadlines != NULL)
    _dbus_afbus_deadlines_remove (client->deadlines, reply_serial);
}

/**
 * Our next own message to the daemon, which goes before the
 * application's messages, or #NULL; it stays ours until
 * _dbus_afbus_client_internal_sent().
 */
DBusMessage *
_dbus_afbus_client_next_internal (DBusAfbusClient *client)
{
  return client->internal != NULL ? client->internal->data : NULL;
}

/** The message _dbus_afbus_client_next_internal() gave was written. */
void
_dbus_afbus_client_internal_sent (DBusAfbusClient *client)
{
  DBusMessage *message = _dbus_list_pop_first (&client->internal);

  if (message != NULL)
    dbus_message_unref (message);
}

/**
 * How many milliseconds until the first of our calls gets NoReply at the
 * bus's reply timeout: 0 if that is now, -1 if no call waits for one.
 */
int
_dbus_afbus_client_next_deadline (DBusAfbusClient *client)
{
  if (client->deadlines == NULL)
    return -1;

  return _dbus_afbus_deadlines_next (client->deadlines,
                                     _dbus_afbus_deadlines_now ());
}

/**
 * Whether the first deadline changed (a call began to wait when none
 * did) since the last time this was asked: the transport then sets its
 * timer for it.
 */
dbus_bool_t
_dbus_afbus_client_take_deadline_changed (DBusAfbusClient *client)
{
  dbus_bool_t changed = client->deadline_changed;

  client->deadline_changed = FALSE;
  return changed;
}

/**
 * Our calls whose time is up (see await_reply()) get NoReply, with the
 * daemon's text for its own reply timeout, and are not watched any more.
 * An answer that comes later reaches the application as an unexpected
 * message (or is refused by the kernel, which stopped awaiting it), as
 * it would through the daemon.
 *
 * @returns #TRUE if a call's time was up
 */
dbus_bool_t
_dbus_afbus_client_expire (DBusAfbusClient *client,
                           DBusConnection  *connection)
{
  dbus_bool_t expired = FALSE;
  dbus_int64_t now;
  dbus_uint32_t serial;

  if (client->deadlines == NULL)
    return FALSE;

  now = _dbus_afbus_deadlines_now ();
  while (_dbus_afbus_deadlines_pop_expired (client->deadlines, now, &serial))
    {
      expired = TRUE;
      _dbus_afbus_peers_reply_received (client->peers, DBUS_AFBUS_MASTER,
                                        serial);
      /* Without memory: the call waits for its own timeout. */
      if (queue_no_reply (client, connection, serial,
                          "Message did not receive a reply (timeout by message bus)"))
        _dbus_verbose ("AF_BUS: NoReply for call %u: the bus's reply timeout\n",
                       serial);
    }

  return expired;
}

/** @} */

#endif /* DBUS_HAVE_AFBUS */
