/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-transport-afbus.h  AF_BUS subclass of DBusTransport
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
#ifndef DBUS_TRANSPORT_AFBUS_H
#define DBUS_TRANSPORT_AFBUS_H

#include <dbus/dbus-transport-protected.h>

DBUS_BEGIN_DECLS

DBusTransportOpenResult _dbus_transport_open_afbus (DBusAddressEntry  *entry,
                                                    DBusTransport    **transport_p,
                                                    DBusError         *error);

DBusTransport *_dbus_transport_new_for_afbus (DBusSocket        fd,
                                              const DBusString *server_guid,
                                              const DBusString *address);

/**
 * The daemon's side: whether the AF_BUS address @source (of the bus a
 * relay pair is on) is another relay client socket (C1) of the daemon,
 * whose every message the daemon's libdbus marshalled from a message it
 * had loaded and validated.  If so, *@sent_p may return a message the
 * daemon sent from @source whose network data (header and body) are
 * byte for byte @datagram, which the relay then takes instead of
 * loading the datagram (a new reference, which the relay drops if it
 * does not take it); else NULL.  Called while
 * reading, with the relay's connection locked: the function must only
 * look the address and the message up.
 */
typedef dbus_bool_t (* DBusAfbusTrustedSourceFunction) (dbus_uint64_t      source,
                                                        const DBusString  *datagram,
                                                        DBusMessage      **sent_p,
                                                        void              *data);

DBUS_PRIVATE_EXPORT
int         _dbus_afbus_message_network_size (DBusMessage      *message);
DBUS_PRIVATE_EXPORT
dbus_bool_t _dbus_afbus_message_is_datagram  (DBusMessage      *message,
                                              const DBusString *datagram);

DBUS_PRIVATE_EXPORT
dbus_bool_t _dbus_afbus_relay_pair_new (DBusSocket                      client_fd,
                                        DBusSocket                      accepted_fd,
                                        const DBusString               *guid,
                                        DBusAfbusTrustedSourceFunction  trusted,
                                        void                           *trusted_data,
                                        DBusConnection                **client_p,
                                        DBusConnection                **accepted_p);

/**
 * The daemon's side: a call it relays for a client that the kernel
 * refuses (@saved_errno: EDQUOT when that client already awaits as many
 * replies as the bus allows; the others of
 * _dbus_afbus_error_for_errno()).  Called in the middle of a write, with
 * the lock of the connection the call was queued on held: the function
 * must only take note (a reference to @message) and answer the caller
 * later.
 */
typedef void (* DBusAfbusRelayRefusedFunction) (DBusMessage *message,
                                                int          saved_errno,
                                                void        *data);

DBUS_PRIVATE_EXPORT
const char *_dbus_afbus_error_for_errno (int saved_errno);

DBUS_PRIVATE_EXPORT
void _dbus_transport_afbus_set_relay_refused_function (DBusAfbusRelayRefusedFunction  function,
                                                       void                          *data);

DBUS_END_DECLS

#endif /* DBUS_TRANSPORT_AFBUS_H */
