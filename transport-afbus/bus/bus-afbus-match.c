/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-match.c  match rules of AF_BUS clients in the kernel (nfdbus)
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
#include "bus-afbus-match.h"
#include "bus-afbus.h"

#include <errno.h>
#include <string.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-list.h>
#include <dbus/dbus-server-afbus.h>

#include "bus-afbus-legacy.h"
#include "bus-afbus-names.h"
#include "utils.h"

/*
 * AF_BUS clients multicast their signals to each other through the
 * kernel (a signal without a destination goes to the multicast address
 * of prefix 0, which every client has an address in), so the daemon never
 * sees them and cannot apply match rules to them.  The kernel does,
 * through the nfdbus netfilter module (Documentation/networking/nfdbus.rst
 * in the kernel patches): for every AddMatch and RemoveMatch of an AF_BUS
 * client the daemon adds or removes the same rule, in its canonical
 * form, for the client's address over the nfdbus netlink family.
 *
 * - sender='<unique name>' is given with the unique name's address and
 *   sender='<well-known name>' with the name's AF_BUS address (allocated
 *   now if no AF_BUS client has owned it yet), so that the kernel
 *   matches on who sent a signal, not on what its SENDER field claims,
 *   and a rule on a well-known name follows the name from owner to owner
 *   with no update.
 * - Rules for signals of the daemon itself (sender='org.freedesktop.DBus')
 *   stay in the daemon: the daemon sends its signals to each recipient,
 *   never as a multicast, so the kernel would never use them.
 * - The kernel keeps at most NFDBUS_PEER_RULES_MAX (512) rules per
 *   client: beyond that, a native client's AddMatch fails with
 *   LimitsExceeded even if max_match_rules_per_connection allows more.
 *   A legacy client keeps the configuration's limit, as on dbus-daemon:
 *   past 512 rules the kernel gives its C1 every multicast, and the
 *   daemon matches them against its rules (match_in_daemon()).  A rule the kernel does
 *   not take fails AddMatch with MatchRuleInvalid; the daemon's own
 *   matchmaker then does not have it either.
 * - nfdbus filters the multicasts of a bus only once its master took
 *   charge of it; until then every client would get every signal.  So
 *   the daemon takes charge of a bus before it joins the first client,
 *   setting its flags (NFDBUS_CMD_SET_BUS) to NFDBUS_BUS_CHECK_SENDER
 *   and NFDBUS_BUS_POLICY (policy/bus-afbus-policy.c gives each client
 *   its policy before it joins):
 *   the kernel then also refuses (EPERM) any message a client sends to
 *   another client, or multicasts, whose SENDER is not the client's
 *   unique name, as the daemon names AF_BUS clients (":0.<hex address>"),
 *   so no client can pose as another or as the daemon.  The daemon does
 *   it once it listens (bus_afbus_check_kernel()); when that fails (no
 *   nfdbus in the kernel, or no permission) it logs one warning and
 *   does not listen on AF_BUS at all, rather than run a bus whose
 *   signals go to everybody and whose clients may pose as each other:
 *   its other addresses' clients are served as by dbus-daemon.
 * - With the same request the daemon has the kernel track replies
 *   (NFDBUS_BUS_REPLIES), as dbus-daemon does for the calls it forwards
 *   (bus_connections_expect_reply/check_reply): a method return or error
 *   from one client reaches another only as the answer to a call it
 *   awaits from that client, once; at most max_replies_per_connection
 *   calls awaited per client (the next direct call fails with EDQUOT,
 *   which the caller's libdbus turns into LimitsExceeded), for
 *   reply_timeout milliseconds (-1, never: 0 for the kernel).  The calls
 *   the daemon forwards register in the kernel by their SENDER; the
 *   daemon's own limit applies to them, not the kernel's.  Since the bus
 *   has NFDBUS_BUS_POLICY too, an unrequested reply is then refused or
 *   let through by the policies (send_requested_reply and
 *   receive_requested_reply, policy/bus-afbus-policy.c), as dbus-daemon
 *   decides.  A kernel without reply tracking refuses the flag (EINVAL):
 *   the daemon then does not listen on AF_BUS, as without nfdbus (its
 *   clients could send each other replies nobody asked for).  On
 *   ReloadConfig the buses take the new limits
 *   (bus_afbus_match_reload()).
 * - The daemon sends a monitor (BecomeMonitor) copies of method calls
 *   from the master's side with the caller's SENDER, which the kernel
 *   would take for calls the daemon forwards, the caller then awaiting a
 *   reply from the monitor (and soon hitting max_replies_per_connection).
 *   So before a monitor gets its first copy the daemon marks its address
 *   NFDBUS_PEER_MONITOR (NFDBUS_CMD_SET_PEER; the mark goes with the
 *   client): the master's calls to it then await nothing.  A legacy
 *   monitor is marked by its C1 address, where its copies go.  A kernel
 *   without the command (EOPNOTSUPP, or EINVAL) gets it once, and the
 *   daemon logs it and goes on.  Eavesdroppers (eavesdrop='true') are
 *   not marked: they are clients whose forwarded calls are awaited.
 *
 * The kernel forgets a client's rules when it leaves the bus, and all
 * of a bus's when its master closes it.
 */

#ifdef DBUS_HAVE_AFBUS

#include <linux/netfilter/nfdbus.h>
#include "libnfdbus.h"

/* The netlink socket, opened before the daemon drops its privileges.
 *
 * The kernel lets a netlink socket manage a bus by the credentials it
 * was opened with, not by the daemon's at the time of the request
 * (nfdbus.rst, "Who owns a bus"): the socket must be opened by the uid
 * that created the bus (or with CAP_NET_ADMIN).  The system bus listens
 * as root and then becomes messagebus (<user>); opened at the first
 * Hello, the socket would be messagebus's, and every request would fail
 * with EPERM.  So the daemon opens it when it takes charge of the bus
 * (bus_afbus_check_kernel(), once the servers listen, before it changes
 * user).  The socket is close-on-exec (libnfdbus): activated services
 * do not get it. */
struct BusAfbusMatch
{
  struct nfdbus *nfdbus;        /**< NULL until opened */
  DBusList *managed_buses;      /**< struct nfdbus_bus *: the buses whose
                                 *   multicasts nfdbus filters */
  /* Whether the kernel takes NFDBUS_CMD_SET_PEER: TRUE until it refused
   * it, known once it took it. */
  dbus_bool_t kernel_peer_flags;
  dbus_bool_t kernel_peer_flags_known;
};

BusAfbusMatch *
bus_afbus_match_new (void)
{
  BusAfbusMatch *match = dbus_new0 (BusAfbusMatch, 1);

  if (match != NULL)
    {
      match->kernel_peer_flags = TRUE;
    }
  return match;
}

void
bus_afbus_match_free (BusAfbusMatch *match)
{
  _dbus_list_clear_full (&match->managed_buses, dbus_free);
  if (match->nfdbus != NULL)
    nfdbus_close (match->nfdbus);
  dbus_free (match);
}

static BusAfbusMatch *
match_of (BusContext *context)
{
  return bus_context_get_afbus (context)->match;
}

/* Sets @error from the errno of an nfdbus request (and the kernel's
 * words for it); returns FALSE.  Also for policy/bus-afbus-policy.c. */
dbus_bool_t
bus_afbus_nfdbus_error (BusContext *context,
                        DBusError  *error,
                        int         err,
                        const char *what)
{
  struct nfdbus *nfdbus = match_of (context)->nfdbus;
  const char *detail = nfdbus != NULL ? nfdbus_error (nfdbus) : "";

  if (err == ENOMEM)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  dbus_set_error (error,
                  err == ENOSPC || err == E2BIG ? DBUS_ERROR_LIMITS_EXCEEDED :
                  err == EINVAL || err == EMSGSIZE ? DBUS_ERROR_MATCH_RULE_INVALID :
                  _dbus_error_from_errno (err),
                  "%s: %s%s%s", what, _dbus_strerror (err),
                  detail[0] != '\0' ? ": " : "", detail);
  return FALSE;
}

/* The bus of an AF_BUS socket (a client's accepted socket or the
 * master's listening one): the path as the master bound it, as
 * connect() takes it, and the socket itself, which the kernel asks
 * a request about the bus to name (NFDBUS_A_BUS_FD: only the master
 * manages its bus, whatever its uid). */
static dbus_bool_t
bus_of_socket (int                fd,
               struct nfdbus_bus *bus)
{
  struct sockaddr_bus sa;
  socklen_t len = sizeof (sa);

  if (fd < 0 ||
      getsockname (fd, (struct sockaddr *) &sa, &len) < 0 ||
      len <= DBUS_AFBUS_SOCKADDR_NO_PATH)
    return FALSE;

  memset (bus, 0, sizeof (*bus));
  bus->len = len - DBUS_AFBUS_SOCKADDR_NO_PATH;
  if (bus->len > sizeof (bus->path))
    bus->len = sizeof (bus->path);
  memcpy (bus->path, sa.sbus_path, bus->len);
  nfdbus_bus_set_master (bus, fd);
  return TRUE;
}

/* The bus of an AF_BUS connection and the client's address: FALSE if
 * the connection is not an AF_BUS one (or is gone).  The requests name
 * the daemon's listening socket, which lives as long as the daemon
 * (the policies keep a copy), when it is that bus's. */
dbus_bool_t
bus_afbus_connection_bus (DBusConnection    *connection,
                          struct nfdbus_bus *bus,
                          dbus_uint64_t     *peer)
{
  DBusServer *server;
  struct nfdbus_bus own;
  int fd;

  if (!bus_afbus_connection_fd (connection, &fd, peer) ||
      !bus_of_socket (fd, bus))
    return FALSE;
  server = bus_afbus_server (bus_connection_get_context (connection));
  if (server != NULL &&
      bus_of_socket (_dbus_server_afbus_get_fd (server), &own) &&
      own.len == bus->len && memcmp (own.path, bus->path, own.len) == 0)
    *bus = own;
  return TRUE;
}

/* The netlink socket to nfdbus, opened by bus_afbus_check_kernel() or
 * else on first use; NULL with @error set when nfdbus cannot be
 * reached.  Also for bus-afbus-policy.c. */
struct nfdbus *
bus_afbus_nfdbus (BusContext *context,
                  DBusError  *error)
{
  BusAfbusMatch *match = match_of (context);

  if (match->nfdbus == NULL)
    {
      /* libnfdbus allocates as the daemon does, so that upstream's
       * failure injection (_dbus_test_oom_handling) reaches it too */
      nfdbus_set_allocator (dbus_malloc0, dbus_free);
      match->nfdbus = nfdbus_open ();
    }
  if (match->nfdbus == NULL)
    bus_afbus_nfdbus_error (context, error, errno,
                            "Cannot reach the kernel's D-Bus match rules and policy (nfdbus)");
  return match->nfdbus;
}

static dbus_bool_t
bus_is_managed (BusAfbusMatch           *match,
                const struct nfdbus_bus *bus)
{
  DBusList *link;

  for (link = _dbus_list_get_first_link (&match->managed_buses); link != NULL;
       link = _dbus_list_get_next_link (&match->managed_buses, link))
    {
      const struct nfdbus_bus *b = link->data;

      if (b->len == bus->len && memcmp (b->path, bus->path, b->len) == 0)
        return TRUE;
    }
  return FALSE;
}

/* The daemon's limits as the kernel takes them. */
static dbus_uint32_t
kernel_max_replies (BusContext *context)
{
  int max = bus_context_get_max_replies_per_connection (context);

  /* dbus-daemon with 0 refuses every call that wants a reply; the
   * kernel's smallest limit is 1 */
  if (max < 1)
    return 1;
  if ((unsigned int) max > NFDBUS_MAX_REPLIES_MAX)
    return NFDBUS_MAX_REPLIES_MAX;
  return max;
}

static dbus_uint32_t
kernel_reply_timeout (BusContext *context)
{
  int timeout = bus_context_get_reply_timeout (context);

  /* dbus-daemon: negative is never (the kernel's 0); 0 expires a
   * pending reply at once, the kernel's shortest is 1 ms */
  if (timeout < 0)
    return 0;
  if (timeout == 0)
    return 1;
  return timeout;
}

/* NFDBUS_CMD_SET_BUS for a bus the daemon takes charge of, or manages
 * already (ReloadConfig): the sender check, the policies, and reply
 * tracking with the configuration's max_replies_per_connection and
 * reply_timeout, set in one request for every client of the bus at
 * once, with the configuration's <type> (NFDBUS_A_BUS_TYPE), the bus=
 * that the kernel's AppArmor matches messages between AF_BUS clients
 * against, as bus/apparmor.c does for the daemon's own clients.  A
 * negative errno on failure: a kernel without reply tracking refuses
 * the flag (EINVAL), and the daemon then does not run the bus, as
 * without nfdbus (bus_afbus_check_kernel()): its clients could send
 * each other replies nobody asked for, which dbus-daemon never lets
 * through on the system bus.  The type is the kernel's once set: a
 * ReloadConfig that changes it fails with EBUSY (the bus keeps the
 * first type and the old limits). */
static int
set_bus (BusContext              *context,
         const struct nfdbus_bus *bus)
{
  return nfdbus_set_bus_type (match_of (context)->nfdbus, bus,
                              NFDBUS_BUS_CHECK_SENDER | NFDBUS_BUS_POLICY |
                              NFDBUS_BUS_REPLIES,
                              kernel_max_replies (context),
                              kernel_reply_timeout (context),
                              bus_context_get_type (context));
}

/**
 * Takes charge of the AF_BUS bus the daemon listens on, once it listens
 * and knows its limits, before it tells anybody its address (bus.c):
 * NFDBUS_CMD_SET_BUS, as the first Hello would.  Without nfdbus (a
 * kernel built without it, or a netlink socket the daemon may not
 * open) the kernel could neither keep signals from the clients that
 * did not ask for them, nor check the SENDER and the bus policy of the
 * messages AF_BUS clients send each other directly; rather than run
 * such a bus, or fail every Hello, the daemon logs one warning and
 * stops listening on its AF_BUS address, so that it serves its other
 * addresses' clients as dbus-daemon does, and the fork's clients fall
 * back to the next address of their list.  Fails only if no other
 * address is left.
 */
dbus_bool_t
bus_afbus_check_kernel (BusContext *context,
                        DBusError  *error)
{
  DBusServer *server = bus_afbus_server (context);
  DBusError tmp_error = DBUS_ERROR_INIT;
  struct nfdbus_bus bus, *copy;
  DBusString text = _DBUS_STRING_INIT_INVALID;
  dbus_bool_t ok;
  char *why;
  int err;

  if (server == NULL)
    return TRUE;

  if (!bus_of_socket (_dbus_server_afbus_get_fd (server), &bus))
    {
      dbus_set_error (&tmp_error, _dbus_error_from_errno (errno),
                      "Cannot read the address of the AF_BUS bus: %s",
                      _dbus_strerror (errno));
    }
  else if (bus_afbus_nfdbus (context, &tmp_error) != NULL)
    {
      err = set_bus (context, &bus);
      if (err == 0)
        {
          /* Without memory the first Hello asks again. */
          copy = dbus_new (struct nfdbus_bus, 1);
          if (copy != NULL)
            {
              *copy = bus;
              if (!_dbus_list_append (&match_of (context)->managed_buses,
                                      copy))
                dbus_free (copy);
            }
          return TRUE;
        }
      bus_afbus_nfdbus_error (context, &tmp_error, -err,
                              "the kernel does not take charge of the bus"
                              " (sender check, policy, reply tracking)");
    }

  if (dbus_error_has_name (&tmp_error, DBUS_ERROR_NO_MEMORY))
    {
      dbus_move_error (&tmp_error, error);
      return FALSE;
    }

  why = _dbus_strdup (tmp_error.message);
  dbus_error_free (&tmp_error);
  if (why == NULL ||
      !_dbus_string_init (&text) ||
      !_dbus_string_append_printf (&text, "the kernel cannot filter signals,"
                                   " check senders, enforce the bus policy"
                                   " nor track replies between AF_BUS"
                                   " clients (nfdbus: %s)", why))
    {
      dbus_free (why);
      _dbus_string_free (&text);
      BUS_SET_OOM (error);
      return FALSE;
    }
  dbus_free (why);
  ok = bus_afbus_stop_listening (context, _dbus_string_get_const_data (&text),
                                 error);
  _dbus_string_free (&text);
  return ok;
}

/**
 * ReloadConfig: every bus the daemon runs takes the configuration's
 * max_replies_per_connection and reply_timeout, in one request each
 * (set_bus()), so for all its clients at once, and for the calls they
 * make from then on.  FALSE with @p error set if the kernel refused.
 */
dbus_bool_t
bus_afbus_match_reload (BusContext *context,
                        DBusError  *error)
{
  BusAfbusMatch *match = match_of (context);
  DBusList *link;
  int err;

  for (link = _dbus_list_get_first_link (&match->managed_buses); link != NULL;
       link = _dbus_list_get_next_link (&match->managed_buses, link))
    {
      err = set_bus (context, link->data);
      if (err < 0)
        return bus_afbus_nfdbus_error (context, error, -err,
                                       "The kernel does not take the bus's"
                                       " new reply limits");
    }

  return TRUE;
}

dbus_bool_t
bus_afbus_match_manage (DBusConnection *connection,
                        DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  BusAfbusMatch *match = match_of (context);
  struct nfdbus_bus bus, *copy;
  dbus_uint64_t peer;
  int err;

  if (!bus_afbus_connection_bus (connection, &bus, &peer) ||
      bus_is_managed (match, &bus))
    return TRUE;

  copy = dbus_new (struct nfdbus_bus, 1);
  if (copy == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  *copy = bus;

  if (bus_afbus_nfdbus (context, error) == NULL)
    goto failed;

  err = set_bus (context, &bus);
  if (err < 0)
    {
      bus_afbus_nfdbus_error (context, error, -err,
                        "Cannot make the kernel filter the bus's signals and check their senders");
      goto failed;
    }

  if (!_dbus_list_append (&match->managed_buses, copy))
    {
      /* The flags stay, harmless: we try again with the next client. */
      BUS_SET_OOM (error);
      goto failed;
    }

  return TRUE;

 failed:
  dbus_free (copy);
  return FALSE;
}

/* @connection becomes a monitor (@monitor TRUE), or does not after all:
 * mark its address in the kernel, whose reply tracking then awaits no
 * reply to the copies of calls the daemon sends it.  FALSE with @error
 * set if the kernel could not mark it; nothing to do for a connection
 * that is not an AF_BUS client or legacy client, or on a bus without
 * reply tracking. */
dbus_bool_t
bus_afbus_match_set_monitor (DBusConnection *connection,
                             dbus_bool_t     monitor,
                             DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  BusAfbusMatch *match = match_of (context);
  struct nfdbus *nfdbus;
  struct nfdbus_bus bus;
  dbus_uint64_t peer;
  int err;

  if (!match->kernel_peer_flags ||
      !bus_afbus_connection_bus (connection, &bus, &peer))
    return TRUE;

  if (match->nfdbus == NULL)
    {
      if (!monitor)
        return TRUE;
      if (bus_afbus_nfdbus (context, error) == NULL)
        return FALSE;
    }
  nfdbus = match->nfdbus;

  err = nfdbus_set_peer (nfdbus, &bus, peer,
                         monitor ? NFDBUS_PEER_MONITOR : 0);
  if (err == 0)
    {
      match->kernel_peer_flags_known = TRUE;
      _dbus_verbose ("nfdbus: %s is %sa monitor\n",
                     bus_connection_get_name (connection),
                     monitor ? "" : "not ");
      return TRUE;
    }

  if ((err == -EOPNOTSUPP || err == -EINVAL) &&
      !match->kernel_peer_flags_known)
    {
      /* an nfdbus older than NFDBUS_CMD_SET_PEER */
      match->kernel_peer_flags = FALSE;
      bus_context_log (context, DBUS_SYSTEM_LOG_WARNING,
                       "The kernel cannot tell monitors from other AF_BUS"
                       " clients (nfdbus: %s%s%s): with a monitor on the"
                       " bus, callers may await replies from it and get"
                       " LimitsExceeded sooner",
                       _dbus_strerror (-err),
                       nfdbus_error (nfdbus)[0] != '\0' ? ": " : "",
                       nfdbus_error (nfdbus));
      return TRUE;
    }

  if (!monitor)
    {
      /* ENOENT: it is gone, and its mark with it */
      if (err != -ENOENT)
        _dbus_verbose ("nfdbus: cannot unmark monitor %s: %s\n",
                       bus_connection_get_name (connection),
                       _dbus_strerror (-err));
      return TRUE;
    }

  return bus_afbus_nfdbus_error (context, error, -err,
                                 "The kernel cannot mark the monitor");
}

/* The rule's canonical text.  FALSE with @error unset: the kernel does
 * not need this rule. */
static dbus_bool_t
kernel_rule (BusMatchRule   *rule,
             char          **text,
             DBusError      *error)
{
  const char *sender = bus_match_rule_get_sender (rule);

  if (sender != NULL && strcmp (sender, DBUS_SERVICE_DBUS) == 0)
    return FALSE;

  *text = bus_match_rule_to_string (rule);
  if (*text == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  return TRUE;
}

/* The address the rule's sender has, if any.  A well-known sender's
 * address is held by the rule from then on (BUS_AFBUS_RULE_NAME), until
 * the rule is freed (bus_afbus_remove_match() gives it back), so that
 * the name keeps the address the kernel's copy of the rule names.  FALSE
 * if no memory. */
static dbus_bool_t
rule_sender_addr (BusAfbusNames *names,
                  BusMatchRule  *rule,
                  dbus_uint64_t *addr,
                  dbus_bool_t   *has_addr,
                  DBusError     *error)
{
  const char *sender = bus_match_rule_get_sender (rule);
  unsigned int state = bus_match_rule_get_afbus (rule);

  *has_addr = FALSE;
  if (sender == NULL)
    return TRUE;

  if (sender[0] == ':')
    *has_addr = _dbus_afbus_addr_from_unique_name (sender, addr);
  else if (state & BUS_AFBUS_RULE_NAME)
    *has_addr = bus_afbus_name_addr (names, sender, addr);
  else if (bus_afbus_name_addr_ref (names, sender, addr))
    {
      bus_match_rule_set_afbus (rule, state | BUS_AFBUS_RULE_NAME);
      *has_addr = TRUE;
    }
  else
    {
      BUS_SET_OOM (error);
      return FALSE;
    }
  return TRUE;
}

/* A kernel rule of a client, as nfdbus_list() gives it. */
typedef struct
{
  char *text;
  dbus_bool_t has_sender_addr;
  dbus_uint64_t sender_addr;
} KernelRule;

/* nfdbus_list() callback: the first rule.  It reads the whole dump (a
 * callback's error would leave the rest of it in the netlink socket,
 * for the next request to read). */
static int
first_rule (const struct nfdbus_rule_info *info,
            void                          *data)
{
  KernelRule *r = data;

  if (r->text == NULL)
    {
      r->text = _dbus_strdup (info->rule);
      r->has_sender_addr = info->has_sender_addr;
      r->sender_addr = info->sender_addr;
    }
  return 0;
}

/*
 * A legacy client's AddMatch, when the kernel holds NFDBUS_PEER_RULES_MAX
 * of its rules already: dbus-daemon lets it have the configuration's
 * max_match_rules_per_connection (50000 on the session bus), which the
 * driver checks.  So its C1 gets every multicast from now on, which the
 * daemon matches against its rules in its own matchmaker
 * (bus_afbus_legacy_match_in_daemon()), as dbus-daemon does: one of its
 * kernel rules makes room for a rule that matches every signal; the
 * others stay, and match nothing more.  Native clients keep the
 * kernel's limit (their signals never pass through the daemon).  0, or a
 * negative errno (the AddMatch fails as the kernel said).
 */
static int
match_in_daemon (struct nfdbus           *nfdbus,
                 const struct nfdbus_bus *bus,
                 dbus_uint64_t            peer,
                 DBusConnection          *connection)
{
  KernelRule r = { NULL, FALSE, 0 };
  int err;

  err = nfdbus_list (nfdbus, bus, &peer, first_rule, &r);
  if (err < 0 || r.text == NULL)
    {
      dbus_free (r.text);
      return err < 0 ? err : -ENOENT;
    }
  err = nfdbus_remove_match (nfdbus, bus, peer, r.text);
  if (err == 0)
    {
      err = nfdbus_add_match (nfdbus, bus, peer, "type='signal'", NULL);
      if (err < 0)
        nfdbus_add_match (nfdbus, bus, peer, r.text,
                          r.has_sender_addr ? &r.sender_addr : NULL);
    }
  dbus_free (r.text);
  /* (the daemon reads C1 only once this returns: it matches from the
   * first multicast the kernel lets through unfiltered) */
  if (err == 0)
    bus_afbus_legacy_match_in_daemon (connection);
  return err;
}

dbus_bool_t
bus_afbus_add_match (DBusConnection *connection,
                     BusMatchRule   *rule,
                     DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  BusAfbus *afbus = bus_context_get_afbus (context);
  struct nfdbus *nfdbus;
  struct nfdbus_bus bus;
  dbus_uint64_t peer, sender_addr;
  dbus_bool_t has_sender_addr;
  char *text;
  int err;

  if (!bus_afbus_connection_bus (connection, &bus, &peer))
    return TRUE;

  /* the daemon's matchmaker alone has its rules (match_in_daemon()) */
  if (bus_afbus_legacy_matches_in_daemon (connection))
    return TRUE;

  if (!kernel_rule (rule, &text, error))
    return !dbus_error_is_set (error);

  if (!rule_sender_addr (afbus->names, rule, &sender_addr, &has_sender_addr,
                         error) ||
      (nfdbus = bus_afbus_nfdbus (context, error)) == NULL)
    {
      dbus_free (text);
      return FALSE;
    }

  err = nfdbus_add_match (nfdbus, &bus, peer, text,
                          has_sender_addr ? &sender_addr : NULL);
  if (err == -ENOSPC && bus_afbus_connection_is_legacy (connection) &&
      match_in_daemon (nfdbus, &bus, peer, connection) == 0)
    {
      _dbus_verbose ("nfdbus: %s has %d rules: the daemon matches its"
                     " signals from now on\n",
                     bus_connection_get_name (connection),
                     NFDBUS_PEER_RULES_MAX);
      dbus_free (text);
      return TRUE;
    }
  if (err < 0)
    {
      bus_afbus_nfdbus_error (context, error, -err,
                              "The kernel does not take the match rule");
    }
  else
    {
      bus_match_rule_set_afbus (rule, bus_match_rule_get_afbus (rule) |
                                      BUS_AFBUS_RULE_KERNEL);
      _dbus_verbose ("nfdbus: %s for %s\n", text,
                     bus_connection_get_name (connection));
    }

  dbus_free (text);
  return err == 0;
}

/* What bus_afbus_add_match() did for @rule is undone: RemoveMatch,
 * AddMatch failed after all, or the connection became a monitor (the
 * rule is freed: bus_afbus_rule_freed()).  The kernel forgets the rules
 * of a client that left by itself; the rule's name gives its address
 * back in any case. */
void
bus_afbus_remove_match (DBusConnection *connection,
                        BusMatchRule   *rule)
{
  BusContext *context = bus_connection_get_context (connection);
  struct nfdbus *nfdbus = match_of (context)->nfdbus;
  unsigned int state = bus_match_rule_get_afbus (rule);
  DBusError error = DBUS_ERROR_INIT;
  struct nfdbus_bus bus;
  dbus_uint64_t peer;
  char *text;
  int err;

  bus_match_rule_set_afbus (rule, state & ~(BUS_AFBUS_RULE_KERNEL |
                                            BUS_AFBUS_RULE_NAME));

  if ((state & BUS_AFBUS_RULE_KERNEL) &&
      dbus_connection_get_is_connected (connection) &&
      bus_afbus_connection_bus (connection, &bus, &peer) && nfdbus != NULL)
    {
      if (!kernel_rule (rule, &text, &error))
        {
          /* Without memory the kernel keeps the rule, and the client the
           * signals it matches. */
          dbus_error_free (&error);
        }
      else
        {
          /* ENOENT: the client is gone, and its rules with it. */
          err = nfdbus_remove_match (nfdbus, &bus, peer, text);
          if (err < 0 && err != -ENOENT)
            _dbus_verbose ("nfdbus: cannot remove %s: %s\n", text,
                           _dbus_strerror (-err));
          dbus_free (text);
        }
    }

  if (state & BUS_AFBUS_RULE_NAME)
    bus_afbus_name_addr_unref (bus_context_get_afbus (context)->names,
                               bus_match_rule_get_sender (rule));
}

#else /* !DBUS_HAVE_AFBUS */

struct BusAfbusMatch
{
  int unused;
};

BusAfbusMatch *
bus_afbus_match_new (void)
{
  return dbus_new0 (BusAfbusMatch, 1);
}

void
bus_afbus_match_free (BusAfbusMatch *match)
{
  dbus_free (match);
}

dbus_bool_t
bus_afbus_check_kernel (BusContext *context,
                        DBusError  *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_match_set_monitor (DBusConnection *connection,
                             dbus_bool_t     monitor,
                             DBusError      *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_match_manage (DBusConnection *connection,
                        DBusError      *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_match_reload (BusContext *context,
                        DBusError  *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_add_match (DBusConnection *connection,
                     BusMatchRule   *rule,
                     DBusError      *error)
{
  return TRUE;
}

void
bus_afbus_remove_match (DBusConnection *connection,
                        BusMatchRule   *rule)
{
}

#endif /* DBUS_HAVE_AFBUS */
