/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-names.c  names and addresses of an AF_BUS bus
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
#include "bus-afbus-names.h"
#include "bus-afbus.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-hash.h>
#include <dbus/dbus-server-afbus.h>

#include "bus.h"
#include "bus-afbus-state.h"
#include "services.h"
#include "utils.h"

/*
 * Names and addresses on an AF_BUS bus, as the daemon keeps them:
 *
 * - An AF_BUS connection's client is named after its kernel address
 *   (0000/00000000beef is ":0.beef"); the daemon reads the address once
 *   and keeps it in the connection's data, with whether the client
 *   joined the bus as a native client or is a legacy client bridged
 *   onto it through an AF_BUS pair (bus-afbus-legacy.c).
 *
 * - Each well-known name gets the next address of prefix 0001 the first
 *   time an AF_BUS client becomes its primary owner, and keeps it while
 *   something refers to it (see NameAddr): the address is never given to
 *   another name.  It moves with the name (BUS_DEL_ADDR from the old
 *   owner, BUS_ADD_ADDR to the new one); while the name has no AF_BUS
 *   owner nobody has it and the kernel routes messages sent to it to the
 *   daemon, which delivers or refuses them like any other.  Address
 *   moves are undone when the daemon cancels the transaction that made
 *   them (as it undoes the name ownership change).
 *
 * This file depends on no other part of the daemon's AF_BUS code; they
 * all use it.
 */

/* The well-known names' addresses (bus-afbus-state.h). */
struct BusAfbusNames
{
  DBusHashTable *addrs;         /**< name -> NameAddr *, NULL until the
                                 *   first */
  dbus_uint64_t next_client;    /**< client part of the next address */
};

static dbus_int32_t client_slot = -1;

BusAfbusNames *
bus_afbus_names_new (void)
{
  BusAfbusNames *names = dbus_new0 (BusAfbusNames, 1);

  if (names == NULL)
    return NULL;

  /* The connection data slot of what the daemon knows of each
   * connection, held as long as the names (one per BusContext, as
   * upstream's connection.c holds its own). */
  if (!dbus_connection_allocate_data_slot (&client_slot))
    {
      dbus_free (names);
      return NULL;
    }

  names->next_client = 1;
  return names;
}

void
bus_afbus_names_free (BusAfbusNames *names)
{
  if (names->addrs != NULL)
    _dbus_hash_table_unref (names->addrs);
  dbus_connection_free_data_slot (&client_slot);
  dbus_free (names);
}

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

#ifdef DBUS_HAVE_AFBUS

/* The AF_BUS server the daemon listens on (check_listen() in bus-afbus.c: at
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

/**
 * At startup, the daemon gives up its AF_BUS address (a kernel that
 * cannot secure it, a policy it cannot hold): one warning naming the
 * address and @why, and it serves its other addresses' clients as
 * dbus-daemon does; the fork's clients fall back to the next address of
 * their list.  FALSE with @error set when no other address is left.
 */
dbus_bool_t
bus_afbus_stop_listening (BusContext *context,
                          const char *why,
                          DBusError  *error)
{
  DBusServer *server = bus_afbus_server (context);
  char *address;

  if (server == NULL)
    return TRUE;

  address = dbus_server_get_address (server);
  bus_context_log (context, DBUS_SYSTEM_LOG_WARNING,
                   "Not listening on %s: %s; clients use the bus's other"
                   " addresses", address != NULL ? address : "afbus:", why);
  dbus_free (address);

  _dbus_list_remove (bus_context_get_servers (context), server);
  dbus_server_disconnect (server);
  dbus_server_unref (server);

  if (_dbus_list_get_first_link (bus_context_get_servers (context)) == NULL)
    {
      dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED,
                      "No address to listen on: %s", why);
      return FALSE;
    }
  return TRUE;
}

/*
 * What the daemon knows of an AF_BUS connection, in the connection's
 * data (client_slot, held as long as the BusAfbusNames): its
 * client's address, read with getpeername() once rather than on every
 * message; whether bus_afbus_join() let it onto the bus as a native
 * client; and, for a legacy client bridged onto the bus, the accepted
 * socket of its AF_BUS pair (A1, bus-afbus-legacy.c), which stands for
 * it on the bus.  A joined client stays an AF_BUS client once its
 * socket is closed, while the daemon handles what it sent before
 * leaving; a legacy client whose pair is gone is no AF_BUS client any
 * more.
 */
typedef struct
{
  int fd;                 /**< the socket it was read from */
  dbus_uint64_t addr;
  dbus_bool_t joined;     /**< a native client, on the bus */
  dbus_bool_t legacy;     /**< a legacy client; @fd is its pair's A1 */
  unsigned long forwarded_lost; /**< Forwarded signals it did not get,
                                 *   not told yet (ForwardedLost) */
} BusAfbusClient;


static BusAfbusClient *
client_get (DBusConnection *connection)
{
  if (client_slot < 0)
    return NULL;

  return dbus_connection_get_data (connection, client_slot);
}

/* Keeps @connection's socket and address; NULL without memory (they
 * are read again next time). */
static BusAfbusClient *
client_remember (DBusConnection *connection,
                 int             fd,
                 dbus_uint64_t   addr)
{
  BusAfbusClient *client;

  if (client_slot < 0)
    return NULL;

  client = dbus_new0 (BusAfbusClient, 1);
  if (client == NULL)
    return NULL;

  client->fd = fd;
  client->addr = addr;
  if (!dbus_connection_set_data (connection, client_slot, client, dbus_free))
    {
      dbus_free (client);
      return NULL;
    }
  return client;
}

/* The address of the AF_BUS client at the other end of @fd. */
static dbus_bool_t
peer_addr (int            fd,
           dbus_uint64_t *addr_p)
{
  struct sockaddr_bus sa;
  socklen_t len = sizeof (sa);

  if (getpeername (fd, (struct sockaddr *) &sa, &len) < 0 ||
      sa.sbus_family != AF_BUS)
    return FALSE;

  *addr_p = sa.sbus_addr.s_addr;
  return TRUE;
}

/* The accepted socket of an AF_BUS connection (a legacy client's A1),
 * and the client's address. */
dbus_bool_t
bus_afbus_connection_fd (DBusConnection *connection,
                         int            *fd_p,
                         dbus_uint64_t  *addr_p)
{
  BusAfbusClient *client;
  dbus_uint64_t addr;
  int fd;

  if (connection == NULL)
    return FALSE;

  client = client_get (connection);
  if (client != NULL && client->legacy)
    fd = client->fd;
  else if (!dbus_connection_get_socket (connection, &fd))
    return FALSE;

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
      if (!peer_addr (fd, &addr))
        return FALSE;
      client_remember (connection, fd, addr);
    }

  *fd_p = fd;
  if (addr_p != NULL)
    *addr_p = addr;
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

/**
 * @connection is a legacy client, which bus-afbus-legacy.c gave an
 * AF_BUS pair: @fd, the pair's accepted socket (A1), stands for it on
 * the bus from now on.  FALSE if out of memory, or @fd is no AF_BUS
 * socket.
 */
dbus_bool_t
bus_afbus_connection_set_pair (DBusConnection *connection,
                               int             fd)
{
  BusAfbusClient *client;
  dbus_uint64_t addr;

  if (!peer_addr (fd, &addr))
    return FALSE;

  /* (A pair made before, for a Hello that failed, left its mark.) */
  client = client_get (connection);
  if (client == NULL)
    client = client_remember (connection, fd, addr);
  if (client == NULL)
    return FALSE;

  client->fd = fd;
  client->addr = addr;
  client->legacy = TRUE;
  return TRUE;
}

/* The legacy client's pair is closed: @connection is no AF_BUS client
 * any more, though its address stays known (bus_afbus_connection_addr()). */
void
bus_afbus_connection_drop_pair (DBusConnection *connection)
{
  BusAfbusClient *client = client_get (connection);

  if (client != NULL)
    client->legacy = FALSE;
}

/* Whether @connection is a legacy client bridged onto the bus through
 * its AF_BUS pair. */
dbus_bool_t
bus_afbus_connection_is_legacy (DBusConnection *connection)
{
  BusAfbusClient *client;

  return connection != NULL && (client = client_get (connection)) != NULL &&
         client->legacy;
}

/* bus_afbus_join() let @connection, whose socket it found with
 * bus_afbus_connection_fd(), onto the bus as a native client: it stays
 * an AF_BUS client once its socket is closed.  FALSE if out of memory
 * (bus_afbus_connection_fd() could not keep what it found). */
dbus_bool_t
bus_afbus_connection_set_joined (DBusConnection *connection)
{
  BusAfbusClient *client = client_get (connection);

  if (client == NULL)
    return FALSE;

  client->joined = TRUE;
  return TRUE;
}

/* The count of @connection's Forwarded signals that did not fit in its
 * queue and that it was not told of yet (bus_afbus_send_forwarded()),
 * or NULL if it is no AF_BUS client the daemon knows. */
unsigned long *
bus_afbus_connection_forwarded_lost (DBusConnection *connection)
{
  BusAfbusClient *client = client_get (connection);

  return client != NULL ? &client->forwarded_lost : NULL;
}

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

/* The entry of a well-known name; a new one, with a new address, if
 * @create.  NULL if there is none, or no memory. */
static NameAddr *
name_addr_get (BusAfbusNames *names,
               const char    *name,
               dbus_bool_t    create)
{
  NameAddr *value;
  char *key;

  if (names->addrs == NULL)
    {
      if (!create)
        return NULL;
      names->addrs = _dbus_hash_table_new (DBUS_HASH_STRING, dbus_free,
                                           dbus_free);
      if (names->addrs == NULL)
        return NULL;
    }

  value = _dbus_hash_table_lookup_string (names->addrs, name);
  if (value != NULL || !create || names->next_client >= BUS_CLIENT_MASK)
    return value;

  key = _dbus_strdup (name);
  value = dbus_new0 (NameAddr, 1);
  if (key == NULL || value == NULL ||
      !_dbus_hash_table_insert_string (names->addrs, key, value))
    {
      dbus_free (key);
      dbus_free (value);
      return NULL;
    }

  value->addr = (DBUS_AFBUS_NAME_PREFIX << BUS_PREFIX_SHIFT) |
    names->next_client++;
  _dbus_verbose ("name %s has AF_BUS address %016" PRIx64 "\n", name,
                 value->addr);
  return value;
}

/* Drops @value, the entry of @name, if nothing refers to it any more. */
static void
name_addr_release (BusAfbusNames *names,
                   const char    *name,
                   NameAddr      *value)
{
  if (value->refs == 0 && !value->owned && !value->pinned)
    {
      _dbus_verbose ("name %s gives up AF_BUS address %016" PRIx64 "\n",
                     name, value->addr);
      _dbus_hash_table_remove_string (names->addrs, name);
    }
}

/* The address of a well-known name, if it has one. */
dbus_bool_t
bus_afbus_name_addr (BusAfbusNames *names,
                     const char    *name,
                     dbus_uint64_t *addr)
{
  NameAddr *value = name_addr_get (names, name, FALSE);

  if (value == NULL)
    return FALSE;
  *addr = value->addr;
  return TRUE;
}

/* The address of a well-known name, held: pinned by the bus policy
 * (@pin: for as long as the daemon runs), or by one more kernel match
 * rule.  FALSE if no memory. */
static dbus_bool_t
name_addr_hold (BusAfbusNames *names,
                const char    *name,
                dbus_bool_t    pin,
                dbus_uint64_t *addr)
{
  NameAddr *value = name_addr_get (names, name, TRUE);

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
bus_afbus_name_addr_pin (BusAfbusNames *names,
                         const char    *name,
                         dbus_uint64_t *addr)
{
  return name_addr_hold (names, name, TRUE, addr);
}

/* The address of a well-known name that a kernel match rule names: it
 * stays until bus_afbus_name_addr_unref(). */
dbus_bool_t
bus_afbus_name_addr_ref (BusAfbusNames *names,
                         const char    *name,
                         dbus_uint64_t *addr)
{
  return name_addr_hold (names, name, FALSE, addr);
}

void
bus_afbus_name_addr_unref (BusAfbusNames *names,
                           const char    *name)
{
  NameAddr *value = name_addr_get (names, name, FALSE);

  _dbus_assert (value != NULL && value->refs > 0);
  if (value == NULL || value->refs == 0)
    return;
  value->refs--;
  name_addr_release (names, name, value);
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
  BusAfbusNames *names;
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
  NameAddr *value = name_addr_get (move->names, move->name, FALSE);

  if (value != NULL)
    {
      if (move->cancelled)
        value->owned = move->was_owned;
      else
        value->owned = (move->added_to != NULL);
      name_addr_release (move->names, move->name, value);
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

/**
 * The primary owner of the well-known name @name changes from @old_conn
 * to @new_conn (either NULL, or not an AF_BUS client): the name's
 * address moves with it, within @transaction, which undoes the move if
 * it is cancelled.  A name gets its address the first time an AF_BUS
 * client owns it.
 */
dbus_bool_t
bus_afbus_names_move (BusTransaction *transaction,
                      const char     *name,
                      DBusConnection *old_conn,
                      DBusConnection *new_conn,
                      DBusError      *error)
{
  BusContext *context = bus_transaction_get_context (transaction);
  BusAfbusNames *names = bus_context_get_afbus (context)->names;
  AddrMove *move;
  NameAddr *value;
  dbus_uint64_t addr;

  if (!bus_afbus_connection_is_afbus (new_conn))
    new_conn = NULL;

  value = name_addr_get (names, name, new_conn != NULL);
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
      name_addr_release (names, name, value);
      BUS_SET_OOM (error);
      return FALSE;
    }
  move->names = names;
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


#else /* !DBUS_HAVE_AFBUS */

DBusServer *
bus_afbus_server (BusContext *context)
{
  return NULL;
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
bus_afbus_connection_is_afbus (DBusConnection *connection)
{
  return FALSE;
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
bus_afbus_connection_set_pair (DBusConnection *connection,
                               int             fd)
{
  return FALSE;
}

void
bus_afbus_connection_drop_pair (DBusConnection *connection)
{
}

dbus_bool_t
bus_afbus_connection_is_legacy (DBusConnection *connection)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_connection_set_joined (DBusConnection *connection)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_name_addr (BusAfbusNames *names,
                     const char    *name,
                     dbus_uint64_t *addr)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_name_addr_pin (BusAfbusNames *names,
                         const char    *name,
                         dbus_uint64_t *addr)
{
  return FALSE;
}

dbus_bool_t
bus_afbus_name_addr_ref (BusAfbusNames *names,
                         const char    *name,
                         dbus_uint64_t *addr)
{
  return FALSE;
}

void
bus_afbus_name_addr_unref (BusAfbusNames *names,
                           const char    *name)
{
}

dbus_bool_t
bus_afbus_names_move (BusTransaction *transaction,
                      const char     *name,
                      DBusConnection *old_conn,
                      DBusConnection *new_conn,
                      DBusError      *error)
{
  return TRUE;
}

#endif /* DBUS_HAVE_AFBUS */
