"""Matrix: the person talks to the agent in Matrix rooms, through a bot account of its own.

:mod:`.room` holds what is decided without a server (who a room is heard by, what a reply
decides, how a message looks); :mod:`.client` talks to the homeserver (matrix-nio);
:mod:`.sender` sends the person's notifications (a :class:`~steward.domain.channel.ChannelSender`)
and :mod:`.listen` follows the rooms (a long-poll sync) and hands the person's messages over.

A Matrix channel's settings (:attr:`~steward.domain.channel.Channel.config`): ``homeserver``
(the bot's homeserver URL), ``user`` (the bot's user id), ``person`` (the person's user id: the
only sender whose messages are the person's), ``room`` (the direct room of the bot and the
person, where notifications go), ``secret`` (the vault secret holding the bot's access token),
and what the listener keeps: ``since`` (the sync position) and ``rooms`` (each room's
conversation with the agent).
"""
