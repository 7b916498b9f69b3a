/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-transport-afbus.c  AF_BUS subclass of DBusTransport
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
#include "dbus-internals.h"
#include "dbus-connection-internal.h"
#include "dbus-transport-afbus.h"
#include "dbus-sysdeps-afbus.h"
#include "dbus-bus-afbus.h"

#ifdef DBUS_HAVE_AFBUS

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "dbus-address.h"
#include "dbus-hash.h"
#include "dbus-marshal-basic.h"
#include "dbus-message-private.h"
#include "dbus-sysdeps-unix.h"
#include "dbus-timeout.h"
#include "dbus-watch.h"
#include "dbus-credentials.h"

/**
 * @defgroup DBusTransportAfbus DBusTransport implementation for AF_BUS
 * @ingroup  DBusInternals
 * @brief Implementation details of DBusTransport on AF_BUS sockets
 *
 * An AF_BUS socket carries one D-Bus message per datagram.  Until the
 * daemon (the bus master) has joined the client to the bus, a client
 * can talk only to the daemon: authentication is an exchange of
 * datagrams holding auth protocol lines with it, then Hello.  Once the
 * Hello reply has arrived, messages to AF_BUS unique names go straight
 * to their peer through the kernel, messages to well-known names go to
 * the address the daemon announced with
 * org.freedesktop.DBus.AF_BUS.Forwarded (or to the daemon, which
 * forwards them), and everything else goes to the daemon.  Where each
 * message goes, and what the daemon's signals to the client mean, is
 * the client side of the bus protocol (DBusAfbusClient,
 * dbus-bus-afbus.c); this file moves the datagrams.
 *
 * The same code runs the daemon's side of each client (the accepted
 * socket), where every message simply goes to the client.
 *
 * The daemon also opens a pair of its own for each legacy client (one
 * on another transport, such as unix:): a client socket C1 connected to
 * its own bus and the accepted socket A1, both in "relay" mode
 * (_dbus_afbus_relay_pair_new()).  They start authenticated, and C1
 * sends each message to the address the daemon attached to it
 * (_dbus_afbus_message_set_addr()) rather than routing it itself; what
 * C1 reads from peers is checked as a client checks it and carries the
 * peer's address.  bus-afbus-legacy.c in the daemon says what goes
 * where.
 *
 * @{
 */

typedef struct DBusTransportAfbus DBusTransportAfbus;

/*
 * A message to a client whose queue is full (sendmsg() fails with
 * EAGAIN) waits in the connection's outgoing queue, with the later
 * messages to that client behind it, while later messages to other
 * clients' unique addresses and calls to the bus driver go on
 * (write_pass()): one client that does not read holds up only what is
 * sent to it, as dbus-daemon holds a message for a slow client in that
 * client's own queue.  A message that could reach a full client another
 * way (one the daemon forwards, a name's address, a signal) waits
 * behind what waits for it: it ends the pass.
 *
 * The kernel tells the socket when each recipient that refused it may
 * have room again (BUS_ROOM_NOTIFY, af_bus.rst "Room notifications"):
 * a send refused for lack of room leaves a room watch for the address
 * it named, which becomes a notification on the socket's error queue
 * (POLLERR; recv(MSG_ERRQUEUE) gives the address) once that recipient
 * read or left.  The transport keeps the addresses it waits for (the
 * blocked ones); their messages are not tried again until their
 * notification comes, then in order.  POLLOUT then means only that the
 * socket's own send buffer and its user's budget have room, so the
 * write watch is off while everything left to send waits for
 * notifications (write_stalled).  There is no bound on the number of
 * full recipients but the kernel's (BUS_ROOM_WATCH_MAX destinations,
 * then ENOBUFS: the message is undeliverable) and no timer.
 *
 * A kernel without BUS_ROOM_NOTIFY makes the socket writable again
 * only once the last recipient that refused it has read: there the
 * first refusal ends the pass, and everything waits for that recipient.
 */

/*
 * At most this many messages waiting for one full client are looked at
 * (and stepped over) in a pass; one more ends the pass.  A pass starts
 * at the head of the queue, so a long queue to one client that does not
 * read (10000 calls in flight, say) would otherwise be walked again on
 * every write, making each pass cost as much as the queue.  A message
 * to another client that waits behind them goes once that client read.
 * The 128 replies a caller may await on the system bus stay below it,
 * so callers that stop reading never hold up the replies to the others
 * there.
 */
#define AFBUS_MAX_STEPPED_OVER 256

/* A destination that refused a message for lack of room, whose room
 * notification has not come yet. */
typedef struct
{
  dbus_uint64_t addr;                   /**< The address the send named */
  unsigned int stepped_over;            /**< Its messages stepped over in
                                         *   this pass */
} AfbusBlocked;

/* Is @addr one client's unique address (not the daemon's, a name's or
 * the multicast one)? */
#define AFBUS_IS_CLIENT_UNICAST(addr) \
  ((addr) != DBUS_AFBUS_MASTER && ((addr) >> BUS_PREFIX_SHIFT) == 0 && \
   (addr) != DBUS_AFBUS_MULTICAST (0))

/**
 * Implementation details of DBusTransportAfbus. All members are private.
 */
struct DBusTransportAfbus
{
  DBusTransport base;                   /**< Parent instance */
  DBusSocket fd;                        /**< The AF_BUS socket */
  DBusWatch *read_watch;                /**< Watch for readability */
  DBusWatch *write_watch;               /**< Watch for writability */
  dbus_bool_t room_notify;              /**< BUS_ROOM_NOTIFY is on */
  AfbusBlocked *blocked;                /**< Destinations waiting for
                                         *   their room notification */
  unsigned int n_blocked;               /**< How many */
  unsigned int blocked_size;            /**< Allocated */
  dbus_bool_t write_stalled;            /**< All that is left to send
                                         *   waits for notifications */
  DBusTimeout *reply_timer;             /**< Client: fires at the first
                                         *   deadline of deadlines */
  dbus_bool_t reply_timer_added;        /**< It is on the connection */
  dbus_bool_t reply_timer_due;          /**< It fired: set it again */

  int max_bytes_read_per_iteration;     /**< To avoid blocking too long */
  int max_bytes_written_per_iteration;  /**< To avoid blocking too long */

  DBusAfbusClient *client;              /**< A bus client's side of the
                                         *   bus protocol (dbus-bus-afbus.c);
                                         *   NULL on the daemon's side and
                                         *   for relays */
  unsigned long n_dropped;              /**< Messages dropped from peers
                                         *   that lied about their sender
                                         *   or were not one valid message */
  dbus_bool_t unchecked;                /**< The loader holds a datagram
                                         *   that check_incoming() could not
                                         *   finish for lack of memory */
  dbus_uint64_t unchecked_source;       /**< Its source address */
  dbus_bool_t relay;                    /**< The daemon's pair for a legacy
                                         *   client: no routing, no auth */
  DBusAfbusTrustedSourceFunction trusted_source; /**< Relay C1: which
                                         *   sources are the daemon's own
                                         *   relays (NULL: none) */
  void *trusted_source_data;            /**< Its data */
  dbus_bool_t trusted;                  /**< The datagram in the loader
                                         *   came whole from a trusted
                                         *   source: load it unvalidated */
};

/* The index of @addr among the blocked destinations, or -1. */
static int
blocked_find (DBusTransportAfbus *afbus_transport,
              dbus_uint64_t       addr)
{
  unsigned int i;

  for (i = 0; i < afbus_transport->n_blocked; i++)
    if (afbus_transport->blocked[i].addr == addr)
      return i;
  return -1;
}

/* Records that @addr refused a message and left a room watch; FALSE on
 * OOM. */
static dbus_bool_t
blocked_add (DBusTransportAfbus *afbus_transport,
             dbus_uint64_t       addr)
{
  AfbusBlocked *b;

  if (blocked_find (afbus_transport, addr) >= 0)
    return TRUE;

  if (afbus_transport->n_blocked == afbus_transport->blocked_size)
    {
      unsigned int size = afbus_transport->blocked_size ?
        afbus_transport->blocked_size * 2 : 8;

      b = dbus_realloc (afbus_transport->blocked, size * sizeof (*b));
      if (b == NULL)
        return FALSE;
      afbus_transport->blocked = b;
      afbus_transport->blocked_size = size;
    }

  b = &afbus_transport->blocked[afbus_transport->n_blocked++];
  b->addr = addr;
  b->stepped_over = 0;
  _dbus_verbose (" %016" PRIx64 " is full: its messages wait for its room"
                 " notification (%u destination(s) waiting)\n", addr,
                 afbus_transport->n_blocked);
  return TRUE;
}

/*
 * Takes the room notifications the kernel queued: each destination
 * named may have room again, and its messages are tried at the next
 * pass.  Returns how many were taken.
 */
static unsigned int
take_room_notifications (DBusTransportAfbus *afbus_transport)
{
  unsigned int n = 0;
  struct bus_addr dest;
  int i, len;

  for (;;)
    {
      len = recv (afbus_transport->fd.fd, &dest, sizeof (dest),
                  MSG_ERRQUEUE | MSG_DONTWAIT);
      if (len < 0 && errno == EINTR)
        continue;
      if (len != (int) sizeof (dest))
        break;

      n++;
      i = blocked_find (afbus_transport, dest.s_addr);
      _dbus_verbose (" room notification for %016" PRIx64 "%s\n",
                     (dbus_uint64_t) dest.s_addr,
                     i < 0 ? " (not waited for)" : "");
      if (i >= 0)
        afbus_transport->blocked[i] =
          afbus_transport->blocked[--afbus_transport->n_blocked];
    }

  if (n > 0)
    afbus_transport->write_stalled = FALSE;
  return n;
}

/* poll() on the socket, without waiting: its revents for @events
 * (POLLERR and POLLHUP are always reported). */
static short
poll_now (DBusTransportAfbus *afbus_transport,
          short               events)
{
  DBusPollFD poll_fd;

  poll_fd.fd = _dbus_socket_get_pollable (afbus_transport->fd);
  poll_fd.events = events;
  poll_fd.revents = 0;
  if (_dbus_poll (&poll_fd, 1, 0) <= 0)
    return 0;
  return poll_fd.revents;
}

/*
 * With room notifications on, a POLLERR may be only notifications:
 * they are taken, and TRUE returned unless an error is pending too (or
 * the socket hung up meanwhile: then the read watch sees it).
 */
static dbus_bool_t
error_was_room (DBusTransportAfbus *afbus_transport)
{
  if (!afbus_transport->room_notify)
    return FALSE;

  take_room_notifications (afbus_transport);
  return (poll_now (afbus_transport, 0) & _DBUS_POLLERR) == 0;
}

/*
 * A timeout's handler stands in for @which watch (the write watch, or
 * the read watch) with @flags: called by the application's main loop
 * with the connection unlocked, it takes the watch under the
 * connection's lock (free_watches() may take it away meanwhile, from
 * another thread) and handles it as the main loop would, which takes
 * the lock again.  A watch taken away meanwhile is invalid, and
 * handling it does nothing.
 */
static dbus_bool_t
timeout_as_watch (DBusTransportAfbus *afbus_transport,
                  dbus_bool_t         write_watch,
                  unsigned int        flags)
{
  DBusConnection *connection = ((DBusTransport *) afbus_transport)->connection;
  DBusWatch *watch;
  dbus_bool_t ok = TRUE;

  /* (The transport's connection is set once, before any timeout.) */
  if (connection == NULL)
    return TRUE;

  dbus_connection_ref (connection);
  _dbus_connection_lock (connection);
  watch = write_watch ? afbus_transport->write_watch :
    afbus_transport->read_watch;
  if (watch != NULL)
    _dbus_watch_ref (watch);
  _dbus_connection_unlock (connection);

  if (watch != NULL)
    {
      ok = _dbus_connection_handle_watch (watch, flags, connection);
      _dbus_watch_unref (watch);
    }

  dbus_connection_unref (connection);
  return ok;
}

/*
 * Puts the reply timer on the connection for the first deadline of our
 * calls, or takes it off when none waits.  Called with the connection
 * locked, where nothing is in progress: the connection drops its lock
 * while it tells the application's main loop.
 */
static void
set_reply_timer (DBusTransportAfbus *afbus_transport)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  int next = -1;

  if (transport->connection == NULL)
    return;

  if (afbus_transport->client != NULL && !transport->disconnected)
    next = _dbus_afbus_client_next_deadline (afbus_transport->client);

  if (afbus_transport->reply_timer_added)
    _dbus_connection_remove_timeout_unlocked (transport->connection,
                                              afbus_transport->reply_timer);
  afbus_transport->reply_timer_added = FALSE;
  if (next < 0)
    return;

  /* Without memory: the calls wait for their own timeouts, or for the
   * next blocking iteration. */
  _dbus_timeout_restart (afbus_transport->reply_timer, next > 0 ? next : 1);
  afbus_transport->reply_timer_added =
    _dbus_connection_add_timeout_unlocked (transport->connection,
                                           afbus_transport->reply_timer);
}

/* The reply timer's handler: afbus_handle_watch() ends the calls whose
 * time is up (expire_calls()), under the connection's lock. */
static dbus_bool_t
reply_timer_fired (void *data)
{
  return timeout_as_watch (data, FALSE, 0);
}

static void
free_watches (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;

  if (afbus_transport->reply_timer_added && transport->connection != NULL)
    _dbus_connection_remove_timeout_unlocked (transport->connection,
                                              afbus_transport->reply_timer);
  afbus_transport->reply_timer_added = FALSE;

  if (afbus_transport->read_watch)
    {
      if (transport->connection)
        _dbus_connection_remove_watch_unlocked (transport->connection,
                                                afbus_transport->read_watch);
      _dbus_watch_invalidate (afbus_transport->read_watch);
      _dbus_watch_unref (afbus_transport->read_watch);
      afbus_transport->read_watch = NULL;
    }

  if (afbus_transport->write_watch)
    {
      if (transport->connection)
        _dbus_connection_remove_watch_unlocked (transport->connection,
                                                afbus_transport->write_watch);
      _dbus_watch_invalidate (afbus_transport->write_watch);
      _dbus_watch_unref (afbus_transport->write_watch);
      afbus_transport->write_watch = NULL;
    }
}

static void
afbus_finalize (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;

  _dbus_verbose ("dropped %lu message(s) from peers\n",
                 afbus_transport->n_dropped);

  free_watches (transport);
  dbus_free (afbus_transport->blocked);
  _dbus_timeout_unref (afbus_transport->reply_timer);
  _dbus_afbus_client_free (afbus_transport->client);
  _dbus_transport_finalize_base (transport);
  dbus_free (transport);
}

static void
check_write_watch (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  dbus_bool_t needed;

  if (transport->connection == NULL || transport->disconnected)
    return;

  _dbus_transport_ref (transport);

  if (_dbus_transport_try_to_authenticate (transport))
    needed = (_dbus_connection_has_messages_to_send_unlocked (transport->connection) ||
              (afbus_transport->client != NULL &&
               _dbus_afbus_client_next_internal (afbus_transport->client) != NULL)) &&
      !afbus_transport->write_stalled;
  else if (transport->send_credentials_pending)
    needed = TRUE;
  else
    {
      DBusAuthState auth_state = _dbus_auth_do_work (transport->auth);

      needed = (auth_state == DBUS_AUTH_STATE_HAVE_BYTES_TO_SEND ||
                auth_state == DBUS_AUTH_STATE_WAITING_FOR_MEMORY);
    }

  _dbus_connection_toggle_watch_unlocked (transport->connection,
                                          afbus_transport->write_watch,
                                          needed);

  _dbus_transport_unref (transport);
}

static void
check_read_watch (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  dbus_bool_t needed;

  if (transport->connection == NULL || transport->disconnected)
    return;

  _dbus_transport_ref (transport);

  if (_dbus_transport_try_to_authenticate (transport))
    needed =
      (_dbus_counter_get_size_value (transport->live_messages) < transport->max_live_messages_size) &&
      (_dbus_counter_get_unix_fd_value (transport->live_messages) < transport->max_live_messages_unix_fds);
  else if (transport->receive_credentials_pending)
    needed = TRUE;
  else
    {
      DBusAuthState auth_state = _dbus_auth_do_work (transport->auth);

      needed = (auth_state == DBUS_AUTH_STATE_WAITING_FOR_INPUT ||
                auth_state == DBUS_AUTH_STATE_WAITING_FOR_MEMORY ||
                auth_state == DBUS_AUTH_STATE_AUTHENTICATED);
    }

  _dbus_connection_toggle_watch_unlocked (transport->connection,
                                          afbus_transport->read_watch,
                                          needed);

  _dbus_transport_unref (transport);
}

static void
do_io_error (DBusTransport *transport)
{
  _dbus_transport_ref (transport);
  _dbus_transport_disconnect (transport);
  _dbus_transport_unref (transport);
}

/*
 * Receives one datagram, appending it to @buffer.  Unix fds that came
 * with it go to @fds (at most *n_fds of them; *n_fds returns how many),
 * the sender's address to *source; *fds_lost (if not NULL) says that
 * more fds came than fit, which were closed.  Returns the length of the
 * datagram, 0 at end of file, or -1 with errno set.
 */
static int
recv_datagram (DBusTransportAfbus *afbus_transport,
               DBusString         *buffer,
               int                *fds,
               unsigned int       *n_fds,
               dbus_uint64_t      *source,
               dbus_bool_t        *fds_lost)
{
  int len;

  /* The size of the next message, without taking it. */
  do
    len = recv (afbus_transport->fd.fd, NULL, 0,
                MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  while (len < 0 && errno == EINTR);

  if (fds_lost != NULL)
    *fds_lost = FALSE;
  if (len <= 0)
    {
      if (n_fds != NULL)
        *n_fds = 0;
      return len;
    }

  return _dbus_afbus_recv_datagram (afbus_transport->fd.fd, len, buffer,
                                    fds, n_fds, source, fds_lost);
}

/* return value is whether we successfully read any new data. */
static dbus_bool_t
read_data_into_auth (DBusTransport *transport,
                     dbus_bool_t   *oom)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  DBusString *buffer;
  dbus_uint64_t source;
  int bytes_read;
  int saved_errno;

  *oom = FALSE;

  _dbus_auth_get_buffer (transport->auth, &buffer);
  bytes_read = recv_datagram (afbus_transport, buffer, NULL, NULL, &source,
                              NULL);
  saved_errno = errno;
  _dbus_auth_return_buffer (transport->auth, buffer);

  if (bytes_read > 0)
    {
      _dbus_verbose (" read %d bytes in auth phase\n", bytes_read);
      return TRUE;
    }
  else if (bytes_read < 0)
    {
      if (_dbus_get_is_errno_enomem (saved_errno))
        *oom = TRUE;
      else if (!_dbus_get_is_errno_eagain_or_ewouldblock (saved_errno))
        {
          _dbus_verbose ("Error reading from remote app: %s\n",
                         _dbus_strerror (saved_errno));
          do_io_error (transport);
        }
      return FALSE;
    }
  else
    {
      _dbus_verbose ("Disconnected from remote app\n");
      do_io_error (transport);
      return FALSE;
    }
}

/* Return value is whether we successfully wrote any bytes */
static dbus_bool_t
write_data_from_auth (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  const DBusString *buffer;
  int len, bytes_written;

  if (!_dbus_auth_get_bytes_to_send (transport->auth, &buffer))
    return FALSE;

  len = _dbus_string_get_length (buffer);

 again:
  bytes_written = send (afbus_transport->fd.fd,
                        _dbus_string_get_const_data (buffer), len,
                        MSG_NOSIGNAL | MSG_DONTWAIT);
  if (bytes_written < 0 && errno == EINTR)
    goto again;

  if (bytes_written > 0)
    {
      _dbus_auth_bytes_sent (transport->auth, bytes_written);
      return TRUE;
    }

  if (bytes_written < 0 && !_dbus_get_is_errno_eagain_or_ewouldblock (errno))
    {
      _dbus_verbose ("Error writing to remote app: %s\n", _dbus_strerror (errno));
      do_io_error (transport);
    }

  return FALSE;
}

/* FALSE on OOM */
static dbus_bool_t
exchange_credentials (DBusTransport *transport,
                      dbus_bool_t    do_reading,
                      dbus_bool_t    do_writing)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  DBusError error = DBUS_ERROR_INIT;

  /* The credentials byte is a datagram of its own; the daemon reads the
   * client's credentials with SO_PEERCRED, as on AF_UNIX. */
  if (do_writing && transport->send_credentials_pending)
    {
      if (_dbus_send_credentials_socket (afbus_transport->fd, &error))
        transport->send_credentials_pending = FALSE;
      else
        {
          _dbus_verbose ("Failed to write credentials: %s\n", error.message);
          dbus_error_free (&error);
          do_io_error (transport);
        }
    }

  if (do_reading && transport->receive_credentials_pending)
    {
      if (_dbus_read_credentials_socket (afbus_transport->fd,
                                         transport->credentials, &error))
        transport->receive_credentials_pending = FALSE;
      else
        {
          _dbus_verbose ("Failed to read credentials %s\n", error.message);
          dbus_error_free (&error);
          do_io_error (transport);
        }
    }

  if (!(transport->send_credentials_pending ||
        transport->receive_credentials_pending))
    {
      if (!_dbus_auth_set_credentials (transport->auth, transport->credentials))
        return FALSE;
    }

  return TRUE;
}

static dbus_bool_t
do_authentication (DBusTransport *transport,
                   dbus_bool_t    do_reading,
                   dbus_bool_t    do_writing,
                   dbus_bool_t   *auth_completed)
{
  dbus_bool_t oom = FALSE;
  dbus_bool_t orig_auth_state;

  orig_auth_state = _dbus_transport_try_to_authenticate (transport);

  if (orig_auth_state)
    {
      if (auth_completed)
        *auth_completed = FALSE;
      return TRUE;
    }

  _dbus_transport_ref (transport);

  while (!_dbus_transport_try_to_authenticate (transport) &&
         _dbus_transport_get_is_connected (transport))
    {
      if (!exchange_credentials (transport, do_reading, do_writing))
        {
          oom = TRUE;
          goto out;
        }

      if (transport->send_credentials_pending ||
          transport->receive_credentials_pending)
        goto out;

      switch (_dbus_auth_do_work (transport->auth))
        {
        case DBUS_AUTH_STATE_WAITING_FOR_INPUT:
          if (!do_reading || !read_data_into_auth (transport, &oom))
            goto out;
          break;

        case DBUS_AUTH_STATE_WAITING_FOR_MEMORY:
          oom = TRUE;
          goto out;

        case DBUS_AUTH_STATE_HAVE_BYTES_TO_SEND:
          if (!do_writing || !write_data_from_auth (transport))
            goto out;
          break;

        case DBUS_AUTH_STATE_NEED_DISCONNECT:
          _dbus_verbose (" auth state: need to disconnect\n");
          do_io_error (transport);
          break;

        case DBUS_AUTH_STATE_AUTHENTICATED:
          break;

        case DBUS_AUTH_STATE_INVALID:
          /* fall through */
        default:
          _dbus_assert_not_reached ("invalid auth state");
        }
    }

 out:
  if (auth_completed)
    *auth_completed = (orig_auth_state != _dbus_transport_try_to_authenticate (transport));

  check_read_watch (transport);
  check_write_watch (transport);
  _dbus_transport_unref (transport);

  return !oom;
}

/*
 * A message the kernel refused for good (its recipient is gone or shut
 * down reading, it is too big, it carries fds the bus cannot pass, a
 * netfilter hook such as nfdbus refused it: EPERM; a Linux security
 * module refused it: EACCES; nfdbus' reply
 * tracking refused a call because we already await as many replies as
 * the daemon's max_replies_per_connection: EDQUOT).  It is dropped
 * from the queue and, when its sender waits for a reply, answered with
 * an error as the daemon would.  A reply refused (EPERM: nobody awaits
 * it, or the policy denies it) is just dropped, as dbus-daemon drops
 * one it does not deliver.  FALSE on OOM.
 */
static DBusAfbusRelayRefusedFunction relay_refused_function = NULL;
static void *relay_refused_data = NULL;

/**
 * The D-Bus error a call gets when the kernel refuses to send it with
 * @saved_errno (doc/afbus-transport.md, 4.8): what dbus-daemon answers
 * for the same cause.
 */
const char *
_dbus_afbus_error_for_errno (int saved_errno)
{
  switch (saved_errno)
    {
    case EDQUOT:        /* too many awaited replies */
    case EMSGSIZE:      /* too big */
    case ENOBUFS:       /* no kernel memory, too many room watches */
    case ETOOMANYREFS:  /* too many fds in flight for the sender's user
                         * (RLIMIT_NOFILE), as on AF_UNIX */
      return DBUS_ERROR_LIMITS_EXCEEDED;
    case EINVAL:        /* malformed control message, too many fds */
      return DBUS_ERROR_NOT_SUPPORTED;
    case EPERM:         /* nfdbus: policy, SENDER, malformed */
    case EACCES:        /* an LSM */
      return DBUS_ERROR_ACCESS_DENIED;
    default:            /* ECONNREFUSED: the recipient shut down
                         * reading; EHOSTUNREACH: it left */
      return DBUS_ERROR_NO_REPLY;
    }
}

/**
 * Sets the function the daemon's connections call for a relayed call
 * the kernel refuses (EDQUOT over the caller's
 * max_replies_per_connection, or any other errno of
 * _dbus_afbus_error_for_errno()); NULL: such calls are dropped.  One
 * per process (the daemon's), set while it has no connection.
 */
void
_dbus_transport_afbus_set_relay_refused_function (DBusAfbusRelayRefusedFunction  function,
                                                  void                          *data)
{
  relay_refused_function = function;
  relay_refused_data = data;
}

static dbus_bool_t
message_undeliverable (DBusTransport *transport,
                       DBusList      *queued,
                       int            saved_errno)
{
  DBusMessage *message = queued->data;
  DBusMessage *reply = NULL;
  DBusList *link;

  _dbus_verbose ("AF_BUS: cannot send message to %s: %s\n",
                 dbus_message_get_destination (message) ?
                 dbus_message_get_destination (message) : "(bus)",
                 _dbus_strerror (saved_errno));

  /* The answer is made for the caller only on a client's own
   * connection.  On one of the daemon's connections the message is a
   * call the daemon relays for another client: an error queued here
   * would read as sent by this connection's client (and has no serial).
   * The daemon answers a refused relayed call itself
   * (relay_refused_function): LimitsExceeded over the caller's
   * max_replies_per_connection, as dbus-daemon does, and the error of
   * _dbus_afbus_error_for_errno() for the others. */
  if (transport->is_server && relay_refused_function != NULL &&
      dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
      !dbus_message_get_no_reply (message))
    (* relay_refused_function) (message, saved_errno, relay_refused_data);

  if (!transport->is_server &&
      dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
      !dbus_message_get_no_reply (message))
    {
      if (saved_errno == EDQUOT)
        /* dbus-daemon's words (bus_connections_expect_reply) */
        reply = dbus_message_new_error (message, DBUS_ERROR_LIMITS_EXCEEDED,
                                        "The maximum number of pending replies per connection has been reached");
      else
        reply = dbus_message_new_error_printf (message,
                                               _dbus_afbus_error_for_errno (saved_errno),
                                               "Could not send the message to %s over AF_BUS: %s",
                                               dbus_message_get_destination (message),
                                               _dbus_strerror (saved_errno));
      if (reply == NULL ||
          !dbus_message_set_sender (reply, DBUS_SERVICE_DBUS))
        goto oom;

      link = _dbus_list_alloc_link (reply);
      if (link == NULL)
        goto oom;

      /* As if received: the pending call's own timeout goes at once, or
       * it could fire before this is dispatched, and the caller get
       * libdbus's NoReply and then this as a stray message. */
      _dbus_connection_queue_received_message_link (transport->connection, link);
    }

  _dbus_connection_message_link_sent_unlocked (transport->connection, queued);
  return TRUE;

 oom:
  if (reply != NULL)
    dbus_message_unref (reply);
  return FALSE;
}

/* Sends one message as one datagram, with our SENDER as @stamp says
 * unless NULL (_dbus_afbus_client_stamp_sender()); returns the sendmsg()
 * result. */
static int
send_message (DBusTransportAfbus   *afbus_transport,
              DBusMessage          *message,
              const DBusAfbusStamp *stamp,
              dbus_bool_t           addressed,
              dbus_uint64_t         dest)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  const DBusString *header, *body;
  struct sockaddr_bus sa;
  struct msghdr msg;
  struct iovec iov[4];
  int n_iov = 0;
  union {
    struct cmsghdr hdr;
    char buf[CMSG_SPACE (sizeof (int) * DBUS_DEFAULT_MESSAGE_UNIX_FDS)];
  } cmsgbuf;
  const int *unix_fds = NULL;
  unsigned int n_fds = 0;
  int bytes;

  _dbus_message_get_network_data (message, &header, &body);
  if (stamp != NULL && stamp->copied)
    header = &stamp->copy.data;

  if (stamp != NULL && stamp->field_len > 0)
    {
      /* the header with its fields' new length, the field after them */
      iov[n_iov].iov_base = (void *) stamp->prefix;
      iov[n_iov++].iov_len = sizeof (stamp->prefix);
      iov[n_iov].iov_base = (void *) (_dbus_string_get_const_data (header) +
                                      sizeof (stamp->prefix));
      iov[n_iov++].iov_len = _dbus_string_get_length (header) -
        sizeof (stamp->prefix);
      iov[n_iov].iov_base = (void *) stamp->field;
      iov[n_iov++].iov_len = stamp->field_len;
    }
  else
    {
      iov[n_iov].iov_base = (void *) _dbus_string_get_const_data (header);
      iov[n_iov++].iov_len = _dbus_string_get_length (header);
    }
  iov[n_iov].iov_base = (void *) _dbus_string_get_const_data (body);
  iov[n_iov++].iov_len = _dbus_string_get_length (body);

  _DBUS_ZERO (msg);
  msg.msg_iov = iov;
  msg.msg_iovlen = n_iov;

  if (addressed)
    {
      /* No path: the bus this socket is on. */
      _DBUS_ZERO (sa);
      sa.sbus_family = AF_BUS;
      sa.sbus_addr.s_addr = dest;
      msg.msg_name = &sa;
      msg.msg_namelen = DBUS_AFBUS_SOCKADDR_NO_PATH;
    }

#ifdef HAVE_UNIX_FD_PASSING
  if (DBUS_TRANSPORT_CAN_SEND_UNIX_FD (transport))
    _dbus_message_get_unix_fds (message, &unix_fds, &n_fds);
#endif

  if (n_fds > DBUS_DEFAULT_MESSAGE_UNIX_FDS)
    {
      errno = EINVAL;
      return -1;
    }

  if (n_fds > 0)
    {
      struct cmsghdr *cm;

      _DBUS_ZERO (cmsgbuf);
      msg.msg_control = cmsgbuf.buf;
      msg.msg_controllen = CMSG_SPACE (sizeof (int) * n_fds);
      cm = CMSG_FIRSTHDR (&msg);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN (sizeof (int) * n_fds);
      memcpy (CMSG_DATA (cm), unix_fds, sizeof (int) * n_fds);
    }

 again:
  bytes = sendmsg (afbus_transport->fd.fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (bytes < 0 && errno == EINTR)
    goto again;

  return bytes;
}

/*
 * send_message() (@stamp as there), telling a recipient without room from the socket's
 * own lack of room.  Both fail with EAGAIN; with room notifications
 * on, the first leaves a room watch and leaves the socket writable,
 * the second makes it not writable until there is room (af_bus.rst).
 * A send refused while the socket is writable is tried once more, in
 * case the socket's own room came between the two; refused again while
 * writable, *recipient_full is set: a watch waits for @dest.
 */
static int
send_checked (DBusTransportAfbus   *afbus_transport,
              DBusMessage          *message,
              const DBusAfbusStamp *stamp,
              dbus_bool_t           addressed,
              dbus_uint64_t         dest,
              dbus_bool_t          *recipient_full)
{
  int bytes, attempt;

  *recipient_full = FALSE;
  for (attempt = 0; attempt < 2; attempt++)
    {
      bytes = send_message (afbus_transport, message, stamp, addressed,
                            dest);
      if (bytes >= 0 || !afbus_transport->room_notify ||
          !_dbus_get_is_errno_eagain_or_ewouldblock (errno))
        return bytes;
      if (!(poll_now (afbus_transport, _DBUS_POLLOUT) & _DBUS_POLLOUT))
        break;
      if (attempt == 1)
        *recipient_full = TRUE;
    }

  errno = EAGAIN;
  return -1;
}

/*
 * Writes a bus client's own messages to the daemon (peer watches,
 * dbus-bus-afbus.c).  TRUE when all are written; FALSE when the socket
 * is full (or the transport broke).
 */
static dbus_bool_t
write_internal (DBusTransportAfbus *afbus_transport)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  DBusMessage *message;

  if (afbus_transport->client == NULL)
    return !transport->disconnected;

  /* The daemon's queue was full: wait for its notification. */
  if (_dbus_afbus_client_next_internal (afbus_transport->client) != NULL &&
      blocked_find (afbus_transport, DBUS_AFBUS_MASTER) >= 0)
    {
      afbus_transport->write_stalled = TRUE;
      return FALSE;
    }

  while ((message = _dbus_afbus_client_next_internal (afbus_transport->client)) != NULL &&
         !transport->disconnected)
    {
      dbus_bool_t full;
      int saved_errno;

      if (send_checked (afbus_transport, message, NULL, FALSE,
                        DBUS_AFBUS_MASTER, &full) < 0)
        {
          saved_errno = errno;
          if (full)
            {
              /* Without memory to remember it: the write watch stays
               * on and tries again. */
              if (blocked_add (afbus_transport, DBUS_AFBUS_MASTER))
                afbus_transport->write_stalled = TRUE;
              return FALSE;
            }
          if (_dbus_get_is_errno_eagain_or_ewouldblock (saved_errno) ||
              _dbus_get_is_errno_epipe (saved_errno) ||
              _dbus_get_is_errno_enomem (saved_errno))
            return FALSE;

          _dbus_verbose ("Error writing to the daemon: %s\n",
                         _dbus_strerror (saved_errno));
          do_io_error (transport);
          return FALSE;
        }

      _dbus_afbus_client_internal_sent (afbus_transport->client);
    }

  return !transport->disconnected;
}

/*
 * One pass over the outgoing queue; returns false on oom.  Sets
 * write_stalled when what is left waits for room notifications only.
 */
static dbus_bool_t
write_pass (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  /* A bus client, which routes its own messages (not the daemon's side
   * of a connection, nor a relay). */
  DBusAfbusClient *client = afbus_transport->client;
  dbus_bool_t routes = client != NULL;
  /* A message waits for a full recipient: only messages that cannot
   * reach it may pass. */
  dbus_bool_t held = FALSE;
  DBusList *link, *next;
  unsigned int i;
  int total = 0;

  afbus_transport->write_stalled = FALSE;
  for (i = 0; i < afbus_transport->n_blocked; i++)
    afbus_transport->blocked[i].stepped_over = 0;

  if (!_dbus_transport_try_to_authenticate (transport) ||
      transport->disconnected)
    return TRUE;

  if (!transport->is_server && !write_internal (afbus_transport))
    return TRUE;

  for (link = _dbus_connection_get_next_link_to_send (transport->connection, NULL);
       link != NULL && !transport->disconnected; link = next)
    {
      DBusMessage *message = link->data;
      dbus_bool_t counted = FALSE;
      dbus_uint64_t dest = DBUS_AFBUS_MASTER;
      dbus_bool_t addressed = FALSE;
      dbus_bool_t unicast, full;
      dbus_bool_t stamped = FALSE;
      DBusAfbusStamp stamp;
      int bytes, saved_errno, b;

      /* The rest at the next iteration: the socket is writable. */
      if (total > afbus_transport->max_bytes_written_per_iteration)
        {
          afbus_transport->write_stalled = FALSE;
          return TRUE;
        }

      next = _dbus_connection_get_next_link_to_send (transport->connection,
                                                     link);
      dbus_message_lock (message);

#ifdef HAVE_UNIX_FD_PASSING
      if (routes && DBUS_TRANSPORT_CAN_SEND_UNIX_FD (transport))
        {
          const int *unix_fds;
          unsigned int n_fds;

          /* More fds than a message on the bus may carry: the sender is
           * disconnected, as dbus-daemon disconnects a client that sends
           * more than max_message_unix_fds (16 by default; upstream's
           * test/fdpass.c, /too-many), whether the message was for the
           * daemon or for a peer. */
          _dbus_message_get_unix_fds (message, &unix_fds, &n_fds);
          if (n_fds > DBUS_DEFAULT_MESSAGE_UNIX_FDS)
            {
              _dbus_verbose ("AF_BUS: a message with %u unix fds, more than"
                             " %d: disconnecting\n", n_fds,
                             DBUS_DEFAULT_MESSAGE_UNIX_FDS);
              do_io_error (transport);
              return TRUE;
            }
        }
#endif

      if (afbus_transport->relay)
        {
          /* The daemon resolved the destination. */
          addressed = !transport->is_server &&
            _dbus_afbus_message_get_addr (message, &dest);
        }
      else if (routes)
        {
          dest = _dbus_afbus_client_route (client, message, &counted);
          addressed = (dest != DBUS_AFBUS_MASTER);
        }
      unicast = addressed && AFBUS_IS_CLIENT_UNICAST (dest);

      /* A signal for everybody waits, and everything behind it, while
       * one of our calls to the driver that changes match rules or
       * names is unanswered: the kernel, which multicasts it, may not
       * know yet what the call changed (check_incoming() goes on once
       * the daemon answered). */
      if (routes && dest == DBUS_AFBUS_MULTICAST (0) &&
          _dbus_afbus_client_driver_call_waits (client))
        {
          _dbus_verbose (" a signal waits for our call to the driver\n");
          afbus_transport->write_stalled = TRUE;
          return TRUE;
        }

      /* A destination waiting for its room notification: a message to
       * a client waits behind the ones before it, up to
       * AFBUS_MAX_STEPPED_OVER; one to any other address ends the
       * pass. */
      b = blocked_find (afbus_transport, dest);
      if (b >= 0)
        {
          afbus_transport->write_stalled = TRUE;
          if (!unicast ||
              ++afbus_transport->blocked[b].stepped_over > AFBUS_MAX_STEPPED_OVER)
            return TRUE;
          held = TRUE;
          continue;
        }

      /* Once a message waits for a full recipient, only a message to
       * another client's unique address, or a call to the bus driver,
       * may pass it: neither can reach a full recipient before what
       * waits for it.  (A service that asks the daemon about a caller
       * before answering it, as system services do, goes on answering
       * the others.)  Anything else (a message the daemon forwards, a
       * name's address, a signal, which may reach any client) ends the
       * pass. */
      if (held && !unicast && !(routes && _dbus_afbus_is_driver_call (message)))
        {
          afbus_transport->write_stalled = TRUE;
          return TRUE;
        }

      /* SENDER: ours, to a peer */
      if (routes && addressed)
        {
          if (!_dbus_afbus_client_stamp_sender (client, message, &stamp))
            return FALSE;
          stamped = TRUE;
        }

      bytes = send_checked (afbus_transport, message,
                            stamped ? &stamp : NULL, addressed, dest,
                            &full);
      saved_errno = errno;
      if (stamped && stamp.copied)
        _dbus_header_free (&stamp.copy);

      /* Nobody has that address (BUS_NO_DEFAULT_ROUTE): a peer that
       * left, or a name that is moving.  The daemon takes the message,
       * counted, and the next ones behind it until it has answered
       * them all, so that none overtakes this one; a name's goes
       * through it until it says where the name lives. */
      if (bytes < 0 && saved_errno == EHOSTUNREACH && routes && addressed)
        {
          _dbus_afbus_client_unreachable (client, message, dest);
          counted = TRUE;
          _dbus_verbose (" %016" PRIx64 " has no owner: through the daemon\n",
                         dest);
          addressed = FALSE;
          unicast = FALSE;
          dest = DBUS_AFBUS_MASTER;
          bytes = send_checked (afbus_transport, message, NULL, FALSE, dest,
                                &full);
          saved_errno = errno;
        }

      if (bytes >= 0)
        {
          _dbus_verbose (" wrote message of %d bytes to %016" PRIx64 "\n",
                         bytes, dest);
          total += bytes;

          if (routes)
            {
              _dbus_afbus_client_sent (client, transport->connection, message,
                                       addressed ? dest : DBUS_AFBUS_MASTER,
                                       counted);
              if (_dbus_afbus_client_take_deadline_changed (client))
                set_reply_timer (afbus_transport);
              /* A peer's new watch; a full socket: it waits for the next
               * write.  After a message to the daemon, our GetId that
               * tells when the daemon handled it (a call to the driver
               * without a reply, _dbus_afbus_client_driver_call_waits())
               * goes before the next message, or the pass ends. */
              if (!write_internal (afbus_transport) && !addressed)
                {
                  _dbus_connection_message_link_sent_unlocked (transport->connection,
                                                               link);
                  return TRUE;
                }
            }

          _dbus_connection_message_link_sent_unlocked (transport->connection,
                                                       link);
        }
      else if (full)
        {
          /* The recipient has no room: the kernel tells us when it
           * may have (take_room_notifications()).  A client's messages
           * wait, in order, and the next ones to other clients go on;
           * a message to any other address ends the pass.  (Without
           * memory to remember it, the pass waits as a whole: the
           * write watch comes back to it.) */
          if (!blocked_add (afbus_transport, dest))
            return TRUE;
          afbus_transport->write_stalled = TRUE;
          if (!unicast)
            return TRUE;
          held = TRUE;
        }
      else if (_dbus_get_is_errno_eagain_or_ewouldblock (saved_errno) ||
               _dbus_get_is_errno_epipe (saved_errno))
        {
          /* The socket's own send buffer or its user's budget is used
           * up (or, without room notifications, a recipient has no
           * room): POLLOUT tells when to go on.  On EPIPE, wait for
           * the hangup to be read. */
          afbus_transport->write_stalled = FALSE;
          return TRUE;
        }
      else if (saved_errno == ECONNREFUSED || saved_errno == EHOSTUNREACH ||
               saved_errno == EMSGSIZE || saved_errno == EINVAL ||
               saved_errno == ETOOMANYREFS || saved_errno == ENOBUFS ||
               saved_errno == EPERM || saved_errno == EACCES ||
               saved_errno == EDQUOT)
        {
          /* ENOBUFS: the kernel could not allocate the message, or the
           * socket watches BUS_ROOM_WATCH_MAX full destinations already;
           * retrying in a loop cannot help. */
          if (!message_undeliverable (transport, link, saved_errno))
            return FALSE;
        }
      else if (_dbus_get_is_errno_enomem (saved_errno))
        {
          return FALSE;
        }
      else
        {
          _dbus_verbose ("Error writing to remote app: %s\n",
                         _dbus_strerror (saved_errno));
          do_io_error (transport);
          return TRUE;
        }
    }

  return TRUE;
}

/* Writes what it can; returns false on oom. */
static dbus_bool_t
do_writing (DBusTransport *transport)
{
  return write_pass (transport);
}

static void answer_peer (DBusTransportAfbus *afbus_transport,
                         dbus_uint64_t       source,
                         dbus_uint32_t       serial,
                         const char         *error_name,
                         const char         *text);

/*
 * Checks the message just read from @source before the connection sees
 * it.  A datagram from another client must hold exactly one valid
 * message whose SENDER is that client's unique name: anything else is
 * dropped and counted, so that no peer can pose as another or as the
 * daemon, nor break our stream of messages.  Unknown header fields are
 * removed from what is kept.  FALSE on OOM.
 */
static dbus_bool_t
check_incoming (DBusTransportAfbus *afbus_transport,
                dbus_uint64_t       source)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  DBusMessageLoader *loader = transport->loader;
  DBusMessage *message;
  dbus_bool_t drop = FALSE;

  if (transport->is_server)
    return TRUE;

  /* A message another relay of the daemon sent (afbus_transport->trusted,
   * do_reading()) is loaded without validating it again: the daemon's
   * libdbus marshalled it from a message the daemon had loaded and
   * validated, the kernel names the sending socket (no client can send
   * from a relay's address) and delivers the datagram's bytes as they
   * were sent.  Its lengths and fds are still checked, and everything
   * below still applies. */
  _dbus_message_loader_set_trusted (loader, afbus_transport->trusted);
  if (!_dbus_message_loader_queue_messages (loader))
    {
      _dbus_message_loader_set_trusted (loader, FALSE);
      return FALSE;
    }
  _dbus_message_loader_set_trusted (loader, FALSE);

  if (source == DBUS_AFBUS_MASTER && afbus_transport->relay)
    return TRUE;

  if (source == DBUS_AFBUS_MASTER)
    {
      dbus_bool_t eaten, had_internal, driver_call;

      /* The daemon is trusted like the other end of any transport. */
      message = _dbus_message_loader_peek_message (loader);
      if (message == NULL || afbus_transport->client == NULL)
        return TRUE;

      had_internal =
        _dbus_afbus_client_next_internal (afbus_transport->client) != NULL;
      driver_call =
        _dbus_afbus_client_driver_call_waits (afbus_transport->client);
      if (!_dbus_afbus_client_from_master (afbus_transport->client,
                                           transport->connection, message,
                                           &eaten))
        return FALSE;

      /* The driver answered the call our signals waited for: they go
       * now (a write pass finds again what else waits for room). */
      if (driver_call &&
          !_dbus_afbus_client_driver_call_waits (afbus_transport->client))
        {
          afbus_transport->write_stalled = FALSE;
          check_write_watch (transport);
        }

      /* A new peer watch (for a call Forwarded says the kernel awaits),
       * written now, not with our next message: the application may be
       * blocked waiting for that call's reply.  A full socket: the
       * write watch. */
      if (!had_internal &&
          _dbus_afbus_client_next_internal (afbus_transport->client) != NULL)
        {
          write_internal (afbus_transport);
          check_write_watch (transport);
        }
      if (_dbus_afbus_client_take_deadline_changed (afbus_transport->client))
        set_reply_timer (afbus_transport);

      if (eaten)
        {
          message = _dbus_message_loader_pop_message (loader);
          dbus_message_unref (message);
        }
      return TRUE;
    }

  if (_dbus_message_loader_get_is_corrupted (loader) ||
      _dbus_string_get_length (&loader->data) != 0 ||
      loader->messages == NULL || loader->messages->next != loader->messages)
    {
      drop = TRUE;
    }
  else
    {
      DBusString expected;
      const char *sender;

      message = _dbus_message_loader_peek_message (loader);

      if (!_dbus_string_init (&expected))
        return FALSE;
      if (!_dbus_afbus_unique_name_from_addr (source, &expected))
        {
          _dbus_string_free (&expected);
          return FALSE;
        }

      sender = dbus_message_get_sender (message);
      drop = (sender == NULL ||
              strcmp (sender, _dbus_string_get_const_data (&expected)) != 0);
      _dbus_string_free (&expected);

      /* The daemon's own interface: no peer may use it (the kernel
       * refuses such signals between clients; a call is answered
       * AccessDenied, as the daemon answers one it is sent). */
      if (!drop && dbus_message_has_interface (message, DBUS_INTERFACE_AFBUS))
        {
          drop = TRUE;
          if (dbus_message_get_type (message) == DBUS_MESSAGE_TYPE_METHOD_CALL &&
              !dbus_message_get_no_reply (message))
            answer_peer (afbus_transport, source,
                         dbus_message_get_serial (message),
                         DBUS_ERROR_ACCESS_DENIED,
                         "The interface " DBUS_INTERFACE_AFBUS " is reserved"
                         " for the message bus");
        }

      /* Header fields that this libdbus does not know are removed, as
       * the daemon removes them from what it routes (HeaderFiltering):
       * a field defined later may carry a meaning the bus guarantees,
       * which a peer must not be able to forge. */
      if (!drop && !afbus_transport->trusted &&
          !_dbus_message_remove_unknown_fields (message))
        return FALSE;

      if (!drop && afbus_transport->relay &&
          !_dbus_afbus_message_set_addr (message, source))
        return FALSE;

      if (!drop && afbus_transport->client != NULL &&
          dbus_message_get_reply_serial (message) != 0)
        _dbus_afbus_client_reply_received (afbus_transport->client, source,
                                           dbus_message_get_reply_serial (message));
    }

  if (drop)
    {
      afbus_transport->n_dropped++;
      _dbus_verbose ("dropping a datagram from %016" PRIx64 ":"
                     " not one message from its owner (%lu dropped)\n",
                     source, afbus_transport->n_dropped);

      while ((message = _dbus_message_loader_pop_message (loader)) != NULL)
        dbus_message_unref (message);

      _dbus_string_set_length (&loader->data, 0);
      loader->corrupted = FALSE;
      loader->corruption_reason = DBUS_VALID;
#ifdef HAVE_UNIX_FD_PASSING
      while (loader->n_unix_fds > 0)
        _dbus_close (loader->unix_fds[--loader->n_unix_fds], NULL);
#endif
    }

  return TRUE;
}

/*
 * Answers the call @serial of the peer at @source with the error
 * @error_name (@text), from us, straight through the kernel: a message
 * of the peer's that we drop, so that the kernel's reply tracking and
 * the caller's wait end as with any reply.  Without memory or room in
 * the socket nothing is answered.
 */
static void
answer_peer (DBusTransportAfbus *afbus_transport,
             dbus_uint64_t       source,
             dbus_uint32_t       serial,
             const char         *error_name,
             const char         *text)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  DBusMessage *reply;
  DBusString dest;

  if (serial == 0 || afbus_transport->client == NULL ||
      !_dbus_string_init (&dest))
    return;

  reply = dbus_message_new (DBUS_MESSAGE_TYPE_ERROR);
  if (reply != NULL &&
      _dbus_afbus_unique_name_from_addr (source, &dest) &&
      dbus_message_set_error_name (reply, error_name) &&
      dbus_message_set_reply_serial (reply, serial) &&
      dbus_message_set_destination (reply, _dbus_string_get_const_data (&dest)) &&
      dbus_message_set_sender (reply,
                               _dbus_afbus_client_get_name (afbus_transport->client)) &&
      dbus_message_append_args (reply, DBUS_TYPE_STRING, &text,
                                DBUS_TYPE_INVALID))
    {
      dbus_message_set_no_reply (reply, TRUE);
      dbus_message_set_serial (reply,
                               _dbus_connection_get_next_client_serial (transport->connection));
      dbus_message_lock (reply);
      if (send_message (afbus_transport, reply, NULL, TRUE, source) < 0)
        _dbus_verbose ("could not answer %016" PRIx64 ": %s\n", source,
                       _dbus_strerror (errno));
    }

  if (reply != NULL)
    dbus_message_unref (reply);
  _dbus_string_free (&dest);
}

/*
 * A peer sent us a message with unix fds that we could not take: we did
 * not negotiate fd passing, or it had more than we have room for (the
 * kernel closed them).  The message is dropped and counted; a method
 * call that awaits a reply is answered with the error dbus-daemon gives
 * the sender of a message with fds for a client that cannot take them
 * (bus/dispatch.c), from us, so that the kernel's reply tracking and the
 * caller's watch of us end as with any reply.  Only the fixed part of
 * the header is read: the message itself could not be loaded without
 * its fds.  Without memory or room in the socket nothing is answered.
 */
static void
fds_refused (DBusTransportAfbus *afbus_transport,
             const DBusString   *buffer,
             int                 start,
             int                 len,
             dbus_uint64_t       source)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  const unsigned char *h;
  dbus_uint32_t serial;
  const char *text = DBUS_TRANSPORT_CAN_SEND_UNIX_FD (transport) ?
    "Tried to send message with more Unix file descriptors than the"
    " recipient takes" :
    /* dbus-daemon's words (bus/dispatch.c), as they are */
    "Tried to send message with Unix file descriptors"
    "to a client that doesn't support that.";

  afbus_transport->n_dropped++;
  _dbus_verbose ("dropping a message with unix fds from %016" PRIx64
                 " that we cannot take (%lu dropped)\n",
                 source, afbus_transport->n_dropped);

  if (len < DBUS_MINIMUM_HEADER_SIZE || afbus_transport->client == NULL ||
      source == DBUS_AFBUS_MASTER || (source >> BUS_PREFIX_SHIFT) != 0)
    return;

  h = (const unsigned char *) _dbus_string_get_const_data_len (buffer, start,
                                                                len);
  if ((h[0] != DBUS_LITTLE_ENDIAN && h[0] != DBUS_BIG_ENDIAN) ||
      h[1] != DBUS_MESSAGE_TYPE_METHOD_CALL ||
      (h[2] & DBUS_HEADER_FLAG_NO_REPLY_EXPECTED))
    return;

  serial = _dbus_unpack_uint32 (h[0], h + 8);
  answer_peer (afbus_transport, source, serial, DBUS_ERROR_NOT_SUPPORTED,
               text);
}

/*
 * check_incoming() on the datagram just read from @source.  When memory
 * runs out, the datagram stays in the loader, marked unchecked: neither
 * do_reading() nor the connection (afbus_finish_reading()) goes past it
 * until the check is done, so no message reaches the application
 * without it, and none is lost.
 */
static dbus_bool_t
check_datagram (DBusTransportAfbus *afbus_transport,
                dbus_uint64_t       source)
{
  afbus_transport->unchecked = !check_incoming (afbus_transport, source);
  afbus_transport->unchecked_source = source;
  return !afbus_transport->unchecked;
}

/* Before the connection takes messages from the loader: the check that
 * ran out of memory, again.  FALSE while memory is still short. */
static dbus_bool_t
afbus_finish_reading (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;

  if (!afbus_transport->unchecked)
    return TRUE;
  return check_datagram (afbus_transport, afbus_transport->unchecked_source);
}

/*
 * The datagram alone in @loader, from another relay of the daemon, is
 * byte for byte @sent, the message the daemon sent there (the trusted
 * source function found it; a reference, which this takes over): the
 * loader takes that message instead of loading a copy of it (no second
 * message, no walk of its header), and drops the bytes.  Only a locked
 * message (written, so no longer changed) without fds, and only while
 * the loader holds no other message or fds; without memory the bytes
 * are loaded as usual.
 */
static void
take_sent (DBusMessageLoader *loader,
           DBusMessage       *sent)
{
  const DBusString *header, *body;
  dbus_bool_t fds = FALSE;

#ifdef HAVE_UNIX_FD_PASSING
  fds = loader->n_unix_fds != 0;
#endif
  /* (an unlocked message has no network data to compare yet) */
  if (sent->locked && loader->messages == NULL && !fds &&
      !dbus_message_contains_unix_fds (sent))
    {
      _dbus_message_get_network_data (sent, &header, &body);
      if (_dbus_string_get_length (header) + _dbus_string_get_length (body) ==
          _dbus_string_get_length (&loader->data) &&
          _dbus_list_append (&loader->messages, sent))
        {
          _dbus_string_set_length (&loader->data, 0);
          return;
        }
    }

  dbus_message_unref (sent);
}

/* returns false on out-of-memory */
static dbus_bool_t
do_reading (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  int total = 0;

  if (!_dbus_transport_try_to_authenticate (transport))
    return TRUE;

  /* Peer watches queued while reading, or left by a full socket. */
  write_internal (afbus_transport);

  for (;;)
    {
      DBusString *buffer;
      int max_to_read;
      dbus_bool_t may_read_unix_fds = TRUE;
      dbus_bool_t fds_lost = FALSE, skip = FALSE;
      int *fds = NULL;
      unsigned int n_fds = 0;
      dbus_uint64_t source = 0;
      DBusMessage *sent;
      int bytes_read, saved_errno, start;

      /* The last datagram first, if its check ran out of memory. */
      if (afbus_transport->unchecked)
        {
          if (!afbus_finish_reading (transport))
            return FALSE;
          if (!_dbus_transport_queue_messages (transport))
            return FALSE;
        }

      /* See if we've exceeded max messages and need to disable reading */
      check_read_watch (transport);

      if (total > afbus_transport->max_bytes_read_per_iteration ||
          transport->disconnected ||
          !dbus_watch_get_enabled (afbus_transport->read_watch))
        return TRUE;

      _dbus_message_loader_get_buffer (transport->loader, &buffer,
                                       &max_to_read, &may_read_unix_fds);

#ifdef HAVE_UNIX_FD_PASSING
      if (DBUS_TRANSPORT_CAN_SEND_UNIX_FD (transport))
        {
          if (!_dbus_message_loader_get_unix_fds (transport->loader, &fds, &n_fds))
            {
              _dbus_message_loader_return_buffer (transport->loader, buffer);
              return FALSE;
            }
        }
#endif

      start = _dbus_string_get_length (buffer);
      bytes_read = recv_datagram (afbus_transport, buffer, fds, &n_fds, &source,
                                  &fds_lost);
      saved_errno = errno;

      if (bytes_read > 0 && fds_lost)
        {
          if (transport->is_server)
            {
              /* More fds than the daemon's max_message_unix_fds: the
               * sender is disconnected, as dbus-daemon does (ENOSPC from
               * _dbus_read_socket_with_unix_fds()). */
              bytes_read = -1;
              saved_errno = ENOSPC;
            }
          else
            {
              fds_refused (afbus_transport, buffer, start, bytes_read, source);
              skip = TRUE;
            }
          _dbus_string_set_length (buffer, start);
        }

#ifdef HAVE_UNIX_FD_PASSING
      if (fds != NULL)
        _dbus_message_loader_return_unix_fds (transport->loader, fds,
                                              bytes_read < 0 ? 0 : n_fds);
#endif
      _dbus_message_loader_return_buffer (transport->loader, buffer);

      if (skip)
        {
          /* Nothing for the loader; on to the next datagram. */
          total += bytes_read;
          continue;
        }

      if (bytes_read < 0)
        {
          if (_dbus_get_is_errno_enomem (saved_errno))
            return FALSE;
          if (_dbus_get_is_errno_eagain_or_ewouldblock (saved_errno))
            return TRUE;

          _dbus_verbose ("Error reading from remote app: %s\n",
                         _dbus_strerror (saved_errno));
          do_io_error (transport);
          return TRUE;
        }
      else if (bytes_read == 0)
        {
          _dbus_verbose ("Disconnected from remote app\n");
          do_io_error (transport);
          return TRUE;
        }

      _dbus_verbose (" read message of %d bytes from %016" PRIx64 "\n",
                     bytes_read, source);
      total += bytes_read;

      /* Only a datagram alone in the loader, from another relay of
       * the daemon (which removed unknown header fields when it
       * dispatched the message: bus/dispatch.c). */
      sent = NULL;
      afbus_transport->trusted = start == 0 &&
        afbus_transport->trusted_source != NULL &&
        AFBUS_IS_CLIENT_UNICAST (source) &&
        (* afbus_transport->trusted_source) (source, &transport->loader->data,
                                             &sent,
                                             afbus_transport->trusted_source_data);
      if (afbus_transport->trusted && sent != NULL)
        take_sent (transport->loader, sent);

      if (!check_datagram (afbus_transport, source))
        return FALSE;

      if (!_dbus_transport_queue_messages (transport))
        return FALSE;
    }
}

static dbus_bool_t
error_with_read_to_come (DBusTransportAfbus *afbus_transport,
                         DBusWatch          *watch,
                         unsigned int        flags)
{
  if (!(flags & DBUS_WATCH_HANGUP || flags & DBUS_WATCH_ERROR))
    return FALSE;

  /* If we have a read watch enabled, there may be data still to read;
   * the hangup is handled there. */
  if (watch != afbus_transport->read_watch &&
      _dbus_watch_get_enabled (afbus_transport->read_watch))
    return FALSE;

  return TRUE;
}

/*
 * A bus client's calls whose time is up get NoReply
 * (_dbus_afbus_client_expire()); then the reply timer is set for the
 * next.  Called with the connection locked.
 */
static void
expire_calls (DBusTransportAfbus *afbus_transport)
{
  DBusTransport *transport = (DBusTransport *) afbus_transport;
  dbus_bool_t expired;

  if (afbus_transport->client == NULL || transport->connection == NULL)
    return;

  expired = _dbus_afbus_client_expire (afbus_transport->client,
                                       transport->connection);

  /* The timer goes on firing at its interval until it is set again:
   * for the next deadline, once it fired or a deadline passed. */
  if (expired || afbus_transport->reply_timer_due)
    {
      afbus_transport->reply_timer_due = FALSE;
      set_reply_timer (afbus_transport);
    }
}

static dbus_bool_t
afbus_handle_watch (DBusTransport *transport,
                    DBusWatch     *watch,
                    unsigned int   flags)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;

  _dbus_assert (watch == afbus_transport->read_watch ||
                watch == afbus_transport->write_watch);

  /* The reply timer calls with no flags (as, at worst, a main loop
   * that reports a condition the watch does not ask for: then the
   * timer is set once more for nothing).  Reading and writing do not
   * look at the deadlines: the timer is set for the first. */
  if (flags == 0)
    {
      afbus_transport->reply_timer_due = TRUE;
      expire_calls (afbus_transport);
    }

  /* POLLERR for room notifications (each watch of the socket is told;
   * the first takes them): the destinations they name are tried
   * again. */
  if ((flags & DBUS_WATCH_ERROR) && error_was_room (afbus_transport))
    {
      flags &= ~DBUS_WATCH_ERROR;
      if (!afbus_transport->write_stalled)
        {
          if (!do_writing (transport))
            return FALSE;
          check_write_watch (transport);
        }
    }

  if (!(flags & DBUS_WATCH_READABLE) &&
      error_with_read_to_come (afbus_transport, watch, flags))
    {
      _dbus_verbose ("Hang up or error on watch\n");
      _dbus_transport_disconnect (transport);
      return TRUE;
    }

  if (watch == afbus_transport->read_watch && (flags & DBUS_WATCH_READABLE))
    {
      dbus_bool_t auth_finished;

      if (!do_authentication (transport, TRUE, FALSE, &auth_finished))
        return FALSE;

      /* Let the connection see the end of authentication first. */
      if (!auth_finished && !do_reading (transport))
        return FALSE;
    }
  else if (watch == afbus_transport->write_watch && (flags & DBUS_WATCH_WRITABLE))
    {
      if (!do_authentication (transport, FALSE, TRUE, NULL))
        return FALSE;

      if (!do_writing (transport))
        return FALSE;

      check_write_watch (transport);
    }

  return TRUE;
}

static void
afbus_disconnect (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;

  free_watches (transport);
  _dbus_close_socket (afbus_transport->fd, NULL);
  _dbus_socket_invalidate (&afbus_transport->fd);
}

static dbus_bool_t
afbus_connection_set (DBusTransport *transport)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;

  _dbus_watch_set_handler (afbus_transport->write_watch,
                           _dbus_connection_handle_watch,
                           transport->connection, NULL);
  _dbus_watch_set_handler (afbus_transport->read_watch,
                           _dbus_connection_handle_watch,
                           transport->connection, NULL);

  if (!_dbus_connection_add_watch_unlocked (transport->connection,
                                            afbus_transport->write_watch))
    return FALSE;

  if (!_dbus_connection_add_watch_unlocked (transport->connection,
                                            afbus_transport->read_watch))
    {
      _dbus_connection_remove_watch_unlocked (transport->connection,
                                              afbus_transport->write_watch);
      return FALSE;
    }

  check_read_watch (transport);
  check_write_watch (transport);
  return TRUE;
}

static void
afbus_do_iteration (DBusTransport *transport,
                    unsigned int   flags,
                    int            timeout_milliseconds)
{
  DBusTransportAfbus *afbus_transport = (DBusTransportAfbus *) transport;
  DBusPollFD poll_fd;
  dbus_bool_t wait_room = FALSE;
  int poll_res;

  poll_fd.fd = _dbus_socket_get_pollable (afbus_transport->fd);
  poll_fd.events = 0;

  if (_dbus_transport_try_to_authenticate (transport))
    {
      /* Try to write without polling first, as the socket transport does. */
      if ((flags & DBUS_ITERATION_DO_WRITING) &&
          !(flags & (DBUS_ITERATION_DO_READING | DBUS_ITERATION_BLOCK)) &&
          !transport->disconnected &&
          _dbus_connection_has_messages_to_send_unlocked (transport->connection))
        {
          do_writing (transport);

          if (transport->disconnected ||
              !_dbus_connection_has_messages_to_send_unlocked (transport->connection))
            goto out;
        }

      if (flags & DBUS_ITERATION_DO_READING)
        poll_fd.events |= _DBUS_POLLIN;
      /* What is left waits for room notifications, which POLLERR
       * tells of, not POLLOUT. */
      if ((flags & DBUS_ITERATION_DO_WRITING) && !afbus_transport->write_stalled)
        poll_fd.events |= _DBUS_POLLOUT;
      else if ((flags & DBUS_ITERATION_DO_WRITING) && (flags & DBUS_ITERATION_BLOCK))
        wait_room = TRUE;
    }
  else
    {
      DBusAuthState auth_state = _dbus_auth_do_work (transport->auth);

      if (transport->receive_credentials_pending ||
          auth_state == DBUS_AUTH_STATE_WAITING_FOR_INPUT)
        poll_fd.events |= _DBUS_POLLIN;

      if (transport->send_credentials_pending ||
          auth_state == DBUS_AUTH_STATE_HAVE_BYTES_TO_SEND)
        poll_fd.events |= _DBUS_POLLOUT;
    }

  if (poll_fd.events || wait_room)
    {
      int poll_timeout = (flags & DBUS_ITERATION_BLOCK) ? timeout_milliseconds : 0;
      int saved_errno;

      /* A blocking iteration wakes up for the first of our calls whose
       * time is up, as the reply timer would in a main loop. */
      if ((flags & DBUS_ITERATION_BLOCK) && afbus_transport->client != NULL)
        {
          int next = _dbus_afbus_client_next_deadline (afbus_transport->client);

          if (next >= 0 && (poll_timeout < 0 || poll_timeout > next))
            poll_timeout = next;
        }

      /* Drop the connection lock while blocked, as the socket transport
       * does; the io path is still ours. */
      if (flags & DBUS_ITERATION_BLOCK)
        _dbus_connection_unlock (transport->connection);

      do
        {
          poll_res = _dbus_poll (&poll_fd, 1, poll_timeout);
          saved_errno = _dbus_save_socket_errno ();
        }
      while (poll_res < 0 && _dbus_get_is_errno_eintr (saved_errno));

      if (flags & DBUS_ITERATION_BLOCK)
        _dbus_connection_lock (transport->connection);

      if (poll_res > 0)
        {
          dbus_bool_t room = FALSE;

          /* Room notifications: their destinations are tried again. */
          if ((poll_fd.revents & _DBUS_POLLERR) && error_was_room (afbus_transport))
            {
              poll_fd.revents &= ~_DBUS_POLLERR;
              room = !afbus_transport->write_stalled;
            }

          if (poll_fd.revents & _DBUS_POLLERR)
            do_io_error (transport);
          else
            {
              dbus_bool_t need_read = (poll_fd.revents & (_DBUS_POLLIN | _DBUS_POLLHUP)) != 0;
              dbus_bool_t need_write = room || (poll_fd.revents & _DBUS_POLLOUT) != 0;
              dbus_bool_t authentication_completed;

              do_authentication (transport, need_read, need_write,
                                 &authentication_completed);

              if (authentication_completed)
                goto out;

              if (need_read && (flags & DBUS_ITERATION_DO_READING))
                do_reading (transport);
              if (need_write && (flags & DBUS_ITERATION_DO_WRITING))
                do_writing (transport);
            }
        }
      else if (poll_res < 0)
        {
          _dbus_verbose ("Error from _dbus_poll(): %s\n",
                         _dbus_strerror (saved_errno));
        }
    }

 out:
  /* A blocking iteration stands in for the reply timer (its poll ends
   * at the first deadline); the others, such as each send's, leave the
   * deadlines alone. */
  if (flags & DBUS_ITERATION_BLOCK)
    expire_calls (afbus_transport);
  /* DBusConnection relies on an iteration noticing pending messages. */
  check_write_watch (transport);
}

static void
afbus_live_messages_changed (DBusTransport *transport)
{
  check_read_watch (transport);
}

static dbus_bool_t
afbus_get_socket_fd (DBusTransport *transport,
                     DBusSocket    *fd_p)
{
  *fd_p = ((DBusTransportAfbus *) transport)->fd;
  return TRUE;
}

static const DBusTransportVTable afbus_vtable = {
  afbus_finalize,
  afbus_handle_watch,
  afbus_disconnect,
  afbus_connection_set,
  afbus_do_iteration,
  afbus_live_messages_changed,
  afbus_get_socket_fd,
  afbus_finish_reading
};

static DBusTransport *
afbus_transport_new (DBusSocket        fd,
                     const DBusString *server_guid,
                     const DBusString *address,
                     dbus_bool_t       relay)
{
  DBusTransportAfbus *afbus_transport;
  struct sockaddr_bus sa;

  afbus_transport = dbus_new0 (DBusTransportAfbus, 1);
  if (afbus_transport == NULL)
    return NULL;

  if (server_guid == NULL)
    {
      socklen_t len = sizeof (sa);

      if (getsockname (fd.fd, (struct sockaddr *) &sa, &len) < 0 ||
          sa.sbus_family != AF_BUS ||
          (sa.sbus_addr.s_addr & BUS_PREFIX_MASK) != 0 ||
          sa.sbus_addr.s_addr == DBUS_AFBUS_MASTER)
        {
          _dbus_verbose ("not a connected AF_BUS client socket\n");
          goto failed;
        }
    }

  if (server_guid == NULL)
    {
      int one = 1;

      /* Told when each recipient that refused a message for lack of
       * room may have room again (write_pass()).  A kernel without the
       * option: everything waits for the last recipient that refused. */
      if (setsockopt (fd.fd, SOL_BUS, BUS_ROOM_NOTIFY, &one,
                      sizeof (one)) == 0)
        afbus_transport->room_notify = TRUE;
      else
        _dbus_verbose ("BUS_ROOM_NOTIFY: %s\n", _dbus_strerror (errno));
    }

  if (server_guid == NULL && !relay)
    {
      int one = 1;

      /* A message to an address nobody owns fails, rather than reach the
       * daemon without our knowing (do_writing() then sends it there
       * itself).  A kernel without the option keeps the default route:
       * a message sent to a name's address as the name moves may then
       * be overtaken by the next one. */
      if (setsockopt (fd.fd, SOL_BUS, BUS_NO_DEFAULT_ROUTE, &one,
                      sizeof (one)) < 0)
        _dbus_verbose ("BUS_NO_DEFAULT_ROUTE: %s\n", _dbus_strerror (errno));

      afbus_transport->client = _dbus_afbus_client_new (sa.sbus_addr.s_addr);
      if (afbus_transport->client == NULL)
        goto failed;
    }

  afbus_transport->write_watch = _dbus_watch_new (_dbus_socket_get_pollable (fd),
                                                  DBUS_WATCH_WRITABLE, FALSE,
                                                  NULL, NULL, NULL);
  if (afbus_transport->write_watch == NULL)
    goto failed;

  afbus_transport->read_watch = _dbus_watch_new (_dbus_socket_get_pollable (fd),
                                                 DBUS_WATCH_READABLE, FALSE,
                                                 NULL, NULL, NULL);
  if (afbus_transport->read_watch == NULL)
    goto failed;

  afbus_transport->reply_timer = _dbus_timeout_new (1, reply_timer_fired,
                                                    afbus_transport, NULL);
  if (afbus_transport->reply_timer == NULL)
    goto failed;

  if (!_dbus_transport_init_base (&afbus_transport->base, &afbus_vtable,
                                  server_guid, address))
    goto failed;

#ifdef HAVE_UNIX_FD_PASSING
  _dbus_auth_set_unix_fd_possible (afbus_transport->base.auth, TRUE);
#endif

  afbus_transport->fd = fd;
  afbus_transport->relay = relay;
  /* Whole messages are read and written at once; this bounds how many
   * one iteration handles before it lets others run. */
  afbus_transport->max_bytes_read_per_iteration = 64 * 1024;
  afbus_transport->max_bytes_written_per_iteration = 64 * 1024;

  return (DBusTransport *) afbus_transport;

 failed:
  if (afbus_transport->reply_timer != NULL)
    _dbus_timeout_unref (afbus_transport->reply_timer);
  if (afbus_transport->read_watch != NULL)
    {
      _dbus_watch_invalidate (afbus_transport->read_watch);
      _dbus_watch_unref (afbus_transport->read_watch);
    }
  if (afbus_transport->write_watch != NULL)
    {
      _dbus_watch_invalidate (afbus_transport->write_watch);
      _dbus_watch_unref (afbus_transport->write_watch);
    }
  _dbus_afbus_client_free (afbus_transport->client);
  dbus_free (afbus_transport);
  return NULL;
}

/**
 * Creates a transport for a connected or accepted AF_BUS socket, which
 * must be nonblocking.
 *
 * @param fd the socket
 * @param server_guid non-#NULL on the daemon's side (accepted socket)
 * @param address the address connected to (client side)
 * @returns the new transport, or #NULL if no memory
 */
DBusTransport *
_dbus_transport_new_for_afbus (DBusSocket        fd,
                               const DBusString *server_guid,
                               const DBusString *address)
{
  return afbus_transport_new (fd, server_guid, address, FALSE);
}

/* Moves what @from has to send into @to's input; FALSE if nothing. */
static dbus_bool_t
auth_pass_bytes (DBusAuth    *from,
                 DBusAuth    *to,
                 dbus_bool_t *oom)
{
  const DBusString *bytes;
  DBusString *buffer;
  int len;

  if (!_dbus_auth_get_bytes_to_send (from, &bytes))
    return FALSE;

  len = _dbus_string_get_length (bytes);
  _dbus_auth_get_buffer (to, &buffer);
  if (!_dbus_string_copy (bytes, 0, buffer, _dbus_string_get_length (buffer)))
    {
      *oom = TRUE;
      _dbus_auth_return_buffer (to, buffer);
      return FALSE;
    }
  _dbus_auth_return_buffer (to, buffer);
  _dbus_auth_bytes_sent (from, len);
  return TRUE;
}

/*
 * Both ends of the pair are ours: they run the auth conversation (the
 * daemon's own identity, EXTERNAL, and fd passing) in memory, so that
 * the connections start authenticated and pass fds.  FALSE if no
 * memory (or the conversation fails, which it cannot).
 */
static dbus_bool_t
authenticate_pair (DBusTransport *client,
                   DBusTransport *server)
{
  DBusCredentials *creds;
  dbus_bool_t oom = FALSE;
  int i;

  creds = _dbus_credentials_new_from_current_process ();
  if (creds == NULL)
    return FALSE;
  if (!_dbus_auth_set_credentials (server->auth, creds) ||
      !_dbus_auth_set_credentials (client->auth, creds))
    {
      _dbus_credentials_unref (creds);
      return FALSE;
    }
  _dbus_credentials_unref (creds);

  client->send_credentials_pending = FALSE;
  server->receive_credentials_pending = FALSE;

  for (i = 0; i < 32 && !oom; i++)
    {
      DBusAuthState c = _dbus_auth_do_work (client->auth);
      DBusAuthState s = _dbus_auth_do_work (server->auth);
      dbus_bool_t moved;

      if (c == DBUS_AUTH_STATE_AUTHENTICATED &&
          s == DBUS_AUTH_STATE_AUTHENTICATED)
        return _dbus_auth_get_unix_fd_negotiated (client->auth) ==
          _dbus_auth_get_unix_fd_negotiated (server->auth);

      if (c == DBUS_AUTH_STATE_NEED_DISCONNECT ||
          s == DBUS_AUTH_STATE_NEED_DISCONNECT)
        break;

      moved = auth_pass_bytes (client->auth, server->auth, &oom);
      moved = auth_pass_bytes (server->auth, client->auth, &oom) || moved;
      if (!moved && c != DBUS_AUTH_STATE_WAITING_FOR_MEMORY &&
          s != DBUS_AUTH_STATE_WAITING_FOR_MEMORY)
        break;
    }

  _dbus_verbose ("in-memory authentication of an AF_BUS relay pair failed\n");
  return FALSE;
}

/**
 * What a relay sends of @p message: its header and body, in bytes.  The
 * message need not be locked yet (the bridge sizes it before it is
 * queued): locking it changes no length.
 */
int
_dbus_afbus_message_network_size (DBusMessage *message)
{
  return _dbus_string_get_length (&message->header.data) +
         _dbus_string_get_length (&message->body);
}

/**
 * Whether @p datagram is byte for byte what a relay sends of
 * @p message (its header, then its body).  Never for a message that is
 * not locked: it was not sent (the bridge remembered it, then ran out of
 * memory before it was queued).
 */
dbus_bool_t
_dbus_afbus_message_is_datagram (DBusMessage      *message,
                                 const DBusString *datagram)
{
  const DBusString *header, *body;
  int header_len, len;

  if (!message->locked)
    return FALSE;
  _dbus_message_get_network_data (message, &header, &body);
  header_len = _dbus_string_get_length (header);
  len = _dbus_string_get_length (datagram);
  return header_len + _dbus_string_get_length (body) == len &&
    memcmp (_dbus_string_get_const_data (datagram),
            _dbus_string_get_const_data (header), header_len) == 0 &&
    memcmp (_dbus_string_get_const_data (datagram) + header_len,
            _dbus_string_get_const_data (body), len - header_len) == 0;
}

/**
 * Makes the daemon's relay connections of a legacy client: @p client_fd
 * is a socket the daemon connected to its own bus (C1), @p accepted_fd
 * the socket it accepted for it (A1); both nonblocking.  They start
 * authenticated (the daemon's own identity) and pass fds.  C1 sends a
 * message to the address _dbus_afbus_message_set_addr() attached to it
 * (to A1 without one); what it reads from peers must come from the
 * sender it names, as for any client, and carries the peer's address.
 * A1 sends everything to C1.
 *
 * On success the connections own the sockets; on failure the caller
 * still does.
 *
 * @param client_fd C1
 * @param accepted_fd A1
 * @param guid the server's GUID
 * @param trusted says which sources are the daemon's other relays, whose
 *  messages C1 loads without validating them again, or takes as the
 *  daemon sent them (NULL: none)
 * @param trusted_data its data
 * @param client_p returns the connection on C1
 * @param accepted_p returns the connection on A1
 * @returns #FALSE if no memory
 */
dbus_bool_t
_dbus_afbus_relay_pair_new (DBusSocket                      client_fd,
                            DBusSocket                      accepted_fd,
                            const DBusString               *guid,
                            DBusAfbusTrustedSourceFunction  trusted,
                            void                           *trusted_data,
                            DBusConnection                **client_p,
                            DBusConnection                **accepted_p)
{
  DBusTransport *client = NULL, *server = NULL;
  DBusConnection *client_conn = NULL, *server_conn = NULL;
  DBusString address;

  _dbus_string_init_const (&address, "afbus:");

  client = afbus_transport_new (client_fd, NULL, &address, TRUE);
  if (client == NULL)
    goto failed;
  ((DBusTransportAfbus *) client)->trusted_source = trusted;
  ((DBusTransportAfbus *) client)->trusted_source_data = trusted_data;

  server = afbus_transport_new (accepted_fd, guid, NULL, TRUE);
  if (server == NULL)
    goto failed;

  if (!authenticate_pair (client, server))
    goto failed;

  client_conn = _dbus_connection_new_for_transport (client);
  if (client_conn == NULL)
    goto failed;

  server_conn = _dbus_connection_new_for_transport (server);
  if (server_conn == NULL)
    goto failed;

  _dbus_transport_unref (client);
  _dbus_transport_unref (server);
  *client_p = client_conn;
  *accepted_p = server_conn;
  return TRUE;

 failed:
  /* The sockets stay the caller's. */
  if (client != NULL)
    _dbus_socket_invalidate (&((DBusTransportAfbus *) client)->fd);
  if (server != NULL)
    _dbus_socket_invalidate (&((DBusTransportAfbus *) server)->fd);
  if (client_conn != NULL)
    {
      dbus_connection_close (client_conn);
      dbus_connection_unref (client_conn);
    }
  if (server_conn != NULL)
    {
      dbus_connection_close (server_conn);
      dbus_connection_unref (server_conn);
    }
  if (client != NULL)
    _dbus_transport_unref (client);
  if (server != NULL)
    _dbus_transport_unref (server);
  return FALSE;
}

/*
 * Connects to the bus at @path (an abstract name if @abstract); returns
 * a nonblocking socket.  A full
 * listen backlog is waited for at most 25 seconds (the default method
 * call timeout), so a stuck daemon gives an error and not a hang.
 */
static DBusSocket
connect_afbus (const char  *path,
               dbus_bool_t  abstract,
               DBusError   *error)
{
  DBusSocket fd = DBUS_SOCKET_INIT;
  struct sockaddr_bus sa;
  struct timeval tv = { 25, 0 };
  socklen_t len;
  int saved_errno;

  if (!_dbus_afbus_sockaddr_for_path (path, abstract, &sa, &len, error))
    return fd;

  fd.fd = socket (AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC, BUS_PROTO_DBUS);
  if (fd.fd < 0)
    {
      saved_errno = errno;
      dbus_set_error (error,
                      saved_errno == EAFNOSUPPORT ? DBUS_ERROR_NOT_SUPPORTED :
                      _dbus_error_from_errno (saved_errno),
                      "Failed to create an AF_BUS socket: %s%s",
                      _dbus_strerror (saved_errno),
                      saved_errno == EAFNOSUPPORT ?
                      " (the kernel has no AF_BUS)" : "");
      _dbus_socket_invalidate (&fd);
      return fd;
    }

  setsockopt (fd.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof (tv));

  while (connect (fd.fd, (struct sockaddr *) &sa, len) < 0)
    {
      saved_errno = errno;
      if (saved_errno == EINTR)
        continue;

      dbus_set_error (error,
                      saved_errno == EAGAIN ? DBUS_ERROR_LIMITS_EXCEEDED :
                      _dbus_error_from_errno (saved_errno),
                      "Failed to connect to AF_BUS bus \"%s%s\": %s",
                      abstract ? "@" : "", path,
                      saved_errno == EAGAIN ?
                      "the bus does not accept connections (backlog full)" :
                      _dbus_strerror (saved_errno));
      _dbus_close_socket (fd, NULL);
      _dbus_socket_invalidate (&fd);
      return fd;
    }

  tv.tv_sec = 0;
  setsockopt (fd.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof (tv));

  if (!_dbus_set_socket_nonblocking (fd, error))
    {
      _dbus_close_socket (fd, NULL);
      _dbus_socket_invalidate (&fd);
    }

  return fd;
}

/**
 * Opens a client transport for an "afbus:" address: afbus:path=PATH
 * connects to { AF_BUS, 0, PATH }, afbus:abstract=NAME to the abstract
 * name NAME; afbus:file=FILE reads PATH from FILE, and afbus:runtime=yes
 * from $XDG_RUNTIME_DIR/bus.afbus (see _dbus_afbus_address_location()).
 *
 * @param entry the address entry
 * @param transport_p return location for the transport
 * @param error error to set
 * @returns result of the attempt
 */
DBusTransportOpenResult
_dbus_transport_open_afbus (DBusAddressEntry  *entry,
                            DBusTransport    **transport_p,
                            DBusError         *error)
{
  const char *method = dbus_address_entry_get_method (entry);
  DBusAfbusLocation location;
  DBusString path_str, address;
  dbus_bool_t abstract, ok;
  DBusSocket fd;

  if (strcmp (method, "afbus") != 0)
    {
      _DBUS_ASSERT_ERROR_IS_CLEAR (error);
      return DBUS_TRANSPORT_OPEN_NOT_HANDLED;
    }

  if (!_dbus_afbus_address_location (entry, FALSE, &location, error))
    return dbus_error_has_name (error, DBUS_ERROR_BAD_ADDRESS) ?
      DBUS_TRANSPORT_OPEN_BAD_ADDRESS : DBUS_TRANSPORT_OPEN_DID_NOT_CONNECT;

  abstract = location.abstract;
  if (!_dbus_string_init (&path_str))
    {
      _dbus_afbus_location_free (&location);
      _DBUS_SET_OOM (error);
      return DBUS_TRANSPORT_OPEN_DID_NOT_CONNECT;
    }

  if (_dbus_string_get_length (&location.file) > 0)
    ok = _dbus_afbus_read_path_file (_dbus_string_get_const_data (&location.file),
                                     &path_str, error);
  else if (!_dbus_string_append (&path_str, location.name))
    {
      _DBUS_SET_OOM (error);
      ok = FALSE;
    }
  else
    ok = TRUE;

  _dbus_afbus_location_free (&location);
  if (!ok)
    {
      _dbus_string_free (&path_str);
      return dbus_error_has_name (error, DBUS_ERROR_BAD_ADDRESS) ?
        DBUS_TRANSPORT_OPEN_BAD_ADDRESS : DBUS_TRANSPORT_OPEN_DID_NOT_CONNECT;
    }

  if (!_dbus_string_init (&address))
    {
      _dbus_string_free (&path_str);
      _DBUS_SET_OOM (error);
      return DBUS_TRANSPORT_OPEN_DID_NOT_CONNECT;
    }

  if (!_dbus_string_append (&address,
                            abstract ? "afbus:abstract=" : "afbus:path=") ||
      !_dbus_address_append_escaped (&address, &path_str))
    {
      _DBUS_SET_OOM (error);
      goto failed;
    }

  fd = connect_afbus (_dbus_string_get_const_data (&path_str), abstract,
                      error);
  if (!_dbus_socket_is_valid (fd))
    {
      _DBUS_ASSERT_ERROR_IS_SET (error);
      _dbus_string_free (&path_str);
      _dbus_string_free (&address);
      return dbus_error_has_name (error, DBUS_ERROR_BAD_ADDRESS) ?
        DBUS_TRANSPORT_OPEN_BAD_ADDRESS : DBUS_TRANSPORT_OPEN_DID_NOT_CONNECT;
    }

  *transport_p = _dbus_transport_new_for_afbus (fd, NULL, &address);
  if (*transport_p == NULL)
    {
      _DBUS_SET_OOM (error);
      _dbus_close_socket (fd, NULL);
      goto failed;
    }

  _dbus_string_free (&path_str);
  _dbus_string_free (&address);
  return DBUS_TRANSPORT_OPEN_OK;

 failed:
  _dbus_string_free (&path_str);
  _dbus_string_free (&address);
  return DBUS_TRANSPORT_OPEN_DID_NOT_CONNECT;
}

/** @} */

#else /* !DBUS_HAVE_AFBUS */

void
_dbus_transport_afbus_set_relay_refused_function (DBusAfbusRelayRefusedFunction  function,
                                                  void                          *data)
{
}

DBusTransportOpenResult
_dbus_transport_open_afbus (DBusAddressEntry  *entry,
                            DBusTransport    **transport_p,
                            DBusError         *error)
{
  return DBUS_TRANSPORT_OPEN_NOT_HANDLED;
}

#endif /* DBUS_HAVE_AFBUS */
