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
#include "bus-afbus-peers.h"
#include "bus-afbus-policy.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <dbus/dbus-afbus.h>
#include <dbus/dbus-hash.h>
#include <dbus/dbus-server-afbus.h>

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
 * - Each well-known name gets the next address of prefix 0001 the first
 *   time an AF_BUS client becomes its primary owner, and keeps it for
 *   the daemon's lifetime: the address is never given to another name.
 *   It moves with the name (BUS_DEL_ADDR from the old owner,
 *   BUS_ADD_ADDR to the new one); while the name has no AF_BUS owner
 *   nobody has it and the kernel routes messages sent to it to the
 *   daemon, which delivers or refuses them like any other.
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
 *   pending reply for it (bus_afbus_kernel_awaits_reply()), and the
 *   caller's library watches the callee, as for its direct calls, to
 *   answer NoReply if the callee leaves first.
 *
 * - Address moves are undone when the daemon cancels the transaction
 *   that made them (as it undoes the name ownership change).
 *
 * - When an AF_BUS client leaves, the signal
 *   org.freedesktop.DBus.AF_BUS.PeerGone (s unique-name) goes to the
 *   connections that watch it (bus-afbus-peers.c): the client library of
 *   a peer that called it directly, through the kernel, answers its
 *   calls still waiting for a reply with NoReply, as the daemon answers
 *   the calls it forwarded.  So does PeerGone (s well-known-name) for
 *   each name it owned, sent before its unique name's, for the calls
 *   made to the name's address.
 */

/* The connection that owns the unique or well-known name @name, if any. */
DBusConnection *
bus_afbus_owner (BusContext *context,
                 const char *name)
{
  BusService *service;
  DBusString str;

  if (name == NULL || name[0] == '\0')
    return NULL;

  _dbus_string_init_const (&str, name);
  service = bus_registry_lookup (bus_context_get_registry (context), &str);
  if (service == NULL)
    return NULL;

  return bus_service_get_primary_owners_connection (service);
}

/**
 * The addresses the daemon listens on when it is given --address: that
 * address, then, unless it is an afbus: address itself, the afbus:
 * <listen> addresses of the configuration.  Upstream's --address
 * replaces the configuration's addresses; the fork keeps its AF_BUS
 * ones because systemd, which starts the system and session buses with
 * --address=systemd: to pass them their unix sockets, cannot make AF_BUS
 * buses: the daemon makes them itself.
 *
 * A bare "afbus:" makes a fresh bus that only --print-address tells
 * anybody about.  Under --address it becomes "afbus:runtime=yes", as
 * systemd's $XDG_RUNTIME_DIR/bus socket takes the place of the session
 * configuration's unix:tmpdir=: the user bus of dbus-user-session is
 * then found at $XDG_RUNTIME_DIR/bus.afbus (a daemon without
 * $XDG_RUNTIME_DIR logs that it does not listen on it).
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
  if (strncmp (address, "afbus:", strlen ("afbus:")) == 0)
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

#ifdef DBUS_HAVE_AFBUS

/*
 * The AF_BUS address of a well-known name, kept while something refers
 * to it: an AF_BUS owner, which the kernel routes the address to; the
 * kernel match rules of the name's signals, counted by the match rules
 * that hold it (bus_afbus_name_addr_ref()); or the bus policy, whose
 * kernel rules every client has, for as long as the daemon runs
 * (bus_afbus_name_addr_pin()).  When nothing does, the entry goes, so
 * that names a client merely asked about (AddMatch, RequestName and
 * their undoing, in a loop) cannot make the table grow without bound.
 * No address is ever given out twice: a name that comes back gets a
 * new one, and a client whose cache still holds the old one reaches
 * the daemon (the kernel's default route), which tells it the new one.
 */
typedef struct
{
  dbus_uint64_t addr;
  unsigned int refs;      /**< match rules that hold it */
  dbus_bool_t owned;      /**< an AF_BUS client owns the name */
  dbus_bool_t pinned;     /**< the bus policy names it */
} NameAddr;

/* name -> NameAddr * */
static DBusHashTable *name_addrs = NULL;
static dbus_uint64_t next_name_client = 1;

/*
 * What the daemon knows of an AF_BUS connection, in the connection's
 * data (client_slot, allocated once for the daemon's life): its
 * client's address, read with getpeername() once rather than on every
 * message, and whether bus_afbus_join() let it onto the bus as a native
 * client (not a legacy one).  A joined client stays an AF_BUS client
 * once its socket is closed, while the daemon handles what it sent
 * before leaving.
 */
typedef struct
{
  int fd;                 /**< the socket it was read from */
  dbus_uint64_t addr;
  dbus_bool_t joined;
} BusAfbusClient;

static dbus_int32_t client_slot = -1;

static BusAfbusClient *
client_get (DBusConnection *connection)
{
  if (client_slot < 0)
    return NULL;

  return dbus_connection_get_data (connection, client_slot);
}

/* Keeps @connection's socket and address; without memory they are
 * read again next time. */
static void
client_remember (DBusConnection *connection,
                 int             fd,
                 dbus_uint64_t   addr)
{
  BusAfbusClient *client;

  if (client_slot < 0 && !dbus_connection_allocate_data_slot (&client_slot))
    return;

  client = dbus_new0 (BusAfbusClient, 1);
  if (client == NULL)
    return;

  client->fd = fd;
  client->addr = addr;
  if (!dbus_connection_set_data (connection, client_slot, client, dbus_free))
    dbus_free (client);
}

/* The accepted socket of an AF_BUS connection (a legacy client's A1,
 * see bus-afbus-legacy.c), and the client's address. */
dbus_bool_t
bus_afbus_connection_fd (DBusConnection *connection,
                         int            *fd_p,
                         dbus_uint64_t  *addr_p)
{
  BusAfbusClient *client;
  struct sockaddr_bus sa;
  socklen_t len = sizeof (sa);
  dbus_uint64_t addr;
  int fd;

  if (connection == NULL ||
      (!bus_afbus_legacy_accepted_fd (connection, &fd) &&
       !dbus_connection_get_socket (connection, &fd)))
    return FALSE;

  client = client_get (connection);
  if (client != NULL)
    {
      /* Read from another socket: a legacy client's pair, now gone (its
       * own socket is no AF_BUS one). */
      if (client->fd != fd)
        return FALSE;
      addr = client->addr;
    }
  else
    {
      /* A connection on another transport (a legacy client before its
       * Hello gave it an AF_BUS pair) is asked again next time. */
      if (getpeername (fd, (struct sockaddr *) &sa, &len) < 0 ||
          sa.sbus_family != AF_BUS)
        return FALSE;
      addr = sa.sbus_addr.s_addr;
      client_remember (connection, fd, addr);
    }

  *fd_p = fd;
  if (addr_p != NULL)
    *addr_p = addr;
  return TRUE;
}

/* The AF_BUS server the daemon listens on (bus_afbus_check_listen(): at
 * most one), or NULL. */
DBusServer *
bus_afbus_server (BusContext *context)
{
  DBusList **servers = bus_context_get_servers (context);
  DBusList *link;

  for (link = _dbus_list_get_first_link (servers); link != NULL;
       link = _dbus_list_get_next_link (servers, link))
    if (_dbus_server_is_afbus (link->data))
      return link->data;

  return NULL;
}

/* Why the daemon did not listen on an afbus: address of its
 * configuration (bus_afbus_skip_listen()), for the error if it has no
 * other address. */
static char *skipped_listen = NULL;

/**
 * Whether the daemon goes on without a <listen> address it could not
 * listen on: an afbus: address on a kernel without AF_BUS (socket()
 * fails with EAFNOSUPPORT, which the AF_BUS server reports as
 * NotSupported).  The daemon then logs one warning and serves its
 * other addresses, as dbus-daemon would; the fork's clients fall back
 * to the next address of their list.  Clears @error when it returns
 * TRUE.
 */
dbus_bool_t
bus_afbus_skip_listen (BusContext *context,
                       const char *address,
                       DBusError  *error)
{
  if (strncmp (address, "afbus:", strlen ("afbus:")) != 0 ||
      !dbus_error_has_name (error, DBUS_ERROR_NOT_SUPPORTED))
    return FALSE;

  bus_context_log (context, DBUS_SYSTEM_LOG_WARNING,
                   "Not listening on %s: %s; clients use the bus's other"
                   " addresses", address, error->message);
  dbus_free (skipped_listen);
  skipped_listen = _dbus_strdup (error->message);
  dbus_error_free (error);
  return TRUE;
}

/**
 * Refuses a configuration that listens on more than one AF_BUS address.
 * The daemon names its AF_BUS clients after their kernel addresses
 * (":0.<hex>", which the kernel's SENDER check knows), and each bus
 * gives out the same addresses: two buses would give two clients one
 * unique name.  Called once the daemon listens on all its addresses.
 */
dbus_bool_t
bus_afbus_check_listen (BusContext *context,
                        DBusError  *error)
{
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

/* The address of an AF_BUS connection's client, as last known: also
 * once its socket is closed. */
dbus_bool_t
bus_afbus_connection_addr (DBusConnection *connection,
                           dbus_uint64_t  *addr_p)
{
  BusAfbusClient *client;
  int fd;

  if (connection != NULL && (client = client_get (connection)) != NULL)
    {
      *addr_p = client->addr;
      return TRUE;
    }

  return bus_afbus_connection_fd (connection, &fd, addr_p);
}

dbus_bool_t
bus_afbus_connection_is_afbus (DBusConnection *connection)
{
  BusAfbusClient *client;
  int fd;

  if (connection != NULL && (client = client_get (connection)) != NULL &&
      client->joined)
    return TRUE;

  return bus_afbus_connection_fd (connection, &fd, NULL);
}

dbus_bool_t
bus_afbus_unique_name (DBusConnection *connection,
                       DBusString     *name,
                       DBusError      *error)
{
  dbus_uint64_t addr;
  int fd;

  if (!bus_afbus_connection_fd (connection, &fd, &addr))
    {
      dbus_set_error (error, DBUS_ERROR_DISCONNECTED,
                      "AF_BUS client is gone");
      return FALSE;
    }

  if (!_dbus_afbus_unique_name_from_addr (addr, name))
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  return TRUE;
}

dbus_bool_t
bus_afbus_join (DBusConnection *connection,
                DBusError      *error)
{
  BusAfbusClient *client;
  int fd;

  if (!bus_afbus_connection_fd (connection, &fd, NULL))
    return TRUE;

  client = client_get (connection);
  if (client == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  if (!bus_afbus_legacy_is_legacy (connection))
    client->joined = TRUE;

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
  return TRUE;
}

/* The entry of a well-known name; a new one, with a new address, if
 * @create.  NULL if there is none, or no memory. */
static NameAddr *
name_addr_get (const char  *name,
               dbus_bool_t  create)
{
  NameAddr *value;
  char *key;

  if (name_addrs == NULL)
    {
      if (!create)
        return NULL;
      name_addrs = _dbus_hash_table_new (DBUS_HASH_STRING, dbus_free, dbus_free);
      if (name_addrs == NULL)
        return NULL;
    }

  value = _dbus_hash_table_lookup_string (name_addrs, name);
  if (value != NULL || !create || next_name_client >= BUS_CLIENT_MASK)
    return value;

  key = _dbus_strdup (name);
  value = dbus_new0 (NameAddr, 1);
  if (key == NULL || value == NULL ||
      !_dbus_hash_table_insert_string (name_addrs, key, value))
    {
      dbus_free (key);
      dbus_free (value);
      return NULL;
    }

  value->addr = (DBUS_AFBUS_NAME_PREFIX << BUS_PREFIX_SHIFT) | next_name_client++;
  _dbus_verbose ("name %s has AF_BUS address %016" PRIx64 "\n", name,
                 value->addr);
  return value;
}

/* Drops @value, the entry of @name, if nothing refers to it any more. */
static void
name_addr_release (const char *name,
                   NameAddr   *value)
{
  if (value->refs == 0 && !value->owned && !value->pinned)
    {
      _dbus_verbose ("name %s gives up AF_BUS address %016" PRIx64 "\n",
                     name, value->addr);
      _dbus_hash_table_remove_string (name_addrs, name);
    }
}

/* The address of a well-known name, if it has one. */
dbus_bool_t
bus_afbus_name_addr (const char    *name,
                     dbus_uint64_t *addr)
{
  NameAddr *value = name_addr_get (name, FALSE);

  if (value == NULL)
    return FALSE;
  *addr = value->addr;
  return TRUE;
}

/* The address of a well-known name, held: pinned by the bus policy
 * (@pin: for as long as the daemon runs), or by one more kernel match
 * rule.  FALSE if no memory. */
static dbus_bool_t
name_addr_hold (const char    *name,
                dbus_bool_t    pin,
                dbus_uint64_t *addr)
{
  NameAddr *value = name_addr_get (name, TRUE);

  if (value == NULL)
    return FALSE;
  if (pin)
    value->pinned = TRUE;
  else
    value->refs++;
  *addr = value->addr;
  return TRUE;
}

/* The address of a well-known name that the bus policy names. */
dbus_bool_t
bus_afbus_name_addr_pin (const char    *name,
                         dbus_uint64_t *addr)
{
  return name_addr_hold (name, TRUE, addr);
}

/* The address of a well-known name that a kernel match rule names: it
 * stays until bus_afbus_name_addr_unref(). */
dbus_bool_t
bus_afbus_name_addr_ref (const char    *name,
                         dbus_uint64_t *addr)
{
  return name_addr_hold (name, FALSE, addr);
}

void
bus_afbus_name_addr_unref (const char *name)
{
  NameAddr *value = name_addr_get (name, FALSE);

  _dbus_assert (value != NULL && value->refs > 0);
  if (value == NULL || value->refs == 0)
    return;
  value->refs--;
  name_addr_release (name, value);
}

static dbus_bool_t
set_addr (DBusConnection *connection,
          int             option,
          dbus_uint64_t   addr,
          DBusError      *error)
{
  struct bus_addr ba;
  int fd;

  if (!bus_afbus_connection_fd (connection, &fd, NULL))
    return TRUE;

  ba.s_addr = addr;
  if (setsockopt (fd, SOL_BUS, option, &ba, sizeof (ba)) < 0)
    {
      /* The client may be going away under us: its addresses go too. */
      if (errno == ENOTCONN)
        return TRUE;

      dbus_set_error (error, _dbus_error_from_errno (errno),
                      "Could not %s AF_BUS address %016" PRIx64
                      " for %s: %s",
                      option == BUS_ADD_ADDR ? "add" : "remove", addr,
                      bus_connection_get_name (connection),
                      _dbus_strerror (errno));
      return FALSE;
    }

  _dbus_verbose ("%s %016" PRIx64 " %s %s\n",
                 option == BUS_ADD_ADDR ? "added" : "removed", addr,
                 option == BUS_ADD_ADDR ? "to" : "from",
                 bus_connection_get_name (connection));
  return TRUE;
}

typedef struct
{
  DBusConnection *removed_from;   /**< the address was taken from it */
  DBusConnection *added_to;       /**< the address was given to it */
  dbus_uint64_t addr;
  char *name;                     /**< the name whose address it is */
  dbus_bool_t was_owned;          /**< it had an AF_BUS owner before */
  dbus_bool_t cancelled;          /**< the transaction was cancelled */
} AddrMove;

/* The transaction is over: once it committed, a name left without an
 * AF_BUS owner keeps its address only if something else refers to it
 * (name_addr_release()).  Until then the address stays, for an undo. */
static void
addr_move_free (void *data)
{
  AddrMove *move = data;
  NameAddr *value = name_addr_get (move->name, FALSE);

  if (value != NULL)
    {
      if (move->cancelled)
        value->owned = move->was_owned;
      else
        value->owned = (move->added_to != NULL);
      name_addr_release (move->name, value);
    }

  if (move->removed_from != NULL)
    dbus_connection_unref (move->removed_from);
  if (move->added_to != NULL)
    dbus_connection_unref (move->added_to);
  dbus_free (move->name);
  dbus_free (move);
}

/* The transaction is cancelled: the name stays where it was, so does
 * its address. */
static void
addr_move_cancel (void *data)
{
  AddrMove *move = data;
  DBusError error = DBUS_ERROR_INIT;

  move->cancelled = TRUE;

  if (move->added_to != NULL &&
      !set_addr (move->added_to, BUS_DEL_ADDR, move->addr, &error))
    {
      _dbus_verbose ("undo: %s\n", error.message);
      dbus_error_free (&error);
    }

  if (move->removed_from != NULL &&
      !set_addr (move->removed_from, BUS_ADD_ADDR, move->addr, &error))
    {
      _dbus_verbose ("undo: %s\n", error.message);
      dbus_error_free (&error);
    }
}

dbus_bool_t
bus_afbus_name_owner_changed (BusTransaction *transaction,
                              const char     *name,
                              const char     *old_owner,
                              const char     *new_owner,
                              DBusError      *error)
{
  AddrMove *move;
  DBusConnection *old_conn, *new_conn;
  NameAddr *value;
  dbus_uint64_t addr;

  if (name[0] == ':')
    {
      if ((new_owner == NULL || new_owner[0] == '\0') &&
          _dbus_afbus_addr_from_unique_name (name, &addr))
        return bus_afbus_peers_gone (transaction, name, error);
      return TRUE;
    }

  old_conn = bus_afbus_owner (bus_transaction_get_context (transaction),
                              old_owner);
  new_conn = bus_afbus_owner (bus_transaction_get_context (transaction),
                              new_owner);

  /* An AF_BUS owner of @name leaves the bus: PeerGone (name), as for its
   * unique name, so that the libraries of the clients that called it
   * straight through the name's address answer their calls NoReply. */
  /* (Its socket may be closed already: the name's AF_BUS address says
   * that AF_BUS clients may have called it directly.) */
  if (old_conn != NULL && !dbus_connection_get_is_connected (old_conn) &&
      bus_afbus_name_addr (name, &addr) &&
      !bus_afbus_peers_gone (transaction, name, error))
    return FALSE;

  if (!bus_afbus_connection_is_afbus (new_conn))
    new_conn = NULL;

  value = name_addr_get (name, new_conn != NULL);
  if (value == NULL)
    {
      if (new_conn != NULL)
        {
          BUS_SET_OOM (error);
          return FALSE;
        }
      return TRUE;      /* no address, and none needed */
    }
  addr = value->addr;

  /* Allocated first: an address move that cannot be undone is not made.
   * (A new entry with nothing referring to it goes with the move.) */
  move = dbus_new0 (AddrMove, 1);
  if (move == NULL || (move->name = _dbus_strdup (name)) == NULL)
    {
      dbus_free (move);
      name_addr_release (name, value);
      BUS_SET_OOM (error);
      return FALSE;
    }
  move->addr = addr;
  move->was_owned = value->owned;
  /* Owned from now on, so that nothing releases the address before the
   * transaction ends; the owner it ends with decides. */
  if (new_conn != NULL)
    value->owned = TRUE;

  if (old_conn != NULL)
    {
      DBusError tmp_error = DBUS_ERROR_INIT;

      /* EADDRNOTAVAIL: the old owner was not an AF_BUS client. */
      if (!set_addr (old_conn, BUS_DEL_ADDR, addr, &tmp_error))
        {
          _dbus_verbose ("%s\n", tmp_error.message);
          dbus_error_free (&tmp_error);
        }
      else if (bus_afbus_connection_is_afbus (old_conn))
        move->removed_from = dbus_connection_ref (old_conn);
    }

  if (new_conn != NULL)
    {
      if (!set_addr (new_conn, BUS_ADD_ADDR, addr, error))
        {
          addr_move_cancel (move);
          addr_move_free (move);
          return FALSE;
        }
      move->added_to = dbus_connection_ref (new_conn);
    }

  if (!bus_transaction_add_cancel_hook (transaction, addr_move_cancel, move,
                                        addr_move_free))
    {
      addr_move_cancel (move);
      addr_move_free (move);
      BUS_SET_OOM (error);
      return FALSE;
    }

  return TRUE;
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
dbus_bool_t
bus_afbus_kernel_awaits_reply (DBusConnection *sender,
                               DBusConnection *recipient)
{
  return bus_afbus_kernel_tracks_replies () &&
         bus_afbus_connection_is_afbus (sender) &&
         bus_afbus_connection_is_afbus (recipient) &&
         !bus_afbus_legacy_is_legacy (sender) &&
         !bus_afbus_legacy_is_legacy (recipient);
}

dbus_bool_t
bus_afbus_send_forwarded (BusTransaction *transaction,
                          DBusConnection *sender,
                          const char     *name,
                          dbus_bool_t     give_address,
                          DBusMessage    *forwarded,
                          DBusError      *error)
{
  BusRegistry *registry;
  BusService *service;
  DBusConnection *owner = NULL;
  DBusMessage *message;
  DBusString str;
  dbus_uint64_t addr = 0;
  dbus_uint32_t serial = 0;
  const char *callee = "";
  const char *owner_name = NULL;
  dbus_bool_t ok;

  /* Legacy clients send everything through the daemon. */
  if (name == NULL || strcmp (name, DBUS_SERVICE_DBUS) == 0 ||
      !bus_afbus_connection_is_afbus (sender) ||
      bus_afbus_legacy_is_legacy (sender))
    return TRUE;

  registry = bus_context_get_registry (bus_transaction_get_context (transaction));
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
        bus_afbus_name_addr (name, &addr)))
    addr = 0;

  /* The call @forwarded went to @owner, which answers it through the
   * kernel: the sender watches @owner for it
   * (bus_afbus_kernel_awaits_reply()). */
  if (forwarded != NULL && owner_name[0] != '\0' &&
      dbus_message_get_type (forwarded) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
      !dbus_message_get_no_reply (forwarded) &&
      bus_afbus_kernel_awaits_reply (sender, owner))
    {
      serial = dbus_message_get_serial (forwarded);
      callee = owner_name;
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
      bus_afbus_legacy_is_legacy (sender))
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

#else /* !DBUS_HAVE_AFBUS */

dbus_bool_t
bus_afbus_skip_listen (BusContext *context,
                       const char *address,
                       DBusError  *error)
{
  return FALSE;
}

DBusServer *
bus_afbus_server (BusContext *context)
{
  return NULL;
}

dbus_bool_t
bus_afbus_check_listen (BusContext *context,
                        DBusError  *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_connection_is_afbus (DBusConnection *connection)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_connection_fd (DBusConnection *connection,
                         int            *fd_p,
                         dbus_uint64_t  *addr_p)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_connection_addr (DBusConnection *connection,
                           dbus_uint64_t  *addr_p)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_name_addr (const char    *name,
                     dbus_uint64_t *addr)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_name_addr_pin (const char    *name,
                         dbus_uint64_t *addr)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_name_addr_ref (const char    *name,
                         dbus_uint64_t *addr)
{
  return FALSE;
}

void
bus_afbus_name_addr_unref (const char *name)
{
}

dbus_bool_t
bus_afbus_unique_name (DBusConnection *connection,
                       DBusString     *name,
                       DBusError      *error)
{
  dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED, "no AF_BUS");
  return FALSE;
}

dbus_bool_t
bus_afbus_join (DBusConnection *connection,
                DBusError      *error)
{
  return TRUE;
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

dbus_bool_t
bus_afbus_kernel_awaits_reply (DBusConnection *sender,
                               DBusConnection *recipient)
{
  return FALSE;
}


#endif /* DBUS_HAVE_AFBUS */
