/* -*- mode: C; c-file-style: "gnu"; indent-tabs-mode: nil; -*- */
/* dbus-server-afbus.h  AF_BUS subclass of DBusServer
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
#ifndef DBUS_SERVER_AFBUS_H
#define DBUS_SERVER_AFBUS_H

#include <dbus/dbus-server-protected.h>

DBUS_BEGIN_DECLS

DBusServerListenResult _dbus_server_listen_afbus (DBusAddressEntry  *entry,
                                                  DBusServer       **server_p,
                                                  DBusError         *error);

DBUS_PRIVATE_EXPORT
dbus_bool_t _dbus_server_afbus_set_limits   (DBusServer *server,
                                             long        max_message_size,
                                             long        max_queued_bytes,
                                             DBusError  *error);

DBUS_PRIVATE_EXPORT
dbus_bool_t _dbus_server_is_afbus           (DBusServer *server);
DBUS_PRIVATE_EXPORT
int         _dbus_server_afbus_get_fd       (DBusServer *server);
DBUS_PRIVATE_EXPORT
dbus_bool_t _dbus_server_afbus_connect_self (DBusServer *server,
                                             DBusSocket *client_fd_p,
                                             DBusSocket *accepted_fd_p,
                                             DBusError  *error);

DBUS_END_DECLS

#endif /* DBUS_SERVER_AFBUS_H */
