/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-server-afbus.c  AF_BUS subclass of DBusServer
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
#include "dbus-server-afbus.h"
#include "dbus-sysdeps-afbus.h"

#ifdef DBUS_HAVE_AFBUS

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dbus-address.h"
#include "dbus-connection-internal.h"
#include "dbus-file.h"
#include "dbus-protocol.h"
#include "dbus-sysdeps-unix.h"
#include "dbus-timeout.h"
#include "dbus-transport-afbus.h"
#include "dbus-watch.h"

/**
 * @defgroup DBusServerAfbus DBusServer implementation for AF_BUS
 * @ingroup  DBusInternals
 * @brief Implementation details of DBusServer on AF_BUS
 *
 * The server binds { AF_BUS, 0, path } and so becomes the bus master.
 * Every accepted socket becomes a connection like any other; what makes
 * the daemon a master (joining clients to the bus, giving well-known
 * names addresses) is in bus/afbus.c.
 *
 * Listening addresses (the keys: _dbus_afbus_address_location()):
 * - afbus: a fresh path in $XDG_RUNTIME_DIR (else the session socket
 *   directory), advertised as afbus:path=...,guid=...
 * - afbus:dir=DIR (or tmpdir=DIR) a fresh path in DIR
 * - afbus:path=PATH binds PATH (a stale socket there is removed first,
 *   as for unix:path=, but never a live bus's: AddressInUse)
 * - afbus:abstract=NAME binds the abstract name NAME, advertised as
 *   afbus:abstract=NAME,guid=...; it lives in the network namespace, not
 *   in a directory, and goes with the bus
 * - afbus:file=FILE binds a fresh path in FILE's directory (so that the
 *   system bus's afbus:file=/run/dbus/system_bus.afbus is in /run/dbus,
 *   beside its unix socket, and not in a /tmp that a client may not
 *   share) and writes the path, and a newline, into FILE (mode 0644,
 *   written whole under another name and renamed), from which clients
 *   connecting to afbus:file=FILE read it.  A FILE that names a live
 *   bus is left alone (AddressInUse): a second daemon never takes the
 *   address of a running bus.
 * - afbus:runtime=yes is afbus:file=$XDG_RUNTIME_DIR/bus.afbus.
 * The bus's path and FILE are removed when the server goes, each only if
 * it is still the one this server made (the same socket inode; FILE
 * still naming its path): a daemon never removes another's.
 * As for unix:path= sockets, the bus gets mode 0777: who may connect is
 * the business of authentication and policy, and of the directory's
 * permissions, not of the socket's.
 *
 * @{
 */

typedef struct DBusServerAfbus DBusServerAfbus;

/**
 * Implementation details of DBusServerAfbus. All members are private.
 */
struct DBusServerAfbus
{
  DBusServer base;   /**< Parent instance */
  DBusSocket fd;     /**< The bound, listening socket */
  DBusWatch *watch;  /**< Watch on it */
  char *path;        /**< Path of the bus, removed on disconnect, or
                          its abstract name */
  dbus_bool_t abstract; /**< Whether path is an abstract name */
  char *file;        /**< File the path was written to, or NULL */
  dev_t dev;         /**< The socket inode bound at path (not abstract) */
  ino_t ino;
  DBusList *held;    /**< other clients' sockets, accepted while the
                          server connected to itself
                          (_dbus_server_afbus_connect_self()): handed
                          on by held_timeout */
  DBusTimeout *held_timeout; /**< 0 ms, enabled while @held is not empty */
};

static void
afbus_finalize (DBusServer *server)
{
  DBusServerAfbus *afbus_server = (DBusServerAfbus *) server;

  _dbus_server_finalize_base (server);

  if (afbus_server->watch)
    {
      _dbus_watch_unref (afbus_server->watch);
      afbus_server->watch = NULL;
    }

  if (afbus_server->held_timeout != NULL)
    _dbus_timeout_unref (afbus_server->held_timeout);
  dbus_free (afbus_server->path);
  dbus_free (afbus_server->file);
  dbus_free (server);
}

/* Return value is just for memory, not other failures. */
static dbus_bool_t
handle_new_client_fd_and_unlock (DBusServer *server,
                                 DBusSocket  client_fd)
{
  DBusConnection *connection;
  DBusTransport *transport;
  DBusNewConnectionFunction new_connection_function;
  void *new_connection_data;

  HAVE_LOCK_CHECK (server);

  transport = _dbus_transport_new_for_afbus (client_fd, &server->guid_hex, NULL);
  if (transport == NULL)
    {
      _dbus_close_socket (client_fd, NULL);
      SERVER_UNLOCK (server);
      return FALSE;
    }

  if (!_dbus_transport_set_auth_mechanisms (transport,
                                            (const char **) server->auth_mechanisms))
    {
      _dbus_transport_unref (transport);
      SERVER_UNLOCK (server);
      return FALSE;
    }

  connection = _dbus_connection_new_for_transport (transport);
  _dbus_transport_unref (transport);

  if (connection == NULL)
    {
      SERVER_UNLOCK (server);
      return FALSE;
    }

  new_connection_function = server->new_connection_function;
  new_connection_data = server->new_connection_data;

  _dbus_server_ref_unlocked (server);
  SERVER_UNLOCK (server);

  if (new_connection_function)
    (* new_connection_function) (server, connection, new_connection_data);
  dbus_server_unref (server);

  /* If no one grabbed a reference, the connection will die. */
  _dbus_connection_close_if_only_one_ref (connection);
  dbus_connection_unref (connection);

  return TRUE;
}

/* The held timeout's handler, called by the main loop with the server
 * unlocked: the other clients' connections that
 * _dbus_server_afbus_connect_self() accepted go to the server's
 * new-connection function, as the listening socket's watch would have
 * handed them on, now that the caller of connect_self is done (it may
 * have been in the middle of a legacy client's Hello). */
static dbus_bool_t
hand_on_held (void *data)
{
  DBusServer *server = data;
  DBusServerAfbus *afbus_server = data;
  DBusSocket fd;

  SERVER_LOCK (server);
  _dbus_server_toggle_timeout (server, afbus_server->held_timeout, FALSE);
  while (afbus_server->held != NULL)
    {
      fd.fd = _DBUS_POINTER_TO_INT (_dbus_list_pop_first (&afbus_server->held));
      if (!handle_new_client_fd_and_unlock (server, fd))
        _dbus_verbose ("Rejected client connection due to lack of memory\n");
      SERVER_LOCK (server);
    }
  SERVER_UNLOCK (server);
  return TRUE;
}

static dbus_bool_t
afbus_handle_watch (DBusWatch    *watch,
                    unsigned int  flags,
                    void         *data)
{
  DBusServer *server = data;
  DBusServerAfbus *afbus_server = data;

  SERVER_LOCK (server);

  _dbus_assert (watch == afbus_server->watch);

  if (flags & DBUS_WATCH_READABLE)
    {
      DBusSocket client_fd;

      client_fd.fd = accept4 (afbus_server->fd.fd, NULL, NULL,
                              SOCK_CLOEXEC | SOCK_NONBLOCK);

      if (client_fd.fd < 0)
        {
          if (_dbus_get_is_errno_eagain_or_ewouldblock (errno) || errno == EINTR)
            _dbus_verbose ("No client available to accept after all\n");
          else
            _dbus_verbose ("Failed to accept a client connection: %s\n",
                           _dbus_strerror (errno));
          SERVER_UNLOCK (server);
        }
      else if (!handle_new_client_fd_and_unlock (server, client_fd))
        _dbus_verbose ("Rejected client connection due to lack of memory\n");
    }
  else
    {
      SERVER_UNLOCK (server);
    }

  if (flags & (DBUS_WATCH_ERROR | DBUS_WATCH_HANGUP))
    _dbus_verbose ("Error or hangup on the AF_BUS listening socket\n");

  return TRUE;
}

/* Removes the socket inode at @path if it is the one bound there
 * (@dev, @ino): another daemon may have bound the path since. */
static void
remove_own_socket (const char *path,
                   dev_t       dev,
                   ino_t       ino)
{
  struct stat st;

  if (lstat (path, &st) == 0 && S_ISSOCK (st.st_mode) &&
      st.st_dev == dev && st.st_ino == ino)
    unlink (path);
}

/* Removes @file if it still names the bus at @path: another daemon may
 * have written its own bus there since (its first checked ours was dead). */
static void
remove_own_file (const char *file,
                 const char *path)
{
  DBusString contents;

  if (!_dbus_string_init (&contents))
    return;

  if (_dbus_afbus_read_path_file (file, &contents, NULL) &&
      strcmp (_dbus_string_get_const_data (&contents), path) == 0)
    unlink (file);

  _dbus_string_free (&contents);
}

/* Fails with AddressInUse if @file names a live bus: a second daemon
 * configured with the same file (a test daemon started in a desktop
 * session, say) must not take the running bus's address, nor remove it
 * when it exits. */
static dbus_bool_t
check_file_free (const char *file,
                 DBusError  *error)
{
  DBusString contents;
  dbus_bool_t live;

  if (!_dbus_string_init (&contents))
    {
      _DBUS_SET_OOM (error);
      return FALSE;
    }

  live = _dbus_afbus_read_path_file (file, &contents, NULL) &&
    _dbus_afbus_bus_is_live (_dbus_string_get_const_data (&contents), FALSE);
  if (live)
    dbus_set_error (error, DBUS_ERROR_ADDRESS_IN_USE,
                    "\"%s\" names a live AF_BUS bus (%s)", file,
                    _dbus_string_get_const_data (&contents));

  _dbus_string_free (&contents);
  return !live;
}

static void
afbus_disconnect (DBusServer *server)
{
  DBusServerAfbus *afbus_server = (DBusServerAfbus *) server;

  HAVE_LOCK_CHECK (server);

  if (afbus_server->held_timeout != NULL)
    _dbus_server_remove_timeout (server, afbus_server->held_timeout);
  while (afbus_server->held != NULL)
    {
      DBusSocket held;

      held.fd = _DBUS_POINTER_TO_INT (_dbus_list_pop_first (&afbus_server->held));
      _dbus_close_socket (held, NULL);
    }

  if (afbus_server->watch)
    {
      _dbus_server_remove_watch (server, afbus_server->watch);
      _dbus_watch_invalidate (afbus_server->watch);
      _dbus_watch_unref (afbus_server->watch);
      afbus_server->watch = NULL;
    }

  if (_dbus_socket_is_valid (afbus_server->fd))
    {
      _dbus_close_socket (afbus_server->fd, NULL);
      _dbus_socket_invalidate (&afbus_server->fd);
    }

  if (afbus_server->path != NULL && !afbus_server->abstract)
    remove_own_socket (afbus_server->path, afbus_server->dev,
                       afbus_server->ino);

  if (afbus_server->file != NULL && afbus_server->path != NULL)
    remove_own_file (afbus_server->file, afbus_server->path);

  if (server->published_address)
    _dbus_daemon_unpublish_session_bus_address ();
}

static const DBusServerVTable afbus_vtable = {
  afbus_finalize,
  afbus_disconnect
};

/* Binds and listens on @path (an abstract name if @abstract); a stale
 * socket inode at a path goes first. */
static DBusSocket
listen_afbus (const char  *path,
              dbus_bool_t  abstract,
              DBusError   *error)
{
  DBusSocket fd = DBUS_SOCKET_INIT;
  struct sockaddr_bus sa;
  struct stat st;
  socklen_t len;
  int saved_errno;

  if (!_dbus_afbus_sockaddr_for_path (path, abstract, &sa, &len, error))
    return fd;

  fd.fd = socket (AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  BUS_PROTO_DBUS);
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

  if (!abstract && lstat (path, &st) == 0 && S_ISSOCK (st.st_mode))
    {
      if (_dbus_afbus_bus_is_live (path, FALSE))
        {
          dbus_set_error (error, DBUS_ERROR_ADDRESS_IN_USE,
                          "A live AF_BUS bus is at \"%s\"", path);
          _dbus_close_socket (fd, NULL);
          _dbus_socket_invalidate (&fd);
          return fd;
        }
      unlink (path);
    }

  if (bind (fd.fd, (struct sockaddr *) &sa, len) < 0 ||
      (!abstract && chmod (path, 0777) < 0) ||
      listen (fd.fd, SOMAXCONN) < 0)
    {
      saved_errno = errno;
      dbus_set_error (error, _dbus_error_from_errno (saved_errno),
                      "Failed to bind AF_BUS bus \"%s%s\": %s",
                      abstract ? "@" : "", path,
                      _dbus_strerror (saved_errno));
      _dbus_close_socket (fd, NULL);
      _dbus_socket_invalidate (&fd);
      return fd;
    }

  /* Signals (multicasts) skip a client whose queue is full, and it
   * misses them, as dbus-daemon drops signals for a connection past its
   * outgoing limit: one subscriber that stops reading must not stop
   * every sender of signals it matches.  Method calls and replies
   * (unicasts) still wait for room.  An older kernel without the option
   * keeps all-or-none multicasts. */
  {
    int one = 1;

    if (setsockopt (fd.fd, SOL_BUS, BUS_SET_MCAST_DROP, &one,
                    sizeof (one)) < 0)
      _dbus_verbose ("AF_BUS: multicasts wait for full queues: %s\n",
                     _dbus_strerror (errno));
  }

  return fd;
}

/*
 * A fresh path for a bus: DIR/dbus-afbus-XXXXXXXXXX, where DIR is @dir,
 * else the directory of @file, else $XDG_RUNTIME_DIR, else the session
 * socket directory.
 */
static dbus_bool_t
fresh_bus_path (DBusString *path,
                const char *dir,
                const char *file,
                DBusError  *error)
{
  DBusString dir_str, filename;
  dbus_bool_t ok;

  if (!_dbus_string_init (&filename))
    {
      _DBUS_SET_OOM (error);
      return FALSE;
    }

  if (dir == NULL && file != NULL)
    {
      const char *slash = strrchr (file, '/');

      if (slash == NULL)
        ok = _dbus_string_append (path, ".");
      else
        ok = _dbus_string_append_len (path, file,
                                      slash == file ? 1 : slash - file);
    }
  else
    {
      if (dir == NULL)
        dir = _dbus_getenv ("XDG_RUNTIME_DIR");
      if (dir == NULL)
        dir = DBUS_SESSION_SOCKET_DIR;
      _dbus_string_init_const (&dir_str, dir);
      ok = _dbus_string_copy (&dir_str, 0, path, 0);
    }
  ok = ok && _dbus_string_append (&filename, "dbus-afbus-");
  if (ok)
    ok = _dbus_generate_random_ascii (&filename, 10, error);
  if (ok)
    ok = _dbus_concat_dir_and_file (path, &filename);

  if (!ok && !dbus_error_is_set (error))
    _DBUS_SET_OOM (error);

  _dbus_string_free (&filename);
  return ok;
}

static DBusServer *
server_new_for_afbus (DBusSocket   fd,
                      const char  *path,
                      dbus_bool_t  abstract,
                      const char  *file,
                      DBusError   *error)
{
  DBusServerAfbus *afbus_server;
  DBusString address, path_str;

  if (!_dbus_string_init (&address))
    {
      _DBUS_SET_OOM (error);
      return NULL;
    }

  _dbus_string_init_const (&path_str, path);
  afbus_server = dbus_new0 (DBusServerAfbus, 1);
  if (afbus_server == NULL ||
      !_dbus_string_append (&address, abstract ? "afbus:abstract=" :
                            "afbus:path=") ||
      !_dbus_address_append_escaped (&address, &path_str))
    goto oom;

  afbus_server->abstract = abstract;
  afbus_server->path = _dbus_strdup (path);
  if (afbus_server->path == NULL)
    goto oom;
  if (file != NULL && (afbus_server->file = _dbus_strdup (file)) == NULL)
    goto oom;

  afbus_server->watch = _dbus_watch_new (_dbus_socket_get_pollable (fd),
                                         DBUS_WATCH_READABLE, TRUE,
                                         afbus_handle_watch, afbus_server,
                                         NULL);
  if (afbus_server->watch == NULL)
    goto oom;

  afbus_server->held_timeout = _dbus_timeout_new (0, hand_on_held,
                                                  afbus_server, NULL);
  if (afbus_server->held_timeout == NULL)
    goto oom;
  _dbus_timeout_disable (afbus_server->held_timeout);

  if (!_dbus_server_init_base (&afbus_server->base, &afbus_vtable,
                               &address, error))
    goto failed;

  afbus_server->fd = fd;

  SERVER_LOCK (&afbus_server->base);
  if (!_dbus_server_add_watch (&afbus_server->base, afbus_server->watch) ||
      !_dbus_server_add_timeout (&afbus_server->base,
                                 afbus_server->held_timeout))
    {
      /* The caller closes the fd and removes the files on failure. */
      _dbus_socket_invalidate (&afbus_server->fd);
      dbus_free (afbus_server->path);
      afbus_server->path = NULL;
      dbus_free (afbus_server->file);
      afbus_server->file = NULL;
      _dbus_server_remove_watch (&afbus_server->base, afbus_server->watch);
      _dbus_watch_invalidate (afbus_server->watch);
      _dbus_watch_unref (afbus_server->watch);
      afbus_server->watch = NULL;
      _dbus_timeout_unref (afbus_server->held_timeout);
      afbus_server->held_timeout = NULL;
      _dbus_server_disconnect_unlocked (&afbus_server->base);
      SERVER_UNLOCK (&afbus_server->base);
      _dbus_server_finalize_base (&afbus_server->base);
      dbus_free (afbus_server);
      _dbus_string_free (&address);
      _DBUS_SET_OOM (error);
      return NULL;
    }
  SERVER_UNLOCK (&afbus_server->base);

  _dbus_string_free (&address);
  return (DBusServer *) afbus_server;

 oom:
  _DBUS_SET_OOM (error);
 failed:
  if (afbus_server != NULL)
    {
      if (afbus_server->watch != NULL)
        {
          _dbus_watch_invalidate (afbus_server->watch);
          _dbus_watch_unref (afbus_server->watch);
        }
      if (afbus_server->held_timeout != NULL)
        _dbus_timeout_unref (afbus_server->held_timeout);
      dbus_free (afbus_server->path);
      dbus_free (afbus_server->file);
      dbus_free (afbus_server);
    }
  _dbus_string_free (&address);
  return NULL;
}

/**
 * Tries to interpret the address entry as an AF_BUS address to listen
 * on (afbus:, afbus:path=PATH, afbus:abstract=NAME, afbus:dir=DIR,
 * afbus:tmpdir=DIR, afbus:file=FILE or afbus:runtime=yes; see
 * _dbus_afbus_address_location()).
 *
 * @param entry the address entry
 * @param server_p location to store a new DBusServer, or #NULL on failure.
 * @param error location to store rationale for failure on bad address
 * @returns the outcome
 */
DBusServerListenResult
_dbus_server_listen_afbus (DBusAddressEntry *entry,
                           DBusServer      **server_p,
                           DBusError        *error)
{
  const char *method = dbus_address_entry_get_method (entry);
  const char *file;
  DBusAfbusLocation location;
  DBusString path_str, contents, file_str;
  DBusSocket fd;
  struct stat st;
  dbus_bool_t abstract, wrote_file = FALSE;
  DBusServerListenResult result = DBUS_SERVER_LISTEN_DID_NOT_CONNECT;

  *server_p = NULL;

  if (strcmp (method, "afbus") != 0)
    {
      _DBUS_ASSERT_ERROR_IS_CLEAR (error);
      return DBUS_SERVER_LISTEN_NOT_HANDLED;
    }

  if (!_dbus_afbus_address_location (entry, TRUE, &location, error))
    return dbus_error_has_name (error, DBUS_ERROR_BAD_ADDRESS) ?
      DBUS_SERVER_LISTEN_BAD_ADDRESS : DBUS_SERVER_LISTEN_DID_NOT_CONNECT;
  file = _dbus_string_get_length (&location.file) > 0 ?
    _dbus_string_get_const_data (&location.file) : NULL;
  abstract = location.abstract;

  if (!_dbus_string_init (&path_str))
    {
      _dbus_afbus_location_free (&location);
      _DBUS_SET_OOM (error);
      return DBUS_SERVER_LISTEN_DID_NOT_CONNECT;
    }

  if (location.name != NULL)
    {
      if (!_dbus_string_append (&path_str, location.name))
        {
          _DBUS_SET_OOM (error);
          goto failed;
        }
    }
  else if (!fresh_bus_path (&path_str, location.dir, file, error))
    goto failed;

  /* (AddressInUse comes as DID_NOT_CONNECT, with our words: the
   * ADDRESS_ALREADY_USED result takes no error) */
  if (file != NULL && !check_file_free (file, error))
    goto failed;

  fd = listen_afbus (_dbus_string_get_const_data (&path_str), abstract,
                     error);
  if (!_dbus_socket_is_valid (fd))
    {
      result =
        dbus_error_has_name (error, DBUS_ERROR_BAD_ADDRESS) ?
        DBUS_SERVER_LISTEN_BAD_ADDRESS :
        DBUS_SERVER_LISTEN_DID_NOT_CONNECT;
      goto failed;
    }

  if (file != NULL)
    {
      if (!_dbus_string_init (&contents))
        {
          _DBUS_SET_OOM (error);
          goto failed_fd;
        }

      _dbus_string_init_const (&file_str, file);
      if (!_dbus_string_copy (&path_str, 0, &contents, 0) ||
          !_dbus_string_append_byte (&contents, '\n'))
        {
          _dbus_string_free (&contents);
          _DBUS_SET_OOM (error);
          goto failed_fd;
        }

      if (!_dbus_string_save_to_file (&contents, &file_str, TRUE, error))
        {
          _dbus_string_free (&contents);
          goto failed_fd;
        }

      _dbus_string_free (&contents);
      wrote_file = TRUE;
    }

  *server_p = server_new_for_afbus (fd, _dbus_string_get_const_data (&path_str),
                                    abstract, file, error);
  if (*server_p == NULL)
    goto failed_fd;
  if (!abstract &&
      lstat (_dbus_string_get_const_data (&path_str), &st) == 0)
    {
      ((DBusServerAfbus *) *server_p)->dev = st.st_dev;
      ((DBusServerAfbus *) *server_p)->ino = st.st_ino;
    }

  _dbus_string_free (&path_str);
  _dbus_afbus_location_free (&location);
  return DBUS_SERVER_LISTEN_OK;

 failed_fd:
  /* (the socket we just bound) */
  if (!abstract)
    unlink (_dbus_string_get_const_data (&path_str));
  _dbus_close_socket (fd, NULL);
  if (wrote_file)
    remove_own_file (file, _dbus_string_get_const_data (&path_str));
 failed:
  _dbus_string_free (&path_str);
  _dbus_afbus_location_free (&location);
  return result;
}

/* BUS_SET_RCVBUF: the receive buffer of the connections made from now
 * on, @p bytes. */
static dbus_bool_t
set_rcvbuf (DBusServerAfbus *afbus_server,
            int              bytes,
            DBusError       *error)
{
  if (setsockopt (afbus_server->fd.fd, SOL_BUS, BUS_SET_RCVBUF, &bytes,
                  sizeof (bytes)) == 0)
    return TRUE;

  dbus_set_error (error, _dbus_error_from_errno (errno),
                  "Failed to set the receive buffer of AF_BUS bus \"%s%s\" to %d bytes: %s",
                  afbus_server->abstract ? "@" : "", afbus_server->path,
                  bytes, _dbus_strerror (errno));
  return FALSE;
}

/* The most the daemon lets the kernel hold unread for one connection
 * of an AF_BUS bus: not all of max_outgoing_bytes (127 MB on the system
 * bus), which would soon exhaust the budgets of the bus and of the
 * recipient's user that queued bytes are charged to, beside the
 * recipient's memory cgroup (af_bus.rst, "Memory"). */
#define AFBUS_MAX_RCVBUF (8 * 1024 * 1024)

/* Where the kernel says how large a message a bus master without
 * CAP_NET_ADMIN may allow. */
#define AFBUS_MSG_MAX_SYSCTL "/proc/sys/net/bus/msg_max"

/* net.bus.msg_max, or -1 if it cannot be read */
static long
read_msg_max_sysctl (void)
{
  long value = -1;
  FILE *f = fopen (AFBUS_MSG_MAX_SYSCTL, "re");

  if (f == NULL)
    return -1;
  if (fscanf (f, "%ld", &value) != 1)
    value = -1;
  fclose (f);
  return value;
}

/* BUS_SET_MSG_MAX to @p bytes; past net.bus.msg_max, which a daemon
 * without CAP_NET_ADMIN may not go, to that, with @p error saying so. */
static dbus_bool_t
set_msg_max (DBusServerAfbus *afbus_server,
             int              bytes,
             DBusError       *error)
{
  long allowed;
  int saved_errno;

  if (setsockopt (afbus_server->fd.fd, SOL_BUS, BUS_SET_MSG_MAX, &bytes,
                  sizeof (bytes)) == 0)
    return TRUE;

  saved_errno = errno;
  allowed = read_msg_max_sysctl ();
  if (saved_errno == EPERM && allowed > 0 && allowed < bytes)
    {
      int value = (int) allowed;

      if (setsockopt (afbus_server->fd.fd, SOL_BUS, BUS_SET_MSG_MAX,
                      &value, sizeof (value)) == 0)
        {
          dbus_set_error (error, DBUS_ERROR_LIMITS_EXCEEDED,
                          "max_message_size %d is above the kernel's net.bus.msg_max: "
                          "messages between AF_BUS clients of bus \"%s%s\" "
                          "are limited to %d bytes (raise the sysctl, or give the "
                          "daemon CAP_NET_ADMIN)",
                          bytes, afbus_server->abstract ? "@" : "",
                          afbus_server->path, value);
          return FALSE;
        }
      saved_errno = errno;
    }

  dbus_set_error (error, _dbus_error_from_errno (saved_errno),
                  "Failed to set the largest message of AF_BUS bus \"%s%s\" to %d bytes: %s",
                  afbus_server->abstract ? "@" : "", afbus_server->path,
                  bytes, _dbus_strerror (saved_errno));
  return FALSE;
}

/**
 * Sets the limits of an AF_BUS server's bus, on its listening socket:
 *
 * - BUS_SET_MSG_MAX, so that every client, and the server's side of it,
 *   can send messages of @p max_message_size bytes, and no larger; a
 *   daemon without CAP_NET_ADMIN may allow at most net.bus.msg_max
 *   (128 MiB by default), and allows that much, with a warning, when
 *   @p max_message_size is larger;
 * - BUS_SET_RCVBUF, so that the kernel holds for a client that reads
 *   more slowly than its messages come as much as dbus-daemon would
 *   queue for it (@p max_queued_bytes, the configuration's
 *   max_outgoing_bytes), at most AFBUS_MAX_RCVBUF: queued messages are
 *   charged to their recipient's receive buffer, and a default one holds
 *   a few hundred small messages.  Without CAP_NET_ADMIN the kernel caps
 *   it at net.core.rmem_max, and a slow subscriber misses signals
 *   sooner.
 *
 * Both are tried; @p error is the first failure.
 *
 * Does nothing on servers of other transports.
 *
 * @param server the server
 * @param max_message_size the largest message size
 * @param max_queued_bytes what may wait for one connection to read
 * @param error set if the kernel refuses either
 * @returns #FALSE on error
 */
dbus_bool_t
_dbus_server_afbus_set_limits (DBusServer *server,
                               long        max_message_size,
                               long        max_queued_bytes,
                               DBusError  *error)
{
  DBusServerAfbus *afbus_server = (DBusServerAfbus *) server;
  dbus_bool_t ok;

  if (server->vtable != &afbus_vtable)
    return TRUE;

  /* No D-Bus message is larger. */
  if (max_message_size > DBUS_MAXIMUM_MESSAGE_LENGTH)
    max_message_size = DBUS_MAXIMUM_MESSAGE_LENGTH;
  /* the kernel doubles the receive buffer, as for SO_RCVBUF, for its
   * overhead per message */
  if (max_queued_bytes > AFBUS_MAX_RCVBUF)
    max_queued_bytes = AFBUS_MAX_RCVBUF;

  /* (only the first failure sets @p error) */
  ok = set_msg_max (afbus_server,
                    max_message_size > 0 ? (int) max_message_size : 1,
                    error);
  return set_rcvbuf (afbus_server,
                     max_queued_bytes > 0 ? (int) max_queued_bytes : 1,
                     ok ? error : NULL) && ok;
}

/**
 * Tells whether @p server listens on an AF_BUS bus.
 *
 * @param server a server
 * @returns #TRUE for an AF_BUS server
 */
dbus_bool_t
_dbus_server_is_afbus (DBusServer *server)
{
  return server->vtable == &afbus_vtable;
}

/**
 * The listening socket of an AF_BUS server (its bus master socket), or
 * -1 for another server or one that is disconnected.
 *
 * @param server the server
 * @returns the socket, or -1
 */
int
_dbus_server_afbus_get_fd (DBusServer *server)
{
  DBusServerAfbus *afbus_server = (DBusServerAfbus *) server;

  if (!_dbus_server_is_afbus (server) ||
      !_dbus_socket_is_valid (afbus_server->fd))
    return -1;
  return afbus_server->fd.fd;
}

/**
 * Connects a client socket of the server's own process to its bus and
 * accepts it: the pair the daemon opens for each legacy client (C1, A1
 * in af_bus.txt).  Other clients' connections queued before ours on
 * the listening socket are accepted too, and handed to the server's
 * new-connection function from the main loop once the caller is done
 * (hand_on_held()), as the listening socket's watch would have; ours is
 * told from them by its address.  Both sockets are
 * nonblocking.
 *
 * @param server an AF_BUS server
 * @param client_fd_p returns the client socket (C1)
 * @param accepted_fd_p returns the accepted socket (A1)
 * @param error set on failure
 * @returns #FALSE on error
 */
dbus_bool_t
_dbus_server_afbus_connect_self (DBusServer *server,
                                 DBusSocket *client_fd_p,
                                 DBusSocket *accepted_fd_p,
                                 DBusError  *error)
{
  DBusServerAfbus *afbus_server = (DBusServerAfbus *) server;
  struct sockaddr_bus sa;
  socklen_t len;
  DBusSocket client_fd = DBUS_SOCKET_INIT;
  dbus_uint64_t own;
  int saved_errno;

  if (server->vtable != &afbus_vtable || afbus_server->path == NULL)
    {
      dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED,
                      "Not an AF_BUS server");
      return FALSE;
    }

  if (!_dbus_afbus_sockaddr_for_path (afbus_server->path,
                                      afbus_server->abstract, &sa, &len,
                                      error))
    return FALSE;

  client_fd.fd = socket (AF_BUS, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
                         BUS_PROTO_DBUS);
  if (client_fd.fd < 0)
    goto failed_errno;

  /* Nonblocking: a full backlog fails at once (EAGAIN). */
  while (connect (client_fd.fd, (struct sockaddr *) &sa, len) < 0)
    if (errno != EINTR)
      goto failed_errno;

  len = sizeof (sa);
  if (getsockname (client_fd.fd, (struct sockaddr *) &sa, &len) < 0)
    goto failed_errno;
  own = sa.sbus_addr.s_addr;

  for (;;)
    {
      DBusSocket fd;
      struct sockaddr_bus peer;
      socklen_t peer_len = sizeof (peer);

      SERVER_LOCK (server);
      if (!_dbus_socket_is_valid (afbus_server->fd))
        {
          SERVER_UNLOCK (server);
          errno = ECONNREFUSED;
          goto failed_errno;
        }

      fd.fd = accept4 (afbus_server->fd.fd, (struct sockaddr *) &peer,
                       &peer_len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd.fd < 0)
        {
          saved_errno = errno;
          SERVER_UNLOCK (server);
          if (saved_errno == EINTR)
            continue;
          /* EAGAIN cannot be: our connection is queued. */
          errno = saved_errno;
          goto failed_errno;
        }

      if (peer.sbus_addr.s_addr == own)
        {
          SERVER_UNLOCK (server);
          *client_fd_p = client_fd;
          *accepted_fd_p = fd;
          return TRUE;
        }

      /* Somebody else's: handed on once our caller is done (it may be
       * in the middle of a legacy client's Hello, and must not see the
       * bus's connections change under it). */
      if (_dbus_list_append (&afbus_server->held, _DBUS_INT_TO_POINTER (fd.fd)))
        _dbus_server_toggle_timeout (server, afbus_server->held_timeout,
                                     TRUE);
      else
        {
          _dbus_verbose ("Rejected client connection due to lack of memory\n");
          _dbus_close_socket (fd, NULL);
        }
      SERVER_UNLOCK (server);
    }

 failed_errno:
  saved_errno = errno;
  dbus_set_error (error,
                  saved_errno == EAGAIN ? DBUS_ERROR_LIMITS_EXCEEDED :
                  _dbus_error_from_errno (saved_errno),
                  "Cannot connect to AF_BUS bus \"%s%s\" for a legacy client: %s",
                  afbus_server->abstract ? "@" : "", afbus_server->path,
                  _dbus_strerror (saved_errno));
  if (_dbus_socket_is_valid (client_fd))
    _dbus_close_socket (client_fd, NULL);
  return FALSE;
}

/** @} */

#else /* !DBUS_HAVE_AFBUS */

dbus_bool_t
_dbus_server_is_afbus (DBusServer *server)
{
  return FALSE;
}

int
_dbus_server_afbus_get_fd (DBusServer *server)
{
  return -1;
}

dbus_bool_t
_dbus_server_afbus_connect_self (DBusServer *server,
                                 DBusSocket *client_fd_p,
                                 DBusSocket *accepted_fd_p,
                                 DBusError  *error)
{
  dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED, "no AF_BUS");
  return FALSE;
}

dbus_bool_t
_dbus_server_afbus_set_limits (DBusServer *server,
                               long        max_message_size,
                               long        max_queued_bytes,
                               DBusError  *error)
{
  return TRUE;
}


DBusServerListenResult
_dbus_server_listen_afbus (DBusAddressEntry *entry,
                           DBusServer      **server_p,
                           DBusError        *error)
{
  return DBUS_SERVER_LISTEN_NOT_HANDLED;
}

#endif /* DBUS_HAVE_AFBUS */
