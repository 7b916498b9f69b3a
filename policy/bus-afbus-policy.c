/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* bus-afbus-policy.c  D-Bus policy for AF_BUS clients in the kernel (nfdbus)
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
#include "bus-afbus-policy.h"
#include "bus-afbus.h"

/*
 * AF_BUS clients send to each other through the kernel, so the daemon
 * cannot apply its <allow> and <deny> send and receive rules to those
 * messages.  The kernel does, through nfdbus (the "Policy" section of
 * Documentation/networking/nfdbus.rst in the kernel patches): the daemon
 * gives it, for each AF_BUS client, the rules of the client's
 * BusClientPolicy, which the daemon computes from the default, group,
 * user, console and mandatory contexts of its configuration.
 *
 * - Clients whose BusClientPolicy has the same rules (the same rule
 *   objects in the same order: same uid, groups and console state) share
 *   one kernel policy, with an id of the daemon's choosing; a client is
 *   given its policy before it joins the bus (bus_afbus_join()), and the
 *   daemon has the kernel enforce policies on its buses from the start
 *   (NFDBUS_BUS_POLICY, set with the bus's other flags when the daemon
 *   takes charge of it), so a client never talks to its peers unchecked.
 * - On ReloadConfig every client gets its new policy; the policies of the
 *   old configuration are then deleted.
 * - Names become addresses: send_destination and receive_sender naming
 *   an AF_BUS unique name (":0.<hex>") its client's address, a
 *   well-known name the name's AF_BUS address (allocated now if no
 *   AF_BUS client owned it yet), so rules follow names from owner to
 *   owner.  The kernel only knows the primary owner of a name, not the
 *   queued ones.  A rule on another transport's unique name or on the
 *   bus itself (org.freedesktop.DBus) never applies to messages between
 *   AF_BUS clients, and is left out.
 * - Requested replies: the kernel tracks the calls between AF_BUS
 *   clients and those the daemon forwards to them (NFDBUS_BUS_REPLIES,
 *   bus-afbus-match.c), and knows whether a method return or error was
 *   requested, as dbus-daemon does (bus_connections_check_reply).  Rules
 *   keep dbus-daemon's meaning of send_requested_reply and
 *   receive_requested_reply (bus_client_policy_check_can_send and
 *   _can_receive in policy.c): a deny rule with "false" (the default of
 *   deny rules) does not apply to requested replies
 *   (NFDBUS_POLICY_F_NOT_REPLIES); an allow rule with "true" (the
 *   default of allow rules) and without eavesdrop="true" applies to a
 *   reply only if it was requested (NFDBUS_POLICY_F_REQUESTED_ONLY).  So
 *   with the system bus' <allow send_requested_reply="true"
 *   send_type="method_return"/> a reply nobody awaits is denied, and
 *   with the session bus' <allow send_destination="*" eavesdrop="true"/>
 *   it is let through, and the receiving library drops it, as from
 *   dbus-daemon.  (The daemon runs no AF_BUS bus on a kernel without
 *   reply tracking: bus-afbus-match.c.)
 * - Receive rules that deny
 *   only eavesdropping are left out: the kernel's only eavesdropper is
 *   the daemon's tap, which gets every message; the daemon applies them
 *   when it passes the tap's messages on to eavesdropping match rules
 *   (bus-afbus-monitor.c).
 * - What the kernel cannot check (send_destination_prefix, the fd
 *   counts) never makes it allow more: such an allow rule is left out,
 *   and such a deny rule loses that condition, so it denies more.
 * - own rules stay in the daemon, which handles RequestName.
 * - Every policy ends with a rule of the daemon's own: no signal on its
 *   interface org.freedesktop.DBus.AF_BUS between clients.
 *
 * A denied method call fails with EPERM in the caller's kernel send,
 * which its libdbus turns into an AccessDenied error; a denied signal is
 * just not delivered, and a denied reply dropped by its sender's libdbus.
 */

#include <errno.h>
#include <string.h>
#include <dbus/dbus-sysdeps-afbus.h>
#include <dbus/dbus-hash.h>
#include <dbus/dbus-list.h>
#include <dbus/dbus-string.h>

#include "bus-afbus-names.h"
#include "bus-afbus-match.h"
#include "connection.h"
#include "policy.h"
#include "utils.h"

#ifdef DBUS_HAVE_AFBUS

#include <linux/netfilter/nfdbus.h>
#include "libnfdbus.h"

/* The kernel policies of one bus: BusClientPolicy rules -> id. */
typedef struct
{
  struct nfdbus_bus bus;
  DBusHashTable *ids;           /* char * key -> policy id */
  DBusHashTable *old_ids;       /* the previous configuration's, on reload */
} PolicyBus;

/* The kernel policies the daemon made (bus-afbus-state.h). */
struct BusAfbusPolicy
{
  DBusList *buses;              /**< PolicyBus * */
  dbus_uint32_t next_id;        /**< the next policy's id */
};

BusAfbusPolicy *
bus_afbus_policy_new (void)
{
  BusAfbusPolicy *policy = dbus_new0 (BusAfbusPolicy, 1);

  if (policy != NULL)
    policy->next_id = 1;
  return policy;
}

static void
policy_bus_free (void *data)
{
  PolicyBus *pb = data;

  _dbus_hash_table_unref (pb->ids);
  if (pb->old_ids != NULL)
    _dbus_hash_table_unref (pb->old_ids);
  dbus_free (pb);
}

/* The kernel keeps the policies until the bus goes. */
void
bus_afbus_policy_free (BusAfbusPolicy *policy)
{
  _dbus_list_clear_full (&policy->buses, policy_bus_free);
  dbus_free (policy);
}

static PolicyBus *
policy_bus_get (BusAfbusPolicy          *policy,
                const struct nfdbus_bus *bus)
{
  DBusList *link;
  PolicyBus *pb;

  for (link = _dbus_list_get_first_link (&policy->buses); link != NULL;
       link = _dbus_list_get_next_link (&policy->buses, link))
    {
      pb = link->data;
      if (pb->bus.len == bus->len && memcmp (pb->bus.path, bus->path, bus->len) == 0)
        return pb;
    }

  pb = dbus_new0 (PolicyBus, 1);
  if (pb == NULL)
    return NULL;
  pb->bus = *bus;
  pb->ids = _dbus_hash_table_new (DBUS_HASH_STRING, dbus_free, NULL);
  if (pb->ids == NULL || !_dbus_list_append (&policy->buses, pb))
    {
      if (pb->ids != NULL)
        _dbus_hash_table_unref (pb->ids);
      dbus_free (pb);
      return NULL;
    }
  return pb;
}

/* The identity of a client policy: its send and receive rules. */
static char *
policy_key (BusClientPolicy *client)
{
  DBusList **rules = bus_client_policy_get_rules (client);
  DBusList *link;
  DBusString key;
  char *ret = NULL;

  if (!_dbus_string_init (&key))
    return NULL;

  for (link = _dbus_list_get_first_link (rules); link != NULL;
       link = _dbus_list_get_next_link (rules, link))
    {
      BusPolicyRule *rule = link->data;

      if ((rule->type == BUS_POLICY_RULE_SEND ||
           rule->type == BUS_POLICY_RULE_RECEIVE) &&
          !_dbus_string_append_printf (&key, "%p,", (void *) rule))
        goto out;
    }

  _dbus_string_steal_data (&key, &ret);
 out:
  _dbus_string_free (&key);
  return ret;
}

/* A name of a rule as an address: FALSE on OOM; *use FALSE when the rule
 * cannot apply to messages between AF_BUS clients.  Without @context,
 * only the form of the rule (a well-known name gets address 0). */
static dbus_bool_t
name_to_addr (BusContext                *context,
              const char                *name,
              struct nfdbus_policy_rule *out,
              dbus_bool_t               *use)
{
  if (strcmp (name, DBUS_SERVICE_DBUS) == 0)
    *use = FALSE;
  else if (name[0] == ':')
    *use = _dbus_afbus_addr_from_unique_name (name, &out->addr);
  else if (context == NULL)
    out->addr = 0;
  else if (!bus_afbus_name_addr_pin (bus_context_get_afbus (context)->names,
                                     name, &out->addr))
    return FALSE;
  out->has_addr = *use;
  return TRUE;
}

/* The kernel form of a send or receive rule; *use FALSE to leave it
 * out.  FALSE on OOM.  Without @context, only its form (name_to_addr()). */
static dbus_bool_t
translate_rule (BusContext                *context,
                BusPolicyRule             *rule,
                struct nfdbus_policy_rule *out,
                dbus_bool_t               *use)
{
  const char *name = NULL;
  dbus_bool_t exact = TRUE, requested_reply, eavesdrop;
  unsigned int min_fds, max_fds;

  memset (out, 0, sizeof (*out));
  out->allow = rule->allow;
  *use = TRUE;

  if (rule->type == BUS_POLICY_RULE_SEND)
    {
      out->direction = NFDBUS_POLICY_SEND;
      out->type = rule->d.send.message_type;
      out->path = rule->d.send.path;
      out->interface = rule->d.send.interface;
      out->member = rule->d.send.member;
      out->error = rule->d.send.error;
      if (rule->d.send.broadcast == BUS_POLICY_TRISTATE_TRUE)
        out->flags |= NFDBUS_POLICY_F_BROADCAST;
      else if (rule->d.send.broadcast == BUS_POLICY_TRISTATE_FALSE)
        out->flags |= NFDBUS_POLICY_F_NOT_BROADCAST;
      requested_reply = rule->d.send.requested_reply;
      eavesdrop = rule->d.send.eavesdrop;
      min_fds = rule->d.send.min_fds;
      max_fds = rule->d.send.max_fds;
      name = rule->d.send.destination;
      if (name != NULL && rule->d.send.destination_is_prefix)
        {
          exact = FALSE;
          name = NULL;
        }
    }
  else if (rule->type == BUS_POLICY_RULE_RECEIVE)
    {
      /* denies eavesdropping only: eavesdroppers get everything */
      if (!rule->allow && rule->d.receive.eavesdrop)
        {
          *use = FALSE;
          return TRUE;
        }
      out->direction = NFDBUS_POLICY_RECEIVE;
      out->type = rule->d.receive.message_type;
      out->path = rule->d.receive.path;
      out->interface = rule->d.receive.interface;
      out->member = rule->d.receive.member;
      out->error = rule->d.receive.error;
      requested_reply = rule->d.receive.requested_reply;
      eavesdrop = rule->d.receive.eavesdrop;
      min_fds = rule->d.receive.min_fds;
      max_fds = rule->d.receive.max_fds;
      name = rule->d.receive.origin;
    }
  else
    {
      *use = FALSE;
      return TRUE;
    }

  /* requested_reply as policy.c reads it: a deny rule with "false"
   * skips requested replies, an allow rule with "true" (and without
   * eavesdrop="true") skips unrequested ones */
  if (!rule->allow && !requested_reply)
    out->flags |= NFDBUS_POLICY_F_NOT_REPLIES;
  if (rule->allow && requested_reply && !eavesdrop)
    out->flags |= NFDBUS_POLICY_F_REQUESTED_ONLY;
  if (min_fds > 0 || max_fds < DBUS_MAXIMUM_MESSAGE_UNIX_FDS)
    exact = FALSE;

  if (name != NULL && !name_to_addr (context, name, out, use))
    return FALSE;
  /* never allow more than the daemon would */
  if (!exact && rule->allow)
    *use = FALSE;
  return TRUE;
}

/* The daemon's own rule, last in every policy, so that nothing allows
 * it: no client may send another a signal on the daemon's own
 * interface, whose signals the libraries act on
 * (bus_afbus_check_message() refuses any message on it that goes
 * through the daemon).  A signal always has an interface, so this
 * denies nothing else (a deny rule naming an interface would apply to
 * a method call or reply without one). */
static void
last_rule (struct nfdbus_policy_rule *out)
{
  memset (out, 0, sizeof (*out));
  out->direction = NFDBUS_POLICY_SEND;
  out->allow = 0;
  out->type = DBUS_MESSAGE_TYPE_SIGNAL;
  out->interface = DBUS_INTERFACE_AFBUS;
}

/* The kernel rules a client may get at most: those of every context. */
typedef struct
{
  size_t n;                     /**< how many */
  size_t size;                  /**< their bytes in a request */
} PolicySize;

static void
add_rule_list (DBusList **rules,
               void      *data)
{
  PolicySize *ps = data;
  struct nfdbus_policy_rule out;
  DBusList *link;
  dbus_bool_t use;

  for (link = _dbus_list_get_first_link (rules); link != NULL;
       link = _dbus_list_get_next_link (rules, link))
    {
      /* (no context: allocates nothing) */
      translate_rule (NULL, link->data, &out, &use);
      if (!use)
        continue;
      ps->n++;
      ps->size += nfdbus_policy_size (&out, 1) - nfdbus_policy_size (NULL, 0);
    }
}

/**
 * Whether the kernel can hold the policy of any client of the
 * configuration's @policy, before the daemon takes it (bus.c): the
 * kernel takes at most NFDBUS_POLICY_RULES_MAX rules in one policy, and
 * one request holds at most NFDBUS_POLICY_SIZE_MAX bytes of them
 * (libnfdbus.h), which rules with long names reach with fewer.  A
 * client's policy has the rules of the contexts that apply to it
 * (default, its user's and groups', console, mandatory); counting those
 * of every context, the daemon knows before any Hello that none fails
 * for its policy.  When they do not fit: at startup the daemon does not
 * listen on its AF_BUS address (one warning, bus_afbus_stop_listening():
 * its clients fall back to the bus's other addresses), and fails only
 * if it had no other; on ReloadConfig it refuses the configuration
 * (LimitsExceeded) and keeps the one it has.
 */
dbus_bool_t
bus_afbus_policy_fits (BusContext  *context,
                       BusPolicy   *policy,
                       dbus_bool_t  is_reload,
                       DBusError   *error)
{
  PolicySize ps = { 0, nfdbus_policy_size (NULL, 0) };
  struct nfdbus_policy_rule last;
  DBusString why;
  dbus_bool_t ok;

  if (bus_afbus_server (context) == NULL)
    return TRUE;

  bus_policy_foreach_rule_list (policy, add_rule_list, &ps);
  last_rule (&last);
  ps.n++;
  ps.size += nfdbus_policy_size (&last, 1) - nfdbus_policy_size (NULL, 0);
  _dbus_verbose ("AF_BUS policies: at most %lu kernel rules, %lu bytes\n",
                 (unsigned long) ps.n, (unsigned long) ps.size);
  if (ps.n <= NFDBUS_POLICY_RULES_MAX && ps.size <= NFDBUS_POLICY_SIZE_MAX)
    return TRUE;

  if (!_dbus_string_init (&why) ||
      !_dbus_string_append_printf (&why,
                                   "the bus policy gives an AF_BUS client"
                                   " up to %lu rules of %lu bytes, and the"
                                   " kernel holds at most %d rules of %d"
                                   " bytes in one policy (nfdbus)",
                                   (unsigned long) ps.n,
                                   (unsigned long) ps.size,
                                   NFDBUS_POLICY_RULES_MAX,
                                   NFDBUS_POLICY_SIZE_MAX))
    {
      _dbus_string_free (&why);
      BUS_SET_OOM (error);
      return FALSE;
    }

  if (is_reload)
    {
      dbus_set_error (error, DBUS_ERROR_LIMITS_EXCEEDED,
                      "Not reloading the configuration: %s",
                      _dbus_string_get_const_data (&why));
      ok = FALSE;
    }
  else
    {
      ok = bus_afbus_stop_listening (context,
                                     _dbus_string_get_const_data (&why),
                                     error);
    }
  _dbus_string_free (&why);
  return ok;
}

/* Give the kernel policy id of @pb the rules of @client. */
static dbus_bool_t
push_policy (BusContext      *context,
             struct nfdbus   *nfdbus,
             PolicyBus       *pb,
             BusClientPolicy *client,
             dbus_uint32_t    id,
             DBusError       *error)
{
  DBusList **rules = bus_client_policy_get_rules (client);
  struct nfdbus_policy_rule *out;
  DBusList *link;
  size_t n = 0;
  dbus_bool_t use;
  int err;

  out = dbus_new0 (struct nfdbus_policy_rule,
                   _dbus_list_get_length (rules) + 1);
  if (out == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  for (link = _dbus_list_get_first_link (rules); link != NULL;
       link = _dbus_list_get_next_link (rules, link))
    {
      if (!translate_rule (context, link->data, &out[n], &use))
        {
          dbus_free (out);
          BUS_SET_OOM (error);
          return FALSE;
        }
      n += use;
    }

  last_rule (&out[n++]);

  err = nfdbus_set_policy (nfdbus, &pb->bus, id, out, n);
  dbus_free (out);
  if (err < 0)
    return bus_afbus_nfdbus_error (context, error, -err,
                                   "The kernel does not take the bus policy");
  _dbus_verbose ("AF_BUS policy %u: %lu kernel rules\n", id, (unsigned long) n);
  return TRUE;
}

/**
 * A connection becomes a monitor, which may send nothing: dbus-daemon
 * closes a monitor that sends it a message (bus_dispatch()), and the
 * kernel now refuses what it would send its peers directly (EPERM: its
 * library answers its calls with AccessDenied), which reaches no peer.
 * The daemon closes it then too, when the tap shows it the refused
 * message (bus-afbus-monitor.c).
 */
dbus_bool_t
bus_afbus_policy_monitor (DBusConnection *connection,
                          DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  struct nfdbus *nfdbus;
  struct nfdbus_bus bus;
  dbus_uint64_t peer;
  int err;

  if (!bus_afbus_connection_bus (connection, &bus, &peer))
    return TRUE;

  nfdbus = bus_afbus_nfdbus (context, error);
  if (nfdbus == NULL)
    return FALSE;

  /* A client without a policy may send nothing to other clients (nor
   * receive from them, but a monitor's copies come from the daemon,
   * whose messages are not checked). */
  err = nfdbus_set_peer_policy (nfdbus, &bus, peer, 0);
  if (err < 0)
    return bus_afbus_nfdbus_error (context, error, -err,
                                   "Cannot take a monitor's bus policy away"
                                   " in the kernel");
  _dbus_verbose ("%s uses no AF_BUS policy: it sends to no client\n",
                 bus_connection_get_name (connection));
  return TRUE;
}

dbus_bool_t
bus_afbus_policy_join (DBusConnection *connection,
                       DBusError      *error)
{
  BusContext *context = bus_connection_get_context (connection);
  BusAfbusPolicy *policy = bus_context_get_afbus (context)->policy;
  struct nfdbus *nfdbus;
  struct nfdbus_bus bus;
  dbus_uint64_t peer;
  PolicyBus *pb;
  uintptr_t id;
  char *key;
  int err;

  /* (on ReloadConfig) a monitor keeps none */
  if (bus_connection_is_monitor (connection))
    return bus_afbus_policy_monitor (connection, error);

  if (!bus_afbus_connection_bus (connection, &bus, &peer))
    return TRUE;

  nfdbus = bus_afbus_nfdbus (context, error);
  if (nfdbus == NULL)
    return FALSE;

  pb = policy_bus_get (policy, &bus);
  key = pb != NULL ? policy_key (bus_connection_get_policy (connection)) : NULL;
  if (key == NULL)
    {
      BUS_SET_OOM (error);
      return FALSE;
    }

  id = (uintptr_t) _dbus_hash_table_lookup_string (pb->ids, key);
  if (id == 0)
    {
      id = policy->next_id++;
      if (!push_policy (context, nfdbus, pb,
                        bus_connection_get_policy (connection), id, error))
        {
          dbus_free (key);
          return FALSE;
        }
      if (!_dbus_hash_table_insert_string (pb->ids, key, (void *) id))
        {
          /* the kernel keeps it until the next reload */
          dbus_free (key);
          BUS_SET_OOM (error);
          return FALSE;
        }
    }
  else
    {
      dbus_free (key);
    }

  err = nfdbus_set_peer_policy (nfdbus, &pb->bus, peer, id);
  if (err < 0)
    return bus_afbus_nfdbus_error (context, error, -err,
                                   "Cannot give the client its bus policy in the kernel");
  _dbus_verbose ("%s uses AF_BUS policy %lu\n",
                 bus_connection_get_name (connection), (unsigned long) id);
  return TRUE;
}

/* ReloadConfig, before the clients get their new policies: the old
 * configuration's policies are kept apart, since the addresses of its
 * rules, which make their keys (policy_key()), may be those of new
 * rules once they are freed. */
static void
policy_reload_begin (BusContext *context)
{
  BusAfbusPolicy *policy = bus_context_get_afbus (context)->policy;
  DBusList *link;

  for (link = _dbus_list_get_first_link (&policy->buses); link != NULL;
       link = _dbus_list_get_next_link (&policy->buses, link))
    {
      PolicyBus *pb = link->data;
      DBusHashTable *ids;

      if (pb->old_ids != NULL)
        continue;
      ids = _dbus_hash_table_new (DBUS_HASH_STRING, dbus_free, NULL);
      if (ids == NULL)
        continue;       /* OOM: new policies join the old ones */
      pb->old_ids = pb->ids;
      pb->ids = ids;
    }
}

/* ReloadConfig, after: the old configuration's policies go. */
static void
policy_reload_end (BusContext *context)
{
  BusAfbusPolicy *policy = bus_context_get_afbus (context)->policy;
  struct nfdbus *nfdbus = NULL;
  DBusList *link;

  /* (open since the first policy: bus_afbus_policy_join()) */
  if (policy->buses != NULL)
    nfdbus = bus_afbus_nfdbus (context, NULL);

  for (link = _dbus_list_get_first_link (&policy->buses); link != NULL;
       link = _dbus_list_get_next_link (&policy->buses, link))
    {
      PolicyBus *pb = link->data;
      DBusHashIter iter;

      if (pb->old_ids == NULL)
        continue;
      /* EBUSY: a client kept its old policy (reloading it failed) */
      _dbus_hash_iter_init (pb->old_ids, &iter);
      while (nfdbus != NULL && _dbus_hash_iter_next (&iter))
        nfdbus_del_policy (nfdbus, &pb->bus,
                           (uintptr_t) _dbus_hash_iter_get_value (&iter));
      _dbus_hash_table_unref (pb->old_ids);
      pb->old_ids = NULL;
    }
}

static dbus_bool_t
policy_join_one (DBusConnection *connection,
                 void           *data)
{
  return bus_afbus_policy_join (connection, data);
}

/**
 * ReloadConfig: every AF_BUS client gets the kernel policy of its new
 * BusClientPolicy (bus_connections_reload_policy() made them), in the
 * order they joined, until one fails (@error set); the old
 * configuration's policies are then deleted (a client that kept one
 * keeps it in the kernel: EBUSY).
 */
dbus_bool_t
bus_afbus_policy_reload (BusContext *context,
                         DBusError  *error)
{
  dbus_bool_t ok;

  policy_reload_begin (context);
  ok = bus_connections_foreach_active (bus_context_get_connections (context),
                                       policy_join_one, error);
  policy_reload_end (context);
  return ok;
}

#else /* !DBUS_HAVE_AFBUS */

dbus_bool_t
bus_afbus_policy_fits (BusContext  *context,
                       BusPolicy   *policy,
                       dbus_bool_t  is_reload,
                       DBusError   *error)
{
  return TRUE;
}

struct BusAfbusPolicy
{
  int unused;
};

BusAfbusPolicy *
bus_afbus_policy_new (void)
{
  return dbus_new0 (BusAfbusPolicy, 1);
}

void
bus_afbus_policy_free (BusAfbusPolicy *policy)
{
  dbus_free (policy);
}

dbus_bool_t
bus_afbus_policy_join (DBusConnection *connection,
                       DBusError      *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_policy_monitor (DBusConnection *connection,
                          DBusError      *error)
{
  return TRUE;
}

dbus_bool_t
bus_afbus_policy_reload (BusContext *context,
                         DBusError  *error)
{
  return TRUE;
}

#endif /* DBUS_HAVE_AFBUS */
