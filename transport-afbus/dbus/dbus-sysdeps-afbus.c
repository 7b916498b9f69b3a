/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-sysdeps-afbus.c  AF_BUS sockets: addresses and unique names,
 *                       afbus: locations, receiving a datagram
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
#include "dbus-sysdeps-afbus.h"

#ifdef DBUS_HAVE_AFBUS

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "dbus-file.h"
#include "dbus-protocol.h"
#include "dbus-sysdeps-unix.h"

/**
 * @defgroup DBusAfbus AF_BUS addressing
 * @ingroup  DBusInternals
 * @brief Mapping between D-Bus names and AF_BUS addresses
 *
 * A client's kernel-given address 0000/0000deadbeef is the unique name
 * ":0.deadbeef" (lower-case hexadecimal, no leading zeroes).  dbus-daemon
 * gives other unique names to clients of other transports, never in
 * ":0.", so the two cannot collide.  Well-known names get addresses in
 * prefix 0001 from the daemon, which tells clients about them with the
 * org.freedesktop.DBus.AF_BUS.Forwarded signal; clients remember the
 * last #DBUS_AFBUS_NAME_CACHE_SIZE of them (dbus-afbus.c).
 *
 * @{
 */

/**
 * Appends the unique name of the AF_BUS client address @p addr to
 * @p name.
 *
 * @param addr a prefix-0 address other than the master's
 * @param name the string to append to
 * @returns #FALSE if no memory
 */
dbus_bool_t
_dbus_afbus_unique_name_from_addr (dbus_uint64_t  addr,
                                   DBusString    *name)
{
  char buf[32];

  _dbus_assert ((addr & BUS_PREFIX_MASK) == 0);
  _dbus_assert (addr != DBUS_AFBUS_MASTER);

  snprintf (buf, sizeof (buf), ":0.%" PRIx64, addr);
  return _dbus_string_append (name, buf);
}

/**
 * Parses a unique name of the form ":0.HEX" into the address of its
 * AF_BUS client.  Names in any other form (other transports' clients,
 * leading zeroes, upper case) are not AF_BUS addresses.
 *
 * @param name a bus name
 * @param addr returns the address
 * @returns #TRUE if @p name is the unique name of an AF_BUS client
 */
dbus_bool_t
_dbus_afbus_addr_from_unique_name (const char    *name,
                                   dbus_uint64_t *addr)
{
  dbus_uint64_t value = 0;
  const char *p;

  if (strncmp (name, ":0.", 3) != 0)
    return FALSE;

  p = name + 3;
  if (*p == '\0' || *p == '0' || strlen (p) > 12)
    return FALSE;

  for (; *p != '\0'; p++)
    {
      int digit;

      if (*p >= '0' && *p <= '9')
        digit = *p - '0';
      else if (*p >= 'a' && *p <= 'f')
        digit = *p - 'a' + 10;
      else
        return FALSE;

      value = (value << 4) | (dbus_uint64_t) digit;
    }

  if (value == BUS_CLIENT_MASK)
    return FALSE;

  *addr = value;
  return TRUE;
}

/**
 * Fills in the address { AF_BUS, 0, path } of a bus: a filesystem path,
 * NUL-terminated, or an abstract name, which is "\0" and the name
 * (without a terminating NUL), as for AF_UNIX.
 *
 * @param path the filesystem path or the abstract name of the bus
 * @param abstract #TRUE if @p path is an abstract name
 * @param sa the address to fill in
 * @param len returns its length
 * @param error set to DBUS_ERROR_BAD_ADDRESS if the path does not fit
 * @returns #FALSE on error
 */
dbus_bool_t
_dbus_afbus_sockaddr_for_path (const char          *path,
                               dbus_bool_t          abstract,
                               struct sockaddr_bus *sa,
                               socklen_t           *len,
                               DBusError           *error)
{
  size_t path_len = strlen (path);

  if (path_len == 0 || path_len >= BUS_PATH_MAX)
    {
      dbus_set_error (error, DBUS_ERROR_BAD_ADDRESS,
                      "AF_BUS %s \"%s\" must have 1 to %d bytes",
                      abstract ? "abstract name" : "path",
                      path, BUS_PATH_MAX - 1);
      return FALSE;
    }

  memset (sa, 0, sizeof (*sa));
  sa->sbus_family = AF_BUS;
  sa->sbus_addr.s_addr = 0;
  if (abstract)
    {
      memcpy (sa->sbus_path + 1, path, path_len);
      *len = DBUS_AFBUS_SOCKADDR_NO_PATH + 1 + path_len;
    }
  else
    {
      memcpy (sa->sbus_path, path, path_len + 1);
      *len = DBUS_AFBUS_SOCKADDR_NO_PATH + path_len + 1;
    }
  return TRUE;
}

/**
 * Whether a master listens on the bus at @p path (an abstract name if
 * @p abstract): a connect() that a master takes, or would take but for
 * its full backlog.  (The master accepts the connection and sees it
 * close before it authenticated, as for any client that gives up.)
 *
 * @returns #TRUE if the bus is live
 */
dbus_bool_t
_dbus_afbus_bus_is_live (const char  *path,
                         dbus_bool_t  abstract)
{
  struct sockaddr_bus sa;
  socklen_t len;
  int fd, ret, saved_errno;

  if (!_dbus_afbus_sockaddr_for_path (path, abstract, &sa, &len, NULL))
    return FALSE;

  fd = socket (AF_BUS, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
               BUS_PROTO_DBUS);
  if (fd < 0)
    return FALSE;

  do
    ret = connect (fd, (struct sockaddr *) &sa, len);
  while (ret < 0 && errno == EINTR);
  saved_errno = errno;
  close (fd);

  return ret == 0 || saved_errno == EAGAIN || saved_errno == EINPROGRESS;
}

/**
 * Reads the path of a bus from the file the daemon wrote it to
 * (afbus:file=...): the path, optionally followed by a newline.
 *
 * @param file the file
 * @param path initialized string that receives the path
 * @param error set on failure
 * @returns #FALSE on error
 */
dbus_bool_t
_dbus_afbus_read_path_file (const char *file,
                            DBusString *path,
                            DBusError  *error)
{
  DBusString filename;
  int len;

  _dbus_string_init_const (&filename, file);
  if (!_dbus_file_get_contents (path, &filename, error))
    return FALSE;

  len = _dbus_string_get_length (path);
  if (len > 0 && _dbus_string_get_byte (path, len - 1) == '\n')
    _dbus_string_set_length (path, len - 1);

  if (_dbus_string_get_length (path) == 0 ||
      _dbus_string_find (path, 0, "\n", NULL) ||
      strlen (_dbus_string_get_const_data (path)) !=
      (size_t) _dbus_string_get_length (path))
    {
      dbus_set_error (error, DBUS_ERROR_BAD_ADDRESS,
                      "\"%s\" does not hold the path of an AF_BUS bus", file);
      return FALSE;
    }

  return TRUE;
}

/**
 * Reads the keys of an "afbus:" address that say where the bus is, as
 * for unix: addresses:
 * - path=PATH: the bus's filesystem path;
 * - abstract=NAME: its abstract name;
 * - file=FILE: a file holding the bus's path, which the daemon writes;
 * - runtime=yes: file=$XDG_RUNTIME_DIR/bus.afbus, the AF_BUS twin of
 *   unix:runtime=yes, whose socket is $XDG_RUNTIME_DIR/bus;
 * - dir=DIR, and tmpdir=DIR its synonym as for unix: since 1.14 (only
 *   in an address to listen on): a fresh bus in DIR.
 * At most one of them may be given.  A server given none makes a fresh
 * bus; a client must be given one of path, abstract, file and runtime.
 *
 * @param entry the address entry
 * @param listening #TRUE for an address to listen on
 * @param location set to what the address says; its file is
 *   initialized here, and freed with _dbus_afbus_location_free() if
 *   this returns #TRUE
 * @param error set on failure: #DBUS_ERROR_BAD_ADDRESS for a wrong
 *   address, #DBUS_ERROR_NOT_SUPPORTED for runtime=yes without
 *   $XDG_RUNTIME_DIR
 * @returns #FALSE on error
 */
dbus_bool_t
_dbus_afbus_address_location (DBusAddressEntry  *entry,
                              dbus_bool_t        listening,
                              DBusAfbusLocation *location,
                              DBusError         *error)
{
  const char *path = dbus_address_entry_get_value (entry, "path");
  const char *abstract = dbus_address_entry_get_value (entry, "abstract");
  const char *file = dbus_address_entry_get_value (entry, "file");
  const char *runtime = dbus_address_entry_get_value (entry, "runtime");
  const char *tmpdir = dbus_address_entry_get_value (entry, "tmpdir");
  const char *dir_key, *runtime_dir;

  location->name = abstract != NULL ? abstract : path;
  location->abstract = abstract != NULL;
  location->dir = dbus_address_entry_get_value (entry, "dir");

  if ((path != NULL) + (abstract != NULL) + (file != NULL) + (runtime != NULL) + (location->dir != NULL) +
      (tmpdir != NULL) > 1)
    {
      _dbus_set_bad_address (error, NULL, NULL,
                             "cannot specify two of \"path\", \"abstract\", \"file\", \"runtime\", \"dir\" and \"tmpdir\" in an afbus: address");
      return FALSE;
    }

  dir_key = location->dir != NULL ? "dir" : tmpdir != NULL ? "tmpdir" : NULL;
  if (dir_key != NULL && !listening)
    {
      dbus_set_error (error, DBUS_ERROR_BAD_ADDRESS,
                      "cannot use the \"%s\" key in an afbus: address to connect to, only in an address to listen on",
                      dir_key);
      return FALSE;
    }
  if (tmpdir != NULL)
    location->dir = tmpdir;

  if (!listening && location->name == NULL && file == NULL && runtime == NULL)
    {
      _dbus_set_bad_address (error, "afbus",
                             "path or abstract or file or runtime", NULL);
      return FALSE;
    }

  if (runtime != NULL && strcmp (runtime, "yes") != 0)
    {
      _dbus_set_bad_address (error, NULL, NULL,
                             "if given, the only value allowed for \"runtime\" in an afbus: address is \"yes\"");
      return FALSE;
    }

  runtime_dir = runtime != NULL ? _dbus_getenv ("XDG_RUNTIME_DIR") : NULL;
  if (runtime != NULL && runtime_dir == NULL)
    {
      dbus_set_error (error, DBUS_ERROR_NOT_SUPPORTED,
                      "afbus:runtime=yes needs \"XDG_RUNTIME_DIR\", which is not set");
      return FALSE;
    }

  if (!_dbus_string_init (&location->file))
    {
      _DBUS_SET_OOM (error);
      return FALSE;
    }

  if ((file != NULL && !_dbus_string_append (&location->file, file)) ||
      (runtime_dir != NULL &&
       (!_dbus_string_append (&location->file, runtime_dir) ||
        !_dbus_string_append (&location->file, "/bus.afbus"))))
    {
      _dbus_string_free (&location->file);
      _DBUS_SET_OOM (error);
      return FALSE;
    }

  return TRUE;
}

/**
 * Frees what _dbus_afbus_address_location() allocated.
 *
 * @param location the location
 */
void
_dbus_afbus_location_free (DBusAfbusLocation *location)
{
  _dbus_string_free (&location->file);
}

/* Slot of DBusMessage holding a dbus_uint64_t: see below. */
static dbus_int32_t relay_addr_slot = -1;

static void
free_relay_addr_slot (void *data)
{
  dbus_message_free_data_slot (&relay_addr_slot);
}

/**
 * Attaches an AF_BUS address to a message, for the daemon's relay
 * connections of legacy clients (see _dbus_afbus_relay_pair_new()): on
 * a message the daemon queues on a legacy client's own AF_BUS socket it
 * is the address the message goes to; on a message that socket read
 * from a peer it is the address the kernel says it came from.  Messages
 * from the bus master have none.
 *
 * @param message the message
 * @param addr the address
 * @returns #FALSE if no memory
 */
dbus_bool_t
_dbus_afbus_message_set_addr (DBusMessage   *message,
                              dbus_uint64_t  addr)
{
  dbus_uint64_t *value;

  /* Allocated once, at the first use, and given back by dbus_shutdown()
   * (which the daemon calls on exit), as libdbus's own global data. */
  if (relay_addr_slot < 0)
    {
      if (!dbus_message_allocate_data_slot (&relay_addr_slot))
        return FALSE;
      if (!_dbus_register_shutdown_func (free_relay_addr_slot, NULL))
        {
          dbus_message_free_data_slot (&relay_addr_slot);
          return FALSE;
        }
    }

  value = dbus_new (dbus_uint64_t, 1);
  if (value == NULL)
    return FALSE;
  *value = addr;

  if (!dbus_message_set_data (message, relay_addr_slot, value, dbus_free))
    {
      dbus_free (value);
      return FALSE;
    }

  return TRUE;
}

/**
 * Gets the address _dbus_afbus_message_set_addr() attached.
 *
 * @param message the message
 * @param addr returns the address
 * @returns #FALSE if the message has none
 */
dbus_bool_t
_dbus_afbus_message_get_addr (DBusMessage   *message,
                              dbus_uint64_t *addr)
{
  dbus_uint64_t *value;

  if (relay_addr_slot < 0)
    return FALSE;

  value = dbus_message_get_data (message, relay_addr_slot);
  if (value == NULL)
    return FALSE;

  *addr = *value;
  return TRUE;
}

/**
 * Receives the next datagram of the AF_BUS socket @p fd, which a peek
 * (MSG_PEEK | MSG_TRUNC) said is @p len bytes long, appending it to
 * @p buffer.  Unix fds that come with it go to @p fds, at most *@p n_fds
 * of them (*@p n_fds then says how many came; the others are closed);
 * the sender's address goes to *@p source.  There is room for an
 * SO_RXQ_OVFL count too, which the caller peeks at if it wants it.
 * When the datagram came whole but its fds did not fit (more than
 * *@p n_fds, or any with @p fds NULL), and @p fds_lost is not NULL,
 * its fds are closed, the message is appended without them and
 * *@p fds_lost is set, so that the caller can tell its sender.
 *
 * @returns @p len, or -1 with errno set (and no fds): ENOMEM (nothing
 *  was read), EPROTO (the datagram was not @p len bytes long, or its
 *  fds did not fit and @p fds_lost is NULL: it is lost, fds and all,
 *  and nothing is appended), or recvmsg()'s error
 */
int
_dbus_afbus_recv_datagram (int            fd,
                           int            len,
                           DBusString    *buffer,
                           int           *fds,
                           unsigned int  *n_fds,
                           dbus_uint64_t *source,
                           dbus_bool_t   *fds_lost)
{
  struct sockaddr_bus sa;
  struct msghdr msg;
  struct iovec iov;
  union {
    struct cmsghdr hdr;
    char buf[CMSG_SPACE (sizeof (dbus_uint32_t)) +
             CMSG_SPACE (sizeof (int) * DBUS_DEFAULT_MESSAGE_UNIX_FDS)];
  } cmsgbuf;
  struct cmsghdr *cm;
  unsigned int max_fds = (n_fds != NULL) ? *n_fds : 0;
  unsigned int got_fds = 0;
  int start, bytes;

  if (n_fds != NULL)
    *n_fds = 0;
  if (fds_lost != NULL)
    *fds_lost = FALSE;
  if (max_fds > DBUS_DEFAULT_MESSAGE_UNIX_FDS)
    max_fds = DBUS_DEFAULT_MESSAGE_UNIX_FDS;

  start = _dbus_string_get_length (buffer);
  if (!_dbus_string_lengthen (buffer, len))
    {
      errno = ENOMEM;
      return -1;
    }

  iov.iov_base = _dbus_string_get_data_len (buffer, start, len);
  iov.iov_len = len;
  _DBUS_ZERO (msg);
  _DBUS_ZERO (sa);
  _DBUS_ZERO (cmsgbuf);
  msg.msg_name = &sa;
  msg.msg_namelen = sizeof (sa);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cmsgbuf.buf;
  msg.msg_controllen = CMSG_SPACE (sizeof (dbus_uint32_t)) +
    CMSG_SPACE (sizeof (int) * max_fds);

  do
    bytes = recvmsg (fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  while (bytes < 0 && errno == EINTR);

  if (bytes < 0)
    {
      int saved_errno = errno;

      _dbus_string_set_length (buffer, start);
      errno = saved_errno;
      return -1;
    }

  for (cm = CMSG_FIRSTHDR (&msg); cm != NULL; cm = CMSG_NXTHDR (&msg, cm))
    {
      if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
        {
          unsigned int i, n = (cm->cmsg_len - CMSG_LEN (0)) / sizeof (int);
          int *cfds = (int *) (void *) CMSG_DATA (cm);

          for (i = 0; i < n; i++)
            {
              if (got_fds < max_fds)
                {
                  fds[got_fds++] = cfds[i];
                }
              else
                {
                  _dbus_close (cfds[i], NULL);
                  msg.msg_flags |= MSG_CTRUNC;  /* as if they had not fit */
                }
            }
        }
    }

  if (bytes == len && !(msg.msg_flags & MSG_TRUNC) &&
      (msg.msg_flags & MSG_CTRUNC) && fds_lost != NULL)
    {
      /* Only the fds did not fit: the message without them. */
      _dbus_verbose ("AF_BUS message of %d bytes with more fds than %u\n",
                     len, max_fds);
      while (got_fds > 0)
        _dbus_close (fds[--got_fds], NULL);
      *fds_lost = TRUE;
    }
  else if (bytes != len || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
    {
      /* Somebody else reads this socket, or the fds did not fit: the
       * message is lost either way, with its fds. */
      _dbus_verbose ("AF_BUS message of %d bytes read as %d (flags 0x%x)\n",
                     len, bytes, msg.msg_flags);
      while (got_fds > 0)
        _dbus_close (fds[--got_fds], NULL);
      _dbus_string_set_length (buffer, start);
      errno = EPROTO;
      return -1;
    }

  if (n_fds != NULL)
    *n_fds = got_fds;
  *source = sa.sbus_addr.s_addr;
  return bytes;
}

/** @} */

#endif /* DBUS_HAVE_AFBUS */
