/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-afbus.c  what an AF_BUS client keeps: its well-known names,
 *               the peers it called, the deadlines of its calls
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
#include "dbus-afbus.h"

#ifdef DBUS_HAVE_AFBUS

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "dbus-hash.h"
#include "dbus-sysdeps.h"

/**
 * @addtogroup DBusAfbus
 * @{
 */

typedef struct
{
  char *name;                   /**< well-known name, NULL if the slot is free */
  dbus_uint64_t addr;           /**< its address, 0 if it has none (yet) */
  dbus_uint64_t owner;          /**< its owner's unique address, as the
                                 *   last Forwarded about it said (0:
                                 *   none, or not said) */
  unsigned long last_use;       /**< LRU clock at the last use */
} DBusAfbusNameEntry;

/**
 * Where a client's messages may go straight through the kernel, and
 * where they must go through the daemon to stay in order.
 *
 * A message to another client goes through the daemon when its
 * destination is a well-known name whose address we do not know, and
 * in the cases below.  For each such message (to any destination but
 * the daemon itself) the daemon sends us exactly one Forwarded signal
 * once it has dispatched it, in the order we sent them (7.2 in
 * doc/afbus-transport.md).  @in_daemon counts the messages it has not
 * answered yet; while it is not 0 no message goes straight to anybody
 * (replies and multicast signals excepted, see
 * dbus-transport-afbus.c): the daemon has not handed them on yet, and
 * a message sent through the kernel could overtake them.
 *
 * Forwarded says which client the message went to (its owner) and,
 * with an address of 0, that it still waits in the daemon's queue for
 * that client, which does not read fast enough.  The owner is then
 * slow: every message to it, by its unique name or by any name we know
 * it owns, goes through the daemon, behind the ones waiting there,
 * until a Forwarded about it gives an address (its queue was empty
 * once the message was handed on).  At most
 * DBUS_AFBUS_NAME_CACHE_SIZE owners are remembered as slow: past that
 * the one marked longest ago is forgotten and counted in
 * @slow_forgotten, and a message straight to it may overtake ours that
 * wait in the daemon.
 *
 * The well-known names are remembered in an LRU table of
 * DBUS_AFBUS_NAME_CACHE_SIZE entries, with the address and the owner
 * their last Forwarded gave.
 */
struct DBusAfbusNameCache
{
  DBusAfbusNameEntry entries[DBUS_AFBUS_NAME_CACHE_SIZE];
  dbus_uint64_t slow[DBUS_AFBUS_NAME_CACHE_SIZE]; /**< slow owners, 0: free */
  unsigned long slow_use[DBUS_AFBUS_NAME_CACHE_SIZE]; /**< LRU clock when
                                                       *   marked */
  unsigned int n_slow;          /**< slots of @slow in use */
  unsigned long clock;
  unsigned long in_daemon;      /**< our messages to other clients that the
                                 *   daemon has not answered with
                                 *   Forwarded */
  unsigned long slow_forgotten; /**< slow owners forgotten for room */
};

DBusAfbusNameCache *
_dbus_afbus_name_cache_new (void)
{
  return dbus_new0 (DBusAfbusNameCache, 1);
}

void
_dbus_afbus_name_cache_free (DBusAfbusNameCache *cache)
{
  int i;

  if (cache == NULL)
    return;

  for (i = 0; i < DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    dbus_free (cache->entries[i].name);

  dbus_free (cache);
}

static DBusAfbusNameEntry *
name_cache_find (DBusAfbusNameCache *cache,
                 const char         *name)
{
  int i;

  for (i = 0; i < DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    {
      DBusAfbusNameEntry *e = &cache->entries[i];

      if (e->name != NULL && strcmp (e->name, name) == 0)
        {
          e->last_use = ++cache->clock;
          return e;
        }
    }

  return NULL;
}

/* Finds the entry of @name, or replaces the least recently used one.
 * NULL if no memory. */
static DBusAfbusNameEntry *
name_cache_ensure (DBusAfbusNameCache *cache,
                   const char         *name)
{
  DBusAfbusNameEntry *e, *victim = NULL;
  char *copy;
  int i;

  e = name_cache_find (cache, name);
  if (e != NULL)
    return e;

  for (i = 0; i < DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    {
      e = &cache->entries[i];
      if (e->name == NULL)
        {
          victim = e;
          break;
        }
      if (victim == NULL || e->last_use < victim->last_use)
        victim = e;
    }

  copy = _dbus_strdup (name);
  if (copy == NULL)
    return NULL;

  _dbus_verbose ("AF_BUS name cache: %s replaces %s\n", name,
                 victim->name ? victim->name : "(free slot)");
  dbus_free (victim->name);
  victim->name = copy;
  victim->addr = 0;
  victim->owner = 0;
  victim->last_use = ++cache->clock;
  return victim;
}

static int
slow_find (DBusAfbusNameCache *cache,
           dbus_uint64_t       owner)
{
  int i;

  if (cache->n_slow == 0)
    return -1;

  for (i = 0; i < DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    if (cache->slow[i] == owner)
      return i;

  return -1;
}

static void
slow_mark (DBusAfbusNameCache *cache,
           dbus_uint64_t       owner)
{
  int i, victim = -1;

  i = slow_find (cache, owner);
  if (i < 0)
    {
      for (i = 0; i < DBUS_AFBUS_NAME_CACHE_SIZE; i++)
        {
          if (cache->slow[i] == 0)
            {
              victim = i;
              break;
            }
          if (victim < 0 || cache->slow_use[i] < cache->slow_use[victim])
            victim = i;
        }

      i = victim;
      if (cache->slow[i] != 0)
        {
          cache->slow_forgotten++;
          _dbus_verbose ("AF_BUS: %016" PRIx64 " no longer remembered as"
                         " slow (%lu forgotten)\n", cache->slow[i],
                         cache->slow_forgotten);
        }
      else
        {
          cache->n_slow++;
        }
      cache->slow[i] = owner;
    }

  cache->slow_use[i] = ++cache->clock;
}

static void
slow_clear (DBusAfbusNameCache *cache,
            dbus_uint64_t       owner)
{
  int i = slow_find (cache, owner);

  if (i >= 0)
    {
      cache->slow[i] = 0;
      cache->n_slow--;
    }
}

/**
 * Whether a message may go straight to the client at the unique
 * address @p owner: none of ours waits in the daemon, and @p owner is
 * not slow.
 */
dbus_bool_t
_dbus_afbus_name_cache_direct (DBusAfbusNameCache *cache,
                               dbus_uint64_t       owner)
{
  return cache->in_daemon == 0 && slow_find (cache, owner) < 0;
}

/**
 * Looks up where to send a message for a well-known name.
 *
 * @returns #TRUE with @p addr set if it may go straight to the owner,
 *   #FALSE if it must go to the master
 */
dbus_bool_t
_dbus_afbus_name_cache_lookup (DBusAfbusNameCache *cache,
                               const char         *name,
                               dbus_uint64_t      *addr)
{
  DBusAfbusNameEntry *e;

  if (cache->in_daemon > 0)
    return FALSE;

  e = name_cache_find (cache, name);
  if (e == NULL || e->addr == 0 ||
      (e->owner != 0 && slow_find (cache, e->owner) >= 0))
    return FALSE;

  *addr = e->addr;
  return TRUE;
}

/**
 * Records that a message for another client went to the master, which
 * answers it with Forwarded.
 */
void
_dbus_afbus_name_cache_sent_to_master (DBusAfbusNameCache *cache)
{
  cache->in_daemon++;
}

/**
 * Records a Forwarded signal: the master handed on one of our messages
 * for @p name (a well-known or a unique name) to the client at the
 * unique address @p owner (0 if none), and the name now lives at @p addr
 * (a unique name: its own address), or 0 if the message still waits in
 * the master's queue for @p owner (or the name has no AF_BUS address).
 *
 * @returns #FALSE if no memory (nothing is recorded then)
 */
dbus_bool_t
_dbus_afbus_name_cache_forwarded (DBusAfbusNameCache *cache,
                                  const char         *name,
                                  dbus_uint64_t       addr,
                                  dbus_uint64_t       owner)
{
  if (name[0] != ':')
    {
      DBusAfbusNameEntry *e = name_cache_ensure (cache, name);

      if (e == NULL)
        return FALSE;
      e->addr = addr;
      e->owner = owner;
    }

  /* A kernel without BUS_NO_DEFAULT_ROUTE may bring the daemon messages
   * we did not count. */
  if (cache->in_daemon > 0)
    cache->in_daemon--;

  if (owner != 0 && addr != 0)
    slow_clear (cache, owner);
  else if (owner != 0)
    slow_mark (cache, owner);

  _dbus_verbose ("AF_BUS name cache: %s is at %016" PRIx64 ", owner"
                 " %016" PRIx64 "; %lu message(s) still at the master,"
                 " %u slow owner(s)\n", name, addr, owner,
                 cache->in_daemon, cache->n_slow);
  return TRUE;
}

/**
 * The master could not give us @p count Forwarded signals (our queue in
 * it was full: ForwardedLost): the messages they were for are no longer
 * in it.
 */
void
_dbus_afbus_name_cache_forwarded_lost (DBusAfbusNameCache *cache,
                                       unsigned long       count)
{
  cache->in_daemon -= MIN (count, cache->in_daemon);
  _dbus_verbose ("AF_BUS name cache: %lu Forwarded lost; %lu message(s)"
                 " still at the master\n", count, cache->in_daemon);
}

/**
 * Forgets the address of @p name: a message to it found no owner there
 * (the name is moving, or left), so messages for @p name go through the
 * master until it says where the name lives (Forwarded).
 */
void
_dbus_afbus_name_cache_forget (DBusAfbusNameCache *cache,
                               const char         *name)
{
  DBusAfbusNameEntry *e = name_cache_find (cache, name);

  if (e != NULL)
    e->addr = 0;
}

/**
 * The client at the unique address @p owner left the bus: nothing of
 * ours can wait for it any more.
 */
void
_dbus_afbus_name_cache_peer_gone (DBusAfbusNameCache *cache,
                                  dbus_uint64_t       owner)
{
  slow_clear (cache, owner);
}

typedef struct
{
  dbus_uint64_t addr;           /**< the peer's address, 0 if the slot is free */
  char *name;                   /**< for a well-known name's address, the
                                 *   name; else NULL */
  DBusList *serials;            /**< our calls to it still waiting for a reply */
  unsigned long last_use;       /**< LRU clock at the last call */
} DBusAfbusPeer;

/**
 * The peers a client calls directly, by unique name, through the kernel.
 *
 * The daemon does not see such calls, so it cannot answer them with
 * NoReply when the callee disconnects, as it answers calls it forwarded.
 * Instead the client watches each peer it has called: it asks the
 * daemon with org.freedesktop.DBus.AF_BUS.WatchPeer (s name) for the
 * signal PeerGone (s name), which the daemon sends when the peer
 * leaves, or at once if it had left before the watch was in place
 * (bus-afbus-peers.c in the daemon).  When the peer is gone, every call
 * to it still waiting for its reply gets a NoReply error from the
 * library, as the daemon would send it.
 *
 * Replies from the peer come before PeerGone: the peer sent them before
 * its socket closed, the daemon sends PeerGone after, and the bus
 * orders all messages totally.
 *
 * A watch stays while the client calls the peer, so that a client
 * calling the same peer again and again costs the daemon nothing; the
 * least recently called idle peer is unwatched when a new peer needs
 * the room.  When every slot has calls waiting, the new peer is not
 * watched and its callers wait for their timeout, as before.
 */
struct DBusAfbusPeers
{
  DBusAfbusPeer entries[DBUS_AFBUS_PEER_WATCH_SIZE];
  unsigned long clock;
};

DBusAfbusPeers *
_dbus_afbus_peers_new (void)
{
  return dbus_new0 (DBusAfbusPeers, 1);
}

void
_dbus_afbus_peers_free (DBusAfbusPeers *peers)
{
  int i;

  if (peers == NULL)
    return;

  for (i = 0; i < DBUS_AFBUS_PEER_WATCH_SIZE; i++)
    {
      _dbus_list_clear (&peers->entries[i].serials);
      dbus_free (peers->entries[i].name);
    }

  dbus_free (peers);
}

static DBusAfbusPeer *
peers_find (DBusAfbusPeers *peers,
            dbus_uint64_t   addr)
{
  int i;

  for (i = 0; i < DBUS_AFBUS_PEER_WATCH_SIZE; i++)
    if (peers->entries[i].addr == addr)
      return &peers->entries[i];

  return NULL;
}

/**
 * Records a method call expecting a reply, sent straight to the peer at
 * @p addr: a client's unique address, or the address of the well-known
 * name @p name (NULL for a unique address).  *watch is set when the
 * peer was not watched yet and the caller must start watching it;
 * *unwatch to the address of a peer whose watch the caller must end (0
 * if none), and *unwatch_name to its name if it was a well-known name's
 * (which the caller frees).
 *
 * @returns #FALSE if no memory (the call is then not recorded)
 */
dbus_bool_t
_dbus_afbus_peers_call_sent (DBusAfbusPeers *peers,
                             dbus_uint64_t   addr,
                             const char     *name,
                             dbus_uint32_t   serial,
                             dbus_bool_t    *watch,
                             dbus_uint64_t  *unwatch,
                             char          **unwatch_name)
{
  DBusAfbusPeer *e, *victim = NULL;
  char *copy = NULL;
  int i;

  *watch = FALSE;
  *unwatch = 0;
  *unwatch_name = NULL;

  e = peers_find (peers, addr);
  if (e == NULL)
    {
      for (i = 0; i < DBUS_AFBUS_PEER_WATCH_SIZE; i++)
        {
          DBusAfbusPeer *p = &peers->entries[i];

          if (p->addr == 0)
            {
              victim = p;
              break;
            }
          if (p->serials == NULL &&
              (victim == NULL || p->last_use < victim->last_use))
            victim = p;
        }

      if (victim == NULL)
        {
          _dbus_verbose ("AF_BUS: every watched peer has calls waiting;"
                         " %016" PRIx64 " not watched\n", addr);
          return TRUE;
        }

      if (name != NULL && (copy = _dbus_strdup (name)) == NULL)
        return FALSE;

      *unwatch = victim->addr;
      *unwatch_name = victim->name;
      *watch = TRUE;
      e = victim;
      e->addr = addr;
      e->name = copy;
    }

  e->last_use = ++peers->clock;

  if (!_dbus_list_append (&e->serials, _DBUS_INT_TO_POINTER (serial)))
    return FALSE;

  return TRUE;
}

/**
 * Records a reply (or error) from @p addr to our call @p reply_serial;
 * @p addr 0 (the daemon) may answer a call to any peer, and any peer a
 * call to a well-known name's address (the kernel checks that replies
 * come from the callee).
 */
void
_dbus_afbus_peers_reply_received (DBusAfbusPeers *peers,
                                  dbus_uint64_t   addr,
                                  dbus_uint32_t   reply_serial)
{
  int i;

  for (i = 0; i < DBUS_AFBUS_PEER_WATCH_SIZE; i++)
    {
      DBusAfbusPeer *e = &peers->entries[i];

      /* A well-known name's address: the reply comes from its owner's
       * unique address. */
      if (e->addr != 0 && (addr == 0 || e->addr == addr || e->name != NULL) &&
          _dbus_list_remove (&e->serials, _DBUS_INT_TO_POINTER (reply_serial)))
        return;
    }
}

/**
 * The address of the watched well-known name @p name.
 *
 * @returns #FALSE if that name is not watched
 */
dbus_bool_t
_dbus_afbus_peers_addr_of_name (DBusAfbusPeers *peers,
                                const char     *name,
                                dbus_uint64_t  *addr)
{
  int i;

  for (i = 0; i < DBUS_AFBUS_PEER_WATCH_SIZE; i++)
    {
      DBusAfbusPeer *e = &peers->entries[i];

      if (e->addr != 0 && e->name != NULL && strcmp (e->name, name) == 0)
        {
          *addr = e->addr;
          return TRUE;
        }
    }

  return FALSE;
}

/**
 * The peer at @p addr is gone: ends its watch and gives the serials of
 * the calls still waiting for its reply (a list the caller clears), and
 * its well-known name if it was one (NULL else; the caller frees it).
 *
 * @returns #FALSE if the peer was not watched
 */
dbus_bool_t
_dbus_afbus_peers_gone (DBusAfbusPeers  *peers,
                        dbus_uint64_t    addr,
                        DBusList       **serials,
                        char           **name)
{
  DBusAfbusPeer *e = peers_find (peers, addr);

  *serials = NULL;
  *name = NULL;
  if (e == NULL || addr == 0)
    return FALSE;

  *serials = e->serials;
  *name = e->name;
  e->name = NULL;
  e->serials = NULL;
  e->addr = 0;
  e->last_use = 0;
  return TRUE;
}

/**
 * Our calls answered straight through the kernel, by the order in which
 * the bus's reply timeout ends their wait.
 *
 * The daemon answers a call it forwarded with NoReply once its
 * reply_timeout has passed without a reply; the kernel, which awaits
 * the replies to calls between AF_BUS clients, forgets them after the
 * same time but tells nobody.  So the library of the caller keeps the
 * time: for each such call, the monotonic time (in milliseconds) at
 * which it gets NoReply if no reply came, as the daemon would send it.
 * The daemon tells a client the bus's reply timeout when it joins
 * (ReplyTimeout); until then, and with a bus whose timeout is "never"
 * (-1, the default), no call is recorded.
 *
 * The calls are kept in the order of their deadlines, which is the
 * order in which they were sent (the timeout is the same for all), in a
 * list, and by serial, so that a reply removes its call at once.  There
 * are at most as many as the kernel lets a client await
 * (max_replies_per_connection).
 */
typedef struct
{
  dbus_uint32_t serial;
  dbus_int64_t deadline;        /**< monotonic milliseconds */
} DBusAfbusDeadline;

struct DBusAfbusDeadlines
{
  int timeout;                  /**< the bus's reply timeout (ms), -1: none */
  DBusList *calls;              /**< DBusAfbusDeadline *, earliest first */
  DBusHashTable *by_serial;     /**< serial -> its link in calls */
};

DBusAfbusDeadlines *
_dbus_afbus_deadlines_new (void)
{
  DBusAfbusDeadlines *deadlines = dbus_new0 (DBusAfbusDeadlines, 1);

  if (deadlines == NULL)
    return NULL;

  deadlines->timeout = -1;
  deadlines->by_serial = _dbus_hash_table_new (DBUS_HASH_UINTPTR, NULL, NULL);
  if (deadlines->by_serial == NULL)
    {
      dbus_free (deadlines);
      return NULL;
    }
  return deadlines;
}

void
_dbus_afbus_deadlines_free (DBusAfbusDeadlines *deadlines)
{
  if (deadlines == NULL)
    return;

  _dbus_list_clear_full (&deadlines->calls, dbus_free);
  _dbus_hash_table_unref (deadlines->by_serial);
  dbus_free (deadlines);
}

/**
 * The bus's reply timeout, in milliseconds (-1: calls wait for ever).
 * Calls recorded before keep their deadlines.
 */
void
_dbus_afbus_deadlines_set_timeout (DBusAfbusDeadlines *deadlines,
                                   int                 timeout)
{
  deadlines->timeout = timeout < 0 ? -1 : timeout;
}

/**
 * Records our call @p serial, sent at @p now, if the bus has a reply
 * timeout.
 *
 * @returns #FALSE if no memory (the call then waits for its own timeout)
 */
dbus_bool_t
_dbus_afbus_deadlines_add (DBusAfbusDeadlines *deadlines,
                           dbus_uint32_t       serial,
                           dbus_int64_t        now)
{
  DBusAfbusDeadline *d;
  DBusList *link, *before;

  if (deadlines->timeout < 0 ||
      _dbus_hash_table_lookup_uintptr (deadlines->by_serial, serial) != NULL)
    return TRUE;

  d = dbus_new (DBusAfbusDeadline, 1);
  if (d == NULL)
    return FALSE;
  d->serial = serial;
  d->deadline = now + deadlines->timeout;

  link = _dbus_list_alloc_link (d);
  if (link == NULL ||
      !_dbus_hash_table_insert_uintptr (deadlines->by_serial, serial, link))
    {
      if (link != NULL)
        _dbus_list_free_link (link);
      dbus_free (d);
      return FALSE;
    }

  /* Almost always the last: only a changed timeout puts it before. */
  for (before = _dbus_list_get_last_link (&deadlines->calls);
       before != NULL &&
       ((DBusAfbusDeadline *) before->data)->deadline > d->deadline;
       before = _dbus_list_get_prev_link (&deadlines->calls, before))
    ;
  if (before == NULL)
    _dbus_list_prepend_link (&deadlines->calls, link);
  else
    _dbus_list_insert_after_link (&deadlines->calls, before, link);
  return TRUE;
}

/** Our call @p serial got its answer (or NoReply): it waits no more. */
void
_dbus_afbus_deadlines_remove (DBusAfbusDeadlines *deadlines,
                              dbus_uint32_t       serial)
{
  DBusList *link;

  link = _dbus_hash_table_lookup_uintptr (deadlines->by_serial, serial);
  if (link == NULL)
    return;

  _dbus_hash_table_remove_uintptr (deadlines->by_serial, serial);
  dbus_free (link->data);
  _dbus_list_remove_link (&deadlines->calls, link);
}

/**
 * How long from @p now until the first deadline, in milliseconds: 0 if
 * it has passed, -1 if no call waits.
 */
int
_dbus_afbus_deadlines_next (DBusAfbusDeadlines *deadlines,
                            dbus_int64_t        now)
{
  DBusAfbusDeadline *d = _dbus_list_get_first (&deadlines->calls);
  dbus_int64_t left;

  if (d == NULL)
    return -1;

  left = d->deadline - now;
  if (left <= 0)
    return 0;
  return left > _DBUS_INT_MAX ? _DBUS_INT_MAX : (int) left;
}

/**
 * Takes the first call whose deadline is @p now or before.
 *
 * @returns #FALSE if there is none
 */
dbus_bool_t
_dbus_afbus_deadlines_pop_expired (DBusAfbusDeadlines *deadlines,
                                   dbus_int64_t        now,
                                   dbus_uint32_t      *serial)
{
  DBusAfbusDeadline *d = _dbus_list_get_first (&deadlines->calls);

  if (d == NULL || d->deadline > now)
    return FALSE;

  *serial = d->serial;
  _dbus_afbus_deadlines_remove (deadlines, d->serial);
  return TRUE;
}

/** The monotonic clock, in milliseconds, as the deadlines take it. */
dbus_int64_t
_dbus_afbus_deadlines_now (void)
{
  long sec, usec;

  _dbus_get_monotonic_time (&sec, &usec);
  return (dbus_int64_t) sec * 1000 + usec / 1000;
}


/** @} */

#ifdef DBUS_ENABLE_EMBEDDED_TESTS
#include "dbus-test.h"
#include "dbus-test-tap.h"

/* FALSE if no memory. */
static dbus_bool_t
check_codec (dbus_uint64_t addr,
             const char   *name)
{
  DBusString str;
  dbus_uint64_t back = 0;

  if (!_dbus_string_init (&str))
    return FALSE;
  if (!_dbus_afbus_unique_name_from_addr (addr, &str))
    {
      _dbus_string_free (&str);
      return FALSE;
    }
  _dbus_test_check (strcmp (_dbus_string_get_const_data (&str), name) == 0);
  _dbus_test_check (_dbus_afbus_addr_from_unique_name (name, &back));
  _dbus_test_check (back == addr);
  _dbus_string_free (&str);
  return TRUE;
}

/* Where a message for the well-known @name goes: its address, or 0
 * (the master). */
static dbus_uint64_t
route (DBusAfbusNameCache *cache,
       const char         *name)
{
  dbus_uint64_t addr = 0;

  if (!_dbus_afbus_name_cache_lookup (cache, name, &addr))
    return 0;
  _dbus_test_check (addr != 0);
  return addr;
}

/* FALSE if no memory. */
static dbus_bool_t
forwarded (DBusAfbusNameCache *cache,
           const char         *name,
           dbus_uint64_t       addr,
           dbus_uint64_t       owner)
{
  return _dbus_afbus_name_cache_forwarded (cache, name, addr, owner);
}

/* (in the tests below) a step that allocates: without memory the test
 * stops there, freeing what it made */
#define NEED(step) do { if (!(step)) goto oom; } while (0)

#define A(n) ((DBUS_AFBUS_NAME_PREFIX << BUS_PREFIX_SHIFT) | (n))
#define U(n) ((dbus_uint64_t) (n))

/* The deadlines of calls at the bus's reply timeout; FALSE if no
 * memory. */
static dbus_bool_t
check_deadlines (void)
{
  DBusAfbusDeadlines *d = _dbus_afbus_deadlines_new ();
  dbus_uint32_t serial;

  if (d == NULL)
    return FALSE;

  /* No timeout: nothing is recorded. */
  NEED (_dbus_afbus_deadlines_add (d, 1, 0));
  _dbus_test_check (_dbus_afbus_deadlines_next (d, 0) == -1);

  /* In order; an answer removes its call; a serial counts once. */
  _dbus_afbus_deadlines_set_timeout (d, 100);
  NEED (_dbus_afbus_deadlines_add (d, 1, 0));
  NEED (_dbus_afbus_deadlines_add (d, 2, 10));
  NEED (_dbus_afbus_deadlines_add (d, 3, 20));
  NEED (_dbus_afbus_deadlines_add (d, 3, 50));
  _dbus_test_check (_dbus_afbus_deadlines_next (d, 40) == 60);
  _dbus_afbus_deadlines_remove (d, 1);
  _dbus_afbus_deadlines_remove (d, 7);
  _dbus_test_check (_dbus_afbus_deadlines_next (d, 40) == 70);
  _dbus_test_check (!_dbus_afbus_deadlines_pop_expired (d, 109, &serial));
  _dbus_test_check (_dbus_afbus_deadlines_pop_expired (d, 120, &serial) &&
                    serial == 2);
  _dbus_test_check (_dbus_afbus_deadlines_pop_expired (d, 120, &serial) &&
                    serial == 3);
  _dbus_test_check (!_dbus_afbus_deadlines_pop_expired (d, 1000, &serial));
  _dbus_test_check (_dbus_afbus_deadlines_next (d, 1000) == -1);

  /* A shorter timeout: a later call may end before earlier ones. */
  NEED (_dbus_afbus_deadlines_add (d, 4, 0));
  _dbus_afbus_deadlines_set_timeout (d, 10);
  NEED (_dbus_afbus_deadlines_add (d, 5, 5));
  _dbus_test_check (_dbus_afbus_deadlines_next (d, 5) == 10);
  _dbus_test_check (_dbus_afbus_deadlines_pop_expired (d, 100, &serial) &&
                    serial == 5);
  _dbus_test_check (_dbus_afbus_deadlines_pop_expired (d, 100, &serial) &&
                    serial == 4);
  /* The clock passed: 0 until it is taken. */
  NEED (_dbus_afbus_deadlines_add (d, 6, 0));
  _dbus_test_check (_dbus_afbus_deadlines_next (d, 50) == 0);

  _dbus_afbus_deadlines_free (d);
  return TRUE;

 oom:
  _dbus_afbus_deadlines_free (d);
  return FALSE;
}

/* The whole test once: TRUE when it passed or an allocation failed
 * (_dbus_test_oom_handling() fails one after another), and never on a
 * wrong result (_dbus_test_check() aborts). */
static dbus_bool_t
afbus_test_once (void        *data _DBUS_GNUC_UNUSED,
                 dbus_bool_t  have_memory)
{
  static const char * const not_afbus[] = {
    ":1.5", ":0.", ":0.0", ":0.05", ":0.A", ":0.g", ":0.1000000000000",
    ":0.ffffffffffff", "com.example", ":0.1 ", ""
  };
  DBusAfbusNameCache *cache = NULL;
  char name[32];
  dbus_uint64_t addr;
  unsigned int i;

  NEED (check_codec (1, ":0.1"));
  NEED (check_codec (0x2a, ":0.2a"));
  NEED (check_codec (BUS_CLIENT_MASK - 1, ":0.fffffffffffe"));
  for (i = 0; i < _DBUS_N_ELEMENTS (not_afbus); i++)
    _dbus_test_check (!_dbus_afbus_addr_from_unique_name (not_afbus[i],
                                                          &addr));

  cache = _dbus_afbus_name_cache_new ();
  NEED (cache != NULL);

  /* Unknown, then told: direct once each message in the daemon is
   * answered, not before; meanwhile nothing goes straight to a unique
   * name either. */
  _dbus_test_check (route (cache, "com.a") == 0);
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (1)));
  _dbus_afbus_name_cache_sent_to_master (cache);
  _dbus_afbus_name_cache_sent_to_master (cache);
  _dbus_test_check (!_dbus_afbus_name_cache_direct (cache, U (2)));
  NEED (forwarded (cache, "com.a", A (1), U (1)));
  _dbus_test_check (route (cache, "com.a") == 0);
  _dbus_test_check (!_dbus_afbus_name_cache_direct (cache, U (2)));
  NEED (forwarded (cache, "com.a", A (1), U (1)));
  _dbus_test_check (route (cache, "com.a") == A (1));
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (1)));
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (2)));

  /* A message to another name, or to a unique name, in the daemon
   * keeps every destination on the daemon's path. */
  _dbus_afbus_name_cache_sent_to_master (cache);
  _dbus_test_check (route (cache, "com.a") == 0);
  NEED (forwarded (cache, ":0.2", U (2), U (2)));
  _dbus_test_check (route (cache, "com.a") == A (1));

  /* Address 0 with no owner (the name has none) keeps it on the
   * daemon's path; a Forwarded with no message of ours counted changes
   * the address only. */
  NEED (forwarded (cache, "com.a", 0, 0));
  _dbus_test_check (route (cache, "com.a") == 0);
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (1)));
  NEED (forwarded (cache, "com.a", A (1), U (1)));
  _dbus_test_check (route (cache, "com.a") == A (1));

  /* Nobody had the address: forgotten until the daemon says again. */
  _dbus_afbus_name_cache_forget (cache, "com.a");
  _dbus_test_check (route (cache, "com.a") == 0);
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, "com.a", A (2), U (1)));
  _dbus_test_check (route (cache, "com.a") == A (2));

  /* A slow owner: its message still waits in the daemon's queue.
   * Nothing goes straight to it, by its unique name or by another name
   * it owns, until a Forwarded about it gives an address; the others
   * are not held up. */
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, "com.b", A (3), U (3)));
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, "com.c", A (4), U (3)));
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, "com.b", 0, U (3)));
  _dbus_test_check (route (cache, "com.b") == 0);
  _dbus_test_check (route (cache, "com.c") == 0);
  _dbus_test_check (!_dbus_afbus_name_cache_direct (cache, U (3)));
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (1)));
  _dbus_test_check (route (cache, "com.a") == A (2));
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, ":0.3", 0, U (3)));
  _dbus_test_check (!_dbus_afbus_name_cache_direct (cache, U (3)));
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, ":0.3", U (3), U (3)));
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (3)));
  _dbus_test_check (route (cache, "com.c") == A (4));
  /* (com.b's last Forwarded gave no address.) */
  _dbus_test_check (route (cache, "com.b") == 0);

  /* A slow owner that leaves is slow no more. */
  _dbus_afbus_name_cache_sent_to_master (cache);
  NEED (forwarded (cache, ":0.3", 0, U (3)));
  _dbus_test_check (!_dbus_afbus_name_cache_direct (cache, U (3)));
  _dbus_afbus_name_cache_peer_gone (cache, U (3));
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (3)));

  /* 64 slow owners are remembered; a 65th makes the one marked longest
   * ago forgotten. */
  for (i = 0; i <= DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    {
      snprintf (name, sizeof (name), ":0.%x", 100 + i);
      _dbus_afbus_name_cache_sent_to_master (cache);
      NEED (forwarded (cache, name, 0, U (100 + i)));
    }
  _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (100)));
  for (i = 1; i <= DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    _dbus_test_check (!_dbus_afbus_name_cache_direct (cache, U (100 + i)));
  for (i = 1; i <= DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    _dbus_afbus_name_cache_peer_gone (cache, U (100 + i));
  for (i = 0; i <= DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    _dbus_test_check (_dbus_afbus_name_cache_direct (cache, U (100 + i)));

  /* 64 names told: a 65th replaces the least recently used. */
  _dbus_afbus_name_cache_free (cache);
  cache = _dbus_afbus_name_cache_new ();
  NEED (cache != NULL);
  for (i = 0; i < DBUS_AFBUS_NAME_CACHE_SIZE; i++)
    {
      snprintf (name, sizeof (name), "com.n%u", i);
      NEED (forwarded (cache, name, A (100 + i), U (100 + i)));
    }
  _dbus_test_check (route (cache, "com.n0") == A (100));
  NEED (forwarded (cache, "com.new", A (5), U (5)));
  _dbus_test_check (route (cache, "com.n1") == 0);
  _dbus_test_check (route (cache, "com.n0") == A (100));
  _dbus_test_check (route (cache, "com.n2") == A (102));
  _dbus_test_check (route (cache, "com.new") == A (5));

  /* Answers past the count (a kernel without BUS_NO_DEFAULT_ROUTE)
   * leave it at 0. */
  NEED (forwarded (cache, ":0.1", U (1), U (1)));
  _dbus_afbus_name_cache_sent_to_master (cache);
  _dbus_test_check (route (cache, "com.new") == 0);
  NEED (forwarded (cache, ":0.1", U (1), U (1)));
  _dbus_test_check (route (cache, "com.new") == A (5));

  _dbus_afbus_name_cache_free (cache);
  cache = NULL;

  NEED (check_deadlines ());
  return TRUE;

 oom:
  if (cache != NULL)
    _dbus_afbus_name_cache_free (cache);
  if (have_memory)
    _dbus_test_fatal ("out of memory");
  return TRUE;
}

/**
 * Unit test of the unique-name codec, the client's routing state (the
 * count of messages in the daemon, the names' addresses and the slow
 * owners, which keep one client's messages to each receiver in order)
 * and the reply deadlines, and of their failure paths: under
 * _dbus_test_oom_handling(), which runs it again failing each of its
 * allocations in turn (DBUS_TEST_MALLOC_FAILURES of them in a row), and
 * the test runner then checks that nothing leaked.
 *
 * @returns #TRUE on success.
 */
dbus_bool_t
_dbus_afbus_test (const char *test_data_dir _DBUS_GNUC_UNUSED)
{
  return _dbus_test_oom_handling ("afbus", afbus_test_once, NULL);
}
#endif /* DBUS_ENABLE_EMBEDDED_TESTS */

#endif /* DBUS_HAVE_AFBUS */
