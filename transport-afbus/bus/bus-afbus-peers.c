/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-peers.c  peer watches: PeerGone for the peers a client
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

#include <config.h>
#include "bus-afbus-peers.h"
#include "bus-afbus.h"

#include <string.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-hash.h>
#include <dbus/dbus-list.h>
#include <dbus/dbus-marshal-validate.h>

#include "bus-afbus-names.h"
#include "driver.h"
#include "utils.h"

/*
 * A call an AF_BUS client makes straight to a peer, through the kernel,
 * is not seen by the daemon, which therefore cannot answer it with
 * NoReply when the peer leaves, as it answers the calls it forwards.
 * The caller's library does (DBusAfbusPeers in dbus-afbus.c): it asks
 * the daemon to watch the peer, by unique name or by the well-known
 * name whose address it called, and the daemon tells it when the peer
 * has gone.
 *
 * - org.freedesktop.DBus.AF_BUS.WatchPeer (s name) starts a watch;
 *   UnwatchPeer (s name) ends it.  The library sends both without
 *   asking for a reply.  A name that is not a valid bus name (or is the
 *   daemon's) is refused with InvalidArgs, UnwatchPeer of a name not
 *   watched too; watching a name twice is one watch.
 * - The daemon sends org.freedesktop.DBus.AF_BUS.PeerGone (s name) to
 *   each connection that watches @name when a client with that unique
 *   name leaves, or when an AF_BUS owner of that well-known name leaves
 *   (bus_afbus_name_owner_changed()), and at once, after the reply,
 *   when @name has no owner as WatchPeer is handled: the peer left
 *   before the watch was in place.
 * - Watches are not match rules: they do not count against
 *   max_match_rules_per_connection, and monitors do not see them.  A
 *   connection may watch at most DBUS_AFBUS_PEER_WATCH_SIZE names, as
 *   many as its library ever watches at once; one more is refused with
 *   LimitsExceeded.  A connection's watches end when it leaves
 *   (bus_afbus_connection_closed()) or becomes a monitor.
 *
 * Each connection keeps the names it watches in its data; a table maps
 * each watched name to its watchers, so that a peer leaving costs one
 * message per watcher.
 */

/* The watched names (bus-afbus-state.h). */
struct BusAfbusPeers
{
  /* name (owned by the table) -> DBusList ** (owned by the table) of the
   * watching connections (not referenced: a connection leaves the lists
   * when it leaves the bus), NULL until the first watch */
  DBusHashTable *watchers;
};

typedef struct
{
  BusAfbusPeers *peers;
  DBusConnection *connection;   /**< its connection (not referenced) */
  DBusList *names;              /**< char *: the names it watches */
  int n_names;
} PeerWatches;

static dbus_int32_t watches_slot = -1;

BusAfbusPeers *
bus_afbus_peers_new (void)
{
  BusAfbusPeers *peers = dbus_new0 (BusAfbusPeers, 1);

  /* Each connection's watches are in its data, at this slot, held as
   * long as the peers. */
  if (peers != NULL && !dbus_connection_allocate_data_slot (&watches_slot))
    {
      dbus_free (peers);
      return NULL;
    }
  return peers;
}

/* Every connection has left by now, its watches with it. */
void
bus_afbus_peers_free (BusAfbusPeers *peers)
{
  if (peers->watchers != NULL)
    {
      _dbus_assert (_dbus_hash_table_get_n_entries (peers->watchers) == 0);
      _dbus_hash_table_unref (peers->watchers);
    }
  dbus_connection_free_data_slot (&watches_slot);
  dbus_free (peers);
}

static DBusList *
find_name (PeerWatches *w,
           const char  *name)
{
  DBusList *link;

  for (link = _dbus_list_get_first_link (&w->names); link != NULL;
       link = _dbus_list_get_next_link (&w->names, link))
    if (strcmp (link->data, name) == 0)
      return link;

  return NULL;
}

/* @w's connection no longer watches the name of @link (in @w->names). */
static void
unwatch_link (PeerWatches *w,
              DBusList    *link)
{
  char *name = link->data;
  DBusHashTable *watchers = w->peers->watchers;
  DBusList **list = _dbus_hash_table_lookup_string (watchers, name);

  _dbus_list_remove (list, w->connection);
  if (*list == NULL)
    _dbus_hash_table_remove_string (watchers, name);

  _dbus_list_remove_link (&w->names, link);
  w->n_names--;
  dbus_free (name);
}

/* The connection's watches end. */
static void
peer_watches_free (void *data)
{
  PeerWatches *w = data;

  while (w->names != NULL)
    unwatch_link (w, w->names);
  dbus_free (w);
}

static PeerWatches *
get_watches (DBusConnection *connection,
             dbus_bool_t     create)
{
  BusAfbusPeers *peers;
  PeerWatches *w = NULL;

  if (watches_slot >= 0)
    w = dbus_connection_get_data (connection, watches_slot);
  if (w != NULL || !create)
    return w;

  peers = bus_context_get_afbus (bus_connection_get_context (connection))->peers;
  if (peers->watchers == NULL)
    {
      peers->watchers = _dbus_hash_table_new (DBUS_HASH_STRING, dbus_free,
                                              dbus_free);
      if (peers->watchers == NULL)
        return NULL;
    }

  if (watches_slot < 0)
    return NULL;

  w = dbus_new0 (PeerWatches, 1);
  if (w == NULL)
    return NULL;
  w->peers = peers;
  w->connection = connection;

  if (!dbus_connection_set_data (connection, watches_slot, w,
                                 peer_watches_free))
    {
      dbus_free (w);
      return NULL;
    }

  return w;
}

/* @w's connection watches @name from now on.  FALSE if no memory
 * (nothing changed). */
static dbus_bool_t
watch_add (PeerWatches *w,
           const char  *name)
{
  DBusHashTable *watchers = w->peers->watchers;
  DBusList **list;
  char *copy, *key;

  list = _dbus_hash_table_lookup_string (watchers, name);
  if (list == NULL)
    {
      key = _dbus_strdup (name);
      list = dbus_new0 (DBusList *, 1);
      if (key == NULL || list == NULL ||
          !_dbus_hash_table_insert_string (watchers, key, list))
        {
          dbus_free (key);
          dbus_free (list);
          return FALSE;
        }
    }

  copy = _dbus_strdup (name);
  if (copy == NULL || !_dbus_list_append (&w->names, copy))
    goto oom;
  if (!_dbus_list_append (list, w->connection))
    {
      _dbus_list_remove_last (&w->names, copy);
      goto oom;
    }

  w->n_names++;
  return TRUE;

 oom:
  dbus_free (copy);
  if (*list == NULL)
    _dbus_hash_table_remove_string (watchers, name);
  return FALSE;
}

static dbus_bool_t
get_peer_name (DBusMessage *message,
               const char **name,
               DBusError   *error)
{
  DBusString str;

  if (!dbus_message_get_args (message, error,
                              DBUS_TYPE_STRING, name,
                              DBUS_TYPE_INVALID))
    return FALSE;

  _dbus_string_init_const (&str, *name);
  if (!_dbus_validate_bus_name (&str, 0, _dbus_string_get_length (&str)) ||
      strcmp (*name, DBUS_SERVICE_DBUS) == 0)
    {
      dbus_set_error (error, DBUS_ERROR_INVALID_ARGS,
                      "\"%s\" is not the name of a peer", *name);
      return FALSE;
    }

  return TRUE;
}

/* PeerGone (name) from the driver to @recipient. */
static dbus_bool_t
send_peer_gone (BusTransaction *transaction,
                DBusConnection *recipient,
                const char     *name)
{
  DBusMessage *message;
  dbus_bool_t ok;

  message = dbus_message_new_signal (DBUS_PATH_DBUS, DBUS_INTERFACE_AFBUS,
                                     "PeerGone");
  if (message == NULL)
    return FALSE;

  ok = dbus_message_append_args (message, DBUS_TYPE_STRING, &name,
                                 DBUS_TYPE_INVALID) &&
    bus_transaction_send_from_driver (transaction, recipient, message);
  dbus_message_unref (message);
  return ok;
}

dbus_bool_t
bus_afbus_peers_handle_watch (DBusConnection *connection,
                              BusTransaction *transaction,
                              DBusMessage    *message,
                              DBusError      *error)
{
  PeerWatches *w;
  const char *name;

  if (!get_peer_name (message, &name, error))
    return FALSE;

  w = get_watches (connection, TRUE);
  if (w == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  if (find_name (w, name) != NULL)
    return bus_driver_send_ack_reply (connection, transaction, message,
                                      error);

  if (w->n_names >= DBUS_AFBUS_PEER_WATCH_SIZE)
    {
      dbus_set_error (error, DBUS_ERROR_LIMITS_EXCEEDED,
                      "Connection \"%s\" already watches %d peers, the most"
                      " a connection may watch",
                      bus_connection_is_active (connection) ?
                      bus_connection_get_name (connection) : "(inactive)",
                      w->n_names);
      return FALSE;
    }

  if (!watch_add (w, name))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  if (!bus_driver_send_ack_reply (connection, transaction, message, error))
    goto failed;

  /* Gone before the watch was in place. */
  if (bus_afbus_owner (bus_transaction_get_context (transaction),
                       name) == NULL &&
      !send_peer_gone (transaction, connection, name))
    {
      BUS_SET_OOM (error);
      goto failed;
    }

  return TRUE;

 failed:
  unwatch_link (w, find_name (w, name));
  return FALSE;
}

dbus_bool_t
bus_afbus_peers_handle_unwatch (DBusConnection *connection,
                                BusTransaction *transaction,
                                DBusMessage    *message,
                                DBusError      *error)
{
  PeerWatches *w;
  DBusList *link = NULL;
  const char *name;

  if (!get_peer_name (message, &name, error))
    return FALSE;

  w = get_watches (connection, FALSE);
  if (w != NULL)
    link = find_name (w, name);
  if (link == NULL)
    {
      dbus_set_error (error, DBUS_ERROR_INVALID_ARGS,
                      "This connection does not watch \"%s\"", name);
      return FALSE;
    }

  if (!bus_driver_send_ack_reply (connection, transaction, message, error))
    return FALSE;

  unwatch_link (w, link);
  return TRUE;
}

/* @connection's watches end (it left, or became a monitor). */
void
bus_afbus_peers_drop (DBusConnection *connection)
{
  if (get_watches (connection, FALSE) != NULL)
    dbus_connection_set_data (connection, watches_slot, NULL, NULL);
}

dbus_bool_t
bus_afbus_peers_gone (BusTransaction *transaction,
                      const char     *name,
                      DBusError      *error)
{
  BusContext *context = bus_transaction_get_context (transaction);
  DBusHashTable *watchers = bus_context_get_afbus (context)->peers->watchers;
  DBusList **list, *link;

  if (watchers == NULL)
    return TRUE;

  list = _dbus_hash_table_lookup_string (watchers, name);
  if (list == NULL)
    return TRUE;

  for (link = _dbus_list_get_first_link (list); link != NULL;
       link = _dbus_list_get_next_link (list, link))
    {
      if (!send_peer_gone (transaction, link->data, name))
        {
          BUS_SET_OOM (error);
          return FALSE;
        }
    }

  return TRUE;
}
